"""A local call whose caller gave up stops decoding and frees the model for the next call.

A fake llama.cpp object stands in for the weights: it decodes one "token" every 5 ms for up
to 20 s and, like llama.cpp, asks the abort callback while it computes (and fails as
llama-cpp-python does when it says abort). One slow test does the same on the real model.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from pydantic import BaseModel

from agents.llm import local
from agents.llm.errors import ModelUnavailable
from agents.llm.gateway import Gateway
from agents.llm.local import LoadedModel, LocalBackend
from agents.llm.models import LocalModelError, resolve_local_name

pytest.importorskip("litellm")


class Mood(BaseModel):
    mood: str


FALLBACK = Mood(mood="fallback")
MESSAGES = [{"role": "user", "content": "How is Isabella today?"}]


class SlowLlama:
    """Decodes for 20 s unless the abort callback (the model's should_abort) says stop."""

    def __init__(self, steps: int = 4000) -> None:
        self.steps = steps
        self.loaded: LoadedModel | None = None
        self.started = 0
        self.tokens = 0
        self.stopped_early = threading.Event()

    def create_chat_completion(self, messages, **options):  # noqa: ANN001, ANN201
        self.started += 1
        for _ in range(self.steps):
            time.sleep(0.005)
            self.tokens += 1
            if self.loaded is not None and self.loaded.should_abort():
                self.stopped_early.set()
                raise RuntimeError("llama_decode returned 2")
        return {"choices": [{"message": {"content": '{"mood": "slow"}'}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": self.tokens}}


@pytest.fixture
def slow(monkeypatch: pytest.MonkeyPatch) -> tuple[SlowLlama, LoadedModel]:
    spec = resolve_local_name(None)
    loaded = LoadedModel(spec, SlowLlama(steps=1), threading.Lock(), 0.0)
    monkeypatch.setattr(local, "_models", {spec.name: loaded})
    # Warm up litellm's first call to the provider (imports, registration), which can take
    # longer than the timeouts below on a busy machine.
    assert Gateway(LocalBackend(), max_attempts=1).complete("mood", MESSAGES, Mood, FALLBACK).mood == "slow"
    fake = SlowLlama()
    fake.loaded = loaded
    loaded.llama = fake
    return fake, loaded


def test_a_timed_out_call_stops_decoding_and_frees_the_model(slow) -> None:
    fake, loaded = slow
    llm = Gateway(LocalBackend(), model="local:test", max_attempts=1, timeout_s=1.5)
    assert llm.complete("mood", MESSAGES, Mood, FALLBACK) == FALLBACK  # gave up after 1.5 s
    assert fake.started == 1, "decoding never started: the test would prove nothing"
    # Without cancellation the thread would decode for 20 s more, holding the lock.
    assert loaded.lock.acquire(timeout=5.0), "the model lock is still held by discarded work"
    loaded.lock.release()
    assert fake.stopped_early.is_set() and fake.tokens < 1000


def test_queued_calls_whose_callers_gave_up_never_start(slow) -> None:
    fake, loaded = slow
    llm = Gateway(LocalBackend(), model="local:test", max_attempts=1, timeout_s=1.5)

    async def three() -> list[Mood]:
        return await asyncio.gather(*(llm.acomplete("mood", MESSAGES, Mood, FALLBACK) for _ in range(3)))

    assert asyncio.run(three()) == [FALLBACK] * 3
    assert loaded.lock.acquire(timeout=5.0)
    loaded.lock.release()
    time.sleep(0.2)  # let any straggler thread reach the lock
    assert fake.started == 1  # the two queued calls gave up before reaching llama.cpp


def test_a_missing_model_package_stops_with_the_install_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(spec):  # noqa: ANN001, ANN202
        raise LocalModelError(f"package {spec.package} is not installed; fix: {spec.install_hint}")

    monkeypatch.setattr(local, "_models", {})
    monkeypatch.setattr(local, "gguf_path", missing)
    llm = Gateway(LocalBackend(), max_attempts=3)
    with pytest.raises(ModelUnavailable) as caught:
        llm.complete("mood", MESSAGES, Mood, FALLBACK)
    assert "is not available" in caught.value.cause and "pip install" in caught.value.fix


@pytest.mark.slow
def test_the_real_model_stops_when_its_caller_gives_up(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("llama_cpp")
    try:
        loaded = local.load_model(resolve_local_name(None))
    except LocalModelError as exc:
        pytest.skip(str(exc))
    llama, outcome = loaded.llama, []
    real = llama.create_chat_completion

    def endless(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        kwargs["logit_bias"] = {llama.token_eos(): -1000.0}  # no end of text: 4000 tokens to go
        try:
            return real(*args, **kwargs)
        except BaseException as exc:
            outcome.append(exc)
            raise

    llm = Gateway(LocalBackend(grammar=False), max_attempts=1, timeout_s=2.0)
    llm.complete("mood", MESSAGES, Mood, FALLBACK, max_tokens=4)  # warm up litellm's first call
    monkeypatch.setattr(llama, "create_chat_completion", endless, raising=False)

    async def give_up_then_wait_for_the_model() -> tuple[Mood, bool]:
        answer = await llm.acomplete("mood", MESSAGES, Mood, FALLBACK, max_tokens=4000)
        freed = await asyncio.to_thread(loaded.lock.acquire, True, 10.0)
        if freed:
            loaded.lock.release()
        return answer, freed

    answer, freed = asyncio.run(give_up_then_wait_for_the_model())
    assert answer == FALLBACK and freed, "llama.cpp is still decoding for a caller that gave up"
    assert [type(e).__name__ for e in outcome] == ["RuntimeError"]  # llama_decode aborted
