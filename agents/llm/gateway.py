"""The one entry point for every model call.

A :class:`Gateway` wraps a backend (scripted, the embedded local model, or any litellm
model) with what an unreliable model needs around it: a schema per call, validation with
repair, bounded retries, a typed fallback, a content-addressed cache, and accounting per
purpose. Callers get a valid instance of their schema, always; a simulation never stops
because a model answered badly, and no error text ever reaches a later prompt.

A model that cannot answer at all is another matter (agents/llm/errors.py): backends raise
:class:`Unreachable` for transport and auth failures; transient ones (429, 5xx, timeouts,
dropped connections) are retried with exponential backoff and jitter, apart from the
reseeded retries for bad answers, and after a few such failures in a row the gateway raises
:class:`ModelUnavailable` from this call and every later one, so the command stops and says why.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from maps.contracts import Message
from agents.llm.cache import DiskCache, cache_key, prompt_hash
from agents.llm.errors import ModelUnavailable, Unreachable
from agents.llm.repair import RepairError, parse_answer
from agents.llm.schemas import json_schema_of
from agents.llm.scripted import scripted_answer

T = TypeVar("T", bound=BaseModel)


@dataclass
class Request:
    """One attempt as a backend sees it."""

    purpose: str
    messages: list[Message]
    schema: type[BaseModel]
    temperature: float
    max_tokens: int
    seed: int


@dataclass
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0


class Backend(Protocol):
    """Produces raw text for a request. May raise; the gateway handles it."""

    name: str

    async def generate(self, request: Request) -> Completion: ...


@dataclass(frozen=True)
class Backoff:
    """Retries of a transient transport failure: exponential waits with full jitter."""

    tries: int = 4  # attempts in all, the first included
    base_s: float = 0.5  # the n-th wait is uniform in [0, min(cap, base * 2**n)]
    cap_s: float = 8.0


DEFAULT_BACKOFF = Backoff()
# Seconds a call may take when neither the caller nor the model's spec says otherwise.
DEFAULT_TIMEOUT_S = 120.0
# Attempts in a row that could not reach the model (after backoff) before the gateway gives up.
UNAVAILABLE_AFTER = 3


def _transient(exc: BaseException) -> bool:
    return isinstance(exc, Unreachable) and exc.retryable


def model_timeout_s(backend: Any) -> float:
    """The per-call timeout of the model behind ``backend`` (through wrappers such as chaos):
    its spec's ``timeout_s`` (agents/llm/models.py) for an embedded model, else the default."""
    while backend is not None:
        spec_timeout = getattr(getattr(backend, "spec", None), "timeout_s", None)
        if isinstance(spec_timeout, (int, float)) and spec_timeout > 0:
            return float(spec_timeout)
        backend = getattr(backend, "inner", None)
    return DEFAULT_TIMEOUT_S


def approx_tokens(text: str) -> int:
    """A cheap token estimate (about 4 characters a token) for backends that give none."""
    return max(1, len(text) // 4) if text else 0


class ScriptedBackend:
    """Deterministic answers built from the prompt and schema (see agents.llm.scripted)."""

    name = "scripted"

    async def generate(self, request: Request) -> Completion:
        text = scripted_answer(request.purpose, request.messages, request.schema, request.seed)
        prompt = sum(approx_tokens(m.get("content", "")) for m in request.messages)
        return Completion(text=text, prompt_tokens=prompt, completion_tokens=approx_tokens(text))


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


class Gateway:
    """A LanguageModel (maps.contracts) over one backend."""

    recorder: Any = None  # agents.llm.recorded.AnswerLog in a run: answers kept in run.db, replayed on resume

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
    ):
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if unavailable_after < 1:
            raise ValueError("unavailable_after must be at least 1")
        self.backend = backend
        self.model = model or backend.name
        self.cache = cache
        self.max_attempts = max_attempts
        self.timeout_s = model_timeout_s(backend) if timeout_s is None else timeout_s
        self.seed = seed
        self.backoff = backoff or DEFAULT_BACKOFF
        self.unavailable_after = unavailable_after
        self.unavailable: ModelUnavailable | None = None  # set once; every later call raises it
        self._unreachable_streak = 0
        self._in_flight = 0
        self._done = 0
        self._stats: dict[str, PurposeStats] = {}
        self._listeners: list[Callable[[CallInfo], None]] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # -- observation -------------------------------------------------------------------

    def add_listener(self, fn: Callable[[CallInfo], None]) -> None:
        """Called after every call (from the calling thread), e.g. to record it in a run."""
        self._listeners.append(fn)

    def stats(self) -> dict[str, Any]:
        """Accounting per purpose plus a 'total' entry."""
        with self._lock:
            per = {name: asdict(s) for name, s in sorted(self._stats.items())}
        total = PurposeStats()
        for s in per.values():
            for key, value in s.items():
                setattr(total, key, getattr(total, key) + value)
        return {"model": self.model, "by_purpose": per, "total": asdict(total)}

    def activity(self) -> dict[str, int]:
        """Calls in flight and done so far (for progress lines during a long tick)."""
        with self._lock:
            return {"in_flight": self._in_flight, "done": self._done}

    def _account(self, purpose: str) -> PurposeStats:
        return self._stats.setdefault(purpose, PurposeStats())

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
        with self._lock:
            self._in_flight += 1
        try:
            return await self._complete(purpose, messages, schema, fallback, temperature, max_tokens)
        finally:
            with self._lock:
                self._in_flight -= 1
                self._done += 1

    async def _complete(
        self,
        purpose: str,
        messages: list[Message],
        schema: type[T],
        fallback: T,
        temperature: float,
        max_tokens: int,
    ) -> T:
        started = time.perf_counter()
        key = cache_key(self.model, messages, json_schema_of(schema), temperature, self.seed)
        info = CallInfo(
            call_id=f"{purpose}-{next(self._ids)}",
            purpose=purpose,
            prompt_hash=prompt_hash(messages),
            ok=False,
            fallback=False,
            cached=False,
            attempts=0,
            latency_s=0.0,
        )
        replayed = self.recorder.replay(info, messages, schema) if self.recorder is not None else None
        result = replayed if replayed is not None else self._from_cache(key, schema)
        if replayed is not None:
            pass  # a re-run tick: the run's own recorded answer (agents.llm.recorded)
        elif result is not None:
            info.ok = info.cached = True
        else:
            result = await self._attempts(purpose, messages, schema, temperature, max_tokens, key, info)
        if result is None:
            info.fallback = True
            result = fallback.model_copy(deep=True)
        if self.recorder is not None and replayed is None:
            self.recorder.record(info, messages, schema, result)
        info.latency_s = time.perf_counter() - started
        with self._lock:
            stats = self._account(purpose)
            stats.calls += 1
            stats.cache_hits += int(info.cached)
            stats.fallbacks += int(info.fallback)
            stats.latency_s += info.latency_s
        for listener in self._listeners:
            listener(info)
        return result

    def _from_cache(self, key: str, schema: type[T]) -> T | None:
        if self.cache is None:
            return None
        text = self.cache.get(key)
        if text is None:
            return None
        try:
            return parse_answer(text, schema)
        except RepairError:
            return None

    async def _attempts(
        self,
        purpose: str,
        messages: list[Message],
        schema: type[T],
        temperature: float,
        max_tokens: int,
        key: str,
        info: CallInfo,
    ) -> T | None:
        for attempt in range(self.max_attempts):
            if self.unavailable is not None:
                raise self.unavailable
            info.attempts += 1
            # A retry re-asks the same question with another seed; the failure is not shown.
            request = Request(purpose, messages, schema, temperature, max_tokens, self.seed + attempt)
            try:
                completion = await self._generate(purpose, request)
            except asyncio.TimeoutError:
                self._fail(purpose, info, "timeout")
                continue
            except Unreachable as exc:
                self._unreachable(purpose, info, exc)
                continue
            except Exception as exc:  # a backend error must not stop a simulation
                self._fail(purpose, info, f"{type(exc).__name__}")
                continue
            with self._lock:
                self._unreachable_streak = 0  # the model answered, however badly
                stats = self._account(purpose)
                stats.attempts += 1
                stats.prompt_tokens += completion.prompt_tokens
                stats.completion_tokens += completion.completion_tokens
                stats.cost += completion.cost
            try:
                value = parse_answer(completion.text, schema)
            except RepairError as exc:
                self._fail(purpose, info, str(exc), counted=True)
                continue
            if self.cache is not None:
                self.cache.put(key, purpose, value.model_dump_json())
            info.ok = True
            return value
        return None

    async def _generate(self, purpose: str, request: Request) -> Completion:
        """One attempt; transient transport failures are retried here with backoff and jitter."""
        retrying = AsyncRetrying(
            retry=retry_if_exception(_transient),
            wait=wait_random_exponential(multiplier=self.backoff.base_s, max=self.backoff.cap_s),
            stop=stop_after_attempt(self.backoff.tries),
            before_sleep=lambda _state: self._count_retry(purpose),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await asyncio.wait_for(self.backend.generate(request), self.timeout_s)
        raise AssertionError("unreachable: tenacity either returns or re-raises")  # pragma: no cover

    def _count_retry(self, purpose: str) -> None:
        with self._lock:
            self._account(purpose).transport_retries += 1

    def _unreachable(self, purpose: str, info: CallInfo, exc: Unreachable) -> None:
        """Count an attempt that could not reach the model; give up for good after a few in a row."""
        self._fail(purpose, info, f"unreachable: {exc.cause}")
        with self._lock:
            self._account(purpose).unreachable += 1
            self._unreachable_streak += 1
            if self.unavailable is None and self._unreachable_streak >= self.unavailable_after:
                self.unavailable = ModelUnavailable(self.model, exc.cause, exc.fix, detail=exc.detail)
            unavailable = self.unavailable
        if unavailable is not None:
            raise unavailable

    def _fail(self, purpose: str, info: CallInfo, reason: str, counted: bool = False) -> None:
        info.errors.append(reason)
        with self._lock:
            stats = self._account(purpose)
            stats.failures += 1
            if not counted:
                stats.attempts += 1

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
    import os

    return Path(os.environ.get("TOWNSFOLK_CACHE", Path.home() / ".cache" / "townsfolk"))


def make_backend(model: str) -> Backend:
    """`scripted`, `local` (embedded default), `local:<name>`, or any litellm model string."""
    if model == "scripted":
        return ScriptedBackend()
    if model == "local" or model.startswith("local:"):
        from agents.llm.local import LocalBackend

        return LocalBackend(model.partition(":")[2] or None)
    from agents.llm.remote import LiteLLMBackend

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
    `scripted` unless a cache_dir is given. ``chaos`` corrupts that share of answers.
    ``timeout_s`` None gives each call the model's own timeout (its LocalModelSpec's, e.g.
    900 s for local:qwen; 120 s for SmolLM2 and remote models).
    """
    from agents.llm.chaos import ChaosBackend, check_chaos_rate

    chaos = check_chaos_rate(chaos)
    backend: Backend = make_backend(model)
    # The cache and the stats name the model actually run: `local` resolves to the current
    # default, so changing the default never serves another model's cached answers.
    resolved = backend.name if model == "local" or model.startswith("local:") else model
    if chaos > 0:
        backend = ChaosBackend(backend, rate=chaos, seed=seed)
    if use_cache is None:
        use_cache = model != "scripted" or cache_dir is not None
    cache = DiskCache(Path(cache_dir) if cache_dir else default_cache_dir()) if use_cache else None
    return Gateway(
        backend,
        model=resolved,
        cache=cache,
        max_attempts=max_attempts,
        timeout_s=timeout_s,
        seed=seed,
        unavailable_after=unavailable_after,
    )
