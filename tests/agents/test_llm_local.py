"""The real embedded model through the whole path: gateway -> litellm -> llama.cpp + grammar."""

from __future__ import annotations

import asyncio
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from agents.llm.gateway import make_llm
from agents.llm.models import DEFAULT_LOCAL_MODEL, LOCAL_MODELS, LocalModelError, gguf_path

pytest.importorskip("llama_cpp")


class Reaction(BaseModel):
    react: bool
    place: Literal["Hobbs Cafe", "Johnson Park", "home"]
    importance: int = Field(ge=1, le=10)
    reason: str = Field(max_length=60)


MESSAGES = [
    {"role": "system", "content": "You are the mind of a town resident. Answer in JSON."},
    {"role": "user", "content": "Isabella is serving coffee at Hobbs Cafe and sees smoke coming "
     "from the kitchen. Does she react, where, how important is it (1-10), and why?"},
]
FALLBACK = Reaction(react=False, place="home", importance=1, reason="fallback")


def _require(name: str) -> None:
    try:
        gguf_path(LOCAL_MODELS[name])
    except LocalModelError as exc:
        pytest.skip(str(exc))


@pytest.mark.slow
@pytest.mark.parametrize("name", [None, *sorted(n for n, spec in LOCAL_MODELS.items()
                                                 if n != DEFAULT_LOCAL_MODEL and not spec.opt_in)])
def test_local_model_gives_a_valid_structured_answer(name: str | None, tmp_path) -> None:
    _require(name or DEFAULT_LOCAL_MODEL)
    model = "local" if name is None else f"local:{name}"
    llm = make_llm(model, cache_dir=tmp_path, max_attempts=1)
    infos = []
    llm.add_listener(infos.append)
    answer = llm.complete("react", MESSAGES, Reaction, FALLBACK, temperature=0.2, max_tokens=96)
    assert infos[-1].ok and not infos[-1].fallback, infos[-1].errors
    assert isinstance(answer, Reaction) and answer.reason.strip()
    stats = llm.stats()
    assert stats["model"] == f"local:{name or DEFAULT_LOCAL_MODEL}"
    assert stats["total"]["prompt_tokens"] > 20 and stats["total"]["completion_tokens"] > 5  # real counts
    # Cached now: a re-run of the same call does not touch the model.
    again = llm.complete("react", MESSAGES, Reaction, FALLBACK, temperature=0.2, max_tokens=96)
    assert again == answer and llm.stats()["total"]["cache_hits"] == 1


@pytest.mark.slow
def test_concurrent_local_calls_are_serialised_safely() -> None:
    _require(DEFAULT_LOCAL_MODEL)
    llm = make_llm("local", use_cache=False, max_attempts=1)

    async def both() -> list[Reaction]:
        return await asyncio.gather(*[
            llm.acomplete("react", MESSAGES, Reaction, FALLBACK, temperature=0.7, max_tokens=96)
            for _ in range(3)
        ])

    answers = asyncio.run(both())
    assert len(answers) == 3 and llm.stats()["total"]["fallbacks"] == 0
