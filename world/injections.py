"""Commands injected into a running world: whisper, set an object's state, announce.

The wire shape (a dict) is the one ``replays.commands`` builds::

    {"kind": "whisper", "resident": "Maria Alvarez", "text": "..."}
    {"kind": "object", "address": "Willow Cafe:kitchen:stove", "state": "burning"}
    {"kind": "announce", "text": "..."}

or the one-line text form ``whisper NAME text`` / ``object ADDRESS state`` / ``announce text``.
:func:`check` validates a command against the town (the resident exists, the address is an
object) and returns an :class:`InjectResult`; a refused command changes nothing.
"""

from __future__ import annotations

import difflib
import shlex
from typing import Annotated, Any, Literal, Union

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

# Bounded, control-character-free text (maps.contracts): what a command carries ends up in
# prompts and on terminals, so the limit and the refusal are part of the schema.
from maps.contracts import Address, Name, Paragraph, Short


class WhisperCommand(BaseModel):
    """An inner voice for one resident, which they take as their own thought."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    kind: Literal["whisper"] = "whisper"
    resident: Name = Field(validation_alias=AliasChoices("resident", "name"))
    text: Paragraph


class ObjectCommand(BaseModel):
    """Set an object's state in words (e.g. the stove 'is burning')."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["object"] = "object"
    address: Address
    state: Short


class AnnounceCommand(BaseModel):
    """A town-wide event that every resident hears."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["announce"] = "announce"
    text: Paragraph


class EncounterCommand(BaseModel):
    """Send a resident to a town service for an encounter with its AI assistant.

    ``service`` names a service (clinic, bank, or one a scenario file declares) or a scenario id
    (``encounter NAME SCENARIO_ID``); the resident walks there and the encounter starts on
    arrival. Served by the encounter plugin (``townsfolk run --encounters [FILE_OR_DIR]``), which
    validates the names; without the plugin the command is refused.
    """

    model_config = ConfigDict(extra="forbid")
    kind: Literal["encounter"] = "encounter"
    resident: Name
    service: Short = Field(description="a service name or a scenario id")
    scenario: Short | None = None
    target: Name | None = Field(default=None, description="the resident whose data the visitor is after")


AnyCommand = Union[WhisperCommand, ObjectCommand, AnnounceCommand, EncounterCommand]
InjectCommand = Annotated[AnyCommand, Field(discriminator="kind")]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(InjectCommand)
COMMAND_ADAPTER = _ADAPTER  # validates the wire shape (a dict) of any command
COMMAND_HELP = (
    "expected 'whisper NAME text', 'object ADDRESS state', 'announce text' "
    "or 'encounter NAME SERVICE [SCENARIO]'"
)


class InjectResult(BaseModel):
    """The answer to a submitted command; ``tick`` is when it will apply (None if refused)."""

    accepted: bool
    message: str
    command: dict[str, Any] = Field(default_factory=dict)
    tick: int | None = None

    def __str__(self) -> str:
        return self.message


def parse(raw: Any, names: list[str] | None = None, addresses: list[str] | None = None) -> AnyCommand:
    """A dict, a command model or a text line -> a command model; ValueError says what is wrong."""
    if isinstance(raw, (WhisperCommand, ObjectCommand, AnnounceCommand, EncounterCommand)):
        return raw
    if isinstance(raw, str):
        raw = parse_text(raw, names or [], addresses or [])
    if not isinstance(raw, dict):
        raise ValueError(f"bad command {short_repr(raw)}: {COMMAND_HELP}")
    data = dict(raw)
    if "kind" not in data and "type" in data:
        data["kind"] = data.pop("type")
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'][1:] or err['loc']) or 'command'}: {err['msg']}" for err in exc.errors()
        )
        raise ValueError(f"bad command {short_repr(raw)}: {problems} ({COMMAND_HELP})") from None


def short_repr(value: Any, limit: int = 120) -> str:
    """``repr`` cut to ``limit`` characters: an error must not echo a 10 MB whisper."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}… ({len(text)} characters)"


def parse_text(line: str, names: list[str], addresses: list[str]) -> dict[str, Any]:
    """Parse the one-line form. Names and addresses with spaces may be quoted, or are matched
    against the known ones (longest first)."""
    text = line.strip()
    verb, _, rest = text.partition(" ")
    verb = verb.lower()
    rest = rest.strip()
    if verb == "announce":
        return {"kind": "announce", "text": rest}
    if verb == "encounter":
        head, tail = _split_head(rest, names)
        service, _, scenario = tail.partition(" ")
        return {"kind": "encounter", "resident": head, "service": service, "scenario": scenario.strip() or None}
    if verb not in ("whisper", "object"):
        raise ValueError(f"bad command {line!r}: unknown command {verb!r}; {COMMAND_HELP}")
    known = names if verb == "whisper" else addresses
    head, tail = _split_head(rest, known)
    if verb == "whisper":
        return {"kind": "whisper", "resident": head, "text": tail}
    return {"kind": "object", "address": head, "state": tail}


def _split_head(rest: str, known: list[str]) -> tuple[str, str]:
    if rest[:1] in ('"', "'"):
        try:
            parts = shlex.split(rest)
        except ValueError as exc:
            raise ValueError(f"bad command: {exc}") from None
        if parts:
            head = parts[0]
            quote = rest[0]
            end = rest.find(quote, 1)
            return head, rest[end + 1 :].strip()
    for k in sorted(known, key=len, reverse=True):
        if rest == k or rest.startswith(k + " "):
            return k, rest[len(k) :].strip()
    head, _, tail = rest.partition(" ")
    return head, tail.strip()


def check(command: Any, residents: list[str], objects: dict[str, str], places: set[str]) -> tuple[Any | None, InjectResult]:
    """Validate a command against the world. Returns (command model or None, result)."""
    raw_dict = command if isinstance(command, dict) else ({"text": command} if isinstance(command, str) else {})
    try:
        cmd = parse(command, residents, list(objects))
    except ValueError as exc:
        return None, InjectResult(accepted=False, message=str(exc), command=raw_dict)
    as_dict = cmd.model_dump()
    if isinstance(cmd, (WhisperCommand, EncounterCommand)):
        if cmd.resident not in residents:
            near = difflib.get_close_matches(cmd.resident, residents, n=3)
            hint = f"; did you mean {', '.join(near)}?" if near else f"; residents: {', '.join(residents)}"
            return None, InjectResult(accepted=False, message=f"{cmd.kind}: no resident named {cmd.resident!r}{hint}", command=as_dict)
    elif isinstance(cmd, ObjectCommand):
        if cmd.address not in objects:
            if cmd.address in places:
                why = f"{cmd.address!r} is a place, not an object; expected 'sector:arena:object'"
            else:
                near = difflib.get_close_matches(cmd.address, list(objects), n=3)
                why = f"no object {cmd.address!r}" + (f"; did you mean {', '.join(near)}?" if near else "; expected 'sector:arena:object'")
            return None, InjectResult(accepted=False, message=f"object: {why}", command=as_dict)
    return cmd, InjectResult(accepted=True, message="queued", command=as_dict)


def describe(cmd: AnyCommand) -> str:
    if isinstance(cmd, EncounterCommand):
        return f"send {cmd.resident} for an encounter ({cmd.service})" + (f" ({cmd.scenario})" if cmd.scenario else "")
    if isinstance(cmd, WhisperCommand):
        return f"whisper to {cmd.resident}: {cmd.text!r}"
    if isinstance(cmd, ObjectCommand):
        return f"set {cmd.address} to {cmd.state!r}"
    return f"announce: {cmd.text!r}"
