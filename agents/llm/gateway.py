"""The one entry point for every model call.

A :class:`Gateway` wraps a backend (scripted, the embedded local model, or any litellm
model) with what an unreliable model needs around it: a schema per call, validation with
repair, bounded retries, a typed fallback, a content-addressed cache, and accounting per
purpose. Callers get a valid instance of their schema, always; a simulation never stops
because a model answered badly, and no error text ever reaches a later prompt.

Each of those behaviours is one wrapper in agents/llm/wrappers/ (one module each, one job);
:func:`compose` stacks them in the one order that keeps them right. To add a behaviour, write
a wrapper there (a call layer or an attempt layer, agents/llm/wrappers/base.py) and put it in
:func:`compose`.

A model that cannot answer at all is another matter (agents/llm/errors.py): backends raise
:class:`Unreachable` for transport and auth failures; transient ones (429, 5xx, timeouts,
dropped connections) are retried with exponential backoff and jitter, apart from the
reseeded retries for bad answers, and after a few such failures in a row the gateway raises
:class:`ModelUnavailable` from this call and every later one, so the command stops and says why.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from maps.contracts import Message
from agents.llm.cache import DiskCache, prompt_hash
from agents.llm.chaos import ChaosBackend, check_chaos_rate
from agents.llm.errors import ModelUnavailable, Unreachable  # noqa: F401  (the gateway's errors)
from agents.llm.fleet import FleetBackend
from agents.llm.local import LocalBackend
from agents.llm.remote import LiteLLMBackend
from agents.llm.scripted import ScriptedBackend
from agents.llm.task import task_of
from agents.llm.wrappers.accounting import Accounting, Ledger, Metering, PurposeStats  # noqa: F401
from agents.llm.wrappers.availability import UNAVAILABLE_AFTER, AvailabilityGate
from agents.llm.wrappers.base import Backend, Call, CallInfo, Completion, Request  # noqa: F401
from agents.llm.wrappers.caching import Caching
from agents.llm.wrappers.recording import Recording
from agents.llm.wrappers.retrying import Retrying, model_attempt_limits
from agents.llm.wrappers.transport import (DEFAULT_TIMEOUT_S, Backoff, Transport,  # noqa: F401
                                           model_timeout_s)
# Read from this module when a Gateway is built (tests shorten the waits by patching it here).
from agents.llm.wrappers.transport import DEFAULT_BACKOFF as DEFAULT_BACKOFF

T = TypeVar("T", bound=BaseModel)


@dataclass
class Stack:
    """The composed layers, named so the gateway can reach the ones it exposes."""

    top: Accounting
    recording: Recording
    caching: Caching
    retrying: Retrying
    gate: AvailabilityGate
    transport: Transport
    ledger: Ledger


def compose(backend: Backend, *, model: str, cache: DiskCache | None, max_attempts: int, timeout_s: float,
            seed: int, backoff: Backoff, unavailable_after: int, attempt_limits: Mapping[str, int] | None = None) -> Stack:
    """The layers around ``backend``, outermost first, and why in this order:

    1. Accounting: outermost, so every call is counted and heard, however it is answered.
    2. Recording: a re-run tick's recorded answer comes before the cache and the model, and
       every answer the caller gets (cached or fallen back) is what is recorded.
    3. Caching: outside the retries, so a hit costs no attempt and only validated answers
       (never a fallback) are stored.
    4. Retrying: validation, reseeded retries, the typed fallback; asks the attempt layers:
    5. AvailabilityGate: outside metering, so an attempt refused by the closed gate is no attempt.
    6. Metering: counts every attempt that went to the model, its tokens and its failure.
    7. Transport: the model's timeout per try and backoff on transient failures (the same seed).
    8. ``backend`` itself (chaos, agents/llm/chaos.py, wraps it here when asked for).
    """
    ledger = Ledger()
    transport = Transport(backend, timeout_s, backoff, on_retry=lambda p: ledger.add(p, transport_retries=1))
    gate = AvailabilityGate(Metering(transport, ledger), model, unavailable_after)
    retrying = Retrying(gate, max_attempts=max_attempts, seed=seed, on_invalid=lambda p: ledger.add(p, failures=1),
                        limits=attempt_limits)
    caching = Caching(retrying, cache, model=model, seed=seed)
    recording = Recording(caching)
    return Stack(Accounting(recording, ledger), recording, caching, retrying, gate, transport, ledger)


class Gateway:
    """A LanguageModel (maps.contracts) over one backend: the composed stack behind one door."""

    def __init__(
        self,
        backend: Backend,
        *,
        model: str | None = None,
        cache: DiskCache | None = None,
        max_attempts: int = 3,
        timeout_s: float | None = None,  # None: the model's own (model_timeout_s)
        seed: int = 0,
        backoff: Backoff | None = None,
        unavailable_after: int = UNAVAILABLE_AFTER,
        chaos: float = 0.0,
        attempt_limits: Mapping[str, int] | None = None,  # None: the model's own (model_attempt_limits)
    ):
        self.model = model or backend.name
        self.seed = seed
        timeout_s = model_timeout_s(backend) if timeout_s is None else timeout_s
        attempt_limits = model_attempt_limits(backend) if attempt_limits is None else attempt_limits
        if chaos > 0:

            backend = ChaosBackend(backend, rate=chaos, seed=seed)
        self._stack = compose(backend, model=self.model, cache=cache, max_attempts=max_attempts,
                              timeout_s=timeout_s, seed=seed, backoff=backoff or DEFAULT_BACKOFF,
                              unavailable_after=unavailable_after, attempt_limits=attempt_limits)

    # -- what callers and tools reach through the door --------------------------------------

    @property
    def backend(self) -> Backend:
        """The backend the transport layer asks (chaos-wrapped when chaos is on)."""
        return self._stack.transport.inner

    @backend.setter
    def backend(self, backend: Backend) -> None:
        self._stack.transport.inner = backend

    @property
    def cache(self) -> DiskCache | None:
        return self._stack.caching.cache

    @cache.setter
    def cache(self, cache: DiskCache | None) -> None:
        self._stack.caching.cache = cache

    @property
    def recorder(self) -> Any:
        """agents.llm.recorded.AnswerLog in a run: answers kept in run.db, replayed on resume."""
        return self._stack.recording.recorder

    @recorder.setter
    def recorder(self, recorder: Any) -> None:
        self._stack.recording.recorder = recorder

    @property
    def unavailable(self) -> ModelUnavailable | None:
        """Set once the model could not be reached several times in a row; every call raises it."""
        return self._stack.gate.unavailable

    @property
    def timeout_s(self) -> float:
        """Seconds one try may take (the transport layer's; the model's own unless given)."""
        return self._stack.transport.timeout_s

    @timeout_s.setter
    def timeout_s(self, seconds: float) -> None:
        self._stack.transport.timeout_s = seconds

    @property
    def max_attempts(self) -> int:
        return self._stack.retrying.max_attempts

    def attempts_for(self, purpose: str) -> int:
        """How many attempts a call of ``purpose`` gets (``max_attempts``, or the model's limit)."""
        return self._stack.retrying.attempts_for(purpose)

    @property
    def backoff(self) -> Backoff:
        return self._stack.transport.backoff

    @property
    def _listeners(self) -> list[Callable[[CallInfo], None]]:
        return self._stack.top.listeners

    def number_calls_from(self, next_no: int) -> None:
        """The next call's id ends in ``next_no`` (call ids go on across a resume)."""
        self._stack.top.number_from(next_no)

    # -- observation -------------------------------------------------------------------

    def add_listener(self, fn: Callable[[CallInfo], None]) -> None:
        """Called after every call (from the calling thread), e.g. to record it in a run."""
        self._stack.top.listeners.append(fn)

    def stats(self) -> dict[str, Any]:
        """Accounting per purpose plus a 'total' entry."""
        return self._stack.ledger.stats(self.model)

    def activity(self) -> dict[str, int]:
        """Calls in flight and done so far (for progress lines during a long tick)."""
        return self._stack.top.activity()

    # -- calls ----------------------------------------------------------------------------

    async def acomplete(
        self,
        purpose: str,
        messages: list[Message],
        schema: type[T],
        fallback: T,
        *,
        temperature: float = 0.7,
        max_tokens: int = 512,
    ) -> T:
        if not isinstance(fallback, schema):
            raise TypeError(f"{purpose}: fallback must be a {schema.__name__}")
        top = self._stack.top
        call = Call(purpose, messages, schema, fallback, temperature, max_tokens,
                    top.new_info(purpose, prompt_hash(messages)), task_of(messages))
        return await top.answer(call)  # type: ignore[return-value]

    def complete(
        self,
        purpose: str,
        messages: list[Message],
        schema: type[T],
        fallback: T,
        *,
        temperature: float = 0.7,
        max_tokens: int = 512,
    ) -> T:
        """Blocking form of :meth:`acomplete`; safe to call from inside a running loop."""
        coro = self.acomplete(
            purpose, messages, schema, fallback, temperature=temperature, max_tokens=max_tokens
        )
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        return _run_in_thread(coro)


def _run_in_thread(coro: Any) -> Any:
    """Run ``coro`` to the end on a loop of its own in another thread (the caller's is busy)."""
    box: dict[str, Any] = {}

    def runner() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=runner)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def default_cache_dir() -> Path:
    return Path(os.environ.get("TOWNSFOLK_CACHE", Path.home() / ".cache" / "townsfolk"))


def make_backend(model: str) -> Backend:
    """`scripted` (or a variant, `scripted:careless`, `scripted:careful`), `local` (embedded default),
    `local:<name>`, `fleet:<file>` (a fleet of servers, agents/llm/fleet.py), or any litellm model string."""
    if model == "scripted" or model.startswith("scripted:"):
        return ScriptedBackend(model.partition(":")[2])
    if model == "local" or model.startswith("local:"):
        return LocalBackend(model.partition(":")[2] or None)
    if model.startswith("fleet:"):  # several servers through litellm's Router (agents/llm/fleet.py)
        return FleetBackend.from_file(model.partition(":")[2])
    return LiteLLMBackend(model)


def make_llm(
    model: str = "local",
    *,
    cache_dir: Path | str | None = None,
    use_cache: bool | None = None,
    chaos: float = 0.0,
    seed: int = 0,
    max_attempts: int = 3,
    timeout_s: float | None = None,
    unavailable_after: int = UNAVAILABLE_AFTER,
) -> Gateway:
    """Build the gateway for a ``--model`` value.

    The cache is on by default for real models (re-runs are free and exact) and off for
    `scripted` unless a cache_dir is given. ``chaos`` corrupts that share of answers (the
    wrapper sits right around the backend, see :func:`compose`).
    ``timeout_s`` None gives each call the model's own timeout (its LocalModelSpec's, e.g.
    900 s for local:qwen; 120 s for SmolLM2 and remote models).
    """
    chaos = check_chaos_rate(chaos)
    backend: Backend = make_backend(model)
    # The cache and the stats name the model actually run: `local` resolves to the current
    # default, so changing the default never serves another model's cached answers.
    resolved = backend.name if model == "local" or model.startswith("local:") else model
    if use_cache is None:
        use_cache = not (model == "scripted" or model.startswith("scripted:")) or cache_dir is not None
    cache = DiskCache(Path(cache_dir) if cache_dir else default_cache_dir()) if use_cache else None
    return Gateway(backend, model=resolved, cache=cache, max_attempts=max_attempts, timeout_s=timeout_s,
                   seed=seed, unavailable_after=unavailable_after, chaos=chaos)
