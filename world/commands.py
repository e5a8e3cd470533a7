"""The command registry: each injected command kind's check against the town and its apply.

The wire schemas and their one rendering in words are the contracts' (maps.contracts.Command
and its subclasses). Here each kind the world serves is registered with its check (what is
wrong with it in this town, or None) and its apply (what it does, through the plugin's view
of the world, world.plugins.WorldView). The built-in kinds (whisper, object, announce) are
registered below; a plugin serves its own kinds (Plugin.commands, check_command,
handle_command) and :meth:`Registry.serve` registers them. A refused command changes nothing.

The one-line text form ``whisper NAME text`` / ``object ADDRESS state`` / ``announce text`` /
``encounter NAME SERVICE [SCENARIO]`` is parsed here (:func:`parse_text`).
"""

from __future__ import annotations

import difflib
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from maps.plaintext import escape_invisible, invisible_problem, strings_in

from maps.contracts import (
    COMMAND_HELP, AnnounceCommand, Command, ObjectCommand, WhisperCommand, command_help, parse_command, short_repr,
)

if TYPE_CHECKING:
    from world.plugins import Plugin, WorldView

__all__ = ["COMMAND_HELP", "CommandKind", "InjectResult", "Registry", "TownFacts", "check", "parse", "short_repr"]


class InjectResult(BaseModel):
    """The answer to a submitted command; ``tick`` is when it will apply (None if refused)."""

    accepted: bool
    message: str
    command: dict[str, Any] = Field(default_factory=dict)
    text: str = ""  # the command in words (Command.describe); empty when it did not parse
    tick: int | None = None

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class TownFacts:
    """What a command's check may look at: the residents, the objects and their states, the places."""

    residents: list[str]
    objects: dict[str, str]
    places: set[str]


@dataclass(frozen=True)
class CommandKind:
    """One served command kind: its schema, its check against the town, its apply."""

    model: type[Command]
    check: Callable[[Any, TownFacts], str | None]
    apply: Callable[[Any, "WorldView"], None]


# ------------------------------------------------------------------ the built-in kinds


def _no_problem(cmd: Command, facts: TownFacts) -> str | None:
    return None


def _check_object(cmd: ObjectCommand, facts: TownFacts) -> str | None:
    if cmd.address in facts.objects:
        return None
    if cmd.address in facts.places:
        return f"object: {cmd.address!r} is a place, not an object; expected 'sector:arena:object'"
    near = difflib.get_close_matches(cmd.address, list(facts.objects), n=3)
    hint = f"; did you mean {', '.join(near)}?" if near else "; expected 'sector:arena:object'"
    return f"object: no object {cmd.address!r}{hint}"


BUILT_IN: dict[str, CommandKind] = {
    "whisper": CommandKind(WhisperCommand, _no_problem, lambda c, view: view.deliver_whisper(c.resident, c.text)),
    "object": CommandKind(ObjectCommand, _check_object, lambda c, view: view.set_object_state(c.address, c.state, "inject")),
    "announce": CommandKind(AnnounceCommand, _no_problem, lambda c, view: view.announce(c.text)),
}


def _resident_problem(cmd: Command, facts: TownFacts) -> str | None:
    """Every command that names a ``resident`` must name one of this town's."""
    name = getattr(cmd, "resident", None)
    if name is None or name in facts.residents:
        return None
    near = difflib.get_close_matches(name, facts.residents, n=3)
    hint = f"; did you mean {', '.join(near)}?" if near else f"; residents: {', '.join(facts.residents)}"
    return f"{cmd.kind}: no resident named {name!r}{hint}"


class Registry:
    """The command kinds one world serves: the built-in ones and its plugins'."""

    def __init__(self) -> None:
        self.kinds: dict[str, CommandKind] = dict(BUILT_IN)

    def serve(self, plugin: "Plugin") -> None:
        """Register the command kinds a plugin serves (its check_command and handle_command)."""
        for kind, model in plugin.commands.items():
            self.kinds[kind] = CommandKind(
                model, lambda c, facts, p=plugin: p.check_command(c), lambda c, view, p=plugin: p.handle_command(c)
            )

    def check(self, command: Any, facts: TownFacts) -> tuple[Command | None, InjectResult]:
        """Validate a command (dict, model or text line) against the town: (model or None, result)."""
        raw_dict = command if isinstance(command, dict) else ({"text": command} if isinstance(command, str) else {})
        invisible = _invisible(raw_dict)
        if invisible:  # refused before parsing; recorded with the characters escaped
            return None, InjectResult(accepted=False, message=invisible, command=_escaped(raw_dict))
        try:
            cmd = parse(command, facts.residents, list(facts.objects))
        except ValueError as exc:
            return None, InjectResult(accepted=False, message=escape_invisible(str(exc)), command=_escaped(raw_dict))
        as_dict = cmd.model_dump()
        spec = self.kinds.get(cmd.kind)
        problem = _resident_problem(cmd, facts)
        if problem is None and spec is None:
            how = f" ({cmd.served_by})" if cmd.served_by else ""
            problem = f"{cmd.kind}: not served in this run{how}"
        if problem is None and spec is not None:
            problem = spec.check(cmd, facts)
        if problem:
            return None, InjectResult(accepted=False, message=problem, command=as_dict, text=cmd.describe())
        return cmd, InjectResult(accepted=True, message="queued", command=as_dict, text=cmd.describe())

    def apply(self, cmd: Command, view: "WorldView") -> None:
        """Apply a command accepted by :meth:`check` (kinds are never unregistered)."""
        self.kinds[cmd.kind].apply(cmd, view)


def _invisible(raw: dict[str, Any]) -> str | None:
    """Why a command holds text a reader cannot see (bidi overrides, zero-width spaces, lone
    surrogates), naming the field; None when it holds none."""
    for where, text in strings_in(raw):
        why = invisible_problem(text)
        if why:
            return f"bad command: field {escape_invisible(where) or 'text'!r} {why}"
    return None


def _escaped(value: Any) -> Any:
    """A refused command as it is recorded: every string with such characters escaped, so that
    every reader of the run (timeline, replay, summary) can print it."""
    if isinstance(value, str):
        return escape_invisible(value)
    if isinstance(value, dict):
        return {escape_invisible(str(k)): _escaped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_escaped(v) for v in value]
    return value


def check(command: Any, residents: list[str], objects: dict[str, str], places: set[str]) -> tuple[Command | None, InjectResult]:
    """Validate a command against a town with the built-in kinds only (see :meth:`Registry.check`)."""
    return Registry().check(command, TownFacts(list(residents), dict(objects), set(places)))


# ------------------------------------------------------------------ parsing


def parse(raw: Any, names: list[str] | None = None, addresses: list[str] | None = None) -> Command:
    """A dict, a command model or a text line -> a command model; ValueError says what is wrong."""
    if isinstance(raw, str):
        raw = parse_text(raw, names or [], addresses or [])
    return parse_command(raw)


def parse_text(line: str, names: list[str], addresses: list[str]) -> dict[str, Any]:
    """Parse the one-line form a command declares (Command.text_args). Names and addresses with
    spaces may be quoted, or are matched against the known ones (longest first)."""
    verb, _, rest = line.strip().partition(" ")
    verb = verb.lower()
    model = Command.kinds.get(verb)
    if model is None or model.text_args is None:
        raise ValueError(f"bad command {line!r}: unknown command {verb!r}; {command_help()}")
    known = {"names": names, "addresses": addresses}
    fields: dict[str, Any] = {"kind": verb}
    rest = rest.strip()
    for i, arg in enumerate(model.text_args):
        if i == len(model.text_args) - 1:
            fields[arg.field] = rest or (None if arg.optional else "")
        elif arg.among:
            fields[arg.field], rest = _split_head(rest, known[arg.among])
        else:
            word, _, rest = rest.partition(" ")
            fields[arg.field], rest = word, rest.strip()
    return fields


def _split_head(rest: str, known: list[str]) -> tuple[str, str]:
    if rest[:1] in ('"', "'"):
        try:
            parts = shlex.split(rest)
        except ValueError as exc:
            raise ValueError(f"bad command: {exc}") from None
        if parts:
            end = rest.find(rest[0], 1)
            return parts[0], rest[end + 1 :].strip()
    for k in sorted(known, key=len, reverse=True):
        if rest == k or rest.startswith(k + " "):
            return k, rest[len(k) :].strip()
    head, _, tail = rest.partition(" ")
    return head, tail.strip()
