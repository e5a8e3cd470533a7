"""Snapshots, restore and re-simulation: how a run is resumed or forked exactly.

A snapshot is the engine's full state after a committed tick (bodies, objects, holders,
conversations, plugins) plus every mind's; re-simulation re-runs the recorded ticks after
it with the recorded model answers and commands, and imposes the recorded world when a
re-run tick differs. Mixed into the Engine (world/engine.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from maps.contracts import Record, TickRecords
from memory.runfile import TIMING_KEYS, Snapshot
from world.perception import SpatialIndex


class Snapshots:
    """The snapshot half of the Engine (it provides the state, _advance and the registry)."""

    def snapshot(self) -> dict[str, Any]:
        """The engine's full state after the last committed tick (JSON-ready).

        A superset of :meth:`state`: what a viewer needs plus every internal needed to go on.
        """
        return {
            "tick": self.tick,
            "time": self.clock.now().isoformat(),
            "clock": self.clock.snapshot(),
            "residents": {r.name: r.snapshot() for r in self._order},
            "objects": dict(self.objects),
            "holders": dict(self.holders),
            "conversations": {k: list(v) for k, v in self.conversations.items()},
            "plugins": [p.snapshot() for p in self._plugins],
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Put the engine in the state a :meth:`snapshot` describes."""
        missing = set(self.residents) ^ set(state["residents"])
        if missing:
            raise ValueError(f"snapshot residents differ from this world's: {sorted(missing)}")
        self.tick = int(state["tick"])
        self._accepting_tick = self.tick + 1
        self.clock.restore(state["clock"])
        self.objects = dict(state["objects"])
        self.holders = dict(state["holders"])
        self.conversations = {k: list(v) for k, v in state["conversations"].items()}
        self.index = SpatialIndex(self.town)
        for r in self._order:
            r.restore(state["residents"][r.name], self.town)
            self.index.add(r.name, r.tile)
        for p, s in zip(self._plugins, state.get("plugins", [])):
            if s is not None:
                p.restore(s)

    def full_snapshot(self) -> Snapshot:
        """Engine state plus every mind's snapshot, as stored in the run database."""
        return Snapshot(
            tick=self.tick, time=self.clock.now(), state=self.snapshot(),
            minds={r.name: r.mind.snapshot() for r in self._order},
        )

    def save_snapshot(self) -> None:
        """Store a snapshot of the last committed tick (e.g. at the end of a run or on Ctrl-C)."""
        if self.store is not None and self.tick >= 0 and not self._in_tick and self._resim is None:
            self.store.save_snapshot(self.full_snapshot())

    def restore_full(self, snap: Snapshot) -> None:
        self.restore(snap.state)
        for r in self._order:
            if r.name in snap.minds:
                r.mind.restore(snap.minds[r.name])

    async def resimulate(self, ticks: Iterable[TickRecords]) -> int:
        """Re-run recorded ticks after a restored snapshot, without committing them.

        Recorded injections are re-applied at their ticks and recorded times are kept; model
        calls get the run's recorded answers (agents/llm/recorded.py). A re-run tick is
        exact when all its records (memories, plans, call ids included; latencies aside)
        equal the recorded ones. If its world records differ, the recorded positions,
        actions and object states are imposed, so the world ends in the recorded state.
        Returns the number of ticks that were not exact.
        """
        diverged = 0
        for recorded in ticks:
            if recorded.tick != self.tick + 1:
                raise ValueError(f"cannot re-simulate tick {recorded.tick} after tick {self.tick}")
            forced = []
            for rec in recorded.records:
                if rec.kind == "inject" and rec.data.get("accepted"):
                    cmd, _ = self.commands.check(rec.data.get("command", {}), self._facts())
                    if cmd is not None:
                        forced.append(cmd)
            produced = await self._advance(commit=False, forced=forced, forced_time=recorded.time)
            if self.store is not None:
                self.store.discard_pending()  # its answers are already in the store
            if _full_view(produced.records) != _full_view(recorded.records):
                diverged += 1
            if _world_view(produced.records) != _world_view(recorded.records):
                self._impose(recorded)
            for r in self._order:  # records of the re-run are already in the store
                r.mind.drain_records()
        return diverged

    def _impose(self, recorded: TickRecords) -> None:
        for rec in recorded.records:
            r = self.residents.get(rec.resident or "")
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
        for r in self._order:  # positions were imposed: everyone looks afresh
            r.attention.cache_key = None


_WORLD_KINDS = {"move", "action", "object", "chat", "inject"}


def _world_view(records: list[Record]) -> list[tuple]:
    return [(r.kind, r.resident, _norm(r.data)) for r in records if r.kind in _WORLD_KINDS]


def _full_view(records: list[Record]) -> list[tuple]:
    """Every record as stored and digested (memory.runfile.RunStore.records_digest): no latencies."""
    return [(r.kind, r.resident, _norm(json.loads(json.dumps(r.data, default=str)))) for r in records]


def _norm(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _norm(v)) for k, v in value.items() if k not in TIMING_KEYS))
    if isinstance(value, (list, tuple)):
        return tuple(_norm(v) for v in value)
    return value
