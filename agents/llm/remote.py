"""Any litellm model: OpenAI, Anthropic, Ollama, vLLM or any OpenAI-compatible server.

The model string is litellm's own (``gpt-4o-mini``, ``anthropic/claude-...``,
``ollama/llama3.1``, ``hosted_vllm/<name>``, ``openai/<name>`` with an api_base). API keys
come only from the environment, where litellm reads them itself: this module never reads,
logs or stores a key. ``TOWNSFOLK_API_BASE`` points any model at another server.

Structured output, strongest first (:data:`MODES`): where litellm says the model supports a
response schema, the call carries ``response_format`` ``json_schema`` (OpenAI, Anthropic ...).
A server of one's own (``TOWNSFOLK_API_BASE``) that litellm knows nothing about gets JSON mode
with the schema inside it, ``{"type": "json_object", "schema": ...}``: llama-cpp-python's
server decodes under a grammar built from it (agents/llm/server_schema.py), other servers
ignore the extra key and still give JSON mode. Otherwise JSON mode, else nothing. With the
schema inside JSON mode the prompt carries a short outline of it (keys, types, choices, bounds,
descriptions: agents/llm/schema_outline.py, about half the full schema's length); in JSON mode
alone and with no response_format, the full schema. A server that refuses
a mode (400, or llama_cpp.server's 500 naming response_format) gets the next one, for good.
Either way the gateway validates, repairs and retries.

Failures to reach the model (no key, a rejected key, an unknown model, connection refused,
429, 5xx, timeouts) are raised as :class:`~agents.llm.errors.Unreachable` with the cause in
plain words and the fix; the gateway backs off and, if they go on, stops the run. Neither
litellm nor the OpenAI client retries on its own here: one place decides.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from maps.contracts import Message
from agents.llm.errors import Unreachable, short
from agents.llm.wrappers.base import Completion, Request
from agents.llm.litellm_setup import load_litellm
from agents.llm.schema_outline import outline_instruction
from agents.llm.schemas import json_schema_of
from agents.llm.server_schema import bounded_schema

API_BASE_ENV = "TOWNSFOLK_API_BASE"

# How the schema is sent, strongest first; a refusal steps down to the next one.
MODES = ("schema", "json_object_schema", "json", "prompt")


def json_instruction(schema: dict[str, Any]) -> str:
    return (
        "Reply with one JSON object only, no prose, that matches this JSON schema:\n"
        + json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
    )


def with_instruction(messages: list[Message], instruction: str) -> list[Message]:
    """The messages with the JSON instruction added to the system message (or a new one)."""
    out = [dict(m) for m in messages]
    for message in out:
        if message.get("role") == "system":
            message["content"] = f"{message.get('content', '')}\n\n{instruction}".strip()
            return out
    return [{"role": "system", "content": instruction}, *out]


def structured_kwargs(mode: str, request: Request) -> dict[str, Any]:
    """``messages`` and ``response_format`` for one of :data:`MODES`."""
    if mode == "schema":
        schema = json_schema_of(request.schema)
        return {"messages": request.messages, "response_format": {
            "type": "json_schema",
            "json_schema": {"name": request.schema.__name__, "schema": schema, "strict": False},
        }}
    if mode == "json_object_schema":  # the server's grammar holds the shape: the prompt needs only an outline
        return {"messages": with_instruction(request.messages, outline_instruction(json_schema_of(request.schema))),
                "response_format": {"type": "json_object", "schema": bounded_schema(request.schema)}}
    out: dict[str, Any] = {
        "messages": with_instruction(request.messages, json_instruction(json_schema_of(request.schema)))}
    if mode == "json":
        out["response_format"] = {"type": "json_object"}
    return out


class LiteLLMBackend:
    """The gateway backend for every litellm model string."""

    def __init__(self, model: str, *, api_base: str | None = None, timeout_s: float = 120.0):
        model = (model or "").strip()
        if not model:
            raise ValueError("--model must name a model: local, scripted, or a litellm model string")
        self.model = model
        self.name = model
        self.api_base = api_base or os.environ.get(API_BASE_ENV) or None
        self.timeout_s = timeout_s
        litellm = load_litellm()
        try:
            litellm.get_llm_provider(model=model, api_base=self.api_base)
        except Exception:
            raise ValueError(
                f"--model {model!r} is not a model litellm knows how to call; use 'local', "
                "'scripted', or a litellm string such as 'gpt-4o-mini', 'ollama/llama3.1' or "
                "'openai/<name>' with TOWNSFOLK_API_BASE set"
            ) from None
        self.schema_mode = self._structured_mode(litellm)
        # A server of one's own (llama.cpp, vLLM, Ollama) usually wants no key, but the OpenAI
        # client refuses to send a request without one: send a placeholder. A server that does
        # want a key answers 401, which is then reported as the missing key it is.
        self.placeholder_key = bool(self.api_base) and bool(self.missing_keys())

    def _structured_mode(self, litellm: Any) -> str:
        """The strongest of :data:`MODES` this model should take (see the module docstring)."""
        try:
            if litellm.supports_response_schema(model=self.model):
                return "schema"
            params = litellm.get_supported_openai_params(model=self.model) or []
        except Exception:
            return "prompt"
        if "response_format" not in params:
            return "prompt"
        return "json_object_schema" if self.api_base else "json"

    def _request_kwargs(self, request: Request) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.seed,
            "timeout": self.timeout_s,
            "num_retries": 0,  # the gateway retries (agents.llm.gateway.Backoff)
            "max_retries": 0,  # and the OpenAI client must not retry behind its back
            "drop_params": True,  # e.g. seed on providers that have none
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.placeholder_key:
            kwargs["api_key"] = "none"
        return kwargs | structured_kwargs(self.schema_mode, request)

    async def generate(self, request: Request) -> Completion:
        try:
            response = await self._acompletion(request)
        except Exception as exc:
            unreachable = self.unreachable_from(exc)
            if unreachable is None:
                raise  # the model was reached: a bad request or a bad answer
            raise unreachable from exc
        litellm = load_litellm()
        usage = getattr(response, "usage", None)
        try:
            cost = float(litellm.completion_cost(completion_response=response) or 0.0)
        except Exception:  # unknown price (local servers, new models)
            cost = 0.0
        return Completion(
            text=response.choices[0].message.content or "",
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost=cost,
        )

    async def _acompletion(self, request: Request) -> Any:
        litellm = load_litellm()
        while True:
            kwargs = self._request_kwargs(request)
            try:
                return await litellm.acompletion(**kwargs)
            except (litellm.BadRequestError, litellm.InternalServerError) as exc:
                if not self._refused_structured_output(exc, kwargs):
                    raise
                # The server refused this way of asking for JSON: the next one, for good.
                self.schema_mode = self._weaker_mode()

    @staticmethod
    def _refused_structured_output(exc: BaseException, kwargs: dict[str, Any]) -> bool:
        """A 400 or 500 naming response_format (llama_cpp.server's way) to a call that carried one.

        Any other 400 (a prompt too long, say) is the request's fault, not the mode's.
        """
        text = str(exc).lower()
        return "response_format" in kwargs and any(word in text for word in _REFUSAL_WORDS)

    def _weaker_mode(self) -> str:
        """The next of :data:`MODES`; the schema inside JSON mode only for a server of one's own."""
        weaker = MODES[MODES.index(self.schema_mode) + 1]
        return "json" if weaker == "json_object_schema" and not self.api_base else weaker

    def missing_keys(self) -> list[str]:
        """The API-key variables litellm wants for this model and does not find (names only)."""
        litellm = load_litellm()
        try:
            found = litellm.validate_environment(model=self.model, api_base=self.api_base)
        except Exception:
            return []
        return [str(k) for k in found.get("missing_keys") or []]

    def _key_problem(self, status: int | None, detail: str) -> Unreachable:
        """A missing key names the variable to set; a rejected one says to check it."""
        missing = self.missing_keys()
        if missing:
            return Unreachable(
                f"missing API key ({', '.join(missing)} is not set)",
                f"export {missing[0]}=<your key> (keys are read from the environment only), "
                "or run offline with --model local",
                retryable=False, detail=detail,
            )
        return Unreachable(
            "API key rejected (401)" if status == 401 else "API key missing or rejected",
            f"check the API key variable for {self.model} in your environment",
            retryable=False, detail=detail,
        )

    def unreachable_from(self, exc: BaseException) -> Unreachable | None:
        """The plain-words cause and fix when ``exc`` means the model was not reached, else None.

        litellm reports a refused connection and a missing key alike as a 500 from the
        provider, so the exception's chain is read before its status code: the checks run
        in this order and the first that recognises the failure answers.
        """
        failure = Failure.of(exc)
        for check in (self._timed_out, self._no_key, self._no_connection, self._denied,
                      self._unknown_model, self._rate_limited, self._server_error):
            found = check(failure)
            if found is not None:
                return found
        return None

    @property
    def _where(self) -> str:
        return self.api_base or "the provider"

    def _timed_out(self, f: Failure) -> Unreachable | None:
        litellm = load_litellm()
        if not (f.is_a(litellm.Timeout) or f.status == 408 or f.in_chain(TimeoutError)):
            return None
        return Unreachable(f"timed out after {self.timeout_s:g} s waiting for {self._where}",
                           f"check that {self._where} is up and not overloaded",
                           retryable=True, detail=f.detail)

    def _no_key(self, f: Failure) -> Unreachable | None:
        litellm = load_litellm()
        if f.is_a(litellm.AuthenticationError) or f.status == 401 or any(s in f.text for s in _NO_KEY):
            return self._key_problem(f.status, f.detail)
        return None

    def _no_connection(self, f: Failure) -> Unreachable | None:
        litellm = load_litellm()
        if not (f.is_a(litellm.APIConnectionError) or any(_is_connection_error(c) for c in f.chain)):
            return None
        return Unreachable(
            connection_cause(f.chain, self._where),
            f"check the network and that {self._where} is running"
            + (f" (set by {API_BASE_ENV})" if self.api_base else "")
            + ", or run offline with --model local",
            retryable=True, detail=f.detail,
        )

    def _denied(self, f: Failure) -> Unreachable | None:
        if not (f.is_a(load_litellm().PermissionDeniedError) or f.status == 403):
            return None
        return Unreachable("access denied (403)",
                           f"check that your key may use {self.model} (plan, region, organisation)",
                           retryable=False, detail=f.detail)

    def _unknown_model(self, f: Failure) -> Unreachable | None:
        if not (f.is_a(load_litellm().NotFoundError) or f.status == 404):
            return None
        return Unreachable(f"unknown model (404 from {self._where})",
                           f"check the model name {self.model!r} (litellm's provider/model form) "
                           f"and, for your own server, {API_BASE_ENV}",
                           retryable=False, detail=f.detail)

    def _rate_limited(self, f: Failure) -> Unreachable | None:
        if not (f.is_a(load_litellm().RateLimitError) or f.status == 429):
            return None
        return Unreachable("rate limited (429)",
                           "wait and retry, lower --agents or the eval concurrency, or raise the account's quota",
                           retryable=True, detail=f.detail)

    def _server_error(self, f: Failure) -> Unreachable | None:
        if not (isinstance(f.status, int) and f.status >= 500):
            return None
        return Unreachable(f"server error ({f.status} from {self._where})",
                           f"wait and retry; if it persists check {self._where}'s status",
                           retryable=True, detail=f.detail)


@dataclass(frozen=True)
class Failure:
    """What :meth:`LiteLLMBackend.unreachable_from` reads of an exception, read once."""

    exc: BaseException
    status: int | None
    chain: list[BaseException]
    text: str  # the whole chain's messages, lower case
    detail: str  # short, for the run record

    @classmethod
    def of(cls, exc: BaseException) -> Failure:
        chain = exception_chain(exc)
        return cls(exc, getattr(exc, "status_code", None), chain,
                   " ".join(str(c) for c in chain).lower(), short(exc))

    def is_a(self, kind: type[BaseException]) -> bool:
        return isinstance(self.exc, kind)

    def in_chain(self, kind: type[BaseException]) -> bool:
        return any(isinstance(c, kind) for c in self.chain)


# Words in a refusal of response_format (OpenAI: "'response_format' of type 'json_schema' is
# not supported with this model"; llama_cpp.server: a 500 naming response_format).
_REFUSAL_WORDS = ("response_format", "response format", "json_schema", "json_object", "schema")
# Provider messages that mean "no key was sent" (litellm maps some of them to a 500).
_NO_KEY = ("missing credentials", "api_key client option must be set", "no api key provided")
_CONNECTION_TYPES = {"APIConnectionError", "ConnectError", "ClientConnectorError", "ConnectTimeout"}


def exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes, outermost first (each once)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _is_connection_error(exc: BaseException) -> bool:
    return isinstance(exc, ConnectionError) or type(exc).__name__ in _CONNECTION_TYPES or (
        isinstance(exc, OSError) and not isinstance(exc, TimeoutError)
    )


def connection_cause(chain: list[BaseException], where: str) -> str:
    """'connection refused', 'host not found' ... from an exception chain."""
    if any(isinstance(c, ConnectionRefusedError) for c in chain):
        return f"connection refused by {where}"
    text = " ".join(str(c) for c in chain).lower()
    if "connection refused" in text or "errno 111" in text:
        return f"connection refused by {where}"
    if any(s in text for s in ("name or service not known", "temporary failure in name resolution",
                               "nodename nor servname", "getaddrinfo failed", "no address associated")):
        return f"host not found for {where} (no network?)"
    if "network is unreachable" in text or "no route to host" in text:
        return f"network unreachable for {where}"
    return f"could not connect to {where}"
