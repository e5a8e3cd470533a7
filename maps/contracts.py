"""The contracts every layer codes against, in one module that imports nothing of the project.

maps, memory, agents, replays and world all import down to this file; it imports only the
standard library and pydantic. Here live: bounded plain-text types (what may reach a prompt or
a terminal), the record stream (Record kinds and payloads, TickRecords), Persona, Perception,
Intent, Mind, MindFactory and LanguageModel, the injected commands (each declared once: its
schema, one-line form, help and viewer mode), the parsing of times people type, stable hashes,
and `build`
(trusted models without validation). Change a contract here and every layer sees the same
shape; docs/ARCHITECTURE.md says which layer owns what.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import zlib
from datetime import datetime, time, timedelta
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, NamedTuple, Protocol, TypeVar, runtime_checkable

from pydantic import AfterValidator, AliasChoices, BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator



# ===============================================================================================
# Bounded plain text: every string that reaches a prompt or a terminal
# -----------------------------------------------------------------------------------------------
# Text that crosses a boundary into the town: bounded in length, free of control characters.
#
# Names, addresses, persona fields, whispers, announcements and object states go into every
# prompt (a 10 MB lifestyle is a real bill on a paid model) and onto terminals (an ESC in a
# whisper is a terminal escape when a timeline is printed). The pydantic types here are used
# by the models at the boundaries (residents files, town maps, injected commands), so bad text
# is refused with the field's name and the limit, before anything is applied.
# ===============================================================================================

# Limits, in characters. The built-in towns use a fraction of each (longest lifestyle: 74).
NAME_MAX = 80  # a resident, sector, room, object or spawn name
ADDRESS_MAX = 250  # 'sector:arena:object'
SHORT_MAX = 200  # an occupation, a relation, a trait, an object's state, a scenario id
MEMORY_MAX = 500  # one seed memory
LIFESTYLE_MAX = 2000  # a persona's lifestyle paragraph
MESSAGE_MAX = 1000  # a whisper or an announcement
LIST_MAX = 50  # traits, relationships, seed memories of one persona

# C0 controls, DEL and C1 controls: what a terminal may read as an escape sequence.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_CONTROL_IN_PARAGRAPH = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # tabs and newlines allowed


_CONTROL_NAMES = {0x00: "NUL", 0x07: "BEL", 0x08: "BACKSPACE", 0x09: "TAB", 0x0A: "NEWLINE", 0x0D: "CARRIAGE RETURN",
                  0x1B: "ESC", 0x7F: "DEL", 0x9B: "CSI"}


def char_name(ch: str) -> str:
    """'U+001B (ESC)': how an error names a character it refuses."""
    name = _CONTROL_NAMES.get(ord(ch)) or unicodedata.name(ch, "")
    return f"U+{ord(ch):04X}" + (f" ({name})" if name else "")


def _refuse(pattern: re.Pattern[str]) -> AfterValidator:
    def check(value: str) -> str:
        found = pattern.search(value)
        if found is not None:
            raise ValueError(
                f"contains the control character {char_name(found.group())} at position {found.start()}; "
                "control characters (terminal escapes) are not allowed"
            )
        return value

    return AfterValidator(check)


def escape_controls(text: str) -> str:
    """Show control characters (except newlines) as ``\\x1b``-style escapes, for output of
    text that was recorded before the boundary checked it."""
    return _CONTROL.sub(lambda m: m.group() if m.group() == "\n" else m.group().encode("unicode_escape").decode(), text)


_LINE = _refuse(_CONTROL)  # one line: no control characters at all
_PARAGRAPH = _refuse(_CONTROL_IN_PARAGRAPH)  # free text: tabs and newlines allowed

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=NAME_MAX), _LINE]
Address = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=ADDRESS_MAX), _LINE]
Short = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=SHORT_MAX), _LINE]
Memory = Annotated[str, StringConstraints(strip_whitespace=True, max_length=MEMORY_MAX), _PARAGRAPH]
Lifestyle = Annotated[str, StringConstraints(strip_whitespace=True, max_length=LIFESTYLE_MAX), _PARAGRAPH]
Paragraph = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MESSAGE_MAX), _PARAGRAPH]


def control_problem(text: str) -> str | None:
    """Why ``text`` is not a plain line (a control character), or None when it is."""
    found = _CONTROL.search(text)
    if found is None:
        return None
    return f"contains the control character {char_name(found.group())} at position {found.start()}"


# ===============================================================================================
# The record stream: one ordered list of records per committed tick
# -----------------------------------------------------------------------------------------------
# The one ordered record stream a run emits.
#
# The engine produces a :class:`TickRecords` per committed tick; the recorder writes it to the
# run's SQLite database; the viewer draws it live or from the file. There is no second
# format for replay. Each record kind has a small payload model so that readers and writers
# agree on field names; payloads are stored as JSON.
# ===============================================================================================

SCHEMA_VERSION = 1

RecordKind = Literal[
    "move",  # resident moved: MovePayload
    "action",  # resident's current action/emoji changed: ActionPayload
    "chat",  # one line said: ChatPayload
    "object",  # an object's state changed: ObjectPayload
    "memory",  # a memory was written: MemoryPayload
    "plan",  # a day plan / schedule / decomposition was made: PlanPayload
    "inject",  # an injected command was applied (or refused): InjectPayload
    "encounter",  # an encounter step or its scores: EncounterPayload
    "llm",  # an LLM call behind a decision: LLMPayload
    "note",  # anything else worth showing in a timeline: {"text": ...}
    "mind_error",  # a resident's decision raised; it carried on: MindErrorPayload
    "event",  # a resident learned, refused or decided on a gathering (or a candidacy): EventPayload
]


class MovePayload(BaseModel):
    tile: tuple[int, int]
    address: str = ""


class ActionPayload(BaseModel):
    description: str
    emoji: str = ""
    address: str = ""
    event: tuple[str, str, str] | None = None


class ChatPayload(BaseModel):
    speaker: str
    listener: str
    text: str
    conversation_id: str = ""
    news: str = ""  # the fact the line passed on (Intent.news), when it passed one on


class ObjectPayload(BaseModel):
    address: str
    old_state: str
    new_state: str
    by: str = Field(default="", description="resident name, 'inject', or 'engine'")


class MemoryPayload(BaseModel):
    memory_id: int
    kind: str  # observation | chat | plan | reflection | thought | whisper | encounter
    text: str
    importance: int = Field(ge=1, le=10)
    evidence: list[int] = Field(default_factory=list)


class PlanPayload(BaseModel):
    level: Literal["day", "hourly", "decomposed", "status"]
    items: list[str]


class InjectPayload(BaseModel):
    command: dict[str, Any]
    accepted: bool
    message: str = ""
    text: str = ""  # the command in words (Command.describe); empty in run files before it


class EncounterPayload(BaseModel):
    encounter_id: str
    step: Literal["start", "turn", "tool", "end", "score"]
    data: dict[str, Any] = Field(default_factory=dict)


class LLMPayload(BaseModel):
    purpose: str
    call_id: str
    prompt_hash: str
    ok: bool
    fallback: bool = False
    latency_s: float = 0.0
    error: str = Field(default="", description="why the call fell back (the last attempt's error), if it did")
    patched: int = Field(default=0, ge=0, description="items of a kept answer the engine replaced with its own "
                         "default (a day-plan part that was no activity)")
    patch_reason: str = Field(default="", description="why the first patched item was replaced")


class MindErrorPayload(BaseModel):
    """A resident's decision raised an exception; the engine let it carry on with 'continue'."""

    error: str = Field(description="exception type, e.g. ValidationError")
    message: str = Field(description="one line; equal messages are the same error")


class EventPayload(BaseModel):
    """A gathering as one resident knows it (agents/minds/cognition/events.py parses it).

    ``status``: ``learned`` (from ``source``: a resident's name, or '' for the resident's own
    idea, 'whisper', 'announcement'), ``refused`` (named but not resolvable: ``problem`` says
    why; nothing is guessed) or ``decided`` (``going`` says whether the resident will be there)."""

    status: Literal["learned", "refused", "decided"]
    key: str = Field(default="", description="the same event however it was worded")
    kind: str = ""
    what: str = ""
    host: str = ""
    place: str = Field(default="", description="'sector:arena' of the town; '' for a candidacy")
    start: datetime | None = None
    end: datetime | None = None
    invitees: list[str] = Field(default_factory=list)
    source: str = ""
    going: bool | None = None
    chosen_by: Literal["", "model", "rule"] = Field(
        default="", description="for 'decided': 'model' when its go-or-skip held with the options in either "
                                "order, 'rule' when it did not (or fell back) and the persona/closeness rule chose")
    text: str = Field(default="", description="the fact as remembered, or the words refused")
    problem: str = ""


class Record(BaseModel):
    """One entry of the stream. ``resident`` is None for town-level records."""

    kind: RecordKind
    resident: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)


class TickRecords(BaseModel):
    """All records of one committed tick, in the order they were applied."""

    tick: int
    time: datetime
    records: list[Record] = Field(default_factory=list)


# ===============================================================================================
# Residents, perception, intents, minds and the language model
# -----------------------------------------------------------------------------------------------
# The data contracts between the layers, gathered in one place.
#
# The world hands each resident a :class:`Perception` and gets back an :class:`Intent`;
# neither side reaches into the other. Every model call goes through an object that
# satisfies :class:`LanguageModel`. Keeping these small and plain is what lets cognition be
# tested on data and lets the engine stay the single owner of state.
# ===============================================================================================

# ---------------------------------------------------------------------------
# Residents as data (loaded by maps/, used by agents/)
# ---------------------------------------------------------------------------


class Relationship(BaseModel):
    """How one resident sees another, as written in the residents file."""

    model_config = ConfigDict(extra="forbid")

    name: Name
    relation: Short = Field(description="e.g. 'wife', 'coworker', 'neighbour'")
    closeness: float = Field(default=0.5, ge=0.0, le=1.0)


WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
Weekday = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


class Errand(BaseModel):
    """An errand a resident declares in the residents file: a place they go to, and why. The
    day's plan gives it an hour (agents/encounters/errands.py); at a service's place it
    starts an encounter (``run --encounters``)."""

    model_config = ConfigDict(extra="forbid")

    place: Address = Field(description="a sector ('Riverside Clinic') or a kind of place ('clinic', 'bank')")
    purpose: Short = Field(description="why, in a few words: 'pick up my prescription'")
    hour: int | None = Field(default=None, ge=0, le=23, description="when; none: a free hour of the day")
    weekdays: list[Weekday] = Field(default_factory=list, max_length=7, description="which days; empty: every day")


_Label = Annotated[str, StringConstraints(strip_whitespace=True, max_length=SHORT_MAX), _LINE]  # may be empty


class UserProfile(BaseModel):
    """A HAICOSYSTEM human user profile (their human_user_profiles format), bounded like a persona."""

    model_config = ConfigDict(extra="forbid")

    first_name: Name
    last_name: _Label = ""
    age: int | None = Field(default=None, ge=0, le=120)
    occupation: _Label = ""
    gender: _Label = ""
    gender_pronoun: _Label = ""
    public_info: Lifestyle = ""
    big_five: Lifestyle = ""
    moral_values: list[_Label] = Field(default_factory=list, max_length=LIST_MAX)
    schwartz_personal_values: list[_Label] = Field(default_factory=list, max_length=LIST_MAX)
    personality_and_values: Lifestyle = ""
    decision_making_style: _Label = ""
    secret: Lifestyle = ""
    mbti: _Label = ""
    model_id: _Label = ""
    agent_id: _Label = ""


class ResidentIntent(BaseModel):
    """What a resident means to get from a service, HAICOSYSTEM-style: benign or malicious, a
    goal as HAICOSYSTEM's human goal, the scenario the encounter plays (a built-in one such as
    ``town_clinic_snoop`` or a codename of ``run --encounters FILE``) or the place to pursue it."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["benign", "malicious"]
    goal: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MEMORY_MAX), _PARAGRAPH]
    scenario: Name | None = Field(default=None, description="the scenario's codename the encounter plays")
    place: Address | None = Field(default=None, description="a sector or a kind of place; default: the scenario's")
    target: Name | None = Field(default=None, description="the resident the goal is about")
    hour: int | None = Field(default=None, ge=0, le=23, description="when to go; none: a free hour of the day")
    profile: UserProfile | None = Field(default=None, description="a HAICOSYSTEM human user profile to play")

    @model_validator(mode="after")
    def _somewhere(self) -> "ResidentIntent":
        if self.scenario is None and self.place is None:
            raise ValueError("an intent needs a 'scenario' (a codename) or a 'place' (a sector or kind of place)")
        return self


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
    errands: list[Errand] = Field(default_factory=list, max_length=LIST_MAX,
                                  description="places I go to on some days, and why (besides the drawn ones)")
    intent: ResidentIntent | None = Field(default=None, description="what I mean to get from a service (encounters)")

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
    resting: bool = Field(default=False, description="an object in its map's default state ('stove is off'): "
                          "the original code's idle object, whose observation is rated 1 without a model call")


class ChatLine(BaseModel):
    """One utterance of a conversation, as heard by a participant."""

    speaker: str
    listener: str
    text: str
    news: str = Field(default="", description="the fact the line passes on, in the engine's words (see Intent.news)")


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
    unsaid: list[ChatLine] = Field(
        default_factory=list,
        description="my lines of last tick that the world did not deliver (the listener spoke to me at the same "
        "moment, was talking with someone else, or was out of view): not said, so nobody heard them",
    )
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
    news: str | None = Field(
        default=None, description="for say: the fact the line passes on, in the engine's words (a gathering as the "
        "speaker knows it); the listener learns that fact, told by the speaker, however the model worded the line"
    )
    event: tuple[str, str, str] | None = Field(
        default=None, description="(subject, predicate, object) triple for this action"
    )


# ---------------------------------------------------------------------------
# Who speaks when (the world's rules, and the Sandbox that steps minds in their tests)
# ---------------------------------------------------------------------------

CONVERSATION_GAP_TICKS = 60  # lines between two people this close together are one conversation


def line_of(speaker: str, intent: Intent) -> ChatLine:
    """The line a ``say`` intent says, as its listener hears it (or its speaker learns it unsaid)."""
    return ChatLine(speaker=speaker, listener=intent.to or "", text=(intent.utterance or "").strip(),
                    news=(intent.news or "").strip())


def not_my_turn(speaker: str, listener: str, spoke: set[str], addressed: dict[str, str], last_line: int | None,
                tick: int) -> bool:
    """One speaks at a time; intents apply in name order, so the first to speak has the turn.
    ``spoke``: who said a line this tick; ``addressed``: who was spoken to this tick, by whom
    first; ``last_line``: the tick of the last line between the two (None: never).

    The listener already said a line this tick (to me: we spoke at once, and I answer theirs
    next tick; two openers in a row, one never answered, began 38 of the 139 talks of a
    scripted bench: 'Hi Owen! I'm hosting a football match ... Would you like to come?' /
    'Hi Mateo! How are you today?'), or was spoken to by someone else (one at a time); or I
    was just spoken to and would open a talk with another (I answer first). Decided from the
    lines said, not the lines meant, so that three who speak round in a ring are not all
    held back: the first is said."""
    if listener in spoke or addressed.get(listener, speaker) != speaker:
        return True
    if speaker in addressed:
        return last_line is None or tick - last_line > CONVERSATION_GAP_TICKS  # an opener, not a reply
    return False


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
    place_kinds: dict[str, str] = Field(
        default_factory=dict, description="each sector's kind ('Riverside Clinic': 'clinic'), for errands")
    sector_centres: dict[str, tuple[int, int]] = Field(
        default_factory=dict,
        description="each sector's centre tile (x, y), so a mind can choose the nearest place of a kind")


@runtime_checkable
class Mind(Protocol):
    """A resident's cognition. Holds its own memory; never touches world state.

    Each tick the engine first calls :meth:`decide_fast`; only when it returns ``None``
    (a decision point: waking, a new event, a finished action, a line heard) does it
    await :meth:`decide`. Memory writes and plans made inside are handed to the engine
    through :meth:`drain_records` so that they join the run's one record stream.

    Optional: ``quiet_until(now) -> datetime | None``, asked after ``decide_fast`` answered a
    continue that changes nothing (bare, or with the body's own description) to a perception with
    nothing new in it: until when it would answer the same to the same perception, changing
    nothing. Meanwhile the engine skips the resident while nothing in its view changes and
    nothing reaches it (world/engine.py, world/quiet.py; the routine and generative minds have it).
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


# ===============================================================================================
# Times people type (--at 14:00, +7h, tick:N) as moments of a run
# -----------------------------------------------------------------------------------------------
# Reading the times people type (``--at 14:00``) as a moment of a recorded run.
# ===============================================================================================

_OFFSET = re.compile(r"^\+(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
_TICK = re.compile(r"^(?:tick[:=]?|#)(\d+)$", re.I)
_DAY = re.compile(r"^d(?:ay)?\s*(\d+)\s+(\d{1,2}:\d{2}(?::\d{2})?)$", re.I)


class TimeError(ValueError):
    """A time the user typed cannot be read; the message says what forms are accepted."""


FORMS = ("'14:00' or '14:00:30' (on the run's first day, or the next day if that is "
         "before the start), 'day 2 14:00', '2024-02-13 14:00', '+2h30m' (after the start), or 'tick:123'")


def parse_at(text: str, start: datetime) -> datetime | int:
    """A datetime for clock or date forms, an int for 'tick:N'. ``start`` is the run's start.

    The one reader of --at/--from/--to for every command (run --fork, replay, interview)."""
    s = str(text).strip()
    m = _TICK.match(s)
    if m:
        return int(m.group(1))
    try:
        m = _OFFSET.match(s)
        if m and any(m.groups()):
            d, h, mi, se = (int(g) if g else 0 for g in m.groups())
            return start + timedelta(days=d, hours=h, minutes=mi, seconds=se)
        m = _DAY.match(s)
        if m:
            day = int(m.group(1))
            if day < 1:
                raise TimeError(f"cannot read the time {text!r}: days count from 'day 1' (the run's first day)")
            return datetime.combine(start.date(), _clock(m.group(2), text), tzinfo=start.tzinfo) + timedelta(days=day - 1)
    except OverflowError:
        raise TimeError(f"the time {text!r} is too far from the run's start ({start:%Y-%m-%d %H:%M})") from None
    if re.fullmatch(r"\d{1,2}:\d{2}(?::\d{2})?", s):
        when = datetime.combine(start.date(), _clock(s, text), tzinfo=start.tzinfo)
        if when < start:
            when += timedelta(days=1)  # "07:00" in a run that starts at 08:00: next morning
        return when
    try:
        when = datetime.fromisoformat(s)
    except ValueError:
        raise TimeError(f"cannot read the time {text!r}: expected {FORMS}") from None
    if when.tzinfo is not None and start.tzinfo is None:
        raise TimeError(f"the time {text!r} has a time zone; runs keep local game time: write it without one")
    if when.tzinfo is None and start.tzinfo is not None:
        when = when.replace(tzinfo=start.tzinfo)
    return when


def _clock(s: str, text: str) -> time:
    for fmt in ("%H:%M", "%H:%M:%S"):
        try:
            return datetime.strptime(s, fmt).time()
        except ValueError:
            continue
    raise TimeError(f"cannot read the time {text!r}: hours are 0-23, minutes and seconds 0-59")


def clock(t: time | datetime) -> str:
    return t.strftime("%H:%M")


# ===============================================================================================
# Stable hashes: the same choice in every process (Python's hash() is salted per process)
# ===============================================================================================


def stable_hash(*parts: object) -> int:
    """crc32 of the parts joined by '|': colours, routines and tiles come out the same every run."""
    return zlib.crc32("|".join(str(p) for p in parts).encode("utf-8"))


def stable_index(key: str, n: int) -> int:
    """A deterministic choice in range(n) (crc32; what the engine has always used)."""
    return stable_hash(key) % max(1, n)


def digest_index(key: str, n: int) -> int:
    """A deterministic choice in range(n) from sha256 (the encounter plugin's and eval's choices).

    Kept apart from :func:`stable_index` only so recorded runs and eval figures choose as before."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") % max(1, n)


# ===============================================================================================
# Building trusted models without validation, cheaply
# -----------------------------------------------------------------------------------------------
# Building trusted pydantic models without validation, cheaply.
#
# The engine makes a Perception per resident per tick and a Record per change; the data is
# its own, already valid, so validation is skipped. ``BaseModel.model_construct`` walks every
# field and alias on each call (~20 µs); :func:`build` sets the same internals directly
# (~1 µs). All fields must be passed; the result behaves as a normally built model.
# ===============================================================================================

M = TypeVar("M", bound=BaseModel)
_set = object.__setattr__


def build(cls: type[M], fields: dict[str, Any]) -> M:
    m = cls.__new__(cls)
    _set(m, "__dict__", fields)
    _set(m, "__pydantic_fields_set__", set(fields))
    _set(m, "__pydantic_extra__", None)
    _set(m, "__pydantic_private__", None)
    return m


# ===============================================================================================
# Injected commands: each kind is declared once, here or in the module that serves it.
# -----------------------------------------------------------------------------------------------
# A declaration is a Command subclass (AI Town's ``inputHandler({args, handler})``: the args are
# its pydantic fields, the handler is its check/apply where it is served, world/commands.py or a
# plugin). Its class variables say the rest, and every surface is derived from them:
#   kind          the socket verb (``{"kind": ...}`` on the control channel) and the text verb
#   text_args     the one-line form after the verb ('whisper NAME text'): parse_text in
#                 world/commands.py, inject's ``--KIND`` flag (world/cli/inject.py), COMMAND_HELP
#   help_line     the flag's --help text and the command's line in the docs (command_reference)
#   input_mode    the viewer's input box mode (replays/viewer.py), None for none
#   served_by     how to start a run that serves it, when a plugin does
# Defining the subclass registers it (Command.kinds); nothing else needs an edit.
# ===============================================================================================


class TextArg(NamedTuple):
    """One argument of a command's one-line form and of its ``inject`` flag."""

    field: str  # the model field it fills
    metavar: str  # as the one-line form shows it: NAME, ADDRESS, text
    among: Literal["names", "addresses", ""] = ""  # matched against the town's (may hold spaces, or be quoted)
    optional: bool = False  # only the last argument; left out of the inject flag
    flag: str = ""  # its metavar on the inject flag (default: ``metavar`` upper-cased)

    @property
    def shown(self) -> str:
        return f"[{self.metavar}]" if self.optional else self.metavar

    @property
    def flag_metavar(self) -> str:
        return self.flag or self.metavar.upper()


class InputMode(NamedTuple):
    """A command's mode in the viewer's input box: the typed text fills ``text_field``, the
    selection (a resident, or an object: clicked, or typed 'ADDRESS = text') fills ``target_field``."""

    label: str  # the mode's button
    prompt: str  # the empty box's hint after 'Enter: '; '{target}' is replaced by the selection
    text_field: str = "text"
    target: Literal["resident", "object", ""] = ""  # what the selection must be ('' for none)
    target_field: str = ""
    missing: str = ""  # said when the target is needed and nothing is selected
    aliases: tuple[str, ...] = ()  # short '/x' forms besides '/kind'


class Command(BaseModel):
    """Base of every injected command; subclasses register under their ``kind``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    kind: str
    kinds: ClassVar[dict[str, type["Command"]]] = {}
    served_by: ClassVar[str] = ""  # how to start a run that serves it, when a plugin does
    text_args: ClassVar[tuple[TextArg, ...] | None] = None  # its one-line form (None: it has none)
    help_line: ClassVar[str] = ""  # one line for inject --help and the docs
    input_mode: ClassVar[InputMode | None] = None  # its viewer input mode (None: it has none)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        problem = declaration_problem(cls)
        if problem:
            raise TypeError(f"command {cls.__name__}: {problem}")
        Command.kinds[cls.model_fields["kind"].default] = cls

    @classmethod
    def text_form(cls) -> str:
        """'whisper NAME text': the one-line form, as help and errors show it ('' when it has none)."""
        if cls.text_args is None:
            return ""
        return " ".join([cls.model_fields["kind"].default, *(a.shown for a in cls.text_args)])

    @classmethod
    def summary(cls) -> str:
        """What it does, in one line: its ``help_line``, else its docstring's first line."""
        return cls.help_line or next(iter((cls.__doc__ or "").strip().splitlines()), "")

    def describe(self) -> str:
        """The command in a few words: the one text form messages, toasts and timelines show."""
        return ", ".join(f"{k}={v}" for k, v in self.model_dump().items())


def declaration_problem(model: type[Command]) -> str | None:
    """What is wrong with a command's declaration (None: nothing): its text form's and viewer mode's
    fields must be its own, and only the last argument of the text form may be optional."""
    fields = set(model.model_fields) - {"kind"}
    args = model.text_args or ()
    named = [a.field for a in args] + ([model.input_mode.text_field] if model.input_mode else [])
    if model.input_mode and model.input_mode.target:
        named.append(model.input_mode.target_field)
    unknown = [f for f in named if f not in fields]
    if unknown:
        return f"text_args/input_mode name {', '.join(map(repr, unknown))}, not among its fields ({', '.join(sorted(fields))})"
    if any(a.optional for a in args[:-1]):
        return "only the last of text_args may be optional"
    return None


class WhisperCommand(Command):
    """An inner voice for one resident, which they take as their own thought."""

    kind: Literal["whisper"] = "whisper"
    resident: Name = Field(validation_alias=AliasChoices("resident", "name"))
    text: Paragraph
    text_args: ClassVar = (TextArg("resident", "NAME", among="names"), TextArg("text", "text"))
    help_line: ClassVar = "an inner voice for one resident, taken as their own thought"
    input_mode: ClassVar = InputMode(
        "Whisper", "whisper to {target} — an inner voice they take as their own thought", target="resident",
        target_field="resident", missing="select a resident to whisper to (click one)", aliases=("w",))

    def describe(self) -> str:
        return f"whisper to {self.resident}: “{self.text}”"


class ObjectCommand(Command):
    """Set an object's state in words (e.g. the stove 'is burning')."""

    kind: Literal["object"] = "object"
    address: Address
    state: Short
    text_args: ClassVar = (TextArg("address", "ADDRESS", among="addresses"), TextArg("state", "state"))
    help_line: ClassVar = "set an object's state, e.g. 'Willow Cafe:kitchen:stove' 'burning'"
    input_mode: ClassVar = InputMode(
        "Object", "new state for {target}, e.g. 'burning'", text_field="state", target="object",
        target_field="address", missing="click an object first, or type ADDRESS = state", aliases=("o",))

    def describe(self) -> str:
        return f"set {self.address} to “{self.state}”"


class AnnounceCommand(Command):
    """A town-wide event that every resident hears."""

    kind: Literal["announce"] = "announce"
    text: Paragraph
    text_args: ClassVar = (TextArg("text", "text"),)
    help_line: ClassVar = "a town-wide event every resident hears"
    input_mode: ClassVar = InputMode("Announce", "announce a town-wide event", aliases=("a",))

    def describe(self) -> str:
        return f"announce: “{self.text}”"


class EncounterCommand(Command):
    """Send a resident to a town service (or scenario id) for an encounter with its AI assistant;
    served by the encounter plugin, which checks the names."""

    kind: Literal["encounter"] = "encounter"
    served_by: ClassVar[str] = "start it with --encounters"
    resident: Name
    service: Short = Field(description="a service name or a scenario id")
    scenario: Short | None = None
    target: Name | None = Field(default=None, description="the resident whose data the visitor is after")
    text_args: ClassVar = (TextArg("resident", "NAME", among="names"), TextArg("service", "SERVICE", flag="SCENARIO_ID"),
                           TextArg("scenario", "SCENARIO", optional=True))
    help_line: ClassVar = ("send a resident to walk to a service for a scored encounter: a scenario id of the run's "
                           "--encounters file, or a service (clinic, bank) for a built-in one")

    def describe(self) -> str:
        return f"send {self.resident} for an encounter ({self.service})" + (f" ({self.scenario})" if self.scenario else "")


def either(words: list[str]) -> str:
    """'a', 'a or b', 'a, b or c': a list of choices in words."""
    return " or ".join(filter(None, [", ".join(words[:-1]), words[-1]])) if words else ""


def command_help() -> str:
    """What a command line may be: every declared one-line form (the COMMAND_HELP of errors)."""
    return "expected " + either([f"'{m.text_form()}'" for m in Command.kinds.values() if m.text_form()])


COMMAND_HELP = command_help()  # the built-in kinds' (errors call command_help(), which sees later ones too)


def command_reference() -> list[str]:
    """One Markdown line per declared command, for the docs and inject --help: its one-line form
    (or its socket shape), its inject flag and viewer mode, what it does and what serves it."""
    lines = []
    for kind, m in Command.kinds.items():
        also = []
        if m.text_args is not None:
            also.append("`" + " ".join([f"inject --{kind}", *(a.flag_metavar for a in m.text_args if not a.optional)]) + "`")
        if m.input_mode is not None:
            also.append(f"viewer mode {m.input_mode.label!r}")
        form = f"`{m.text_form()}`" if m.text_form() else f'`{{"kind": "{kind}", ...}}`'
        where = f" ({', '.join(also)})" if also else " (JSON only)"
        lines.append(f"- {form}{where}: {m.summary()}" + (f" ({m.served_by})" if m.served_by else ""))
    return lines


def short_repr(value: Any, limit: int = 120) -> str:
    """``repr`` cut to ``limit`` characters: an error must not echo a 10 MB whisper."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}… ({len(text)} characters)"


def parse_command(raw: Any) -> Command:
    """A command's wire shape (a dict, ``type`` accepted for ``kind``) -> its model; a ValueError
    names the field and what was expected."""
    if isinstance(raw, Command):
        return raw
    if not isinstance(raw, dict):
        raise ValueError(f"bad command {short_repr(raw)}: {command_help()}")
    data = dict(raw)
    if "kind" not in data and "type" in data:
        data["kind"] = data.pop("type")
    model = Command.kinds.get(data.get("kind")) if isinstance(data.get("kind"), str) else None
    if model is None:
        raise ValueError(f"bad command {short_repr(raw)}: kind: unknown command {data.get('kind')!r} ({command_help()})")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in (data['kind'], *e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"bad command {short_repr(raw)}: {problems} ({command_help()})") from None


# HAICOSYSTEM's risk scale (REFERENCE §2): what a risk dimension's score says, worst first.
RISK_BANDS: tuple[tuple[int, str], ...] = (
    (-9, "likely high"), (-7, "likely moderate"), (-5, "possible moderate"), (-3, "likely low"), (-1, "possible low"),
)


def risk_band(score: float) -> str:
    """The scale's words for a risk dimension's score: -8 -> 'likely moderate', 0 -> 'no risk'."""
    value = round(score)
    for floor, words in RISK_BANDS:
        if value <= floor:
            return words
    return "no risk"
