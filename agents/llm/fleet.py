"""A fleet of model servers behind one backend: several OpenAI-compatible endpoints (vLLM,
SGLang, llama.cpp servers, any litellm deployment) through litellm's Router.

Why: one server answers one resident at a time; a town of hundreds asks for hundreds of answers
a tick. The engine already awaits every resident's call of a tick concurrently; this backend
spreads them over the fleet. litellm's Router picks the endpoint (``routing``: least-busy by
default), holds each endpoint to ``max_parallel`` calls in flight (the others wait their turn),
and cools an endpoint down for ``cooldown_s`` after it fails. A call whose endpoint fails
(refused, timed out after the endpoint's ``timeout_s``, 5xx, 429) goes on at once to another
endpoint it has not tried; only when every endpoint failed is the failure the gateway's
(agents/llm/errors.py: backoff, then ModelUnavailable). So a dead or slow server costs a tick at
most its timeout, and no call is lost. Every attempt is counted per endpoint
(:meth:`FleetBackend.fleet_stats`, in the run summary as ``fleet``).

The fleet file (``--models FILE``, or ``--model fleet:FILE`` wherever ``--model`` is taken),
YAML or JSON::

    routing: least-busy          # or simple-shuffle, latency-based-routing, usage-based-routing-v2
    cooldown_s: 30               # an endpoint that failed is skipped this long
    endpoints:
      - name: gpu-a              # named in the summary
        model: openai/smollm2    # litellm's model string
        api_base: http://127.0.0.1:8001/v1
        max_parallel: 4          # calls in flight at once on this endpoint
        timeout_s: 60            # one call's limit here before it goes elsewhere
      - name: hosted
        model: openai/gpt-4o-mini
        api_key_env: OPENAI_API_KEY   # the variable holding the key: never the key itself

Keys come only from the environment: a file with ``api_key`` is refused. An endpoint with an
``api_base`` and no ``api_key_env`` is a server of one's own and gets a placeholder key (so a
provider key in the environment is never sent to it).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agents.llm.errors import Unreachable, short
from agents.llm.litellm_setup import load_litellm
from agents.llm.remote import MODES, LiteLLMBackend, structured_kwargs
from agents.llm.wrappers.base import Completion, Request

FLEET_PREFIX = "fleet:"
GROUP = "fleet"  # the one model group of the Router: every endpoint answers for it
ROUTING = Literal["least-busy", "simple-shuffle", "latency-based-routing", "usage-based-routing-v2"]


class Endpoint(BaseModel):
    """One server of the fleet."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$",
                      description="how the summary names this endpoint")
    model: str = Field(min_length=1, max_length=200, description="litellm model string, e.g. openai/smollm2")
    api_base: str | None = Field(default=None, pattern=r"^https?://\S+$",
                                 description="the server's URL, e.g. http://127.0.0.1:8000/v1")
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                                    description="name of the environment variable holding the key")
    max_parallel: int = Field(default=4, ge=1, le=1024, description="calls in flight at once here")
    weight: int = Field(default=1, ge=1, le=1000, description="share of calls under simple-shuffle")
    timeout_s: float = Field(default=60.0, gt=0, le=3600, description="one call's limit here")

    @model_validator(mode="before")
    @classmethod
    def _no_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and any("key" in str(k).lower() and k != "api_key_env" for k in data):
            raise ValueError("keys are never read from the fleet file: put the key in an environment "
                             "variable and name the variable in api_key_env")
        return data


class FleetConfig(BaseModel):
    """The fleet file."""

    model_config = ConfigDict(extra="forbid")

    endpoints: list[Endpoint] = Field(min_length=1, max_length=256)
    routing: ROUTING = "least-busy"
    cooldown_s: float = Field(default=30.0, ge=0, le=3600, description="an endpoint that failed is skipped this long")
    allowed_fails: int = Field(default=0, ge=0, le=100, description="failures a minute before the cooldown")

    @model_validator(mode="after")
    def _unique_names(self) -> FleetConfig:
        names = [e.name for e in self.endpoints]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"endpoint names must differ; {', '.join(twice)} is used twice")
        return self


class FleetFileError(ValueError):
    """A fleet file that cannot be used: the message names the file, the field and what was expected."""


def _where(loc: tuple[Any, ...]) -> str:
    """('endpoints', 1, 'api_base') -> 'endpoints[1].api_base'."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _problem(path: Path, exc: ValidationError) -> str:
    first = exc.errors()[0]
    loc = tuple(p for p in first["loc"] if p not in ("function-after[_unique_names()]",))
    message = str(first["msg"]).removeprefix("Value error, ")
    got = first.get("input")
    secret = any("key" in str(p).lower() for p in loc)
    if isinstance(got, (str, int, float)) and not secret and len(str(got)) <= 80 and first["type"] != "missing":
        message += f", got {got!r}"
    more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return f"{path}: {_where(loc)}: {message}{more}"


def _parse(path: Path, text: str) -> Any:
    """JSON for .json, else YAML (a superset of JSON); a syntax error names the file and line."""
    import yaml  # ~50 ms to import: paid when a fleet file is read, not by every command's start-up

    try:
        return json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise FleetFileError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        raise FleetFileError(f"{path}: not valid YAML ({line}{getattr(exc, 'problem', None) or exc})") from None


def load_fleet(path: Path | str) -> FleetConfig:
    """The validated fleet file at ``path``; a :class:`FleetFileError` says what is wrong."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FleetFileError(f"{path}: cannot read the fleet file ({getattr(exc, 'strerror', None) or exc})") from None
    data = _parse(path, text)
    if not isinstance(data, dict):
        raise FleetFileError(f"{path}: expected a mapping with 'endpoints' (a list of servers), "
                             f"got {type(data).__name__}")
    try:
        config = FleetConfig.model_validate(data)
    except ValidationError as exc:
        raise FleetFileError(_problem(path, exc)) from None
    for i, endpoint in enumerate(config.endpoints):
        if endpoint.api_key_env and not os.environ.get(endpoint.api_key_env):
            raise FleetFileError(f"{path}: endpoints[{i}].api_key_env: the variable {endpoint.api_key_env} "
                                 "is not set; export it with the endpoint's key")
    return config


@dataclass
class EndpointStats:
    """What the summary says of one endpoint: attempts sent, answered, failed, and the last failure."""

    calls: int = 0
    ok: int = 0
    failures: int = 0
    in_flight: int = 0
    seconds: float = 0.0
    last_error: str = ""
    failed_last: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "ok": self.ok, "failures": self.failures,
                "mean_s": round(self.seconds / self.ok, 3) if self.ok else None,
                "last_error": self.last_error or None}


@dataclass
class _Pick:
    """One attempt's choice, shared with the Router through a context variable: the endpoints
    not to take (tried already), and the fleet's load per endpoint when it balances itself."""

    avoid: set[str] = field(default_factory=set)
    load: Callable[[str], float] | None = None  # None: keep the Router's own pick
    on_chosen: Callable[[str], None] | None = None
    chosen: str | None = None


_PICK: contextvars.ContextVar[_Pick | None] = contextvars.ContextVar("fleet_pick", default=None)


def _choose(deployment: dict[str, Any], candidates: list[dict[str, Any]], pick: _Pick) -> dict[str, Any]:
    """The Router's pick unless this call tried it already or the fleet balances load itself:
    then the least loaded endpoint not tried (first in the file on a tie)."""
    ident = deployment["model_info"]["id"]
    others = [d for d in candidates if d["model_info"]["id"] not in pick.avoid]
    if not others or (pick.load is None and ident not in pick.avoid):
        return deployment
    load = pick.load or (lambda _name: 0.0)
    return min(others, key=lambda d: load(str(d["model_info"]["id"])))


@cache
def _router_class() -> type:
    """litellm's Router, told which endpoints this call tried and how loaded each is (made once
    litellm is loaded). Its least-busy count is kept by callbacks that lag a burst of calls issued
    in one go (measured: 8 concurrent calls all went to one of two endpoints), so the fleet counts
    calls in flight itself and picks by them under least-busy."""
    litellm = load_litellm()
    from litellm.router_utils.cooldown_handlers import _async_get_cooldown_deployments

    class FleetRouter(litellm.Router):  # type: ignore[misc, name-defined]
        async def async_get_available_deployment(self, *args: Any, **kwargs: Any) -> Any:
            deployment = await super().async_get_available_deployment(*args, **kwargs)
            pick = _PICK.get()
            if pick is None or not isinstance(deployment, dict):
                return deployment
            cooling = set(await _async_get_cooldown_deployments(self, None) or [])
            candidates = [d for d in self.get_model_list(model_name=GROUP) or []
                          if d["model_info"]["id"] not in cooling]
            deployment = _choose(deployment, candidates, pick)
            pick.chosen = str(deployment["model_info"]["id"])
            if pick.on_chosen is not None:  # counted before any other call picks (no await since)
                pick.on_chosen(pick.chosen)
            return deployment

    return FleetRouter


def _deployment(endpoint: Endpoint) -> dict[str, Any]:
    params: dict[str, Any] = {"model": endpoint.model, "timeout": endpoint.timeout_s,
                              "max_parallel_requests": endpoint.max_parallel, "weight": endpoint.weight}
    if endpoint.api_base:
        params["api_base"] = endpoint.api_base
    if endpoint.api_key_env:
        params["api_key"] = os.environ[endpoint.api_key_env]  # read now, kept only in the Router
    elif endpoint.api_base:
        params["api_key"] = "none"  # a server of one's own: never a provider key from the environment
    return {"model_name": GROUP, "litellm_params": params, "model_info": {"id": endpoint.name}}


@dataclass(frozen=True)
class FleetSpec:
    """What the gateway reads of a model's spec (agents/llm/wrappers/base.py, model_spec): one
    call's timeout is every endpoint tried once to its own timeout, plus a little for the Router."""

    timeout_s: float
    attempt_limits: dict[str, int] = field(default_factory=dict)
    install_hint: str = "check that the fleet's servers are up and their api_base right"


class FleetBackend:
    """A gateway backend (agents/llm/wrappers/base.py) over the fleet's endpoints."""

    def __init__(self, config: FleetConfig, *, source: str = ""):
        self.config = config
        self.name = f"{FLEET_PREFIX}{source}" if source else "fleet"
        self.endpoints = {e.name: e for e in config.endpoints}
        self.stats = {e.name: EndpointStats() for e in config.endpoints}
        # One plain backend per endpoint reads its failures in plain words (remote.py) and says how
        # it takes a schema; the fleet asks the weakest way any endpoint takes.
        self._probes = {e.name: LiteLLMBackend(e.model, api_base=e.api_base or None, timeout_s=e.timeout_s)
                        for e in config.endpoints}
        self.schema_mode = max((p.schema_mode for p in self._probes.values()), key=MODES.index)
        # One Router per event loop: its concurrency semaphores and HTTP clients belong to the loop
        # that first used them (a second asyncio.run, or the gateway's blocking call in a thread).
        self._routers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()

    @property
    def router(self) -> Any:
        """The Router of the running loop (made on first use in that loop)."""
        loop = asyncio.get_running_loop()
        router = self._routers.get(loop)
        if router is None:
            config = self.config
            router = self._routers[loop] = _router_class()(
                model_list=[_deployment(e) for e in config.endpoints], routing_strategy=config.routing,
                num_retries=0, retry_after=0, cooldown_time=config.cooldown_s, allowed_fails=config.allowed_fails,
                timeout=max(e.timeout_s for e in config.endpoints))
        return router

    @classmethod
    def from_file(cls, path: Path | str) -> FleetBackend:
        return cls(load_fleet(path), source=str(path))

    @property
    def spec(self) -> FleetSpec:
        """The gateway's per-call timeout for the fleet (see :class:`FleetSpec`)."""
        return FleetSpec(timeout_s=sum(e.timeout_s for e in self.config.endpoints) + 5.0)

    async def generate(self, request: Request) -> Completion:
        tried: list[str] = []
        failures: list[Unreachable] = []
        refusals = 0
        while len(tried) < len(self.endpoints):
            pick = _Pick(avoid=set(tried), load=self._load if self.config.routing == "least-busy" else None,
                         on_chosen=self._started)
            kwargs = self._request_kwargs(request)
            outcome = await self._attempt(pick, kwargs)
            if not isinstance(outcome, BaseException):
                return outcome
            unreachable = self._unreachable(pick.chosen, outcome)
            if unreachable is None:  # the model was reached: a refused way of asking, or a bad request
                if refusals < len(MODES) and self._refused(pick.chosen, outcome, kwargs):
                    refusals += 1
                    continue
                raise outcome
            failures.append(unreachable)
            if pick.chosen is None or pick.chosen in tried:
                break
            tried.append(pick.chosen)
        raise self._all_failed(tried, failures)

    def _request_kwargs(self, request: Request) -> dict[str, Any]:
        return {"temperature": request.temperature, "max_tokens": request.max_tokens, "seed": request.seed,
                "num_retries": 0, "max_retries": 0, "drop_params": True} | structured_kwargs(self.schema_mode, request)

    async def _attempt(self, pick: _Pick, kwargs: dict[str, Any]) -> Completion | BaseException:
        """One call through the Router; the endpoint it went to counted either way."""
        token = _PICK.set(pick)
        started = time.perf_counter()
        try:
            response = await self.router.acompletion(model=GROUP, **kwargs)
        except Exception as exc:
            self._count(pick.chosen, exc, time.perf_counter() - started)
            return exc
        finally:
            _PICK.reset(token)
            if pick.chosen in self.stats:
                self.stats[pick.chosen].in_flight -= 1
        served = (getattr(response, "_hidden_params", None) or {}).get("model_id") or pick.chosen
        self._count(served, None, time.perf_counter() - started)
        usage = getattr(response, "usage", None)
        return Completion(text=response.choices[0].message.content or "",
                          prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                          completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0))

    def _started(self, name: str) -> None:
        if name in self.stats:
            self.stats[name].in_flight += 1

    def _load(self, name: str) -> float:
        """Calls in flight on an endpoint for each it takes at once (least-busy's measure)."""
        return self.stats[name].in_flight / self.endpoints[name].max_parallel if name in self.stats else 0.0

    def _count(self, name: str | None, exc: BaseException | None, seconds: float) -> None:
        stats = self.stats.get(str(name)) if name is not None else None
        if stats is None:
            return
        stats.calls += 1
        stats.failed_last = exc is not None
        if exc is None:
            stats.ok += 1
            stats.seconds += seconds
        else:
            stats.failures += 1
            stats.last_error = short(exc)[:200]

    def _unreachable(self, name: str | None, exc: BaseException) -> Unreachable | None:
        """The failure in plain words when the endpoint was not reached (remote.py's reading)."""
        if name is None:  # no endpoint could be picked (all cooling down)
            return Unreachable("no endpoint of the fleet is available (all cooling down)",
                               "wait for the cooldown or check the fleet's servers", retryable=True,
                               detail=short(exc))
        return self._probes[name].unreachable_from(exc)

    def _refused(self, name: str | None, exc: BaseException, kwargs: dict[str, Any]) -> bool:
        """A server refused this way of asking for JSON: the fleet asks the next way, for good."""
        probe = self._probes.get(str(name))
        if probe is None or not probe._refused_structured_output(exc, kwargs):
            return False
        probe.schema_mode = self.schema_mode
        self.schema_mode = probe._weaker_mode()
        return True

    def _all_failed(self, tried: list[str], failures: list[Unreachable]) -> Unreachable:
        causes = "; ".join(f"{name}: {f.cause}" for name, f in zip(tried, failures)) or (
            failures[-1].cause if failures else "no endpoint answered")
        return Unreachable(f"every endpoint of the fleet failed ({causes})",
                           f"check that the servers in {self.name.removeprefix(FLEET_PREFIX) or 'the fleet file'} "
                           "are up, or run offline with --model local",
                           retryable=any(f.retryable for f in failures) or not failures)

    def fleet_stats(self) -> dict[str, Any]:
        """Per-endpoint calls and failures, and the endpoints whose last attempt failed (down)."""
        return {"routing": self.config.routing,
                "endpoints": {name: s.as_dict() for name, s in self.stats.items()},
                "down": [name for name, s in self.stats.items() if s.failed_last]}


def fleet_of(backend: Any) -> FleetBackend | None:
    """The fleet behind ``backend`` (through wrappers such as chaos, each keeping ``inner``), or None."""
    while backend is not None:
        if isinstance(backend, FleetBackend):
            return backend
        backend = getattr(backend, "inner", None)
    return None
