"""Injected commands as the viewer and `townsfolk inject` build them.

One place decides the wire shape of a command (what ``Engine.submit`` receives), so the
input box, the control channel client and the tests all agree. The engine validates a
command against the town (the resident exists, the address is an object); this module
only checks what can be checked without the town: required fields, non-empty text.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

# The command models are the engine's own (world.injections): one schema for the input box,
# the control channel client, the engine and the tests.
from world.injections import COMMAND_ADAPTER, COMMAND_HELP, short_repr


class CommandError(ValueError):
    """A command is malformed; the message says which field and what was expected."""


def validate(command: dict[str, Any]) -> dict[str, Any]:
    """Check a command's shape and return it normalised (stripped text)."""
    try:
        model = COMMAND_ADAPTER.validate_python(command)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'command'}: {err['msg']}" for err in exc.errors()
        )
        raise CommandError(f"bad command {short_repr(command)}: {problems} ({COMMAND_HELP})") from None
    return model.model_dump()


def whisper(resident: str, text: str) -> dict[str, Any]:
    return validate({"kind": "whisper", "resident": resident, "text": text})


def set_object(address: str, state: str) -> dict[str, Any]:
    return validate({"kind": "object", "address": address, "state": state})


def announce(text: str) -> dict[str, Any]:
    return validate({"kind": "announce", "text": text})


def encounter(resident: str, service: str, scenario: str | None = None) -> dict[str, Any]:
    return validate({"kind": "encounter", "resident": resident, "service": service, "scenario": scenario})


def describe(command: dict[str, Any]) -> str:
    """A command in a few words, for messages and the timeline."""
    kind = command.get("kind")
    if kind == "whisper":
        return f"whisper to {command.get('resident')}: “{command.get('text', '')}”"
    if kind == "object":
        return f"set {command.get('address')} to “{command.get('state', '')}”"
    if kind == "announce":
        return f"announce: “{command.get('text', '')}”"
    if kind == "encounter":
        return f"send {command.get('resident')} for an encounter ({command.get('service')})"
    return ", ".join(f"{k}={v}" for k, v in command.items())
