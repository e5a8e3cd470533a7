"""The plugin contract: what a world-side plugin sees, what it attaches to, what it must offer.

A plugin (e.g. the encounter plugin, agents/encounters/town.py) lives in a layer that may not
import the world (agents), yet the world calls it every tick and hands it a view of itself.
Both sides meet here, below both: world/plugins.py's ``WorldView`` is a :class:`PluginView`,
world/engine.py's ``Engine`` is a :class:`PluginHost`, and a plugin is checked against
:class:`Plugin` when it is added. Structural types only (``typing.Protocol``): nothing here
runs, so the contract costs no import of the world.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from maps.contracts import Command, Record, TickRecords
from maps.town import Town

Tile = tuple[int, int]


@runtime_checkable
class PluginView(Protocol):
    """What a plugin may see and do during one tick (world/plugins.py ``WorldView``)."""

    tick: int
    time: datetime
    town: Town

    @property
    def residents(self) -> dict[str, dict[str, Any]]:
        """Each resident's ``tile``, ``address``, ``action`` and ``asleep``, in name order."""
        ...

    def resident_address(self, name: str) -> str: ...

    def resident_tile(self, name: str) -> Tile: ...

    @property
    def objects(self) -> dict[str, str]:
        """Every object's state, by address (a copy)."""
        ...

    def deliver_whisper(self, name: str, text: str) -> None: ...

    def announce(self, text: str) -> None: ...

    def deliver_memory(self, name: str, text: str) -> None: ...

    def send_to(self, name: str, address: str, description: str = "") -> None: ...

    def set_object_state(self, address: str, state: str, by: str = "engine") -> None: ...


@runtime_checkable
class Plugin(Protocol):
    """What the engine needs of a plugin (checked when it is added)."""

    commands: Mapping[str, type[Command]]  # the injected command kinds it serves ({} for none)

    async def on_tick(self, view: PluginView) -> list[Record]:
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


@runtime_checkable
class PluginHost(Protocol):
    """What a plugin attaches to (world/engine.py ``Engine``): the town, and the two hooks."""

    town: Town

    def add_plugin(self, plugin: Plugin) -> None: ...

    def add_listener(self, fn: Callable[[TickRecords], None]) -> None: ...
