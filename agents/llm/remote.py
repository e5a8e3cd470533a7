"""Any litellm model: OpenAI, Anthropic, Ollama, vLLM or any OpenAI-compatible server.

The model string is litellm's own (``gpt-4o-mini``, ``anthropic/claude-...``,
``ollama/llama3.1``, ``hosted_vllm/<name>``, ``openai/<name>`` with an api_base). API keys
come only from the environment, where litellm reads them itself: this module never reads,
logs or stores a key. ``TOWNSFOLK_API_BASE`` points any model at another server.

Structured output: where litellm says the model supports a response schema, the call
carries ``response_format`` with the JSON schema; otherwise it asks for JSON mode where the
provider offers it, and the schema goes into the prompt as an instruction. Either way the
gateway validates, repairs and retries.
"""

from __future__ import annotations

import json
import os
from typing import Any

from agents.interfaces import Message
from agents.llm.gateway import Completion, Request
from agents.llm.litellm_setup import load_litellm
from agents.llm.schemas import json_schema_of

API_BASE_ENV = "TOWNSFOLK_API_BASE"


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

    def _structured_mode(self, litellm: Any) -> str:
        """'schema' (response_format json_schema), 'json' (JSON mode) or 'prompt' (instruction only)."""
        try:
            if litellm.supports_response_schema(model=self.model):
                return "schema"
            params = litellm.get_supported_openai_params(model=self.model) or []
        except Exception:
            return "prompt"
        return "json" if "response_format" in params else "prompt"

    def _request_kwargs(self, request: Request) -> dict[str, Any]:
        schema = json_schema_of(request.schema)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.seed,
            "timeout": self.timeout_s,
            "num_retries": 0,  # the gateway retries
            "drop_params": True,  # e.g. seed on providers that have none
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.schema_mode == "schema":
            kwargs["messages"] = request.messages
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema.__name__, "schema": schema, "strict": False},
            }
        else:
            kwargs["messages"] = with_instruction(request.messages, json_instruction(schema))
            if self.schema_mode == "json":
                kwargs["response_format"] = {"type": "json_object"}
        return kwargs

    async def generate(self, request: Request) -> Completion:
        litellm = load_litellm()
        kwargs = self._request_kwargs(request)
        try:
            response = await litellm.acompletion(**kwargs)
        except litellm.BadRequestError:
            if "response_format" not in kwargs or self.schema_mode == "prompt":
                raise
            # The server refused structured output: fall back to the prompt instruction for good.
            self.schema_mode = "prompt"
            response = await litellm.acompletion(**self._request_kwargs(request))
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
