"""Checkpoints: a killed run resumes gap-free and identical; a fork starts from exactly T."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from replays.store import RunStore
from world.runner import RunError, RunOptions, build_engine

REPO = Path(__file__).resolve().parents[1]


def fresh(out: Path, duration: str = "2h", **kw) -> object:
    return build_engine(RunOptions(mind="routine", duration=duration, out=out, snapshot_every=60, **kw))


def run_to_end(engine) -> None:
    asyncio.run(engine.run(engine.until))
    engine.store.close()


def stream(run_dir: Path) -> list[dict]:
    with RunStore.open(run_dir) as s:
        return [t.model_dump() for t in s.iter_ticks()]


def test_kill_and_resume_is_gap_free_and_identical(tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    run_to_end(fresh(whole))

    killed = tmp_path / "killed"
    cmd = [sys.executable, "-m", "world.cli", "run", "--mind", "routine", "--duration", "2h", "--out", str(killed),
           "--quiet", "--no-control", "--pace", "1500"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 60
        last = None
        while time.time() < deadline:
            if (killed / "run.db").exists():
                try:
                    with RunStore.open(killed) as s:
                        last = s.last_tick()
                except Exception:
                    last = None
                if last is not None and last > 130:
                    break
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    with RunStore.open(killed) as s:
        cut = s.last_tick()
        assert cut is not None and cut < 719  # killed mid-run, between snapshots most likely
    engine = build_engine(RunOptions(resume=killed))
    run_to_end(engine)
    with RunStore.open(killed) as s:
        summary = s.summary()
        assert summary["missing_ticks"] == []
        assert summary["ticks"] == summary["last_tick"] + 1 == 720
        assert [r["after_tick"] for r in s.meta()["resumed"]] == [cut]
    assert stream(killed) == stream(whole)


def test_resume_of_a_finished_run_adds_nothing_and_can_extend(tmp_path: Path) -> None:
    out = tmp_path / "r"
    run_to_end(fresh(out, duration="30m"))
    before = stream(out)
    run_to_end(build_engine(RunOptions(resume=out)))
    assert stream(out) == before
    run_to_end(build_engine(RunOptions(resume=out, duration="10m")))
    after = stream(out)
    assert after[: len(before)] == before and len(after) == len(before) + 60


def test_fork_starts_from_exactly_the_state_at_t(tmp_path: Path) -> None:
    parent = tmp_path / "parent"
    engine = fresh(parent)
    states: dict[int, tuple[dict, dict]] = {}
    engine.add_listener(lambda tr: states.__setitem__(
        tr.tick, (engine.snapshot(), {r.name: r.mind.snapshot() for r in engine._order})))
    run_to_end(engine)
    target = 100  # between the snapshots of ticks 60 and 120
    at = (datetime(2026, 2, 13, 7, 0) + timedelta(seconds=10 * target)).strftime("%Y-%m-%d %H:%M:%S")

    child_dir = tmp_path / "child"
    child = build_engine(RunOptions(fork=parent, at=at, out=child_dir, duration="20m"))
    asyncio.run(child.prepare())
    assert child.tick == target
    assert child.snapshot() == states[target][0]
    assert {r.name: r.mind.snapshot() for r in child._order} == states[target][1]
    meta = child.store.meta()
    assert meta["forked_from"]["tick"] == target and Path(meta["forked_from"]["run"]) == parent.resolve()
    assert child.store.last_tick() == target

    # run on with a different event: identical up to T, different after
    child.submit({"kind": "announce", "text": "Free pie at The Crooked Pub!"})
    run_to_end(child)
    a, b = stream(parent), stream(child_dir)
    assert b[: target + 1] == a[: target + 1]
    assert b[target + 1] != a[target + 1]
    assert any(r["kind"] == "inject" for r in b[target + 1]["records"])


def test_fork_and_resume_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="no run here"):
        build_engine(RunOptions(resume=tmp_path / "nothing"))
    out = tmp_path / "p"
    run_to_end(fresh(out, duration="10m"))
    with pytest.raises(RunError, match="--at: cannot read the time"):
        build_engine(RunOptions(fork=out, at="noonish", out=tmp_path / "c"))
    with pytest.raises(RunError, match="before the run's first tick"):
        build_engine(RunOptions(fork=out, at="2026-02-12 07:00", out=tmp_path / "c2"))
    with pytest.raises(RunError, match="keeps its model"):
        build_engine(RunOptions(resume=out, model="gpt-4o"))
