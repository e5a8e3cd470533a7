"""Injected commands as the viewer and `townsfolk inject` build them.

One place decides the wire shape of a command (what ``Engine.submit`` receives), so the
input box, the control channel client and the tests all agree. The engine validates a
command against the town (the resident exists, the address is an object); this module
only checks what can be checked without the town: required fields, non-empty text.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]


class Whisper(BaseModel):
    """An inner voice for one resident, taken as their own thought."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["whisper"] = "whisper"
    resident: Text
    text: Text


class SetObject(BaseModel):
    """Set an object's state in words, e.g. the stove 'is burning'."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["object"] = "object"
    address: Text = Field(description="'sector:arena:object'")
    state: Text


class Announce(BaseModel):
    """A town-wide event every resident hears."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["announce"] = "announce"
    text: Text


Command = Annotated[Union[Whisper, SetObject, Announce], Field(discriminator="kind")]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(Command)


class CommandError(ValueError):
    """A command is malformed; the message says which field and what was expected."""


def validate(command: dict[str, Any]) -> dict[str, Any]:
    """Check a command's shape and return it normalised (stripped text)."""
    try:
        model = _ADAPTER.validate_python(command)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'command'}: {err['msg']}" for err in exc.errors()
        )
        raise CommandError(
            f"bad command {command!r}: {problems} (expected kind 'whisper' with resident and text, "
            "'object' with address and state, or 'announce' with text)"
        ) from None
    return model.model_dump()


def whisper(resident: str, text: str) -> dict[str, Any]:
    return validate({"kind": "whisper", "resident": resident, "text": text})


def set_object(address: str, state: str) -> dict[str, Any]:
    return validate({"kind": "object", "address": address, "state": state})


def announce(text: str) -> dict[str, Any]:
    return validate({"kind": "announce", "text": text})


def describe(command: dict[str, Any]) -> str:
    """A command in a few words, for messages and the timeline."""
    kind = command.get("kind")
    if kind == "whisper":
        return f"whisper to {command.get('resident')}: “{command.get('text', '')}”"
    if kind == "object":
        return f"set {command.get('address')} to “{command.get('state', '')}”"
    if kind == "announce":
        return f"announce: “{command.get('text', '')}”"
    return ", ".join(f"{k}={v}" for k, v in command.items())
