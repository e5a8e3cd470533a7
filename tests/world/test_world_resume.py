"""Checkpoints: a killed run resumes gap-free and identical; a fork starts from exactly T."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memory.runfile import RunStore, StoreError
from world.runner import RunError, RunOptions, build_engine

REPO = Path(__file__).resolve().parents[2]


def fresh(out: Path, duration: str = "2h", **kw) -> object:
    return build_engine(RunOptions(mind="routine", duration=duration, out=out, snapshot_every=60, **kw))


def run_to_end(engine) -> None:
    asyncio.run(engine.run(engine.context.until))
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
        summary = s.counts()
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
        tr.tick, (engine.snapshot(), {r.name: r.mind.snapshot() for r in engine.residents.values()})))
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


# ---------------------------------------------------------------------------
# exact resume: kill -9 anywhere, resume, same records digest
# ---------------------------------------------------------------------------

# A child that runs (or resumes) a run and dies by SIGKILL just before tick K is committed:
# its minds have already written memories and asked the model for tick K, nothing of K is
# committed (the harshest moment for a resume).
KILLER = """
import asyncio, json, os, signal, sys
from memory.runfile import RunStore, StoreError
from world.runner import RunOptions, build_engine
options, kill_at = json.loads(sys.argv[1]), int(sys.argv[2])
commit = RunStore.commit_tick
def commit_or_die(self, tick_records, snapshot=None):
    if tick_records.tick == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    return commit(self, tick_records, snapshot)
RunStore.commit_tick = commit_or_die
engine = build_engine(RunOptions(**options))
asyncio.run(engine.run(engine.context.until))
sys.exit(3)
"""


def run_and_kill(options: dict, kill_at: int) -> None:
    env = {**os.environ, "TOWNSFOLK_EMBEDDER": "hashing"}
    proc = subprocess.run([sys.executable, "-c", KILLER, json.dumps(options), str(kill_at)], cwd=REPO, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]


def digest(run_dir: Path) -> str:
    with RunStore.open(run_dir) as s:
        return s.records_digest()


def first_difference(a: Path, b: Path) -> str:
    """Where two runs part (for the failure message)."""
    def untimed(run_dir: Path) -> list:
        out = []
        for t in stream(run_dir):
            for r in t["records"]:
                r["data"].pop("latency_s", None)
            out.append(t)
        return out
    sa, sb = untimed(a), untimed(b)
    for x, y in zip(sa, sb):
        if x != y:
            return f"tick {x['tick']}: {x['records']} != {y['records']}"
    return f"{len(sa)} vs {len(sb)} ticks"


def count_model_calls(engine) -> list:
    """The requests that reach the model from now on (the run's own record answers the rest)."""
    asked: list = []
    llm = engine.context.llm
    if llm is not None:
        inner = llm.backend.generate

        async def generate(request):
            asked.append(request.purpose)
            return await inner(request)

        llm.backend.generate = generate
    return asked


SMALL = {"town": "default", "agents": 3, "model": "scripted", "duration": "40m", "seed": 7, "snapshot_every": 25}


@pytest.mark.parametrize("mind, span", [
    ("generative", {}),
    ("routine", {}),
    # to bed, a night jump, and up again: the minds' sleep survives a restore
    ("generative", {"start": "2026-02-13 22:30", "duration": "7h"}),
], ids=["generative-day", "routine-day", "generative-night"])
def test_kill_9_at_random_ticks_then_resume_gives_the_same_run(tmp_path: Path, monkeypatch, mind: str,
                                                               span: dict) -> None:
    monkeypatch.setenv("TOWNSFOLK_EMBEDDER", "hashing")
    options = {**SMALL, "mind": mind, **span}
    whole = tmp_path / "whole"
    run_to_end(build_engine(RunOptions(**options, out=whole)))
    with RunStore.open(whole) as s:
        last = s.last_tick()
        assert s.count("llm") > 0 or mind == "routine"
    kills = sorted(random.Random(f"{mind}-{span}-kills").sample(range(1, last), 3))

    # a fork that changes nothing is the same run (re-run ticks after the snapshot included)
    forked = tmp_path / "forked"
    run_to_end(build_engine(RunOptions(fork=whole, at=f"tick:{kills[1]}", out=forked)))
    assert digest(forked) == digest(whole), first_difference(forked, whole)

    # killed before its first tick was committed: a resume must not see that attempt's leftovers
    first = tmp_path / "first"
    run_and_kill({**options, "out": str(first)}, 0)
    with RunStore.open(first) as s:
        assert s.last_tick() is None
    engine = build_engine(RunOptions(resume=first))
    run_to_end(engine)
    assert engine.diverged == 0
    assert digest(first) == digest(whole), first_difference(first, whole)

    # killed three times, each time mid-tick: resume, resume, resume
    killed = tmp_path / "killed"
    run_and_kill({**options, "out": str(killed)}, kills[0])
    for k in kills[1:]:
        run_and_kill({"resume": str(killed)}, k)
    engine = build_engine(RunOptions(resume=killed))
    with RunStore.open(killed) as s:
        last = s.last_tick()
        rerun = list(s.iter_ticks(s.snapshot_at_or_before(last).tick + 1, last))
    asked = count_model_calls(engine)
    asyncio.run(engine.prepare())  # re-runs the ticks after the last snapshot
    # every call of the re-run got its recorded answer; none reached the model
    assert asked == [] and all(log.unrecorded == 0 and log.unused == 0 for log in engine.store.answer_logs)
    assert sum(log.replayed for log in engine.store.answer_logs) == sum(
        r.kind == "llm" for t in rerun for r in t.records)
    run_to_end(engine)
    assert engine.diverged == 0  # the re-run ticks matched the record: no warning
    with RunStore.open(killed) as s:
        assert [r["after_tick"] for r in s.meta()["resumed"]] == [k - 1 for k in kills]
        reruns = s.meta()["reruns"]  # each resume's re-run, kept with the run for its summaries
        assert reruns[-1]["ticks"] == len(rerun) and all(r["diverged"] == 0 for r in reruns)
        assert s.diverged_ticks() == 0
        assert s.missing_ticks() == []
    assert digest(killed) == digest(whole), first_difference(killed, whole)


# ---------------------------------------------------------------------------
# one writer per run folder
# ---------------------------------------------------------------------------


def test_a_second_writer_is_refused_and_touches_nothing(tmp_path: Path) -> None:
    out = tmp_path / "live"
    cmd = [sys.executable, "-m", "world.cli", "run", "--mind", "routine", "--duration", "1d", "--quiet", "--no-control",
           "--out", str(out)]
    first = subprocess.Popen([*cmd, "--seed", "1", "--pace", "100"], cwd=REPO, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            assert first.poll() is None, first.stderr.read().decode()
            try:
                with RunStore.open(out) as s:
                    if (s.last_tick() or 0) > 5:
                        break
            except StoreError:  # not created yet
                pass
            time.sleep(0.05)
        db_before = (out / "run.db").stat().st_size

        second = subprocess.run([*cmd, "--seed", "2"], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert second.returncode != 0
        assert str(out) in second.stderr and f"pid {first.pid}" in second.stderr
        assert "Traceback" not in second.stderr
        resumed = subprocess.run([sys.executable, "-m", "world.cli", "run", "--resume", str(out), "--quiet",
                                  "--no-control"], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert resumed.returncode != 0 and f"pid {first.pid}" in resumed.stderr and "--resume" in resumed.stderr

        # readers still work while the run is live, and the run is still the first one's
        with RunStore.open(out) as s:
            summary = s.counts()
        assert summary["seed"] == 1 and summary["missing_ticks"] == []
        assert first.poll() is None  # the first writer goes on, undisturbed
        assert (out / "run.db").stat().st_size >= db_before
    finally:
        first.kill()
        first.wait()
    # a killed writer leaves no stale lock: the run can be resumed at once
    engine = build_engine(RunOptions(resume=out, duration="1m"))
    run_to_end(engine)
    with RunStore.open(out) as s:
        assert s.meta()["seed"] == 1


def test_the_lock_is_held_for_the_life_of_an_engine(tmp_path: Path) -> None:
    out = tmp_path / "r"
    engine = fresh(out, duration="10m")
    with pytest.raises(RunError, match=rf"--resume: {out}: another townsfolk process \(pid {os.getpid()}\)"):
        build_engine(RunOptions(resume=out))
    with pytest.raises(RunError, match="another townsfolk process"):
        build_engine(RunOptions(mind="routine", duration="10m", out=out))
    run_to_end(engine)  # closing the store lets go of the folder
    run_to_end(build_engine(RunOptions(resume=out, duration="1m")))


def test_a_fork_after_an_injected_command_re_runs_it_exactly(tmp_path: Path) -> None:
    """A command injected between two snapshots is re-applied as it was recorded: the re-run
    ticks match the record, so the fork neither warns nor reports inexact ticks."""
    parent = tmp_path / "parent"
    engine = fresh(parent, duration="30m")
    states: dict[int, dict] = {}

    def listen(tr) -> None:
        states[tr.tick] = engine.snapshot()
        if tr.tick == 70:
            engine.submit({"kind": "announce", "text": "Market day tomorrow"})

    engine.add_listener(listen)
    run_to_end(engine)
    child = build_engine(RunOptions(fork=parent, at="tick:100", out=tmp_path / "child"))
    asyncio.run(child.prepare())
    child.store.close()
    assert child.diverged == 0
    assert child.snapshot() == states[100]
