"""The Plugin protocol and the WorldView a plugin acts through.

A plugin is a world-side service (e.g. the encounter plugin, agents/encounters/town.py):
each tick it sees the world through a :class:`WorldView` and returns records; it may serve
injected command kinds (their wire models are maps.contracts.Command subclasses); its state
is part of the run's snapshots. The engine calls only the methods of :class:`Plugin`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from maps.contracts import Command, Record

if TYPE_CHECKING:
    from world.engine import Engine

Tile = tuple[int, int]


@runtime_checkable
class Plugin(Protocol):
    """What the engine needs of a plugin (checked when it is added)."""

    commands: Mapping[str, type[Command]]  # the injected command kinds it serves ({} for none)

    async def on_tick(self, view: "WorldView") -> list[Record]:
        """After the residents' intents are applied: act through ``view``, return new records."""
        ...

    def check_command(self, cmd: Command) -> str | None:
        """What is wrong with a command of a kind it serves (None: it will serve it)."""
        ...

    def handle_command(self, cmd: Command) -> None:
        """Apply a command that :meth:`check_command` accepted (at the start of a tick)."""
        ...

    def snapshot(self) -> dict:
        """Its state, JSON-ready, stored with the engine's."""
        ...

    def restore(self, state: dict) -> None:
        """Back to a :meth:`snapshot` (resume, fork)."""
        ...


def plugin_problem(plugin: Any) -> str | None:
    """Which Plugin members an object lacks (None: it is a Plugin)."""
    missing = [m for m in ("commands", "on_tick", "check_command", "handle_command", "snapshot", "restore")
               if not hasattr(plugin, m)]
    return f"{type(plugin).__name__} is not a Plugin: it lacks {', '.join(missing)}" if missing else None


class WorldView:
    """What a plugin may see and do during a tick."""

    def __init__(self, engine: "Engine", tick: int, time: datetime, records: list[Record]) -> None:
        self._engine = engine
        self.tick = tick
        self.time = time
        self._records = records
        self.town = engine.town

    @property
    def residents(self) -> dict[str, dict[str, Any]]:
        return {
            r.name: {"tile": r.tile, "address": r.address, "action": r.description, "asleep": r.asleep}
            for r in self._engine._order
        }

    def resident_address(self, name: str) -> str:
        return self._engine.residents[name].address

    def resident_tile(self, name: str) -> Tile:
        return self._engine.residents[name].tile

    @property
    def objects(self) -> dict[str, str]:
        return dict(self._engine.objects)

    def deliver_whisper(self, name: str, text: str) -> None:
        self._engine.residents[name].whispers.append(text)

    def announce(self, text: str) -> None:
        """A town-wide event every resident hears next tick."""
        for r in self._engine._order:
            r.announcements.append(text)

    def deliver_memory(self, name: str, text: str) -> None:
        self._engine.residents[name].memories.append(text)

    def send_to(self, name: str, address: str, description: str = "") -> None:
        """Send a resident walking to ``address`` on the route a ``go`` intent takes (a plugin's
        errand, e.g. an encounter's visitor); no-op while already on the way there."""
        rules, r = self._engine.rules, self._engine.residents[name]
        if r.dest == address and r.walking:
            return
        rules.release(r, self._records)
        r.asleep = False
        rules.set_action(r, description or f"going to {address}", "🚶", None, address, self._records)
        rules.head_to(r, address, None, self._records)

    def set_object_state(self, address: str, state: str, by: str = "engine") -> None:
        if address not in self._engine.objects:
            raise KeyError(f"no object {address!r}")
        self._engine.rules.set_object(address, state, by, self._records)
