"""Each mind's state as one pydantic model: a snapshot is its dump, a restore its validation.

Everything a resident's cognition keeps between ticks: cognition modules read and write it as
``mind.state.x`` (no attribute of the mind stands in for it). Apart from it are its memory stream (rows in
the run file, cut back by tick on restore) and the memory objects that serialise themselves
(spatial and social memory, the importance rater's cache), which the snapshot adds beside it.
Field names and order are those of the snapshots written before this model existed, so old
run files restore unchanged.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_serializer



# ---------------------------------------------------------------------------------------------
# What the state is made of (the cognition modules build and read these; they import them from here,
# and nothing here imports cognition)
# ---------------------------------------------------------------------------------------------


class Gathering(BaseModel):
    """A gathering (or a candidacy) resolved against the town and the clock."""

    kind: str = Field(description="the noun: party, meeting, funeral, ..., or 'candidacy' or 'news'")
    what: str = Field(description="its name in words, e.g. \"Valentine's Day party\"")
    host: str = ""
    place: str = Field(default="", description="'sector:arena' of the town ('' for a candidacy or news)")
    start: datetime | None = None
    end: datetime | None = None
    invitees: list[str] = Field(default_factory=list, description="names, or 'everyone'")

    @property
    def candidacy(self) -> bool:
        return self.kind == "candidacy"

    @property
    def news(self) -> bool:
        """A notion with no place or time, passed on as the fact: a candidacy, or news of someone's life."""
        return self.kind in ("candidacy", "news")

    def key(self) -> str:
        """The same event however it was worded: its kind, host or place, and day."""
        if self.news:
            return f"{self.kind}|{self.host.lower()}|{self.what.lower()}"
        day = f"{self.start:%Y-%m-%d %H:%M}" if self.start else ""
        return f"{self.kind}|{self.place.split(':')[0].lower()}|{day}"


class Block(BaseModel):
    """A stretch of the hourly schedule with one activity."""

    start: datetime
    minutes: int
    activity: str
    sleep: bool = False
    event: str = Field(default="", description="the key of the gathering this block is the slot of")
    visit: str = Field(default="", description="'sector:arena' the resident goes to, to tell people its news")

    @property
    def end(self) -> datetime:
        return self.start + timedelta(minutes=self.minutes)


class Step(BaseModel):
    """One 5-15 minute action: what, where, with which object, shown how."""

    start: datetime
    minutes: int = Field(ge=1)
    description: str
    arena: str
    object: str | None = None
    emoji: str = ""
    object_state: str | None = None
    event: tuple[str, str, str]
    sleep: bool = False
    reaction: bool = False

    @property
    def end(self) -> datetime:
        return self.start + timedelta(minutes=self.minutes)

    def label(self) -> str:
        return f"{self.start:%H:%M} {self.description} @ {self.object or self.arena}"


class Conversation(BaseModel):
    partner: str
    conversation_id: str
    lines: list[str] = Field(default_factory=list, description="'Name: text', in order")
    last_tick: int
    started: datetime
    ended_by_me: bool = False
    goal: str = Field(default="", description="the key of the event this talk is to pass on (or invite to)")
    learned: list[str] = Field(default_factory=list, description="facts heard in this talk (news to me or not)")
    told: list[str] = Field(default_factory=list, description="news I passed on in this talk, as I would say it")
    owed: bool = Field(default=False, description="my answer was not said (held back): it is still my turn")
    held: int = Field(default=0, description="my lines in this talk the world held back")


class PendingMemory(BaseModel):
    """A memory waiting for its importance (or carrying a fixed one)."""

    kind: str
    text: str
    tick: int
    time: datetime
    importance: int | None = Field(default=None, ge=1, le=10)
    triple: tuple[str, str, str] | None = None
    evidence: list[int] = Field(default_factory=list)


class KnownEvent(BaseModel):
    """One gathering (or candidacy) as this resident knows it."""

    event: Gathering
    source: str = Field(default="", description="who told me; '' my own idea, 'whisper', 'announcement'")
    learned: datetime
    going: bool | None = None
    told: list[str] = Field(default_factory=list, description="who knows it from me, or told me")
    invited: bool = False


# ---------------------------------------------------------------------------------------------
# The state
# ---------------------------------------------------------------------------------------------


class MindState(BaseModel):
    """What a generative resident's cognition reads and writes between ticks."""

    model_config = ConfigDict(validate_assignment=False, extra="ignore")

    tick: int = 0
    now: datetime = datetime(2023, 2, 13, 0, 0)
    day: date | None = None
    currently: str = ""
    day_plan: list[str] = Field(default_factory=list)
    blocks: list[Block] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    current: Step | None = None
    phase: str = "idle"
    replan_reason: str = ""
    convo: Conversation | None = None
    last_talk: dict[str, datetime] = Field(default_factory=dict)
    recently_closed: dict[str, int] = Field(default_factory=dict)
    last_chat_end: datetime | None = None
    last_reaction: datetime | None = None
    react_seen: dict[str, datetime] = Field(default_factory=dict)
    pending: list[PendingMemory] = Field(default_factory=list)
    importance_since_reflection: float = 0.0
    seen: dict[str, datetime] = Field(default_factory=dict, description="observations by text, for skipping repeats")
    triggers: list[str] = Field(default_factory=list, description="why the next decide() runs")
    started: bool = False
    sleep: Step | None = Field(default=None, description="tonight's sleep step; its end is rounded from its start")
    events: dict[str, KnownEvent] = Field(default_factory=dict, description="gatherings known, by key")
    events_refused: list[str] = Field(default_factory=list, description="texts whose gathering was refused")


class MindSnapshot(MindState):
    """A snapshot: the state plus who it is of and the self-serialising memory objects."""

    name: str | None = None
    spatial: dict[str, Any] = Field(default_factory=dict)
    social: dict[str, Any] = Field(default_factory=dict)
    rated: dict[str, int] = Field(default_factory=dict)


SNAPSHOT_ORDER = ("name", "tick", "now", "day", "currently", "day_plan", "blocks", "steps", "current", "phase",
                  "replan_reason", "convo", "last_talk", "recently_closed", "last_chat_end", "last_reaction",
                  "react_seen", "pending", "importance_since_reflection", "seen", "triggers", "started",
                  "spatial", "social", "rated", "sleep", "events", "events_refused")


def dump_snapshot(snapshot: MindSnapshot) -> dict[str, Any]:
    """JSON-ready, keys in the order snapshots have always had (run files compare as text)."""
    data = snapshot.model_dump(mode="json")
    return {key: data[key] for key in SNAPSHOT_ORDER}


def load_snapshot(data: dict[str, Any]) -> MindSnapshot:
    """A snapshot from a run file; ones written before a field existed get its old default."""
    data = dict(data)
    data.setdefault("started", True)
    return MindSnapshot.model_validate(data)


class RoutineState(BaseModel):
    """What the routine mind keeps between ticks (its day's blocks are recomputed from ``day``)."""

    day: date | None = None
    block: str = ""
    asleep: bool = False
    going_to_bed: bool = False
    greeted: set[str] = Field(default_factory=set, description="people greeted today")
    sleepers: set[str] = Field(default_factory=set, description="people seen asleep, not woken by a greeting")
    detour: tuple[int, str] | None = Field(default=None, description="(until minute of day, address)")
    said: bool = False

    @field_serializer("greeted", "sleepers")
    def _sorted(self, names: set[str]) -> list[str]:
        return sorted(names)  # a snapshot is the same text for the same state
