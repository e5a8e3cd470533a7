"""The one ordered record stream a run emits.

The engine produces a :class:`TickRecords` per committed tick; the recorder writes it to the
run's SQLite database; the viewer draws it live or from the file. There is no second
format for replay. Each record kind has a small payload model so that readers and writers
agree on field names; payloads are stored as JSON.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

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


class MindErrorPayload(BaseModel):
    """A resident's decision raised an exception; the engine let it carry on with 'continue'."""

    error: str = Field(description="exception type, e.g. ValidationError")
    message: str = Field(description="one line; equal messages are the same error")


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
