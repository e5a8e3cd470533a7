"""`eval --backend ray --ray-address HOST:PORT` against a real cluster: a `ray start --head` on
loopback, started and stopped by this test (skipped cleanly where Ray cannot start a head).

The head's processes are stopped by their process ids (those that name this test's own temp
dir), not with `ray stop`, which would stop every Ray instance of this user on the machine.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parents[2]
# `ray ...` as this interpreter runs it (the venv's `ray` script may name another python).
RAY = [sys.executable, "-m", "ray.scripts.scripts"]
# `ray start` turns token authentication on when ~/.ray/auth_token exists (any earlier local
# ray.init writes one) and a driver must then say so too: one explicit mode for both sides.
RAY_ENV = {"PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pids_of(marker: str) -> list[int]:
    """Processes whose command line names ``marker`` (this head's own temp dir)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            pids.append(int(entry.name))
    return pids


def _stop(marker: str) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = _pids_of(marker)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        while pids and time.monotonic() < deadline and _pids_of(marker):
            time.sleep(0.2)


@pytest.fixture(scope="module")
def ray_head() -> Iterator[str]:
    """A Ray head on 127.0.0.1:<free port> with 1 CPU; its address."""
    temp = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    port = free_port()
    env = {**os.environ, **RAY_ENV}
    env.pop("RAY_ADDRESS", None)
    started = subprocess.run(
        [*RAY, "start", "--head", "--port", str(port), "--num-cpus", "1", "--node-ip-address", "127.0.0.1",
         "--include-dashboard", "false", "--temp-dir", temp, "--disable-usage-stats"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    try:
        if started.returncode != 0:
            pytest.skip(f"ray start --head could not start here: {(started.stderr or started.stdout)[-500:]}")
        yield f"127.0.0.1:{port}"
    finally:
        _stop(temp)
        shutil.rmtree(temp, ignore_errors=True)


def _eval(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **RAY_ENV, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("RAY_ADDRESS", None)
    return subprocess.run([sys.executable, "-m", "world.cli", "eval", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_eval_runs_its_episodes_on_an_existing_cluster(ray_head: str, tmp_path: Path) -> None:
    out = tmp_path / "eval"
    done = _eval("builtin:town", "--limit", "2", "--model", "scripted", "--max-turns", "2",
                 "--backend", "ray", "--ray-address", ray_head, "--out", str(out), "--no-progress")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "episodes 2 (ran 2, already finished 0, errors 0)" in done.stdout
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 2 and not any(r.get("error") for r in records)
    again = _eval("builtin:town", "--limit", "2", "--model", "scripted", "--max-turns", "2",
                  "--backend", "ray", "--ray-address", ray_head, "--out", str(out), "--no-progress")
    assert again.returncode == 0 and "episodes 2 (ran 0, already finished 2, errors 0)" in again.stdout


def test_an_address_where_no_cluster_answers_is_a_clear_error(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    done = _eval("builtin:town", "--limit", "1", "--model", "scripted", "--backend", "ray",
                 "--ray-address", f"127.0.0.1:{port}", "--out", str(tmp_path / "eval"), "--no-progress")
    assert done.returncode != 0
    assert f"could not join the Ray cluster at '127.0.0.1:{port}'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "eval" / "results.jsonl").exists()  # nothing half-written
