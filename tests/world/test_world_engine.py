"""The tick engine: walking, perception, intents, injections, plugins, night, determinism."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from maps.contracts import Intent, MindOptions, Perception, Persona
from agents.minds.routine import make_mind
from maps.town import load_town
from maps.contracts import Record
from memory.runfile import RunStore
from world.engine import Engine
from world.pathfinding import PathFinder

START = datetime(2026, 2, 13, 7, 0)


@pytest.fixture(scope="module")
def town():
    return load_town("default")


class Puppet:
    """A mind that does what the test says and remembers what it perceived."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.next: list[Intent] = []
        self.seen: list[Perception] = []
        self.slow = False

    def decide_fast(self, p: Perception) -> Intent | None:
        self.seen.append(p)
        if self.slow:
            return None
        return self.next.pop(0) if self.next else Intent()

    async def decide(self, p: Perception) -> Intent:
        await asyncio.sleep(0)
        return self.next.pop(0) if self.next else Intent()

    def drain_records(self) -> list[Record]:
        return []

    def snapshot(self) -> dict:
        return {}

    def restore(self, state: dict) -> None:
        pass


def persona(name: str, home: str = "Oak House", work: str = "Willow Cafe:kitchen", **kw) -> Persona:
    return Persona(name=name, age=30, occupation="tester", workplace=work, home=home, **kw)


def puppet_world(town, names: list[str], **kw) -> tuple[Engine, dict[str, Puppet]]:
    minds = {n: Puppet(n) for n in names}
    return Engine(town, [persona(n) for n in names], minds, start=START, **kw), minds


def step(engine: Engine):
    return asyncio.run(engine.step())


def routine_world(town, seed: int = 0, store: RunStore | None = None, start: datetime = START) -> Engine:
    opts = MindOptions(places=town.addresses(), seed=seed)
    minds = {p.name: make_mind(p, None, None, opts) for p in town.residents}
    return Engine(town, town.residents, minds, start=start, store=store)


# --------------------------------------------------------------------------- path-finding


def test_path_goes_around_a_wall() -> None:
    grid = np.ones((5, 7), dtype=bool)
    grid[0:4, 3] = False  # a wall with a gap at the bottom row
    finder = PathFinder(grid)
    path = finder.path((0, 0), (6, 0))
    assert path[-1] == (6, 0)
    assert all(grid[y, x] for x, y in path)
    assert (3, 4) in path  # through the gap
    assert len(path) == 6 + 2 * 4  # the shortest detour
    steps = [(0, 0), *path]
    assert all(abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1 for a, b in zip(steps, steps[1:]))
    assert finder.path((0, 0), (6, 0)) is path  # cached
    grid2 = grid.copy()
    grid2[4, 3] = False
    with pytest.raises(ValueError, match="no walkable path"):
        PathFinder(grid2).path((0, 0), (6, 0))


def test_residents_walk_one_tile_per_tick_through_doors(town) -> None:
    engine, minds = puppet_world(town, ["Walker"])
    minds["Walker"].next = [Intent(kind="go", target="Willow Cafe:kitchen:stove")]
    goal = town.resolve("Willow Cafe:kitchen:stove")[0]
    tiles = [engine.residents["Walker"].tile]
    for _ in range(200):
        step(engine)
        tiles.append(engine.residents["Walker"].tile)
        if tiles[-1] == goal:
            break
    assert tiles[-1] == goal
    assert all(abs(a[0] - b[0]) + abs(a[1] - b[1]) <= 1 for a, b in zip(tiles, tiles[1:]))
    assert all(town.is_walkable(t) for t in tiles)
    step(engine)
    assert minds["Walker"].seen[-1].arrived
    assert minds["Walker"].seen[-1].address == "Willow Cafe:kitchen"


# --------------------------------------------------------------------------- perception


def _room_tiles(town, address: str) -> list[tuple[int, int]]:
    return town.resolve(address)


def test_vision_radius_and_same_arena(town) -> None:
    engine, minds = puppet_world(town, ["A", "B", "C", "D"])
    dining = town.sectors["Willow Cafe"].arenas["dining room"].rect
    kitchen = town.sectors["Willow Cafe"].arenas["kitchen"].rect
    a = (dining.x + 1, dining.y + dining.h - 1)  # the dining room's row next to the kitchen wall
    engine.place("A", a)
    engine.place("B", (a[0] + 3, a[1] - 1))  # same room, within 4
    engine.place("D", (a[0] + 6, a[1]))  # same room, too far
    # the kitchen is behind the wall next to the dining room: close, but another arena
    near_kitchen = min(town.resolve(f"Willow Cafe:kitchen"), key=lambda t: abs(t[0] - a[0]) + abs(t[1] - a[1]))
    assert max(abs(near_kitchen[0] - a[0]), abs(near_kitchen[1] - a[1])) <= 4
    engine.place("C", near_kitchen)
    assert kitchen.contains_tile(near_kitchen)
    step(engine)
    p = minds["A"].seen[-1]
    assert p.nearby == ["B"]
    assert p.address == "Willow Cafe:dining room"
    subjects = {e.subject for e in p.events}
    assert "C" not in subjects and "D" not in subjects
    assert all(e.address.startswith("Willow Cafe:dining room") or e.subject == "B" for e in p.events)


def test_attention_bandwidth_keeps_the_three_nearest_new_events(town) -> None:
    engine, minds = puppet_world(town, ["A"])
    dining = town.sectors["Willow Cafe"].arenas["dining room"].rect
    spot = (dining.x + 5, dining.y + 1)
    engine.place("A", spot)
    step(engine)
    first = minds["A"].seen[-1].events
    assert len(first) == 3
    assert [e.distance for e in first] == sorted(e.distance for e in first)
    everything = set()
    for _ in range(5):
        everything |= {e.subject for e in minds["A"].seen[-1].events}
        step(engine)
    visible = [addr for _, addr, _ in engine.sight.visible(spot)]
    assert len(visible) > 3
    assert everything == set(visible)  # the rest arrive on later ticks, three at a time
    step(engine)
    assert minds["A"].seen[-1].events == []  # nothing new: nothing perceived
    # a change is news again
    stove = "Willow Cafe:dining room:espresso machine"
    assert stove in visible
    engine.submit({"kind": "object", "address": stove, "state": "hissing loudly"})
    step(engine)  # applied at the start of the tick, so seen in the same tick
    events = minds["A"].seen[-1].events
    assert [(e.subject, e.object) for e in events] == [(stove, "hissing loudly")]


def test_retention_skips_recently_perceived_events(town) -> None:
    engine, minds = puppet_world(town, ["A"])
    dining = town.sectors["Willow Cafe"].arenas["dining room"].rect
    engine.place("A", (dining.x + 5, dining.y + 1))
    for _ in range(6):
        step(engine)
    machine = "Willow Cafe:dining room:espresso machine"
    engine.submit({"kind": "object", "address": machine, "state": "on"})
    step(engine)
    assert [e.object for e in minds["A"].seen[-1].events] == ["on"]
    engine.submit({"kind": "object", "address": machine, "state": "off"})
    step(engine)
    # 'off' was among the last five perceived events: skipped although it changed back
    assert minds["A"].seen[-1].events == []


def test_an_object_in_its_default_state_is_marked_at_rest(town) -> None:
    """The world tells a mind which sights are objects at rest (the map's default state), so it
    can rate them as the original code rates an idle object: without asking the model."""
    engine, minds = puppet_world(town, ["A"])
    dining = town.sectors["Willow Cafe"].arenas["dining room"].rect
    engine.place("A", (dining.x + 5, dining.y + 1))
    machine = "Willow Cafe:dining room:espresso machine"
    default = town.default_states()[machine]
    seen = []
    for _ in range(6):
        step(engine)
        seen += minds["A"].seen[-1].events
    objects = [e for e in seen if e.subject in town.default_states()]
    assert objects and all(e.resting for e in objects)
    engine.submit({"kind": "object", "address": machine, "state": "hissing loudly"})
    step(engine)
    [event] = minds["A"].seen[-1].events
    assert (event.object, event.resting) == ("hissing loudly", False)
    assert default != "hissing loudly"


def test_chat_reaches_the_listener_only_when_in_view(town) -> None:
    engine, minds = puppet_world(town, ["A", "B", "C"])
    dining = town.sectors["Willow Cafe"].arenas["dining room"].rect
    engine.place("A", (dining.x + 1, dining.y + 1))
    engine.place("B", (dining.x + 2, dining.y + 1))
    engine.place("C", town.spawns["Main Street"].tile)
    minds["A"].next = [Intent(kind="say", to="B", utterance="Hello B"), Intent(kind="say", to="C", utterance="Hi C")]
    tr = step(engine)
    chats = [r for r in tr.records if r.kind == "chat"]
    assert [c.data["text"] for c in chats] == ["Hello B"] and chats[0].data["conversation_id"]
    tr = step(engine)
    assert minds["B"].seen[-1].heard[0].text == "Hello B"
    notes = [r.data["text"] for r in tr.records if r.kind == "note"]
    assert any("C is not in view" in n for n in notes)
    assert not any(r.kind == "chat" for r in tr.records)


def test_invalid_intents_are_refused_and_change_nothing(town) -> None:
    engine, minds = puppet_world(town, ["A"])
    before = engine.snapshot()
    minds["A"].next = [Intent(kind="go", target="Atlantis"), Intent(kind="use", target="Willow Cafe:kitchen")]
    tr1 = step(engine)
    tr2 = step(engine)
    notes = [r.data["text"] for tr in (tr1, tr2) for r in tr.records if r.kind == "note"]
    assert "no sector 'Atlantis'" in notes[0]
    assert "is a place, not an object" in notes[1]
    after = engine.snapshot()
    assert after["residents"]["A"]["tile"] == before["residents"]["A"]["tile"]
    assert after["objects"] == before["objects"]


def use_until_set(engine: Engine, mind: Puppet, target: str, state: str, description: str, ticks: int = 80) -> None:
    """Walk ``mind``'s resident to ``target`` and use it, until the object shows ``state``."""
    mind.next = [Intent(kind="use", target=target, object_state=state, description=description)]
    for _ in range(ticks):
        step(engine)
        if engine.objects[target] == state:
            break
    assert engine.objects[target] == state


def test_using_an_object_sets_and_then_releases_its_state(town) -> None:
    engine, minds = puppet_world(town, ["Cook"])
    stove = "Oak House:kitchen:stove"
    use_until_set(engine, minds["Cook"], stove, "cooking eggs", "cooking")
    assert engine.residents["Cook"].tile in town.objects[stove].tiles
    minds["Cook"].next = [Intent(kind="go", target="Oak House:living room")]
    tr = step(engine)
    assert engine.objects[stove] == "off"
    assert any(r.kind == "object" and r.data["new_state"] == "off" for r in tr.records)


def test_a_sleeper_keeps_its_bed_and_a_waiter_lets_go(town) -> None:
    """Sleeping used to release the bed the tick after lying down: the bed read 'idle' all night."""
    engine, minds = puppet_world(town, ["Sleeper"])
    bed = next(a for a in town.objects if a.startswith("Oak House:") and a.endswith(":bed"))
    use_until_set(engine, minds["Sleeper"], bed, "being slept in", "sleeping")
    minds["Sleeper"].next = [Intent(kind="sleep", description="sleeping") for _ in range(5)]
    for _ in range(5):
        step(engine)
    assert engine.residents["Sleeper"].asleep and engine.objects[bed] == "being slept in"
    minds["Sleeper"].next = [Intent(kind="wait", description="waiting")]
    step(engine)
    assert engine.objects[bed] == town.objects[bed].default_state


# --------------------------------------------------------------------------- injections


def test_bad_injections_are_refused_and_leave_state_untouched(town) -> None:
    engine, _ = puppet_world(town, ["A", "B"])
    twin, _ = puppet_world(town, ["A", "B"])
    bad = [
        {"kind": "whisper", "resident": "Zed", "text": "hello"},
        {"kind": "object", "address": "Willow Cafe:kitchen", "state": "burning"},
        {"kind": "object", "address": "Willow Cafe:kitchen:stoove", "state": "burning"},
        {"kind": "announce", "text": "   "},
        {"kind": "teleport", "resident": "A"},
        "fly A to the moon",
    ]
    results = [engine.submit(c) for c in bad]
    assert not any(r.accepted for r in results)
    assert "no resident named 'Zed'" in results[0].message
    assert "is a place, not an object" in results[1].message
    assert "did you mean Willow Cafe:kitchen:stove" in results[2].message
    assert "text" in results[3].message
    assert "kind" in results[4].message or "teleport" in results[4].message
    assert "unknown command 'fly'" in results[5].message
    tr = step(engine)
    step(twin)
    assert engine.snapshot() == twin.snapshot()
    refused = [r for r in tr.records if r.kind == "inject"]
    assert len(refused) == len(bad) and not any(r.data["accepted"] for r in refused)


def test_good_injections_reach_residents_next_tick(town) -> None:
    engine, minds = puppet_world(town, ["A", "B"])
    ok = engine.submit("whisper A You should visit the park")
    assert ok.accepted and ok.tick == 0
    assert engine.submit({"kind": "announce", "text": "Fair at noon"}).accepted
    assert engine.submit("object Willow Cafe:kitchen:stove is burning").accepted
    tr = step(engine)
    assert engine.objects["Willow Cafe:kitchen:stove"] == "is burning"
    assert minds["A"].seen[-1].whispers == ["You should visit the park"]
    assert minds["B"].seen[-1].whispers == []
    assert minds["B"].seen[-1].announcements == ["Fair at noon"]
    kinds = [(r.kind, r.data.get("accepted")) for r in tr.records if r.kind in ("inject", "object")]
    assert kinds[:2] == [("inject", True), ("inject", True)] and ("object", None) in kinds
    step(engine)
    assert minds["A"].seen[-1].whispers == []  # delivered once


def test_submit_is_thread_safe(town) -> None:
    import threading

    engine, _ = puppet_world(town, ["A"])
    threads = [threading.Thread(target=lambda: [engine.submit({"kind": "announce", "text": "x"}) for _ in range(50)])
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tr = step(engine)
    assert sum(1 for r in tr.records if r.kind == "inject") == 200


# --------------------------------------------------------------------------- plugins, slow minds


class Clinic:
    commands: dict = {}  # serves no injected commands

    def __init__(self) -> None:
        self.visits = 0

    def check_command(self, cmd) -> str | None:
        return "serves none"

    def handle_command(self, cmd) -> None:
        raise AssertionError("never called: it serves no command")

    async def on_tick(self, view) -> list[Record]:
        out = []
        if view.tick == 1:
            view.deliver_memory("A", "The clinic called about your results")
            view.deliver_whisper("A", "I should call back")
            view.set_object_state("Riverside Clinic:doctor's office:patient records computer", "unlocked", by="clinic")
            self.visits += 1
            out.append(Record(kind="encounter", resident="A", data={"encounter_id": "e1", "step": "start"}))
        return out

    def snapshot(self) -> dict:
        return {"visits": self.visits}

    def restore(self, state: dict) -> None:
        self.visits = state["visits"]


def test_plugins_see_the_world_and_deliver_to_residents(town) -> None:
    engine, minds = puppet_world(town, ["A"])
    clinic = Clinic()
    engine.add_plugin(clinic)
    seen: list[int] = []
    engine.add_listener(lambda tr: seen.append(tr.tick))
    step(engine)
    tr = step(engine)
    assert any(r.kind == "encounter" for r in tr.records)
    assert engine.objects["Riverside Clinic:doctor's office:patient records computer"] == "unlocked"
    step(engine)
    p = minds["A"].seen[-1]
    assert p.memories == ["The clinic called about your results"] and p.whispers == ["I should call back"]
    assert engine.snapshot()["plugins"] == [{"visits": 1}]
    assert seen == [0, 1, 2]


def test_slow_decisions_run_concurrently_and_apply_in_name_order(town) -> None:
    engine, minds = puppet_world(town, ["Bea", "Al"])
    for m in minds.values():
        m.slow = True
        m.next = [Intent(kind="wait", description=f"{m.name} waits")]
    tr = step(engine)
    actions = [r.resident for r in tr.records if r.kind == "action"]
    assert actions == ["Al", "Bea"]
    assert engine.stats["decide_calls"] == 2


# --------------------------------------------------------------------------- night, determinism


def test_night_fast_forward_jumps_to_the_first_wake_up(town) -> None:
    engine = routine_world(town, start=datetime(2026, 2, 13, 20, 0))
    jumps = []
    engine.add_listener(lambda tr: jumps.extend((tr.time, r.data) for r in tr.records if "skipped_s" in r.data))
    asyncio.run(engine.run(datetime(2026, 2, 14, 8, 0)))
    assert engine.stats["jumps"] == 1 and len(jumps) == 1
    # awake 20:00-23:00 and 05:00-08:00 in ten-second ticks (plus a few minutes' walk to bed
    # in one's own bedroom), the night in one jump
    assert engine.stats["ticks"] <= 2 * 3 * 360 + 60
    assert jumps[0][0] == datetime(2026, 2, 14, 5, 0)
    earliest = min(p.wake_hour for p in town.residents)
    assert engine.clock.now() >= datetime(2026, 2, 14, earliest, 0)
    assert not all(r.asleep for r in engine.residents.values())  # the town woke up


def test_the_routine_town_lives_a_plausible_day(town) -> None:
    engine = routine_world(town)
    hours: dict[int, dict[str, str]] = {}
    engine.add_listener(lambda tr: hours.setdefault(tr.time.hour, {}).update(
        {n: r["address"] for n, r in engine.state()["residents"].items()}))
    asyncio.run(engine.run(datetime(2026, 2, 13, 16, 0)))
    workers = {p.name: p.workplace.split(":")[0] for p in town.residents}
    at_work = [n for n, addr in hours[10].items() if addr.split(":")[0] == workers[n]]
    assert len(at_work) >= 6
    assert engine.store is None


def _record_stream(tmp: Path, seed: int) -> list:
    store = RunStore.create(tmp, {"seed": seed})
    engine = routine_world(load_town("default"), seed=seed, store=store)
    asyncio.run(engine.run(START + timedelta(hours=3)))
    out = [t.model_dump() for t in store.iter_ticks()]
    store.close()
    return out


def test_same_seed_same_run(tmp_path: Path) -> None:
    a = _record_stream(tmp_path / "a", 7)
    b = _record_stream(tmp_path / "b", 7)
    assert a == b
    assert sum(len(t["records"]) for t in a) > 400  # three hours of moves, actions, greetings (489 on 2026-11-27)
    c = _record_stream(tmp_path / "c", 8)
    assert c != a


def test_a_mind_answering_garbage_does_not_stop_the_town(town) -> None:
    engine, minds = puppet_world(town, ["A", "B"])
    minds["A"].next = [{"kind": "teleport"}]  # type: ignore[list-item]
    minds["B"].next = [{"kind": "wait", "description": "waiting for the bus"}]  # type: ignore[list-item]
    tr = step(engine)
    assert any(r.kind == "note" and r.resident == "A" and "invalid intent" in r.data["text"] for r in tr.records)
    assert engine.residents["B"].description == "waiting for the bus"
    assert engine.submit({"kind": "announce", "text": "hi"}).tick == 1


class Recording:
    """Wraps a mind and keeps what it perceived."""

    def __init__(self, mind, log: list) -> None:
        self.mind, self.name, self.log = mind, mind.name, log

    def decide_fast(self, p: Perception):
        self.log.append((p.tick, p.resident, [(e.subject, e.predicate, e.object, round(e.distance, 3)) for e in p.events],
                         list(p.nearby), p.address))
        return self.mind.decide_fast(p)

    async def decide(self, p: Perception):
        return await self.mind.decide(p)

    def drain_records(self):
        return self.mind.drain_records()

    def snapshot(self):
        return self.mind.snapshot()

    def restore(self, state):
        self.mind.restore(state)


def test_incremental_perception_equals_looking_at_everything_every_tick() -> None:
    town = load_town("default", "residents25.json")
    logs: list[list] = []
    for cache in (True, False):
        log: list = []
        opts = MindOptions(places=town.addresses(), seed=5)
        minds = {p.name: Recording(make_mind(p, None, None, opts), log) for p in town.residents}
        engine = Engine(town, town.residents, minds, start=START, perception_cache=cache)
        engine.submit({"kind": "object", "address": "Willow Cafe:kitchen:stove", "state": "burning"})
        asyncio.run(engine.run(START + timedelta(hours=3)))
        logs.append(log)
    assert sum(len(entry[2]) for entry in logs[0]) > 300  # plenty was perceived
    assert logs[0] == logs[1]
