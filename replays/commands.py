"""Injected commands as the viewer and `townsfolk inject` build them.

One place decides the wire shape of a command (what ``Engine.submit`` receives), so the
input box, the control channel client and the tests all agree. The schemas are the
contracts' (maps.contracts.Command); the engine checks a command against the town (the
resident exists, the address is an object); this module checks only what can be checked
without the town: required fields, non-empty text. Which commands exist, their ``inject`` flags
and the viewer's modes all come from their declarations (maps.contracts.Command subclasses).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from maps.contracts import Command, parse_command


class CommandError(ValueError):
    """A command is malformed; the message says which field and what was expected."""


def validate(command: dict[str, Any]) -> dict[str, Any]:
    """Check a command's shape and return it normalised (stripped text)."""
    try:
        return parse_command(command).model_dump()
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def declared() -> dict[str, type[Command]]:
    """The commands with a one-line form, hence an ``inject --KIND`` flag, in declaration order."""
    return {kind: model for kind, model in Command.kinds.items() if model.text_args is not None}


def input_modes() -> dict[str, type[Command]]:
    """The commands the viewer's input box has a mode for, in declaration order."""
    return {kind: model for kind, model in Command.kinds.items() if model.input_mode is not None}


def from_flag(kind: str, values: Sequence[str]) -> dict[str, Any]:
    """A command from its ``inject --KIND`` values: its declared arguments in order, optional ones None."""
    args = Command.kinds[kind].text_args or ()
    given = iter(values)
    return validate({"kind": kind, **{a.field: None if a.optional else next(given, None) for a in args}})


def whisper(resident: str, text: str) -> dict[str, Any]:
    return validate({"kind": "whisper", "resident": resident, "text": text})


def set_object(address: str, state: str) -> dict[str, Any]:
    return validate({"kind": "object", "address": address, "state": state})


def announce(text: str) -> dict[str, Any]:
    return validate({"kind": "announce", "text": text})


def encounter(resident: str, service: str, scenario: str | None = None) -> dict[str, Any]:
    return validate({"kind": "encounter", "resident": resident, "service": service, "scenario": scenario})


def describe(command: dict[str, Any], text: str = "") -> str:
    """A command in a few words: the text its record carries, else (run files from before
    records carried it, or a shape that no longer parses) the contracts' rendering of it."""
    if text:
        return text
    try:
        return parse_command(command).describe()
    except ValueError:
        kind = command.get("kind") or command.get("type") or "command"
        rest = ", ".join(f"{k}={v}" for k, v in command.items() if k not in ("kind", "type"))
        return f"{kind}: {rest}" if rest else str(kind)


__all__ = ["Command", "CommandError", "announce", "declared", "describe", "encounter", "from_flag", "input_modes",
           "set_object", "validate", "whisper"]
