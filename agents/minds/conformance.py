"""The conformance check every Mind must pass, and the minimal stand-in world it runs in.

:func:`check_mind` (PettingZoo's api_test for minds) drives a mind built by a MindFactory
through a few game hours of a three-house demo town and checks the Mind contract:
decide_fast/decide give Intents, drain_records gives Records, a snapshot survives JSON and
restores to the same future decisions, and the mind never changes what it was shown.

The Sandbox below is also what tests use to drive minds without a map.

Places are addresses only (no tiles): a resident is always in one arena; walking to
another arena takes ``walk_ticks`` ticks. Residents in the same arena see each other's
actions and the states of the arena's objects, can talk (a say is delivered into the
listener's next Perception.heard, as the engine does), and are 'nearby'. It follows the
Perception/Intent contract exactly, so a mind that behaves here behaves in the engine; the
real rules (paths, vision radius, refusals) are world/'s.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from maps.contracts import (ChatLine, Intent, LanguageModel, Mind, MindFactory, MindOptions, PerceivedEvent,
                            Perception, Persona, Record, line_of, not_my_turn)
from memory.spatial import arena_of, split_address
from memory.runfile import copy_file


@dataclass
class Body:
    name: str
    arena: str
    dest: str | None = None
    eta: int = 0
    pending_use: tuple[str, str] | None = None
    description: str = "idle"
    event: tuple[str, str, str] = ("", "is", "idle")
    asleep: bool = False
    arrived: bool = False
    heard: list[ChatLine] = field(default_factory=list)
    unsaid: list[ChatLine] = field(default_factory=list)
    whispers: list[str] = field(default_factory=list)
    announcements: list[str] = field(default_factory=list)
    seen: dict[str, tuple[str, str]] = field(default_factory=dict)


class Sandbox:
    """Steps a few minds through game time on a place list."""

    def __init__(self, minds: dict[str, Mind], places: list[str], start: datetime, *,
                 spawn: dict[str, str], seconds_per_tick: int = 10, walk_ticks: int = 6):
        self.minds = dict(sorted(minds.items()))
        self.places = list(places)
        self.objects = {a: "idle" for a in places if split_address(a)[2]}
        self.time = start
        self.tick = -1
        self.dt = timedelta(seconds=seconds_per_tick)
        self.walk_ticks = walk_ticks
        self.bodies = {n: Body(n, arena_of(spawn[n]), event=(n, "is", "idle")) for n in self.minds}
        self.records: list[Record] = []
        self.chat: list[ChatLine] = []
        self.refused: list[str] = []
        self._spoke: set[str] = set()  # who said a line this tick, and who was spoken to (by whom)
        self._addressed: dict[str, str] = {}
        self._talks: dict[frozenset[str], int] = {}  # the last tick a line passed between two

    def _perceive(self, body: Body) -> Perception:
        here = [b for b in self.bodies.values() if b.arena == body.arena and b is not body]
        sights = [(b.name, b.event[1], b.event[2], f"{b.name} is {b.description}") for b in here]
        sights += [(a, "is", s, f"{split_address(a)[2]} is {s}") for a, s in self.objects.items() if arena_of(a) == body.arena]
        events = []
        for subject, pred, obj, text in sights:
            if body.seen.get(subject) != (pred, obj):
                body.seen[subject] = (pred, obj)
                events.append(PerceivedEvent(subject=subject, predicate=pred, object=obj, description=text,
                                             address=body.arena, resting=subject in self.objects and obj == "idle"))
        p = Perception(
            resident=body.name, tick=self.tick, time=self.time, tile=(0, 0), address=body.arena,
            events=events[:3], nearby=sorted(b.name for b in here), heard=body.heard, unsaid=body.unsaid,
            whispers=body.whispers, announcements=body.announcements, arrived=body.arrived,
            known_places=self.places if self.tick == 0 else [],
        )
        body.heard, body.unsaid, body.whispers, body.announcements, body.arrived = [], [], [], [], False
        return p

    def _apply(self, body: Body, intent: Intent, nearby: list[str]) -> None:
        if intent.description:
            body.description = intent.description
            body.event = tuple(intent.event) if intent.event else (body.name, "is", intent.description)
        if intent.kind in ("go", "use"):
            target = intent.target or ""
            if target not in self.places and arena_of(target) not in self.places:
                self.refused.append(f"{body.name}: unknown place {target!r}")
                return
            body.asleep = False
            if intent.kind == "use":
                body.pending_use = (target, intent.object_state or "in use")
            if arena_of(target) == body.arena:
                self._arrive(body)
            else:
                body.dest, body.eta = arena_of(target), self.tick + self.walk_ticks
        elif intent.kind == "say":
            line = line_of(body.name, intent)
            if intent.to not in nearby or not intent.utterance:
                self.refused.append(f"{body.name}: {intent.to} not in view")
                body.unsaid.append(line)
            elif not_my_turn(body.name, line.listener, self._spoke, self._addressed,
                             self._talks.get(frozenset((body.name, line.listener))), self.tick):  # as the world's rules
                body.unsaid.append(line)
            else:
                self.bodies[line.listener].heard.append(line)
                self.chat.append(line)
                self._spoke.add(body.name)
                self._addressed.setdefault(line.listener, body.name)
                self._talks[frozenset((body.name, line.listener))] = self.tick
        elif intent.kind == "sleep":
            body.asleep = True

    def _arrive(self, body: Body) -> None:
        if body.dest:
            body.arena = body.dest
        body.dest, body.arrived = None, True
        if body.pending_use:
            target, state = body.pending_use
            if target in self.objects:
                self.objects[target] = state
            body.pending_use = None

    async def step(self) -> None:
        self.tick += 1
        if self.tick > 0:
            self.time += self.dt
        for body in self.bodies.values():
            if body.dest and self.tick >= body.eta:
                self._arrive(body)
        perceptions = {n: self._perceive(b) for n, b in self.bodies.items()}
        intents = await self._decide(perceptions)
        self._spoke, self._addressed = set(), {}
        for name, body in self.bodies.items():  # in name order, as the engine applies intents
            self._apply(body, intents[name] or Intent(), perceptions[name].nearby)
        for name, mind in self.minds.items():
            self.records.extend(self._drain(name, mind))

    async def _decide(self, perceptions: dict[str, Perception]) -> dict[str, Intent | None]:
        """Each mind's intent: decide_fast, then the slow decisions of those that need one, together."""
        intents: dict[str, Intent | None] = {n: m.decide_fast(perceptions[n]) for n, m in self.minds.items()}
        slow = [n for n, i in intents.items() if i is None]
        if slow:
            answers = await asyncio.gather(*(self.minds[n].decide(perceptions[n]) for n in slow))
            intents.update(zip(slow, answers))
        return intents

    def _drain(self, name: str, mind: Mind) -> list[Record]:
        return mind.drain_records()

    async def run(self, until: datetime) -> None:
        while self.time + self.dt < until:
            await self.step()


# ---------------------------------------------------------------------------------------------
# A three-house demo town (tests, and the LLM benchmark when no map is wanted)
# ---------------------------------------------------------------------------------------------

DEMO_PLACES = [
    "Hobbs Cafe", "Hobbs Cafe:counter", "Hobbs Cafe:counter:coffee machine", "Hobbs Cafe:counter:cash register",
    "Hobbs Cafe:kitchen", "Hobbs Cafe:kitchen:stove", "Hobbs Cafe:kitchen:oven",
    "Town Library", "Town Library:reading room", "Town Library:reading room:desk",
    "Town Library:reading room:bookshelf",
    "Johnson Park", "Johnson Park:garden", "Johnson Park:garden:bench",
]


def demo_home(name: str) -> list[str]:
    house = f"{name.split()[0]}'s House"
    return [house, f"{house}:bedroom", f"{house}:bedroom:bed", f"{house}:kitchen", f"{house}:kitchen:stove",
            f"{house}:kitchen:table"]


def demo_persona(name: str, workplace: str, occupation: str, *, wake: int = 7, sleep: int = 22, **extra):
    return Persona(
        name=name, age=extra.pop("age", 30), traits=extra.pop("traits", ["friendly", "curious"]),
        occupation=occupation, workplace=workplace, home=f"{name.split()[0]}'s House",
        wake_hour=wake, sleep_hour=sleep, **extra,
    )


# ---------------------------------------------------------------------------------------------
# The conformance check
# ---------------------------------------------------------------------------------------------


class ConformanceError(AssertionError):
    """A mind broke the Mind contract; the message says which rule and where."""


class _CheckedSandbox(Sandbox):
    """The sandbox, checking each answer of each mind against the contract as it steps."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.decisions: list[tuple[int, str, str]] = []

    async def _decide(self, perceptions: dict[str, Perception]) -> dict[str, Intent | None]:
        """One mind at a time, each answer checked against the contract as it comes."""
        shown = {n: p.model_dump_json() for n, p in perceptions.items()}
        intents: dict[str, Intent | None] = {}
        for name, mind in self.minds.items():
            intent = mind.decide_fast(perceptions[name])
            if intent is None:
                intent = await mind.decide(perceptions[name])
                _expect(isinstance(intent, Intent), f"tick {self.tick}: {name}.decide gave {type(intent).__name__}, not an Intent")
            _expect(isinstance(intent, Intent), f"tick {self.tick}: {name}.decide_fast gave {type(intent).__name__}, not an Intent or None")
            _expect(perceptions[name].model_dump_json() == shown[name],
                    f"tick {self.tick}: {name} changed the Perception it was shown (world state)")
            intents[name] = intent
            self.decisions.append((self.tick, name, intent.model_dump_json()))
        return intents

    def _drain(self, name: str, mind: Mind) -> list[Record]:
        records = mind.drain_records()
        _expect(isinstance(records, list) and all(isinstance(r, Record) for r in records),
                f"tick {self.tick}: {name}.drain_records gave something other than a list of Records")
        return records


def _expect(ok: bool, message: str) -> None:
    if not ok:
        raise ConformanceError(message)


def _demo_town(names: list[str]) -> tuple[list[Persona], list[str], dict[str, str]]:
    personas = [demo_persona(names[0], "Hobbs Cafe:counter", "barista"),
                demo_persona(names[1], "Town Library:reading room", "librarian", wake=6, sleep=21)]
    places = DEMO_PLACES + [a for n in names for a in demo_home(n)]
    spawn = {p.name: f"{p.home}:bedroom" for p in personas}
    return personas, places, spawn


def check_mind(
    factory: MindFactory | Callable[..., Mind],
    llm: LanguageModel | None,
    workdir: Path,
    *,
    start: datetime = datetime(2023, 2, 13, 6, 30),
    hours: float = 3.0,
    snapshot_after: float = 1.5,
) -> list[tuple[int, str, str]]:
    """Run two minds from ``factory`` in the demo town and check the Mind contract.

    ``factory(persona, llm, run_db, options)`` builds a mind (as the engine calls it);
    ``workdir`` holds the run files. At ``snapshot_after`` hours each mind's snapshot must
    survive a JSON round trip and, restored into a fresh mind on a copy of its run file, give
    the same decisions as the original for the rest of the run. Raises ConformanceError on
    the first broken rule; returns the decisions (tick, name, intent JSON) for more checks.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    personas, places, spawn = _demo_town(["Ayesha Khan", "Klaus Mueller"])
    options = MindOptions(places=places, start_time=start)
    minds = {p.name: factory(p, llm, workdir / f"a-{i}.db", options) for i, p in enumerate(personas)}
    for name, mind in minds.items():
        _expect(isinstance(mind, Mind), f"{type(mind).__name__} lacks a method of the Mind protocol")
        _expect(mind.name == name, f"the mind built for {name!r} calls itself {mind.name!r}")
    world = _CheckedSandbox(minds, places, start, spawn=spawn)
    asyncio.run(world.run(start + timedelta(hours=snapshot_after)))
    _expect(bool(world.decisions), "no decisions were made")
    snapshots = {name: _json_snapshot(name, mind) for name, mind in minds.items()}
    clones = {}
    for i, p in enumerate(personas):
        copy_file(workdir / f"a-{i}.db", workdir / f"b-{i}.db")  # consistent while the mind holds it open
        clones[p.name] = factory(p, llm, workdir / f"b-{i}.db", options)
        clones[p.name].restore(snapshots[p.name])
    twin = _CheckedSandbox(clones, places, start, spawn=spawn)
    for attr in ("objects", "time", "tick", "bodies", "chat", "refused"):
        setattr(twin, attr, copy.deepcopy(getattr(world, attr)))
    _expect_same_rest(world, twin, start + timedelta(hours=hours))
    return world.decisions


def _json_snapshot(name: str, mind: Mind) -> dict:
    """The mind's snapshot after a JSON round trip (what a run file keeps), or why it is not one."""
    state = mind.snapshot()
    _expect(isinstance(state, dict), f"{name}.snapshot gave {type(state).__name__}, not a dict")
    try:
        return json.loads(json.dumps(state))
    except (TypeError, ValueError) as exc:
        raise ConformanceError(f"{name}.snapshot is not JSON: {exc}") from exc


def _expect_same_rest(world: _CheckedSandbox, twin: _CheckedSandbox, until: datetime) -> None:
    """Run the original and its restored twin to ``until``: every later decision must be the same."""
    split = len(world.decisions)
    asyncio.run(world.run(until))
    asyncio.run(twin.run(until))
    after = world.decisions[split:]
    _expect(bool(after), "no decisions after the snapshot")
    for ours, theirs in zip(after, twin.decisions):
        _expect(ours == theirs, f"after restore, decision {theirs} differs from the original's {ours}")
    _expect(len(after) == len(twin.decisions), "after restore, a different number of decisions")
