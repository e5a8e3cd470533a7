"""The WorldView a plugin acts through, and the plugin check the engine makes.

A plugin is a world-side service (e.g. the encounter plugin, agents/encounters/town.py):
each tick it sees the world through a :class:`WorldView` and returns records; it may serve
injected command kinds (their wire models are maps.contracts.Command subclasses); its state
is part of the run's snapshots. The engine calls only the methods of :class:`Plugin`.

The contract itself (``Plugin``, the ``PluginView`` a WorldView is, the ``PluginHost`` an
engine is) lives in maps/plugin.py, below both the world and the agents that write plugins.
A WorldView holds the engine's collaborators it acts on (bodies, object states, rules), the
same objects the engine gives its other parts, never the engine itself.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from maps.contracts import Record
from maps.plugin import Plugin, PluginHost, PluginView, Tile
from maps.town import Town
from world.body import Body
from world.rules import Rules

__all__ = ["Plugin", "PluginHost", "PluginView", "WorldView", "plugin_problem"]


def plugin_problem(plugin: Any) -> str | None:
    """Which Plugin members an object lacks (None: it is a Plugin)."""
    missing = [m for m in ("commands", "on_tick", "check_command", "handle_command", "snapshot", "restore")
               if not hasattr(plugin, m)]
    return f"{type(plugin).__name__} is not a Plugin: it lacks {', '.join(missing)}" if missing else None


class WorldView:
    """What a plugin may see and do during a tick (a maps.plugin.PluginView).

    ``residents`` are the engine's bodies in name order, ``objects`` its object states and
    ``rules`` its rules: changes go through the rules, as a resident's intents do, and are
    recorded in this tick's ``records``."""

    def __init__(self, town: Town, residents: dict[str, Body], objects: dict[str, str], rules: Rules,
                 tick: int, time: datetime, records: list[Record]) -> None:
        self.tick = tick
        self.time = time
        self.town = town
        self._bodies = residents
        self._objects = objects
        self._rules = rules
        self._records = records

    @property
    def residents(self) -> dict[str, dict[str, Any]]:
        return {
            r.name: {"tile": r.tile, "address": r.address, "action": r.description, "asleep": r.asleep}
            for r in self._bodies.values()
        }

    def resident_address(self, name: str) -> str:
        return self._bodies[name].address

    def resident_tile(self, name: str) -> Tile:
        return self._bodies[name].tile

    @property
    def objects(self) -> dict[str, str]:
        return dict(self._objects)

    def deliver_whisper(self, name: str, text: str) -> None:
        self._bodies[name].deliver("whisper", text)

    def announce(self, text: str) -> None:
        """A town-wide event every resident hears next tick."""
        for r in self._bodies.values():
            r.deliver("announcement", text)

    def deliver_memory(self, name: str, text: str) -> None:
        self._bodies[name].deliver("memory", text)

    def send_to(self, name: str, address: str, description: str = "") -> None:
        """Send a resident walking to ``address`` on the route a ``go`` intent takes (a plugin's
        errand, e.g. an encounter's visitor); no-op while already on the way there."""
        rules, r = self._rules, self._bodies[name]
        if r.dest == address and r.walking:
            return
        rules.release(r, self._records)
        r.stir()  # a dormant resident is on its way: looked at again next tick
        r.asleep = False
        rules.set_action(r, description or f"going to {address}", "🚶", None, address, self._records)
        rules.head_to(r, address, None, self._records)

    def set_object_state(self, address: str, state: str, by: str = "engine") -> None:
        if address not in self._objects:
            raise KeyError(f"no object {address!r}")
        self._rules.set_object(address, state, by, self._records)

