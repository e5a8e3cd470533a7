"""The litellm backend without a network: litellm.acompletion is replaced by a fake server."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from agents.llm.cache import DiskCache
from agents.llm.gateway import Gateway
from agents.llm.litellm_setup import load_litellm
from agents.llm.remote import LiteLLMBackend

SECRET = "sk-test-DO-NOT-LEAK-0123456789abcdef"


class React(BaseModel):
    react: bool
    place: Literal["cafe", "park"] = "cafe"
    why: str = Field(default="", max_length=80)


class FakeServer:
    """Stands in for litellm.acompletion: records calls, fails first if asked."""

    def __init__(self, answers: list[str], fail_first_with: Exception | None = None):
        self.answers = answers
        self.fail_first_with = fail_first_with
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, **kwargs: Any) -> Any:
        litellm = load_litellm()
        self.calls.append(kwargs)
        if self.fail_first_with is not None and len(self.calls) == 1:
            raise self.fail_first_with
        text = self.answers[min(len(self.calls), len(self.answers)) - 1]
        return litellm.ModelResponse(
            model=kwargs["model"],
            choices=[litellm.Choices(message=litellm.Message(content=text, role="assistant"))],
            usage=litellm.Usage(prompt_tokens=120, completion_tokens=12, total_tokens=132),
        )


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch):
    def install(answers: list[str], fail_first_with: Exception | None = None) -> FakeServer:
        server = FakeServer(answers, fail_first_with)
        monkeypatch.setattr(load_litellm(), "acompletion", server)
        return server

    return install


MESSAGES = [
    {"role": "system", "content": "You are Isabella."},
    {"role": "user", "content": "Smoke at the cafe. React?"},
]


def test_schema_capable_model_gets_response_format_and_a_cost(fake) -> None:
    server = fake(['{"react": true, "place": "cafe", "why": "smoke"}'])
    llm = Gateway(LiteLLMBackend("gpt-4o-mini"))
    value = llm.complete("react", MESSAGES, React, React(react=False))
    assert value == React(react=True, place="cafe", why="smoke")
    sent = server.calls[0]
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"] == React.model_json_schema()
    assert sent["messages"] == MESSAGES and sent["num_retries"] == 0
    total = llm.stats()["total"]
    assert total["prompt_tokens"] == 120 and total["completion_tokens"] == 12
    assert total["cost"] > 0  # priced from litellm's bundled cost map


def test_model_without_schema_support_gets_the_schema_in_the_prompt(fake) -> None:
    server = fake(['Answer: {"react": false}'])
    llm = Gateway(LiteLLMBackend("ollama/llama3.1"))
    assert llm.complete("react", MESSAGES, React, React(react=True)).react is False
    sent = server.calls[0]
    assert sent.get("response_format", {}).get("type") != "json_schema"
    assert "JSON schema" in sent["messages"][0]["content"] and '"react"' in sent["messages"][0]["content"]
    assert llm.stats()["total"]["cost"] == 0.0  # unknown price counts as free, not as an error


def test_api_base_from_the_environment(fake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOWNSFOLK_API_BASE", "http://127.0.0.1:8000/v1")
    server = fake(['{"react": true}'])
    Gateway(LiteLLMBackend("hosted_vllm/qwen")).complete("react", MESSAGES, React, React(react=False))
    assert server.calls[0]["api_base"] == "http://127.0.0.1:8000/v1"


def test_api_key_never_lands_in_cache_callinfo_or_stats(fake, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    litellm = load_litellm()
    leak = litellm.AuthenticationError(
        message=f"Incorrect API key provided: {SECRET}", llm_provider="openai", model="gpt-4o-mini"
    )
    server = fake(['{"react": true, "why": "smoke"}'], fail_first_with=leak)
    infos = []
    llm = Gateway(LiteLLMBackend("gpt-4o-mini"), cache=DiskCache(tmp_path), max_attempts=2)
    llm.add_listener(infos.append)
    assert llm.complete("react", MESSAGES, React, React(react=False)).react is True
    # The key is read by litellm from the environment, never passed around by us...
    assert all(SECRET not in json.dumps(call, default=str) for call in server.calls)
    # ...and the error that quoted it is recorded as its plain-words cause only.
    assert infos[0].errors == ["unreachable: API key rejected (401)"]
    recorded = json.dumps([vars(i) for i in infos]) + json.dumps(llm.stats())
    assert SECRET not in recorded
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_refused_response_format_falls_back_to_prompt_instruction(fake) -> None:
    litellm = load_litellm()
    refusal = litellm.BadRequestError(message="response_format not supported", model="m", llm_provider="openai")
    server = fake(['{"react": true}'], fail_first_with=refusal)
    backend = LiteLLMBackend("ollama/llama3.1")
    backend.schema_mode = "json"
    assert Gateway(backend, max_attempts=1).complete("react", MESSAGES, React, React(react=False)).react
    assert "response_format" not in server.calls[1] and backend.schema_mode == "prompt"


def test_an_unreachable_model_never_shows_the_key(fake, monkeypatch) -> None:
    from agents.llm.errors import ModelUnavailable

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    litellm = load_litellm()
    leak = litellm.AuthenticationError(
        message=f"Incorrect API key provided: {SECRET}", llm_provider="openai", model="gpt-4o-mini"
    )
    server = fake(['{"react": true}'])
    server.fail_first_with = None
    monkeypatch.setattr(litellm, "acompletion", _raise(leak))
    llm = Gateway(LiteLLMBackend("gpt-4o-mini"), max_attempts=3)
    with pytest.raises(ModelUnavailable) as caught:
        llm.complete("react", MESSAGES, React, React(react=False))
    assert caught.value.cause == "API key rejected (401)"
    assert "Incorrect API key" in caught.value.explain() and SECRET not in caught.value.explain()


def _raise(exc: Exception):
    async def fail(**kwargs: Any) -> Any:
        raise exc

    return fail


class Plan(BaseModel):
    mood: str
    energy: int = Field(ge=1, le=5)
    steps: list[str] = []
    where: Literal["cafe", "park"] = "cafe"


def test_a_server_of_ones_own_gets_the_bounded_schema_inside_json_mode(fake, monkeypatch) -> None:
    # llama_cpp.server (and llama.cpp-style servers) build a decoding grammar from it.
    monkeypatch.setenv("TOWNSFOLK_API_BASE", "http://127.0.0.1:8000/v1")
    server = fake(['{"mood": "calm", "energy": 3, "steps": [], "where": "park"}'])
    backend = LiteLLMBackend("openai/smollm2")
    assert backend.schema_mode == "json_object_schema"
    value = Gateway(backend).complete("plan", MESSAGES, Plan, Plan(mood="x", energy=1))
    assert value.where == "park"
    sent = server.calls[0]["response_format"]
    assert sent["type"] == "json_object"
    schema = sent["schema"]
    assert schema["required"] == ["mood", "energy", "steps", "where"]  # every key written
    assert schema["properties"]["mood"]["maxLength"] == 240  # free text cannot run away
    assert schema["properties"]["energy"]["enum"] == [1, 2, 3, 4, 5]  # the converter ignores bounds
    assert schema["properties"]["steps"]["maxItems"] == 32
    assert "maxLength" not in Plan.model_json_schema()["properties"]["mood"]  # the class's own is untouched
    prompt = server.calls[0]["messages"][0]["content"]  # and an outline of it in the prompt, not the whole schema
    assert '"energy": whole number 1 to 5' in prompt and '"where": one of "cafe" | "park"' in prompt
    assert '"steps": list of text' in prompt and "$defs" not in prompt and '"properties"' not in prompt


def test_the_outline_is_shorter_than_the_schema_and_keeps_choices_bounds_and_descriptions() -> None:
    from agents.llm.remote import json_instruction
    from agents.llm.schema_outline import MAX_CHOICES, outline, outline_instruction
    from agents.llm.schemas import json_schema_of
    from agents.roles.planning import decomposition_schema

    places = tuple(f"House {i}:kitchen" for i in range(3))
    schema = json_schema_of(decomposition_schema(places))
    text = outline(schema)
    assert text.startswith('{"steps": list (1 to 8) of {"action": text up to 80 chars')
    assert '"minutes": whole number 5 to 15' in text and ' | '.join(f'"{p}"' for p in places) in text
    assert "(one emoji)" in text  # descriptions stay: they are what the words are for
    assert len(outline_instruction(schema)) < 0.6 * len(json_instruction(schema))
    many = json_schema_of(decomposition_schema(tuple(f"House {i}:kitchen" for i in range(MAX_CHOICES + 5))))
    assert "... (5 more)" in outline(many)


def test_without_an_api_base_json_mode_carries_no_schema(fake, monkeypatch) -> None:
    monkeypatch.delenv("TOWNSFOLK_API_BASE", raising=False)
    server = fake(['{"react": true}'])
    backend = LiteLLMBackend("ollama/llama3.1")
    backend.schema_mode = "json"
    Gateway(backend).complete("react", MESSAGES, React, React(react=False))
    assert server.calls[0]["response_format"] == {"type": "json_object"}


def test_a_refused_schema_steps_down_one_mode_at_a_time(fake, monkeypatch) -> None:
    monkeypatch.setenv("TOWNSFOLK_API_BASE", "http://127.0.0.1:8000/v1")
    litellm = load_litellm()
    server = fake(['{"react": true}'])
    refusals = [litellm.BadRequestError(message="unknown field response_format.schema", model="m",
                                        llm_provider="openai")]

    async def refuse_once(**kwargs: Any) -> Any:
        if refusals:
            server.calls.append(kwargs)
            raise refusals.pop()
        return await server(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", refuse_once)
    backend = LiteLLMBackend("openai/smollm2")
    assert Gateway(backend, max_attempts=1).complete("react", MESSAGES, React, React(react=False)).react
    assert [c["response_format"] for c in server.calls] == [
        {"type": "json_object", "schema": server.calls[0]["response_format"]["schema"]},
        {"type": "json_object"}]
    assert backend.schema_mode == "json"


def test_a_bad_request_that_is_not_about_the_format_keeps_the_mode(fake, monkeypatch) -> None:
    monkeypatch.setenv("TOWNSFOLK_API_BASE", "http://127.0.0.1:8000/v1")
    litellm = load_litellm()

    async def too_long(**kwargs: Any) -> Any:
        raise litellm.BadRequestError(message="Requested tokens (3000) exceed context window of 2048",
                                      model="m", llm_provider="openai")

    monkeypatch.setattr(litellm, "acompletion", too_long)
    backend = LiteLLMBackend("openai/smollm2")
    llm = Gateway(backend, max_attempts=2)
    assert llm.complete("react", MESSAGES, React, React(react=False)) == React(react=False)  # the fallback
    assert backend.schema_mode == "json_object_schema"
    assert llm.stats()["total"]["unreachable"] == 0  # the server answered: not an outage


def test_bench_llm_callers_reports_one_row_per_number_of_callers() -> None:
    import argparse

    from world.cli import bench_llm

    parser = argparse.ArgumentParser()
    bench_llm.add_arguments(parser)
    result = bench_llm.run(parser.parse_args(["--model", "scripted", "--callers", "1", "3", "--calls", "3"]))
    assert [r["callers"] for r in result["rows"]] == [1, 3]
    assert all(r["calls"] == 3 and r["usable"] == 3 and r["unreachable"] == 0 for r in result["rows"])
    assert all(r["prompt_tokens_per_attempt"] > 5 for r in result["rows"])  # the prompt's size, per attempt
    with pytest.raises(SystemExit, match="--callers"):
        bench_llm.run(parser.parse_args(["--callers", "0"]))
