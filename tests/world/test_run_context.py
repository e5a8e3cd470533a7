"""The engine's typed run context, the plugin contract, and resume/fork as single store operations."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from maps.contracts import Record, TickRecords
from maps.plugin import Plugin, PluginHost, PluginView
from memory.runfile import RunStore, Snapshot, StoreError
from world.engine import Engine, RunContext
from world.runner import RunOptions, build_engine

T0 = datetime(2026, 2, 13, 7, 0)
COMMAND = {"kind": "whisper", "resident": "A", "text": "hello"}


def _tick(n: int) -> TickRecords:
    return TickRecords(tick=n, time=T0 + timedelta(seconds=10 * n),
                       records=[Record(kind="note", resident="A", data={"text": f"tick {n}"})])


def _run(tmp_path: Path, ticks: int = 6, snapshots: tuple[int, ...] = (0, 3)) -> RunStore:
    """A run file with ``ticks`` committed ticks, snapshots at ``snapshots`` and one command
    accepted for a tick it never committed."""
    store = RunStore.create(tmp_path / "run", {"seconds_per_tick": 10, "planned_end": (T0 + timedelta(hours=1)).isoformat()})
    for n in range(ticks):
        snap = Snapshot(n, _tick(n).time, {"tick": n}, {"A": {"n": n}}) if n in snapshots else None
        store.commit_tick(_tick(n), snap)
    assert store.journal_command(ticks + 2, COMMAND)
    return store


def test_resume_point_cuts_back_to_the_snapshot_and_hands_over_what_to_rerun(tmp_path: Path) -> None:
    store = _run(tmp_path)
    point = store.resume_point(extend_by=timedelta(hours=2))
    assert (point.last, point.kept, point.restored) == (5, 5, 3)
    assert point.snapshot is not None and point.snapshot.minds == {"A": {"n": 3}}
    assert [t.tick for t in point.ticks] == [4, 5]  # re-run after restoring the snapshot of tick 3
    assert point.pending == [COMMAND]
    assert store.pending_commands(5) == [COMMAND]  # now due right after the last kept tick
    assert store.conn.execute("SELECT applies_at FROM pending_commands").fetchall() == [(6,)]
    end = T0 + timedelta(seconds=50) + timedelta(seconds=10) + timedelta(hours=2)
    assert point.meta["planned_end"] == store.meta()["planned_end"] == end.isoformat()
    store.mark_resumed(point.last)
    assert [r["after_tick"] for r in store.meta()["resumed"]] == [5]


def test_resume_point_without_a_snapshot_changes_nothing(tmp_path: Path) -> None:
    store = _run(tmp_path, snapshots=())
    before = store.meta()["planned_end"]
    with pytest.raises(StoreError, match="no snapshot at or before tick 5"):
        store.resume_point(extend_by=timedelta(hours=2))
    assert store.meta()["planned_end"] == before and store.last_tick() == 5


def test_resume_point_of_a_run_without_ticks(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path / "run", {"seconds_per_tick": 10})
    point = store.resume_point(extend_by=timedelta(hours=1))
    assert (point.last, point.kept, point.restored, point.ticks, point.pending) == (None, -1, -1, [], [])


def test_fork_to_makes_the_branch_in_one_operation(tmp_path: Path) -> None:
    src = _run(tmp_path)
    path = src.fork_to(tmp_path / "fork", 2, {"forked_from": {"tick": 2}, "model": "other"})
    assert path == tmp_path / "fork" / "run.db"
    fork = RunStore.open(path)
    assert fork.last_tick() == 2 and fork.snapshot_ticks() == [0]
    assert fork.pending_commands(-1) == []  # the source's accepted commands are not the fork's
    assert fork.meta()["forked_from"] == {"tick": 2} and fork.meta()["model"] == "other"
    assert src.last_tick() == 5 and src.pending_commands(5) == [COMMAND]  # the source is untouched
    with pytest.raises(StoreError, match="a run already exists there"):
        src.fork_to(tmp_path / "fork", 1, {})


def test_fork_point_names_the_tick_or_says_why_not(tmp_path: Path) -> None:
    store = _run(tmp_path)  # ticks 0..5, every 10 s from T0
    inside = store.fork_point(T0 + timedelta(seconds=25), 10)
    assert (inside.tick, inside.time, inside.inside) == (2, T0 + timedelta(seconds=20), True)
    assert store.fork_point(3, 10).tick == 3
    before = store.fork_point(T0 - timedelta(minutes=1), 10)
    assert before.tick is None and not before.inside and before.first_time == T0
    at_end = store.fork_point(T0 + timedelta(seconds=60), 10)  # the end of the last tick: still the last
    assert at_end.tick == 5 and at_end.inside
    after = store.fork_point(T0 + timedelta(seconds=61), 10)
    assert (after.tick, after.inside, after.last, after.last_time) == (6, False, 5, T0 + timedelta(seconds=50))


def test_a_built_engine_carries_its_run_context(tmp_path: Path) -> None:
    engine = build_engine(RunOptions(town="default", agents=2, mind="routine", duration="10m", out=tmp_path / "r", seed=1))
    try:
        context = engine.context
        assert context.run_dir == tmp_path / "r" and context.mind_kind == "routine" and context.llm is None
        assert context.until == datetime(2026, 2, 13, 7, 10) and context.encounters is None
        assert isinstance(engine, PluginHost)
    finally:
        engine.store.close()


def test_a_bare_engine_has_the_empty_context_and_plugins_see_a_plugin_view(tmp_path: Path) -> None:
    built = build_engine(RunOptions(town="default", agents=2, mind="routine", duration="10m", out=tmp_path / "r", seed=1))
    built.store.close()
    engine = Engine(built.town, [r.persona for r in built.residents.values()],
                    {n: r.mind for n, r in built.residents.items()}, start=T0)
    assert engine.context == RunContext()
    seen: list[object] = []

    class Watcher:
        commands: dict = {}

        async def on_tick(self, view: PluginView) -> list[Record]:
            seen.append(view)
            return []

        def check_command(self, cmd: object) -> None:
            return None

        def handle_command(self, cmd: object) -> None:
            return None

        def snapshot(self) -> dict:
            return {}

        def restore(self, state: dict) -> None:
            return None

    watcher = Watcher()
    assert isinstance(watcher, Plugin)
    engine.add_plugin(watcher)
    asyncio.run(engine.step())
    [view] = seen
    assert isinstance(view, PluginView)
    assert list(view.residents) == engine.resident_names and view.tick == 0 and view.town is engine.town
