"""Transport: each attempt is bounded by the model's timeout, and transient transport failures
(429, 5xx, timeouts of the connection, dropped connections: ``Unreachable(retryable=True)``)
are asked again with exponential backoff and full jitter, with the same seed: the question
did not reach the model, so it is not a reseeded retry.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from agents.llm.errors import Unreachable
from agents.llm.wrappers.base import Backend, Completion, Request, model_spec


@dataclass(frozen=True)
class Backoff:
    """Retries of a transient transport failure: exponential waits with full jitter."""

    tries: int = 4  # attempts in all, the first included
    base_s: float = 0.5  # the n-th wait is uniform in [0, min(cap, base * 2**n)]
    cap_s: float = 8.0


DEFAULT_BACKOFF = Backoff()
# Seconds a call may take when neither the caller nor the model's spec says otherwise.
DEFAULT_TIMEOUT_S = 120.0


def model_timeout_s(backend: Any) -> float:
    """The per-call timeout of the model behind ``backend`` (through wrappers such as chaos):
    its spec's ``timeout_s`` (agents/llm/models.py) for an embedded model, else the default."""
    spec_timeout = getattr(model_spec(backend), "timeout_s", None)
    if isinstance(spec_timeout, (int, float)) and spec_timeout > 0:
        return float(spec_timeout)
    return DEFAULT_TIMEOUT_S


def _transient(exc: BaseException) -> bool:
    return isinstance(exc, Unreachable) and exc.retryable


class Transport:
    """Timeout per try and backoff between tries; ``on_retry(purpose)`` hears of each retry."""

    def __init__(self, inner: Backend, timeout_s: float, backoff: Backoff,
                 on_retry: Callable[[str], None] | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.timeout_s = timeout_s
        self.backoff = backoff
        self.on_retry = on_retry

    async def generate(self, request: Request) -> Completion:
        retrying = AsyncRetrying(
            retry=retry_if_exception(_transient),
            wait=wait_random_exponential(multiplier=self.backoff.base_s, max=self.backoff.cap_s),
            stop=stop_after_attempt(self.backoff.tries),
            before_sleep=lambda _state: self._retried(request.purpose),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await asyncio.wait_for(self.inner.generate(request), self.timeout_s)
        raise AssertionError("unreachable: tenacity either returns or re-raises")  # pragma: no cover

    def _retried(self, purpose: str) -> None:
        if self.on_retry is not None:
            self.on_retry(purpose)
