"""Prose about the resident's own day (interview answers, chat summaries) is sampled with a
frequency penalty on the embedded model; structured purposes and chat lines are not. A fake llama.cpp object records the options each call reaches it with."""

from __future__ import annotations

import asyncio
import threading

import pytest
from pydantic import BaseModel

from agents.llm import local
from agents.llm.local import FREE_TEXT_PENALTY, LoadedModel, LocalBackend, sampling_for
from agents.llm.models import resolve_local_name
from agents.llm.wrappers.base import Request

pytest.importorskip("litellm")


class Answer(BaseModel):
    answer: str


class RecordingLlama:
    def __init__(self) -> None:
        self.options: list[dict] = []

    def create_chat_completion(self, messages, **options):  # noqa: ANN001, ANN201
        self.options.append(options)
        return {"choices": [{"message": {"content": '{"answer": "I read at the library."}'}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 5}}


@pytest.fixture
def llama(monkeypatch: pytest.MonkeyPatch) -> RecordingLlama:
    spec = resolve_local_name(None)
    fake = RecordingLlama()
    monkeypatch.setattr(local, "_models", {spec.name: LoadedModel(spec, fake, threading.Lock(), 0.0)})
    return fake


def _ask(purpose: str) -> None:
    request = Request(purpose, [{"role": "user", "content": "What did you do?"}], Answer, 0.7, 40, 3)
    asyncio.run(LocalBackend(grammar=False).generate(request))


def test_interview_answers_and_chat_summaries_are_sampled_with_a_frequency_penalty(llama: RecordingLlama) -> None:
    for purpose in ("interview", "chat_summary"):
        _ask(purpose)
    assert [o.get("frequency_penalty") for o in llama.options] == [0.5] * 2
    assert all(o["seed"] == 3 and o["max_tokens"] == 40 for o in llama.options)


def test_plans_ratings_steps_and_chat_lines_keep_plain_sampling(llama: RecordingLlama) -> None:
    for purpose in ("plan_day", "importance", "decompose", "react", "converse"):
        _ask(purpose)
    assert all("frequency_penalty" not in o for o in llama.options)
    assert sampling_for("plan_day") == {} and set(FREE_TEXT_PENALTY) == {"interview", "chat_summary"}
