"""Accounting: calls, attempts, failures, tokens and latency per purpose (the run summary's
``llm.by_purpose``), call ids, calls in flight, and listeners told of every call.

Two layers share one :class:`Ledger`: :class:`Accounting`, the outermost call layer, so it
sees every call however it is answered (recorded, cached, asked, fallen back), and
:class:`Metering`, an attempt layer just inside the availability gate, so it sees every attempt
that went to the model (and none that the closed gate refused).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import BaseModel

from agents.llm.errors import Unreachable
from agents.llm.wrappers.base import Backend, Call, CallInfo, CallLayer, Completion, Request


@dataclass
class PurposeStats:
    calls: int = 0
    attempts: int = 0
    failures: int = 0  # attempts whose answer was unusable (bad JSON, exception, timeout)
    unreachable: int = 0  # of those failures: the model could not be reached (after backoff)
    transport_retries: int = 0  # backoff retries after a transient transport failure
    fallbacks: int = 0  # calls that ended on the typed fallback
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost: float = 0.0


class Ledger:
    """:class:`PurposeStats` per purpose, safe to add to from several threads."""

    def __init__(self) -> None:
        self._stats: dict[str, PurposeStats] = {}
        self._lock = threading.Lock()

    def add(self, purpose: str, **counts: float) -> None:
        """Add ``counts`` (field name -> amount) to ``purpose``'s figures."""
        with self._lock:
            stats = self._stats.setdefault(purpose, PurposeStats())
            for name, amount in counts.items():
                setattr(stats, name, getattr(stats, name) + amount)

    def stats(self, model: str) -> dict[str, Any]:
        """Accounting per purpose plus a 'total' entry."""
        with self._lock:
            per = {name: asdict(s) for name, s in sorted(self._stats.items())}
        total = PurposeStats()
        for s in per.values():
            for key, value in s.items():
                setattr(total, key, getattr(total, key) + value)
        return {"model": model, "by_purpose": per, "total": asdict(total)}


class Accounting:
    """The outermost call layer: numbers calls, counts them, and tells the listeners."""

    def __init__(self, inner: CallLayer, ledger: Ledger) -> None:
        self.inner = inner
        self.ledger = ledger
        self.listeners: list[Callable[[CallInfo], None]] = []
        self.ids: Iterator[int] = itertools.count(1)
        self._in_flight = 0
        self._done = 0
        self._lock = threading.Lock()

    def number_from(self, next_no: int) -> None:
        """The next call is number ``next_no`` (call ids go on across a resume)."""
        self.ids = itertools.count(max(1, next_no))

    def new_info(self, purpose: str, prompt_hash: str) -> CallInfo:
        return CallInfo(call_id=f"{purpose}-{next(self.ids)}", purpose=purpose, prompt_hash=prompt_hash,
                        ok=False, fallback=False, cached=False, attempts=0, latency_s=0.0)

    def activity(self) -> dict[str, int]:
        with self._lock:
            return {"in_flight": self._in_flight, "done": self._done}

    async def answer(self, call: Call) -> BaseModel:
        with self._lock:
            self._in_flight += 1
        try:
            return await self._timed(call)
        finally:
            with self._lock:
                self._in_flight -= 1
                self._done += 1

    async def _timed(self, call: Call) -> BaseModel:
        started = time.perf_counter()
        result = await self.inner.answer(call)
        info = call.info
        info.latency_s = time.perf_counter() - started
        self.ledger.add(call.purpose, calls=1, cache_hits=int(info.cached), fallbacks=int(info.fallback),
                        latency_s=info.latency_s)
        for listener in self.listeners:
            listener(info)
        return result


class Metering:
    """The attempt layer that counts what each attempt cost and whether it failed."""

    def __init__(self, inner: Backend, ledger: Ledger) -> None:
        self.inner = inner
        self.ledger = ledger
        self.name = inner.name

    async def generate(self, request: Request) -> Completion:
        try:
            completion = await self.inner.generate(request)
        except Unreachable:
            self.ledger.add(request.purpose, attempts=1, failures=1, unreachable=1)
            raise
        except Exception:  # a timeout, a backend error: the retrying layer decides what next
            self.ledger.add(request.purpose, attempts=1, failures=1)
            raise
        self.ledger.add(request.purpose, attempts=1, prompt_tokens=completion.prompt_tokens,
                        completion_tokens=completion.completion_tokens, cost=completion.cost)
        return completion
