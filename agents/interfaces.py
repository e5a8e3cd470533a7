"""The data contracts between the layers, gathered in one place.

The world hands each resident a :class:`Perception` and gets back an :class:`Intent`;
neither side reaches into the other. Every model call goes through an object that
satisfies :class:`LanguageModel`. Keeping these small and plain is what lets cognition be
tested on data and lets the engine stay the single owner of state.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from agents.plain_text import LIST_MAX, Address, Lifestyle, Memory, Name, Short

# ---------------------------------------------------------------------------
# Residents as data (loaded by maps/, used by agents/)
# ---------------------------------------------------------------------------


class Relationship(BaseModel):
    """How one resident sees another, as written in the residents file."""

    model_config = ConfigDict(extra="forbid")

    name: Name
    relation: Short = Field(description="e.g. 'wife', 'coworker', 'neighbour'")
    closeness: float = Field(default=0.5, ge=0.0, le=1.0)


class Persona(BaseModel):
    """Who a resident is. Read from a town's residents file; never mutated by the engine."""

    model_config = ConfigDict(extra="forbid")

    name: Name
    age: int = Field(ge=0, le=120)
    traits: list[Short] = Field(default_factory=list, max_length=LIST_MAX, description="innate traits, e.g. 'kind'")
    occupation: Short
    workplace: Address = Field(description="place address, e.g. 'Willow Cafe' or 'Willow Cafe:kitchen'")
    home: Address = Field(description="place address of the resident's home")
    lifestyle: Lifestyle = Field(default="", description="habits, e.g. wakes at 7, sleeps at 23")
    wake_hour: int = Field(default=7, ge=0, le=23)
    sleep_hour: int = Field(default=23, ge=0, le=23)
    relationships: list[Relationship] = Field(default_factory=list, max_length=LIST_MAX)
    seed_memories: list[Memory] = Field(default_factory=list, max_length=LIST_MAX)
    spawn: Name | None = Field(default=None, description="name of a spawn point in the map")
    intentions: list[Memory] = Field(default_factory=list, max_length=LIST_MAX,
                                     description="what I mean to do each day, first person")

    def summary(self) -> str:
        """A one-paragraph description used at the top of prompts."""
        traits = ", ".join(self.traits) or "ordinary"
        return (
            f"{self.name} ({self.age}) is {traits}. Occupation: {self.occupation} at "
            f"{self.workplace}. Lives at {self.home}. {self.lifestyle}".strip()
        ) + (" Intends: " + " ".join(self.intentions) if self.intentions else "")


# ---------------------------------------------------------------------------
# What a resident perceives each tick
# ---------------------------------------------------------------------------


class PerceivedEvent(BaseModel):
    """An event in view, as an event triple plus a sentence (paper: subject, predicate, object)."""

    subject: str
    predicate: str
    object: str
    description: str
    address: str = Field(description="where it happens, 'sector:arena[:object]'")
    distance: float = 0.0


class ChatLine(BaseModel):
    """One utterance of a conversation, as heard by a participant."""

    speaker: str
    listener: str
    text: str


class Perception(BaseModel):
    """Everything a resident may know of the world this tick. Pure data."""

    resident: str
    tick: int
    time: datetime
    tile: tuple[int, int]
    address: str = Field(description="current 'sector:arena' ('' when outdoors/in the street)")
    events: list[PerceivedEvent] = Field(
        default_factory=list,
        description="new events in view, already cut to the attention bandwidth",
    )
    nearby: list[str] = Field(default_factory=list, description="other residents in view")
    heard: list[ChatLine] = Field(default_factory=list, description="lines addressed to me")
    whispers: list[str] = Field(default_factory=list, description="injected inner voice")
    announcements: list[str] = Field(default_factory=list, description="town-wide events")
    arrived: bool = Field(default=False, description="reached the destination of the last move")
    known_places: list[str] = Field(
        default_factory=list,
        description="addresses this resident knows (spatial memory); only set when it changes",
    )
    memories: list[str] = Field(
        default_factory=list,
        description="things the world says happened to me, to remember (e.g. an encounter's outcome)",
    )


# ---------------------------------------------------------------------------
# What a resident wants to do
# ---------------------------------------------------------------------------

IntentKind = Literal["continue", "go", "use", "say", "wait", "sleep"]


class Intent(BaseModel):
    """A resident's decision for this tick; the world validates and applies it.

    - ``go``: walk towards ``target`` (an address); the engine paths one tile per tick.
    - ``use``: act on the object at ``target`` and set its state to ``object_state``.
    - ``say``: say ``utterance`` to the resident named ``to`` (must be in view).
    - ``continue``: keep doing the current action (no model call was needed).
    - ``wait`` / ``sleep``: stay put.
    """

    model_config = ConfigDict(extra="forbid")

    kind: IntentKind = "continue"
    description: str = Field(default="", description="the current action in words")
    emoji: str = ""
    target: str | None = Field(default=None, description="address for go/use")
    object_state: str | None = None
    to: str | None = Field(default=None, description="listener for say")
    utterance: str | None = None
    event: tuple[str, str, str] | None = Field(
        default=None, description="(subject, predicate, object) triple for this action"
    )


# ---------------------------------------------------------------------------
# The language model seen by every role
# ---------------------------------------------------------------------------

T = TypeVar("T", bound=BaseModel)

Message = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": "..."}


@runtime_checkable
class LanguageModel(Protocol):
    """One entry point for every model call.

    ``purpose`` names the decision (plan_day, importance, converse, judge ...) for
    accounting; ``schema`` is the pydantic model the answer must validate against;
    ``fallback`` is returned (and counted) when every attempt failed, so a caller always
    gets a value of the right type and a simulation never stops on a bad answer.
    """

    async def acomplete(
        self,
        purpose: str,
        messages: list[Message],
        schema: type[T],
        fallback: T,
        *,
        temperature: float = 0.7,
        max_tokens: int = 512,
    ) -> T: ...

    def complete(
        self,
        purpose: str,
        messages: list[Message],
        schema: type[T],
        fallback: T,
        *,
        temperature: float = 0.7,
        max_tokens: int = 512,
    ) -> T: ...


# ---------------------------------------------------------------------------
# A resident's mind, as the engine sees it
# ---------------------------------------------------------------------------


class MindOptions(BaseModel):
    """How a mind is built. Ablations follow the paper's evaluation conditions."""

    ablation: Literal["full", "no_reflection", "no_reflection_planning", "no_observation"] = "full"
    seed: int = 0
    places: list[str] = Field(
        default_factory=list,
        description="every 'sector:arena:object' address in the town (the place tree)",
    )
    start_time: datetime | None = None


@runtime_checkable
class Mind(Protocol):
    """A resident's cognition. Holds its own memory; never touches world state.

    Each tick the engine first calls :meth:`decide_fast`; only when it returns ``None``
    (a decision point: waking, a new event, a finished action, a line heard) does it
    await :meth:`decide`. Memory writes and plans made inside are handed to the engine
    through :meth:`drain_records` so that they join the run's one record stream.
    """

    name: str

    def decide_fast(self, perception: Perception) -> Intent | None: ...

    async def decide(self, perception: Perception) -> Intent: ...

    def drain_records(self) -> list["Record"]: ...

    def snapshot(self) -> dict: ...

    def restore(self, state: dict) -> None: ...


class MindFactory(Protocol):
    def __call__(
        self,
        persona: Persona,
        llm: LanguageModel,
        run_db: "Path | None",
        options: MindOptions,
    ) -> Mind: ...


from pathlib import Path  # noqa: E402  (used in string annotations above)

from replays.records import Record  # noqa: E402
