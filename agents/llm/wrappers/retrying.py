"""Retrying: validation (with repair), bounded reseeded retries, and the typed fallback.

Each attempt re-asks the same question with the next seed; the failure is never shown to the
model, so no error text reaches a later prompt. When every attempt failed the caller gets a
copy of its fallback (``info.fallback``): a simulation never stops on a bad answer. A model
that cannot be reached at all is not a bad answer: :class:`ModelUnavailable` goes straight up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pydantic import BaseModel

from agents.llm.errors import ModelUnavailable, Unreachable
from agents.llm.repair import RepairError, parse_answer
from agents.llm.wrappers.base import Backend, Call, Request


def attempt_error(exc: Exception) -> str:
    """How a failed attempt is written in the call's record (never shown to the model)."""
    if isinstance(exc, asyncio.TimeoutError):
        return "timeout"
    if isinstance(exc, Unreachable):
        return f"unreachable: {exc.cause}"
    return type(exc).__name__


class Retrying:
    """The call layer that asks its backend stack up to ``max_attempts`` times."""

    def __init__(self, backend: Backend, *, max_attempts: int, seed: int,
                 on_invalid: Callable[[str], None] | None = None) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.backend = backend
        self.max_attempts = max_attempts
        self.seed = seed
        self.on_invalid = on_invalid  # told the purpose of each answer that failed validation

    async def answer(self, call: Call) -> BaseModel:
        for attempt in range(self.max_attempts):
            value = await self._attempt(call, self.seed + attempt)
            if value is not None:
                call.info.ok = True
                return value
        call.info.fallback = True
        return call.fallback.model_copy(deep=True)

    async def _attempt(self, call: Call, seed: int) -> BaseModel | None:
        """One attempt's valid answer, or None (the reason kept in ``call.info.errors``)."""
        call.info.attempts += 1
        request = Request(call.purpose, call.messages, call.schema, call.temperature, call.max_tokens, seed)
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
