"""Hostile input to `run`, `replay` and `interview`: each refused with a clear message naming the
option or file, no traceback, nothing half-created; and SIGTERM stops a run like Ctrl-C."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from memory.runfile import RunStore
from world.cli import main

REPO = Path(__file__).resolve().parents[2]
ROUTINE = ["run", "--mind", "routine", "--quiet", "--no-control", "--start", "2026-03-01 08:00"]


def last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A 10-minute routine run: ticks 0..59, 08:00:00 to 08:09:50."""
    out = tmp_path_factory.mktemp("rec") / "run"
    assert main([*ROUTINE, "--duration", "10m", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def remembered(tmp_path_factory) -> Path:
    """A 10-minute run of two generative residents on the scripted model (they keep memories)."""
    out = tmp_path_factory.mktemp("gen") / "run"
    assert main(["run", "--mind", "generative", "--model", "scripted", "--agents", "2", "--quiet", "--no-control",
                 "--start", "2026-03-01 08:00", "--duration", "10m", "--out", str(out)]) == 0
    return out


# -- run: folders ------------------------------------------------------------------------------


def test_out_an_existing_file_is_refused(tmp_path: Path, capsys) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("keep me")
    code, _, err = cli(capsys, *ROUTINE, "--duration", "5m", "--out", str(target))
    assert code == 2 and f"--out {target}: is a file" in err
    assert target.read_text() == "keep me"


def test_out_in_missing_folders_creates_them(tmp_path: Path, capsys) -> None:
    out = tmp_path / "missing" / "dir" / "x"
    code, _, _ = cli(capsys, *ROUTINE, "--duration", "5m", "--out", str(out), "--json")
    assert code == 0 and RunStore.open(out).last_tick() == 29


def test_out_below_a_file_is_refused(tmp_path: Path, capsys) -> None:
    (tmp_path / "file").write_text("")
    code, _, err = cli(capsys, *ROUTINE, "--duration", "5m", "--out", str(tmp_path / "file" / "run"))
    assert code == 2 and "is a file, not a folder" in err


def test_a_failed_start_leaves_nothing_behind(tmp_path: Path, capsys) -> None:
    out = tmp_path / "new" / "run"
    code, _, err = cli(capsys, "run", "--quiet", "--no-control", "--mind", "generative", "--model", "bogus",
                       "--duration", "5m", "--out", str(out))
    assert code != 0 and "bogus" in err
    assert not (tmp_path / "new").exists()
    # A folder the user made is kept, only what the run wrote goes.
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "README").write_text("mine")
    code, _, err = cli(capsys, "run", "--quiet", "--no-control", "--mind", "generative", "--model", "bogus",
                       "--duration", "5m", "--out", str(mine))
    assert code != 0 and sorted(p.name for p in mine.iterdir()) == ["README"]


# -- run: values -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--start", "9999-12-31"], "--start: expected a date from 1900-01-01"),
        (["--start", "9000-12-31 23:00", "--duration", "1h"], "--start: expected a date"),
        (["--start", "0001-01-01"], "--start: expected a date from 1900-01-01"),
        (["--duration", "99999999999d"], "--duration: expected at most 3650d"),
        (["--duration", "4000d"], "--duration: expected at most 3650d"),
        (["--duration", "0m"], "--duration: expected a positive duration"),
        (["--duration", "2"], "--duration: expected a number with a unit"),
        (["--duration=-5m"], "--duration: expected a duration like 30m"),
        (["--agents", "-3"], "--agents"),
        (["--agents", "999999"], "--agents"),
        (["--seconds-per-tick", "0"], "--seconds-per-tick"),
        (["--seconds-per-tick", "nan"], "--seconds-per-tick"),
        (["--seconds-per-tick", "0.0001", "--duration", "10m"], "--seconds-per-tick: Input should be greater than or equal to 1"),
        (["--model", "\x1b[2Jbad"], "--model: the model string contains the control character U+001B (ESC)"),
        (["--town", "atlantis"], "atlantis: town: no such town folder"),
        (["--snapshot-every", "0"], "--snapshot-every"),
        (["--pace", "0"], "--pace"),
        (["--pace", "nan"], "--pace"),
        (["--chaos", "-0.1"], "--chaos"),
        (["--model", " "], "--model"),
        (["--out", ""], "--out: expected a folder"),
    ],
)
def test_bad_values_are_named(argv: list[str], expected: str, capsys) -> None:
    code, _, err = cli(capsys, *ROUTINE, *argv)
    assert code == 2 and expected in err


# -- run --fork --at ---------------------------------------------------------------------------


@pytest.mark.parametrize("at", ["09:00", "+1h", "tick:60", "tick:5000", "2026-03-01 08:30", "day 2 08:00"])
def test_fork_past_the_end_is_refused(recorded: Path, tmp_path: Path, at: str, capsys) -> None:
    child = tmp_path / "child"
    code, _, err = cli(capsys, "run", "--quiet", "--no-control", "--fork", str(recorded), "--at", at,
                       "--out", str(child))
    assert code == 2 and f"--at {at}: after the run's last tick (tick 59" in err
    assert not child.exists()


@pytest.mark.parametrize("at, tick", [("08:05", 30), ("+5m", 30), ("tick:30", 30), ("2026-03-01 08:05", 30),
                                      ("day 1 08:05", 30), ("08:10", 59)])
def test_fork_reads_every_documented_time_form(recorded: Path, tmp_path: Path, at: str, tick: int, capsys) -> None:
    child = tmp_path / "child"
    code, out, _ = cli(capsys, "run", "--quiet", "--no-control", "--json", "--fork", str(recorded), "--at", at,
                       "--duration", "1m", "--out", str(child))
    assert code == 0
    assert last_json(out)["forked_from"]["tick"] == tick


# -- damaged run.db ----------------------------------------------------------------------------


def damage(run_dir: Path) -> Path:
    """Overwrite a few pages in the middle of run.db with garbage (the header stays intact)."""
    db = run_dir / "run.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
    assert pages > 8
    data = bytearray(db.read_bytes())
    for k in (pages // 3, pages // 2, 2 * pages // 3):
        data[k * page:(k + 1) * page] = bytes((i * 37 + k) % 251 for i in range(page))
    db.write_bytes(bytes(data))
    return db


@pytest.fixture()
def damaged(remembered: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "damaged"
    shutil.copytree(remembered, copy)
    damage(copy)
    return copy


@pytest.mark.parametrize("extra", [["--summary"], ["--summary", "--json"], ["--timeline"],
                                   ["--png-dir", "PNG", "--at", "08:05"], ["--export", "GIF"]])
def test_replay_reports_a_damaged_run_db(damaged: Path, tmp_path: Path, extra: list[str], capsys) -> None:
    extra = [str(tmp_path / "png") if a == "PNG" else str(tmp_path / "day.gif") if a == "GIF" else a for a in extra]
    code, out, err = cli(capsys, "replay", str(damaged), *extra)
    assert code == 2 and "damaged" in err and str(damaged / "run.db") in err
    assert "missing ticks" not in out and not (tmp_path / "png").exists() and not (tmp_path / "day.gif").exists()


def test_interview_and_resume_report_a_damaged_run_db(damaged: Path, capsys) -> None:
    code, _, err = cli(capsys, "interview", str(damaged), "Isabella Rodriguez", "hi", "--model", "scripted")
    assert code == 2 and "damaged" in err and "run.db" in err
    before = (damaged / "run.db").read_bytes()
    code, _, err = cli(capsys, "run", "--quiet", "--no-control", "--resume", str(damaged))
    assert code == 1 and "damaged" in err and str(damaged / "run.db") in err
    assert (damaged / "run.db").read_bytes() == before  # nothing written to it


# -- resume of a read-only folder ----------------------------------------------------------------


def test_resume_of_a_read_only_folder_is_refused(recorded: Path) -> None:
    base = Path(tempfile.mkdtemp(prefix="townsfolk-ro-"))
    try:
        os.chmod(base, 0o755)
        run = base / "run"
        shutil.copytree(recorded, run)
        for p in run.iterdir():
            os.chmod(p, 0o444)
        os.chmod(run, 0o555)
        before = (run / "run.db").read_bytes()
        argv = [sys.executable, "-m", "world.cli", "run", "--quiet", "--no-control", "--resume", str(run),
                "--duration", "1m"]
        if os.geteuid() == 0:  # root writes anywhere: run it as a user without that privilege
            if not shutil.which("unshare"):
                pytest.skip("running as root without unshare(1): cannot make a folder read-only to ourselves")
            argv = ["unshare", "--user", "--map-user=65534", "--map-group=65534", *argv]
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1, proc.stderr
        assert "read-only" in proc.stderr and str(run) in proc.stderr and "Traceback" not in proc.stderr
        assert (run / "run.db").read_bytes() == before
    finally:
        for root, dirs, _files in os.walk(base):
            for d in dirs:
                os.chmod(Path(root) / d, 0o755)
        shutil.rmtree(base, ignore_errors=True)


# -- interview and replay options -----------------------------------------------------------------


@pytest.mark.parametrize("at", ["08:05", "+5m", "tick:30", "2026-03-01 08:05", "day 1 08:05"])
def test_interview_reads_every_documented_time_form(remembered: Path, at: str, capsys) -> None:
    name = RunStore.open(remembered).meta()["resident_names"][0]
    code, out, err = cli(capsys, "interview", str(remembered), name, "What are you doing?", "--at", at,
                         "--model", "scripted")
    assert code == 0 and out.strip(), err


def test_interview_names_a_model_that_cannot_be_built(remembered: Path, capsys) -> None:
    name = RunStore.open(remembered).meta()["resident_names"][0]
    code, _, err = cli(capsys, "interview", str(remembered), name, "hi", "--model", "bogus")
    assert code == 2 and "--model bogus" in err


def test_interview_of_a_routine_run_says_why_nobody_answers(recorded: Path, capsys) -> None:
    code, _, err = cli(capsys, "interview", str(recorded), "Maria Alvarez", "hi", "--model", "scripted")
    assert code == 2 and "no resident memories" in err and "routine" in err


@pytest.mark.parametrize("at, expected", [("tick:999", "after the run's last tick"), ("+2d", "after the run's end"),
                                          ("noon", "cannot read the time"), ("25:99", "hours are 0-23"),
                                          ("day 0 08:00", "day 1"), ("2026-03-01T08:00+02:00", "time zone")])
def test_interview_refuses_times_outside_or_unreadable(remembered: Path, at: str, expected: str, capsys) -> None:
    name = RunStore.open(remembered).meta()["resident_names"][0]
    code, _, err = cli(capsys, "interview", str(remembered), name, "hi", "--at", at, "--model", "scripted")
    assert code == 2 and "--at" in err and expected in err


@pytest.mark.parametrize(
    "extra, expected",
    [
        (["--png-dir", "FILE", "--at", "08:05"], "is a file; expected a folder"),
        (["--timeline", "--md", "DIR"], "is a folder; expected a file"),
        (["--png-dir", "DIR", "--at", "tick:999"], "outside the run"),
        (["--png-dir", "DIR", "--at", "08:05", "--at", "nonsense"], "--at nonsense: cannot read the time"),
        (["--export", "DIR/a.gif", "--from", "noon"], "--from noon: cannot read the time"),
        (["--at", "25:00"], "--at 25:00: cannot read the time"),
        (["--png-dir", "DIR", "--at", "+99999999999d"], "too far"),
        (["--png-dir", "DIR", "--at", "08:05", "--select", "Nobody"], "--select Nobody: no such resident"),
        (["--export", "DIR/a.gif", "--from", "08:05", "--to", "08:01"], "comes after"),
        (["--size", "0x0"], "size"),
        (["--speed", "-1"], "speed"),
        (["--speed", "inf"], "speed"),
        (["--frames", "0", "--export", "DIR/a.gif"], "--frames"),
    ],
)
def test_replay_refuses_bad_options(recorded: Path, tmp_path: Path, extra: list[str], expected: str, capsys) -> None:
    (tmp_path / "file").write_text("")
    extra = [a.replace("FILE", str(tmp_path / "file")).replace("DIR", str(tmp_path)) for a in extra]
    try:
        code, _, err = cli(capsys, "replay", str(recorded), *extra)
    except SystemExit as exc:  # argparse's own refusal (type= checks) exits 2 with a usage line
        code, err = int(exc.code or 0), capsys.readouterr().err
    assert code == 2 and expected in err


# -- SIGTERM like SIGINT -------------------------------------------------------------------------


def _wait_for_ticks(db: Path, proc: subprocess.Popen, n: int, timeout: float = 90.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, proc.communicate()
        if db.exists():
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                    if (conn.execute("SELECT COUNT(*) FROM ticks").fetchone()[0] or 0) >= n:
                        return
            except sqlite3.Error:
                pass
        time.sleep(0.1)
    raise AssertionError("the run did not start")


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stop_signal_commits_prints_the_summary_and_removes_the_socket(tmp_path: Path, sig: int, code: int) -> None:
    control = pytest.importorskip("replays.control")
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "world.cli", "run", "--mind", "routine", "--duration", "1d", "--pace", "600",
         "--out", str(out), "--quiet", "--json"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_ticks(out / "run.db", proc, 5)
        assert control.is_live(out)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, stderr
    assert signal.Signals(sig).name in stderr and "--resume" in stderr and "Traceback" not in stderr
    summary = last_json(stdout)
    store = RunStore.open(out)
    assert summary["last_tick"] == store.last_tick() and summary["missing_ticks"] == []
    assert store.snapshot_at_or_before(summary["last_tick"]).tick == summary["last_tick"]  # stopped between ticks
    store.close()
    assert not control.is_live(out) and not control.socket_path(out).exists()
    # and the run continues from there
    assert main(["run", "--quiet", "--no-control", "--resume", str(out), "--duration", "1m"]) == 0


def test_sigterm_closes_watch_like_the_window(tmp_path: Path) -> None:
    pytest.importorskip("pygame")
    out = tmp_path / "run"
    env = {**os.environ, "SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "world.cli", "watch", "--mind", "routine", "--duration", "1d", "--pace", "600",
         "--out", str(out), "--close-after", "120", "--json"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        _wait_for_ticks(out / "run.db", proc, 5)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, stderr
    assert "SIGTERM" in stderr and "--resume" in stderr and "Traceback" not in stderr
    summary = last_json(stdout)
    store = RunStore.open(out)
    assert summary["last_tick"] == store.last_tick() and summary["missing_ticks"] == []
    store.close()
    assert not list(out.glob("*.sock"))


@pytest.mark.parametrize("extra, code, expected", [
    (["--agents", "0"], 2, "--agents: "),
    (["--resume", "no-such-run"], 2, "--resume no-such-run: no run here"),
    (["--town", "no-such-town"], 2, "no-such-town"),  # an unknown town is a bad option (README: 2)
])
def test_run_and_watch_refuse_a_bad_start_alike(extra: list[str], code: int, expected: str, capsys) -> None:
    """One mapping of start-up errors for both commands: the same message and exit status."""
    pytest.importorskip("pygame")
    said = {}
    for command in ("run", "watch"):
        got, _, err = cli(capsys, command, *extra)
        assert got == code and err.startswith(f"townsfolk {command}: ") and expected in err, err
        said[command] = err.removeprefix(f"townsfolk {command}: ")
    assert said["run"] == said["watch"]


def test_bench_judges_names_a_judge_model_it_cannot_call(capsys) -> None:
    from world.cli.bench_judges import DEFAULT_DATA

    if not DEFAULT_DATA.is_file():
        pytest.skip(f"needs ../shared/external/assebench (the default --data, {DEFAULT_DATA}), absent here")
    with pytest.raises(SystemExit) as stop:
        main(["bench", "judges", "--judge-model", "nosuch/x"])
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert "--judge-model 'nosuch/x'" in err and "Traceback" not in err


def test_a_tick_that_hangs_after_the_first_signal_is_stopped_at_once_after_the_grace_period() -> None:
    """A model server that hangs keeps the tick in progress waiting on its timeouts; the first
    SIGTERM must still end the run in seconds (as a second signal would), not after a minute."""
    from world.stop_signals import Stopped, StopSignals

    with StopSignals("run", grace_s=0.3) as stop:
        stop.graceful()
        started = time.monotonic()
        with pytest.raises(Stopped) as stopped:
            os.kill(os.getpid(), signal.SIGTERM)
            assert stop.requested  # the first signal only asks ...
            while time.monotonic() - started < 10:  # ... and this "tick" never ends by itself
                time.sleep(0.01)
        assert 0.25 <= time.monotonic() - started < 5 and stopped.value.exit_code == 143
    with StopSignals("run", grace_s=0.3) as stop:  # a tick that ends in time: no late stop
        stop.graceful()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        with pytest.raises(Stopped):
            stop.check()
    time.sleep(0.5)  # the cancelled timer never fires after the context closed
