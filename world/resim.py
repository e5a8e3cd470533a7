"""Snapshots, restore and re-simulation: how a run is resumed or forked exactly.

A snapshot is the engine's full state after a committed tick (bodies, objects, holders,
conversations, plugins) plus every mind's; re-simulation re-runs the recorded ticks after
it with the recorded model answers and commands, and imposes the recorded world when a
re-run tick differs.

:class:`Snapshots` is a collaborator of the loop (world/engine.py, ``engine.snapshots``). It
reads and restores what it is given: the clock, the bodies (and their minds), the object
states, the rules' holders and conversations, the spatial index and the plugins. To re-run
a tick it calls back into the loop (``rerun``) and checks recorded commands with ``check``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from maps.contracts import Command, Record, TickRecords
from maps.town import Town
from memory.runfile import TIMING_KEYS, Snapshot
from world.body import Body
from world.clock import Clock
from world.perception import SpatialIndex
from world.plugins import Plugin
from world.rules import Rules

Rerun = Callable[[list[Command], datetime], Awaitable[TickRecords]]  # one tick, uncommitted


class Snapshots:
    """The world's state to and from JSON, and the re-run of recorded ticks (module docstring)."""

    def __init__(self, town: Town, clock: Clock, bodies: Mapping[str, Body], objects: dict[str, str], rules: Rules,
                 index: SpatialIndex, plugins: list[Plugin], check: Callable[[Any], Command | None]) -> None:
        self.town = town
        self.clock = clock
        self.bodies = bodies
        self.objects = objects  # restored in place: the rules and perception share it
        self.rules = rules
        self.index = index  # rebuilt in place on restore
        self.plugins = plugins  # the engine's list (plugins are added after this is built)
        self.check = check  # a recorded command's data -> the command, or None if refused now

    def state(self, tick: int) -> dict[str, Any]:
        """The engine's full state after tick ``tick`` (JSON-ready): ``Engine.snapshot``."""
        return {
            "tick": tick,
            "time": self.clock.now().isoformat(),
            "clock": self.clock.snapshot(),
            "residents": {r.name: r.snapshot() for r in self.bodies.values()},
            "objects": dict(self.objects),
            "holders": dict(self.rules.holders),
            "conversations": {k: list(v) for k, v in self.rules.conversations.items()},
            "plugins": [p.snapshot() for p in self.plugins],
        }

    def restore(self, state: dict[str, Any]) -> int:
        """Put the world in the state :meth:`state` describes; returns its tick."""
        missing = set(self.bodies) ^ set(state["residents"])
        if missing:
            raise ValueError(f"snapshot residents differ from this world's: {sorted(missing)}")
        self.clock.restore(state["clock"])
        self.objects.clear()
        self.objects.update(state["objects"])
        self.rules.restore(state["holders"], state["conversations"])
        self.index.clear()
        for r in self.bodies.values():
            r.restore(state["residents"][r.name], self.town)
            self.index.add(r.name, r.tile)
        for p, s in zip(self.plugins, state.get("plugins", [])):
            if s is not None:
                p.restore(s)
        return int(state["tick"])

    def full(self, tick: int) -> Snapshot:
        """Engine state plus every mind's snapshot, as stored in the run database."""
        return Snapshot(tick=tick, time=self.clock.now(), state=self.state(tick),
                        minds={r.name: r.mind.snapshot() for r in self.bodies.values()})

    def restore_full(self, snap: Snapshot) -> int:
        """Back to a stored snapshot, minds included; returns its tick."""
        tick = self.restore(snap.state)
        for r in self.bodies.values():
            if r.name in snap.minds:
                r.mind.restore(snap.minds[r.name])
        return tick

    async def resimulate(self, ticks: Iterable[TickRecords], after: int, rerun: Rerun,
                         discard: Callable[[], None] | None = None) -> int:
        """Re-run recorded ticks after a restored snapshot (at tick ``after``), uncommitted.

        Recorded injections are re-applied at their ticks and recorded times are kept; model
        calls get the run's recorded answers (agents/llm/recorded.py). A re-run tick is
        exact when all its records (memories, plans, call ids included; latencies aside)
        equal the recorded ones. If its world records differ, the recorded positions,
        actions and object states are imposed, so the world ends in the recorded state.
        ``discard`` drops the re-run tick's pending rows (already in the store).
        Returns the number of ticks that were not exact.
        """
        diverged = 0
        produced_ids, recorded_ids = MemoryLabels(), MemoryLabels()
        for recorded in ticks:
            if recorded.tick != after + 1:
                raise ValueError(f"cannot re-simulate tick {recorded.tick} after tick {after}")
            produced = await rerun(self.recorded_commands(recorded), recorded.time)
            after = produced.tick
            if discard is not None:
                discard()
            if produced_ids.view(produced) != recorded_ids.view(recorded):
                diverged += 1
            if _world_view(produced.records) != _world_view(recorded.records):
                self.impose(recorded)
            for r in self.bodies.values():  # records of the re-run are already in the store
                r.mind.drain_records()
        return diverged

    def recorded_commands(self, recorded: TickRecords) -> list[Command]:
        """The injected commands a recorded tick accepted, checked again against this world."""
        forced = []
        for rec in recorded.records:
            if rec.kind == "inject" and rec.data.get("accepted"):
                cmd = self.check(rec.data.get("command", {}))
                if cmd is not None:
                    forced.append(cmd)
        return forced

    def impose(self, recorded: TickRecords) -> None:
        """Make the world what a recorded tick says: positions, actions, object states."""
        for rec in recorded.records:
            r = self.bodies.get(rec.resident or "")
            if rec.kind == "move" and r is not None:
                old = r.tile
                r.tile = (int(rec.data["tile"][0]), int(rec.data["tile"][1]))
                self.index.move(r.name, old, r.tile)
                r.area = self.town.area_id(r.tile)
                r.address = self.town.area_address[r.area]
            elif rec.kind == "action" and r is not None:
                r.description, r.emoji = rec.data.get("description", ""), rec.data.get("emoji", "")
                r.action_address = rec.data.get("address", "")
                if rec.data.get("event"):
                    r.event = tuple(rec.data["event"])  # type: ignore[assignment]
            elif rec.kind == "object":
                self.objects[rec.data["address"]] = rec.data["new_state"]
        for r in self.bodies.values():  # positions were imposed: everyone looks afresh
            r.attention.cache_key = None


_WORLD_KINDS = {"move", "action", "object", "chat", "inject"}


def _world_view(records: list[Record]) -> list[tuple]:
    return [(r.kind, r.resident, _norm(r.data)) for r in records if r.kind in _WORLD_KINDS]


def _full_view(records: list[Record]) -> list[tuple]:
    """Every record as stored and digested (memory.runfile.RunStore.records_digest): no latencies."""
    return [(r.kind, r.resident, _norm(json.loads(json.dumps(r.data, default=str)))) for r in records]


class MemoryLabels:
    """Memory ids of re-run ticks as (resident, tick, n-th memory of that resident in the tick).

    Ids are the store's row numbers, handed out in the order residents write; residents think
    concurrently, so that order follows which model answer came back first, and a re-run
    (answers replayed at once) numbers the same memories differently. Within one resident the
    order is fixed, so comparing labels compares what was remembered, not when it was numbered.
    Ids from before the re-run have no label and are compared as they are.
    """

    def __init__(self) -> None:
        self.labels: dict[int, str] = {}

    def view(self, tick_records: TickRecords) -> list[tuple]:
        """:func:`_full_view` of one tick, memory ids (and evidence citing them) as labels."""
        counts: dict[str, int] = {}
        for r in tick_records.records:
            if r.kind == "memory" and isinstance(r.data.get("memory_id"), int):
                n = counts[r.resident or ""] = counts.get(r.resident or "", 0) + 1
                self.labels[r.data["memory_id"]] = f"{r.resident}@{tick_records.tick}#{n}"
        return _full_view([self._relabel(r) for r in tick_records.records])

    def _relabel(self, rec: Record) -> Record:
        if rec.kind != "memory":
            return rec
        data = dict(rec.data)
        data["memory_id"] = self.labels.get(data.get("memory_id"), data.get("memory_id"))
        data["evidence"] = [self.labels.get(e, e) for e in data.get("evidence") or []]
        return rec.model_copy(update={"data": data})


def _norm(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _norm(v)) for k, v in value.items() if k not in TIMING_KEYS))
    if isinstance(value, (list, tuple)):
        return tuple(_norm(v) for v in value)
    return value
