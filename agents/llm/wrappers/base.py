"""The two interfaces every layer of the gateway implements, and what passes between them.

A call goes down a stack of wrappers, as in Concordia's language_model wrappers, except that
a call here carries a schema and a typed fallback and may take several attempts:

- a *call layer* (:class:`CallLayer`) answers one :class:`Call` with a valid instance of its
  schema (accounting, recorded answers, caching, retrying);
- an *attempt layer* (:class:`Backend`) turns one :class:`Request` into raw text (the
  availability gate, metering, transport backoff, chaos, and the model backends themselves).

The retrying layer is the one bridge: it asks its backend stack once per attempt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel

from maps.contracts import Message
from agents.llm.task import Task


@dataclass
class Request:
    """One attempt as a backend sees it."""

    purpose: str
    messages: list[Message]
    schema: type[BaseModel]
    temperature: float
    max_tokens: int
    seed: int
    task: Task | None = None  # the role's structured request (agents/llm/task.py); None for a plain call


@dataclass
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0


class Backend(Protocol):
    """Produces raw text for a request. May raise; the layers above handle it."""

    name: str

    async def generate(self, request: Request) -> Completion: ...


def model_spec(backend: Any) -> Any | None:
    """The spec (agents/llm/models.py) of the embedded model behind ``backend``, found through
    wrappers such as chaos (each keeps the next as ``inner``); None for any other model."""
    while backend is not None:
        spec = getattr(backend, "spec", None)
        if spec is not None:
            return spec
        backend = getattr(backend, "inner", None)
    return None


@dataclass
class CallInfo:
    """What a run record keeps of one call: never the prompt, never a key."""

    call_id: str
    purpose: str
    prompt_hash: str
    ok: bool
    fallback: bool
    cached: bool
    attempts: int
    latency_s: float
    errors: list[str] = field(default_factory=list)


@dataclass
class Call:
    """One call on its way down the stack; each layer fills in ``info`` as it goes."""

    purpose: str
    messages: list[Message]
    schema: type[BaseModel]
    fallback: BaseModel
    temperature: float
    max_tokens: int
    info: CallInfo
    task: Task | None = None


class CallLayer(Protocol):
    """Answers a call with a valid instance of ``call.schema`` (the fallback at worst)."""

    async def answer(self, call: Call) -> BaseModel: ...
