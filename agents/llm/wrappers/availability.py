"""The stop for a model that cannot answer at all (agents/llm/errors.py).

An attempt that could not reach the model (after the transport layer's backoff) counts toward
a streak; any answer, however bad, resets it. After ``unavailable_after`` in a row the gate
closes: that attempt and every later one, of any call, raise :class:`ModelUnavailable`, which
stops the command with the cause and the fix instead of a run made of fallbacks.
"""

from __future__ import annotations

import threading

from agents.llm.errors import ModelUnavailable, Unreachable
from agents.llm.wrappers.base import Backend, Completion, Request

# Attempts in a row that could not reach the model (after backoff) before the gateway gives up.
UNAVAILABLE_AFTER = 3


class AvailabilityGate:
    """The outermost attempt layer: closes for good after enough unreachable attempts in a row."""

    def __init__(self, inner: Backend, model: str, unavailable_after: int = UNAVAILABLE_AFTER) -> None:
        if unavailable_after < 1:
            raise ValueError("unavailable_after must be at least 1")
        self.inner = inner
        self.name = inner.name
        self.model = model
        self.unavailable_after = unavailable_after
        self.unavailable: ModelUnavailable | None = None  # set once; every later attempt raises it
        self._streak = 0
        self._lock = threading.Lock()

    async def generate(self, request: Request) -> Completion:
        if self.unavailable is not None:
            raise self.unavailable
        try:
            completion = await self.inner.generate(request)
        except Unreachable as exc:
            self._count(exc)
            raise
        with self._lock:
            self._streak = 0  # the model answered, however badly
        return completion

    def _count(self, exc: Unreachable) -> None:
        """One more unreachable attempt in a row; at the limit, close the gate and raise."""
        with self._lock:
            self._streak += 1
            if self.unavailable is None and self._streak >= self.unavailable_after:
                self.unavailable = ModelUnavailable(self.model, exc.cause, exc.fix, detail=exc.detail)
            unavailable = self.unavailable
        if unavailable is not None:
            raise unavailable
