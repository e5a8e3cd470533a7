"""Every model call a mind makes goes through :class:`Caller`, which counts it by purpose
and turns it into an ``llm`` Record for the run's stream.

The gateway reports each call to its listeners from inside the awaiting task; a context
variable names the mind that is waiting, so with many minds deciding concurrently each
call is still attributed to the right resident.
"""

from __future__ import annotations

import time
import weakref
from collections import Counter
from contextvars import ContextVar
from typing import Any, TypeVar

from pydantic import BaseModel

from maps.contracts import LanguageModel, Message
from maps.contracts import LLMPayload, Record
from agents.llm.cache import prompt_hash

T = TypeVar("T", bound=BaseModel)

_SINK: ContextVar[list | None] = ContextVar("townsfolk_llm_sink", default=None)
_INSTRUMENTED: "weakref.WeakSet[Any]" = weakref.WeakSet()


def _listener(info: Any) -> None:
    sink = _SINK.get()
    if sink is not None:
        sink.append(info)


def _instrument(llm: LanguageModel) -> bool:
    add = getattr(llm, "add_listener", None)
    if add is None:
        return False
    try:
        if llm not in _INSTRUMENTED:
            add(_listener)
            _INSTRUMENTED.add(llm)
    except TypeError:  # not weak-referenceable: attach once per Caller instead
        add(_listener)
    return True


def _last_error(info: Any) -> str:
    """The last attempt's error of a call, on one line (why it fell back)."""
    errors = getattr(info, "errors", None) or []
    return " ".join(str(errors[-1]).split())[:300] if errors else "no valid answer"


def patches_of(answer: Any) -> tuple[int, str]:
    """How many items of a kept answer a schema replaced with the engine's default, and why
    (see prompts.planning's day plan); (0, "") for every other answer."""
    patches = getattr(answer, "patches", None)
    if not callable(patches):
        return 0, ""
    reasons = list(patches())
    return len(reasons), (reasons[0] if reasons else "")


class Caller:
    """Calls the model for one resident; keeps per-purpose counts and pending records."""

    def __init__(self, llm: LanguageModel, resident: str):
        self.llm = llm
        self.resident = resident
        self.counts: Counter[str] = Counter()
        self.records: list[Record] = []
        self._seq = 0
        self._listening = _instrument(llm)
        self.last_fell_back = False  # whether the last call's answer was its typed fallback

    async def ask(
        self,
        purpose: str,
        messages: list[Message],
        schema: type[T],
        fallback: T,
        *,
        temperature: float = 0.7,
        max_tokens: int = 512,
    ) -> T:
        sink: list = []
        token = _SINK.set(sink)
        started = time.perf_counter()
        try:
            result = await self.llm.acomplete(
                purpose, messages, schema, fallback, temperature=temperature, max_tokens=max_tokens
            )
        finally:
            _SINK.reset(token)
        self.counts[purpose] += 1
        self._seq += 1
        if sink:
            info = sink[-1]
            payload = LLMPayload(
                purpose=purpose, call_id=info.call_id, prompt_hash=info.prompt_hash, ok=info.ok,
                fallback=info.fallback, latency_s=info.latency_s,
                error=_last_error(info) if info.fallback else "",
            )
        else:
            payload = LLMPayload(
                purpose=purpose, call_id=f"{self.resident}-{purpose}-{self._seq}",
                prompt_hash=prompt_hash(messages), ok=True, fallback=False,
                latency_s=time.perf_counter() - started,
            )
        self.last_fell_back = payload.fallback
        patched, reason = patches_of(result)
        if patched:
            payload = payload.model_copy(update={"patched": patched, "patch_reason": reason[:300]})
        self.records.append(Record(kind="llm", resident=self.resident, data=payload.model_dump()))
        return result
