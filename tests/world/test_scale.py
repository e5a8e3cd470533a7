"""A town of thousands: the grid A* equals networkx's, perception stays exact on a generated
town, and `bench scale` reports the growth of cost in N (world/cli/bench_scale.py)."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from agents.minds.routine import make_mind
from maps.contracts import Intent, MindOptions, Persona
from maps.crowd import pick_residents
from maps.town import load_town
from world.cli.bench_scale import fit_exponent, sizes_of
from world.engine import Engine
from world.pathfinding import PathFinder
from world.perception import SpatialIndex, _window
from world.runner import RunOptions, build_engine
from tests.world.test_world_engine import Puppet

ROOT = Path(__file__).resolve().parents[2]
START = datetime(2026, 2, 13, 7, 0)


@pytest.fixture(autouse=True)
def _towns_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOWNSFOLK_TOWNS_DIR", str(tmp_path / "towns"))


def _networkx_path(walkable: np.ndarray, a: tuple[int, int], b: tuple[int, int]) -> tuple:
    """The walk the engine took before the grid A*: networkx's A* on the grid graph."""
    g = nx.Graph()
    h, w = walkable.shape
    for y, x in zip(*(v.tolist() for v in np.nonzero(walkable))):
        g.add_node((x, y))
        if x + 1 < w and walkable[y, x + 1]:
            g.add_edge((x, y), (x + 1, y))
        if y + 1 < h and walkable[y + 1, x]:
            g.add_edge((x, y), (x, y + 1))
    return g, tuple(nx.astar_path(g, a, b, heuristic=lambda u, v: abs(u[0] - v[0]) + abs(u[1] - v[1]))[1:])


def test_grid_astar_walks_exactly_as_networkx_did() -> None:
    town = load_town("default", None)
    finder = PathFinder(town.walkable)
    tiles = [(int(x), int(y)) for y, x in zip(*np.nonzero(town.walkable))]
    graph, _ = _networkx_path(town.walkable, tiles[0], tiles[1])
    rng = random.Random(5)
    for _ in range(300):
        a, b = rng.choice(tiles), rng.choice(tiles)
        want = tuple(nx.astar_path(graph, a, b, heuristic=lambda u, v: abs(u[0] - v[0]) + abs(u[1] - v[1]))[1:]) if a != b else ()
        assert finder.path(a, b) == want
    with pytest.raises(ValueError, match="no walkable path"):
        finder.path((0, 0), tiles[0])


def test_incremental_perception_is_exact_on_a_generated_town() -> None:
    town, people, _ = pick_residents("generated:60:1", None, None)
    logs = []
    for cache in (True, False):
        log: list = []
        opts = MindOptions(places=town.addresses(), seed=2)
        minds = {p.name: make_mind(p, None, None, opts) for p in people}
        engine = Engine(town, people, minds, start=START, perception_cache=cache, quiet=False)
        engine.add_listener(lambda tr, log=log: log.append([r.model_dump() for r in tr.records]))
        seen: list = []
        original = engine.perceiver.perceive

        def perceive(r, tick, now, looked=None, original=original, seen=seen):
            p = original(r, tick, now, looked)
            seen.append((p.resident, tick, [e.description for e in p.events], p.nearby))
            return p

        engine.perceiver.perceive = perceive  # type: ignore[method-assign]
        asyncio.run(engine.run(START + timedelta(hours=2)))
        logs.append((seen, log))
    assert sum(len(e[2]) for e in logs[0][0]) > 100  # plenty was perceived
    assert logs[0] == logs[1]


class Errands:
    """A plugin that reaches residents without a command (as the encounter plugin does): a
    whisper at work, an errand, a town-wide announcement, a whisper to a sleeper and a sleeper sent
    out. A dormant
    resident must be woken by each (world/quiet.py), or its answer comes late."""

    commands: dict = {}

    def __init__(self, names: list[str], park: str) -> None:
        self.names, self.park, self.done = names, park, 0

    async def on_tick(self, view) -> list:
        t = view.time.hour * 60 + view.time.minute
        due = [(10 * 60 + 30, lambda: view.deliver_whisper(self.names[1], "Go to the park for a walk.")),
               (11 * 60 + 15, lambda: view.send_to(self.names[2], self.park, "running an errand")),
               (14 * 60, lambda: view.announce("The park is closed for the afternoon.")),
               (22 * 60 + 35, lambda: view.deliver_whisper(self.names[1], "Go to the park for a walk.")),
               (22 * 60 + 45, lambda: view.send_to(self.names[0], self.park, "sleepwalking"))]
        while self.done < len(due) and t >= due[self.done][0]:
            due[self.done][1]()
            self.done += 1
        return []

    def check_command(self, cmd) -> str | None:
        return None

    def handle_command(self, cmd) -> None:
        pass

    def snapshot(self) -> dict:
        return {"done": self.done}

    def restore(self, state: dict) -> None:
        self.done = state["done"]


def _quiet_run(quiet: bool, town, people) -> tuple[list, dict]:
    opts = MindOptions(places=town.addresses(), seed=3)
    minds = {p.name: make_mind(p, None, None, opts) for p in people}
    engine = Engine(town, people, minds, start=START - timedelta(hours=2), quiet=quiet)
    park = next(a for a in town.addresses() if "park" in a.lower())
    errands = Errands([p.name for p in people[:4]], park)
    engine.add_plugin(errands)
    log: list = []
    engine.add_listener(lambda tr: log.append((tr.tick, tr.time, [r.model_dump() for r in tr.records])))
    asyncio.run(engine.run(START + timedelta(hours=3)))
    first = people[0].name
    engine.submit({"kind": "whisper", "resident": first, "text": "Go to the park for a walk."})
    engine.submit({"kind": "object", "address": next(a for a in town.objects if "bed" in a), "state": "broken"})
    asyncio.run(engine.run(START + timedelta(hours=17)))  # to midnight and past everyone's bedtime
    assert errands.done == 5, "the run ended before the plugin reached everyone"
    return log, engine.stats


def test_quiet_residents_are_skipped_and_the_run_is_the_same_as_asking_everyone_every_tick() -> None:
    """Residents whose routine mind promised to keep on (quiet_until) and who perceive nothing
    new are not perceived or asked: the record stream must equal the one of a run that asks
    every mind every tick, through greetings, walks, sleep, midnight, a whisper and an object
    changed mid-run."""
    town, people, _ = pick_residents("generated:40:1", None, None)
    quiet_log, quiet_stats = _quiet_run(True, town, people)
    full_log, full_stats = _quiet_run(False, town, people)
    assert full_stats["quiet_skips"] == 0
    assert quiet_stats["quiet_skips"] > 0.4 * 40 * quiet_stats["ticks"]  # most residents, most ticks
    assert sum(1 for _, _, recs in quiet_log for r in recs if r["kind"] == "chat") > 20
    assert quiet_log == full_log


def test_growth_exponent_is_the_log_log_slope() -> None:
    assert fit_exponent([(10, 2.0), (100, 20.0), (1000, 200.0)]) == 1.0
    assert fit_exponent([(10, 1.0), (100, 100.0)]) == 2.0
    assert fit_exponent([(10, 1.0)]) is None
    assert sizes_of("100, 25,25") == [25, 100]
    with pytest.raises(SystemExit, match="--sizes"):
        sizes_of("25,lots")
    with pytest.raises(SystemExit, match="from 1 to 20,000"):
        sizes_of("25,30000")
    assert sizes_of("10000") == [10000]  # the largest town is a size --agents takes


def test_bench_engine_names_an_agents_count_out_of_bounds() -> None:
    out = subprocess.run([sys.executable, "-m", "world.cli", "bench", "engine", "--agents", "30000", "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and out.stdout.strip() == ""
    assert "townsfolk bench engine: --agents:" in out.stderr and "20000" in out.stderr and "30000" in out.stderr
    assert "a bug" not in out.stderr


def test_a_size_that_did_not_run_is_named_and_fails_the_exit_code() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "world.cli", "bench", "scale", "--sizes", "6", "--duration", "20m", "--json",
         "--timeout", "0.01"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert out.returncode == 1 and result["failed"] == [6] and "error" in result["runs"][0]


def test_bench_scale_measures_each_size_in_its_own_process(tmp_path: Path) -> None:
    plot = tmp_path / "scale.png"
    out = subprocess.run(
        [sys.executable, "-m", "world.cli", "bench", "scale", "--sizes", "6,12", "--duration", "20m", "--json",
         "--plot", str(plot)], cwd=ROOT, capture_output=True, text=True, timeout=240, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert [r["agents"] for r in result["runs"]] == [6, 12]
    for r in result["runs"]:
        assert r["agent_ticks_per_s"] > 0 and r["peak_rss_mb"] > 10 and r["run_db_bytes_per_resident_hour"] > 0
        assert r["run_db_bytes_per_resident_day"] is None  # 20 minutes are no day: not scaled to one
    assert "run.db bytes/resident-hour (span under a day" in out.stderr
    assert isinstance(result["wall_exponent"], float)
    assert plot.read_bytes()[:4] == b"\x89PNG"


def _generative_run(quiet: bool, folder: Path) -> tuple[str, dict]:
    from memory.runfile import RunStore
    from world.runner import RunOptions, build_engine

    engine = build_engine(RunOptions(agents=8, start=START, duration="6h", mind="generative", model="scripted",
                                     out=folder, seed=4))
    engine.quiet = quiet
    people = engine.resident_names
    errands = Errands(people[:4], next(a for a in engine.town.addresses() if "park" in a.lower()))
    engine.add_plugin(errands)
    asyncio.run(engine.run(engine.context.until))
    engine.store.close()
    store = RunStore.open(folder)
    try:
        return store.records_digest(), dict(engine.stats)
    finally:
        store.close()


def test_generative_residents_carrying_on_with_a_step_are_quiet_and_the_run_is_the_same(tmp_path: Path) -> None:
    """A generative mind carrying on with its step (nothing new seen or heard) promises to until
    the step ends, its waiting memories are due or the hour turns: the records, model calls and
    memories included, equal those of asking every mind every tick, through talks, reactions,
    whispers, an errand and an announcement from a plugin."""
    quiet_digest, quiet_stats = _generative_run(True, tmp_path / "quiet")
    full_digest, full_stats = _generative_run(False, tmp_path / "full")
    assert full_stats["quiet_skips"] == 0
    assert quiet_stats["quiet_skips"] > 0.5 * 8 * quiet_stats["ticks"]
    assert quiet_digest == full_digest


class Watcher(Puppet):
    """A mind that only watches (the engine tests' Puppet: a bare continue, and every Perception
    it was given), promising to keep on for an hour."""

    def quiet_until(self, now: datetime) -> datetime:
        return now + timedelta(hours=1)


class Leaver(Puppet):
    """Walks out of the house five minutes in (the watcher is dormant by then); promises nothing."""

    def __init__(self, name: str, target: str) -> None:
        super().__init__(name)
        self.target = target

    def decide_fast(self, p) -> Intent:
        super().decide_fast(p)
        return Intent(kind="go", target=self.target) if p.tick == 30 else Intent()


def _changes(seen: list) -> list:
    """(tick, nearby) each time what was nearby differed from the last time the mind was asked."""
    out, last = [], None
    for p in seen:
        if tuple(p.nearby) != last:
            last = tuple(p.nearby)
            out.append((p.tick, last))
    return out


def test_a_dormant_resident_wakes_when_someone_leaves_its_view_without_a_new_event() -> None:
    """Someone walking off changes who is nearby without any new event: a dormant resident
    that saw them go must be asked then, as it would be every tick, not at its promise's end."""
    town = load_town("default", None)
    people = [Persona(name=n, age=30, occupation="tester", workplace="Willow Cafe:kitchen", home="Oak House")
              for n in ("Ada Watch", "Bo Leave")]
    logs = {}
    for quiet in (True, False):
        minds = {"Ada Watch": Watcher("Ada Watch"), "Bo Leave": Leaver("Bo Leave", "Willow Cafe:kitchen")}
        engine = Engine(town, people, minds, start=START, quiet=quiet)
        ada = engine.residents["Ada Watch"].tile
        beside = next((ada[0] + dx, ada[1] + dy) for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))
                      if town.walkable[ada[1] + dy, ada[0] + dx]
                      and town.area_id((ada[0] + dx, ada[1] + dy)) == town.area_id(ada))
        engine.place("Bo Leave", beside)  # in the same room, in view
        asyncio.run(engine.run(START + timedelta(minutes=15)))
        logs[quiet] = minds["Ada Watch"].seen
    assert len(logs[True]) < len(logs[False]) / 4  # dormant most of the time
    seen = _changes(logs[False])
    assert seen[0][1] == ("Bo Leave",) and seen[-1][1] == ()  # Bo was there, then left
    assert _changes(logs[True]) == seen


def test_in_a_big_town_residents_lunch_at_the_cafe_nearest_work_not_all_at_one(tmp_path: Path) -> None:
    """A generated town has a cafe per neighbourhood: routine residents lunch at the one
    nearest their workplace (the whole town walking to one cafe made a crowd no town has, and
    a cost that grew faster than the town)."""
    start = datetime(2026, 2, 13, 12, 0)
    engine = build_engine(RunOptions(town="generated:300:1", agents=300, mind="routine", model="scripted",
                                     start=start, duration=timedelta(hours=1), seed=0, out=tmp_path / "r"))
    town = engine.town
    cafes = {name: s for name, s in town.sectors.items() if s.kind == "cafe"}
    assert len(cafes) == 3

    def centre(sector: str) -> tuple[int, int]:
        return town.sectors[sector].rect.centre()

    def distance(a: tuple[int, int], b: tuple[int, int]) -> int:
        return abs(a[0] - b[0]) + abs(a[1] - b[1])

    asyncio.run(engine.run(start + timedelta(minutes=50)))
    engine.store.close()
    at: dict[str, list[str]] = {}
    for name, body in engine.residents.items():
        for cafe, s in cafes.items():
            if s.rect.contains_tile(body.tile):
                at.setdefault(cafe, []).append(name)
    assert len(at) == 3
    for cafe, names in at.items():
        guests = [n for n in names if engine.residents[n].persona.workplace.split(":")[0] != cafe]
        assert len(guests) >= 30, (cafe, len(guests))  # every cafe has its lunch crowd, not only its staff
        for name in guests:
            work = engine.residents[name].persona.workplace.split(":")[0]
            best = min(distance(centre(c), centre(work)) for c in cafes)
            assert distance(centre(cafe), centre(work)) == best, (name, work, cafe)


def test_a_step_out_of_a_dozing_residents_sight_does_not_stir_it() -> None:
    """A window of buckets spans 16x16 tiles, a vision square 9x9: a step at the far side of a
    crowded room stirred everyone dozing in it, and each looked for nothing. A step in sight, or
    one leaving it, still stirs; an object's change stirs the whole window."""
    index = SpatialIndex(load_town("default", None))
    index.add("Ada Doze", (16, 16))
    index.add("Bo Walk", (23, 23))  # the same 2x2 window of buckets, 7 tiles away on each axis
    window = _window((16, 16))[0]
    index.watchers[window] = {"Ada Doze"}
    index.move("Bo Walk", (23, 23), (23, 22))
    assert not index.stirred and index.watchers[window] == {"Ada Doze"}  # out of sight: still watching
    index.move("Bo Walk", (23, 22), (20, 20))
    assert index.stirred == {"Ada Doze"} and window not in index.watchers  # came into sight
    index.stirred.clear()
    index.watchers[window] = {"Ada Doze"}
    index.move("Bo Walk", (20, 20), (22, 20))  # walked out of sight: Ada's 'nearby' changes
    assert index.stirred == {"Ada Doze"}
    index.stirred.clear()
    index.watchers[window] = {"Ada Doze"}
    obj = next(a for a in index._object_buckets if any(k in _window((16, 16)) for k in index._object_buckets[a]))
    index.touch(0, obj)
    assert index.stirred == {"Ada Doze"}
    index.stirred.clear()
    index.add("Cy Gone", (60, 40))  # watched this window once, woken and walked off since
    index.watchers[window] = {"Ada Doze", "Cy Gone"}
    index.move("Bo Walk", (22, 20), (23, 22))  # out of Ada's sight
    assert index.stirred == {"Cy Gone"} and index.watchers[window] == {"Ada Doze"}  # the stale name is dropped


def test_the_loop_collector_grows_with_the_town_and_is_put_back_whatever_happens() -> None:
    """A tick makes a few objects per resident that live until it ends: the cyclic collector's
    first threshold grows with the town during the loop (never below the fixed floor, never
    lower than what the user set), and the previous setting comes back, even after an error."""
    import gc

    from world.engine import LOOP_GC_THRESHOLD, loop_gc_threshold, roomy_collector

    assert loop_gc_threshold(25) == LOOP_GC_THRESHOLD
    assert loop_gc_threshold(10_000) > loop_gc_threshold(1_000) >= LOOP_GC_THRESHOLD
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with pytest.raises(RuntimeError):
            with roomy_collector(loop_gc_threshold(10_000)):
                assert gc.get_threshold()[0] == loop_gc_threshold(10_000)
                raise RuntimeError("a tick failed")
        assert gc.get_threshold() == (700, 10, 10)
        gc.set_threshold(500_000, 10, 10)  # a user's own larger setting is kept
        with roomy_collector(loop_gc_threshold(25)):
            assert gc.get_threshold()[0] == 500_000
        assert gc.get_threshold() == (500_000, 10, 10)
    finally:
        gc.set_threshold(*before)
