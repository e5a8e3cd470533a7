"""A person playing a resident (issue 30 §7, `townsfolk watch --join NAME`).

The person joins as one more resident with a body and a marker; the engine treats them as anyone
else: they are seen, their lines are recorded as chat records, the residents who hear them answer
and remember them through their own minds. Only the decisions come from the person, not a model:
each one arrives as a ``play`` command (the viewer's input box and clicks, or the control socket)
that :class:`PlayerPlugin` checks and hands to the player's :class:`PlayerMind`, which turns it
into the next tick's intent ('go' to a place, 'say' a line to someone in view). Between orders
the player carries on: walking on to where they were going, or standing there.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import model_validator

from maps.contracts import (Address, Command, Intent, LanguageModel, MindOptions, Name, Paragraph, Perception, Persona,
                            Record)

PLAYER_OCCUPATION = "visitor"


class PlayCommand(Command):
    """What a person playing a resident does next: walk to a place, or say a line to someone."""

    kind: Literal["play"] = "play"
    served_by: ClassVar[str] = "start it with watch --join NAME"
    resident: Name
    go: Address | None = None
    to: Name | None = None
    text: Paragraph | None = None

    @model_validator(mode="after")
    def _one_thing(self) -> "PlayCommand":
        if (self.go is None) == (self.text is None):
            raise ValueError("expected either 'go' (a place to walk to) or 'text' (a line to say, with 'to')")
        if self.text is not None and not self.to:
            raise ValueError("'text' needs 'to': the resident it is said to")
        return self

    def describe(self) -> str:
        if self.go is not None:
            return f"{self.resident} walks to {self.go}"
        return f"{self.resident} says to {self.to}: “{self.text}”"


def player_persona(name: str, place: str) -> Persona:
    """The persona of a person who joined: a visitor who starts at ``place`` (a public place)."""
    return Persona(name=name, age=30, occupation=PLAYER_OCCUPATION, workplace=place, home=place,
                   lifestyle="A visitor to the town; says and does what the person playing decides.")


class PlayerMind:
    """The mind of a joined person: their orders, in the order given, one an intent each tick."""

    def __init__(self, persona: Persona, llm: LanguageModel | None = None, run_db: Path | None = None,
                 options: MindOptions | None = None) -> None:
        self.name = persona.name
        self.persona = persona
        self._orders: deque[PlayCommand] = deque()

    def order(self, command: PlayCommand) -> None:
        """Take the person's next decision (checked already by :class:`PlayerPlugin`)."""
        self._orders.append(command)

    def decide_fast(self, perception: Perception) -> Intent | None:
        if not self._orders:
            if perception.arrived:  # there: stand and look around until the next order
                return Intent(kind="wait", description="looking around", emoji="👀")
            return Intent(kind="continue")  # walk on, or stand where one is
        cmd = self._orders.popleft()
        if cmd.go is not None:
            return Intent(kind="go", target=cmd.go, description=f"walking to {cmd.go}", emoji="🚶")
        return Intent(kind="say", to=cmd.to, utterance=cmd.text, description=f"talking to {cmd.to}", emoji="💬")

    async def decide(self, perception: Perception) -> Intent:
        return self.decide_fast(perception) or Intent(kind="wait")

    def drain_records(self) -> list[Record]:
        return []  # the person keeps their own memories

    def snapshot(self) -> dict:
        return {"orders": [c.model_dump() for c in self._orders]}

    def restore(self, state: dict) -> None:
        self._orders = deque(PlayCommand.model_validate(c) for c in state.get("orders", []))


class PlayerPlugin:
    """Serves ``play`` commands: refuses one for a name that is not a joined person or a place that
    is not in the town, and hands the rest to the person's mind (engine.add_plugin)."""

    def __init__(self, players: dict[str, PlayerMind], places: set[str]) -> None:
        self.players = players
        self.places = places
        self.commands = {"play": PlayCommand}

    async def on_tick(self, view: Any) -> list[Record]:
        return []

    def check_command(self, cmd: Command) -> str | None:
        if not isinstance(cmd, PlayCommand):
            return f"{cmd.kind}: not served here"
        if cmd.resident not in self.players:
            return f"play: {cmd.resident!r} is not a person who joined (joined: {', '.join(sorted(self.players))})"
        if cmd.go is not None and cmd.go not in self.places:
            return f"play: go: no place {cmd.go!r} in this town; expected an address such as 'Willow Park'"
        return None

    def handle_command(self, cmd: Command) -> None:
        assert isinstance(cmd, PlayCommand)
        self.players[cmd.resident].order(cmd)

    def snapshot(self) -> dict:
        return {}  # the orders not yet taken are in the players' own snapshots

    def restore(self, state: dict) -> None:
        return None


def join_problem(name: str, residents: list[str]) -> str | None:
    """Why ``name`` cannot join (taken by a resident, or no name), or None."""
    if not name.strip():
        return "--join: expected a name"
    if name in residents:
        return f"--join {name!r}: a resident of this town is called that; choose another name"
    return None


def join_players(names: list[str], place: str, places: set[str], people: list[Persona],
                 minds: dict[str, Any]) -> tuple[list[Persona], dict[str, Any], PlayerPlugin | None]:
    """The town's people and minds with the joined persons added (a visitor each at ``place``),
    and the plugin that serves their ``play`` commands (None when nobody joined)."""
    if not names:
        return people, minds, None
    joined = {name: PlayerMind(player_persona(name, place)) for name in names}
    return people + [m.persona for m in joined.values()], {**minds, **joined}, PlayerPlugin(joined, places)
