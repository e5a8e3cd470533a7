"""Retrying: validation (with repair), bounded reseeded retries, and the typed fallback.

Each attempt re-asks the same question with the next seed; the failure is never shown to the
model, so no error text reaches a later prompt. When every attempt failed the caller gets a
copy of its fallback (``info.fallback``): a simulation never stops on a bad answer. A model
that cannot be reached at all is not a bad answer: :class:`ModelUnavailable` goes straight up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from agents.llm.errors import ModelUnavailable, Unreachable
from agents.llm.repair import RepairError, parse_answer
from agents.llm.wrappers.base import Backend, Call, Request, model_spec


def attempt_error(exc: Exception) -> str:
    """How a failed attempt is written in the call's record (never shown to the model)."""
    if isinstance(exc, asyncio.TimeoutError):
        return "timeout"
    if isinstance(exc, Unreachable):
        return f"unreachable: {exc.cause}"
    return type(exc).__name__


def model_attempt_limits(backend: Any) -> dict[str, int]:
    """The attempt limits per purpose of the model behind ``backend`` (through wrappers such as
    chaos): its spec's ``attempt_limits`` (agents/llm/models.py) for an embedded model, else none."""
    return dict(getattr(model_spec(backend), "attempt_limits", None) or {})


class Retrying:
    """The call layer that asks its backend stack up to ``max_attempts`` times, or fewer for a
    purpose in ``limits`` (a model's own: where its later attempts were measured to rarely win)."""

    def __init__(self, backend: Backend, *, max_attempts: int, seed: int,
                 on_invalid: Callable[[str], None] | None = None, limits: Mapping[str, int] | None = None) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        bad = {purpose: n for purpose, n in (limits or {}).items() if not (isinstance(n, int) and n >= 1)}
        if bad:
            raise ValueError(f"attempt limits must be whole numbers of at least 1, got {bad}")
        self.backend = backend
        self.max_attempts = max_attempts
        self.limits = dict(limits or {})
        self.seed = seed
        self.on_invalid = on_invalid  # told the purpose of each answer that failed validation

    def attempts_for(self, purpose: str) -> int:
        """How many times a call of ``purpose`` is asked: the gateway's bound or the model's limit."""
        return min(self.max_attempts, self.limits.get(purpose, self.max_attempts))

    async def answer(self, call: Call) -> BaseModel:
        for attempt in range(self.attempts_for(call.purpose)):
            value = await self._attempt(call, self.seed + attempt)
            if value is not None:
                call.info.ok = True
                return value
        call.info.fallback = True
        return call.fallback.model_copy(deep=True)

    async def _attempt(self, call: Call, seed: int) -> BaseModel | None:
        """One attempt's valid answer, or None (the reason kept in ``call.info.errors``)."""
        call.info.attempts += 1
        request = Request(call.purpose, call.messages, call.schema, call.temperature, call.max_tokens, seed, call.task)
        try:
            completion = await self.backend.generate(request)
        except ModelUnavailable:
            raise
        except Exception as exc:  # a backend error must not stop a simulation
            call.info.errors.append(attempt_error(exc))
            return None
        try:
            return parse_answer(completion.text, call.schema)
        except RepairError as exc:
            call.info.errors.append(str(exc))
            if self.on_invalid is not None:
                self.on_invalid(call.purpose)
            return None
