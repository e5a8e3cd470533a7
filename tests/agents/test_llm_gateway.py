"""The gateway on the scripted backend: validation, repair, retry, fallback, cache, accounting."""

from __future__ import annotations

import asyncio
import json
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from agents.llm.chaos import CHAOS_KINDS, ChaosBackend, chaos_arg
from agents.llm.gateway import Completion, Gateway, Request, ScriptedBackend, make_llm
from agents.llm.cache import DiskCache

Place = Literal["cafe", "park", "library", "home"]


class DayPlan(BaseModel):
    places: list[Place] = Field(min_length=1, max_length=4)
    summary: str = Field(max_length=80)


class Importance(BaseModel):
    importance: int = Field(ge=1, le=10)


class Utterance(BaseModel):
    utterance: str


PLAN_MESSAGES = [
    {"role": "system", "content": "You plan a resident's day."},
    {"role": "user", "content": "Isabella runs the cafe and walks in the park. Places: cafe, park, library, home."},
]
FALLBACK_PLAN = DayPlan(places=["home"], summary="stays home")


class FixedBackend:
    """Returns the given texts in turn and records every request it saw."""

    name = "fixed"

    def __init__(self, *texts: str):
        self.texts = list(texts)
        self.requests: list[Request] = []

    async def generate(self, request: Request) -> Completion:
        self.requests.append(request)
        text = self.texts[min(len(self.requests), len(self.texts)) - 1]
        return Completion(text=text, prompt_tokens=10, completion_tokens=5, cost=0.001)


def test_scripted_answer_validates_and_follows_the_prompt() -> None:
    llm = make_llm("scripted")
    plan = llm.complete("plan_day", PLAN_MESSAGES, DayPlan, FALLBACK_PLAN)
    assert isinstance(plan, DayPlan)
    assert set(plan.places) <= {"cafe", "park"}  # the options the prompt names
    stats = llm.stats()["by_purpose"]["plan_day"]
    assert stats["calls"] == 1 and stats["fallbacks"] == 0 and stats["failures"] == 0


def test_repair_of_fenced_prose_wrapped_answer_counts_no_failure() -> None:
    backend = FixedBackend('Sure!\n```json\n{"places": ["Cafe", "PARK"], "summary": "busy",}\n```')
    llm = Gateway(backend)
    plan = llm.complete("plan_day", PLAN_MESSAGES, DayPlan, FALLBACK_PLAN)
    assert plan.places == ["cafe", "park"]
    assert llm.stats()["total"]["failures"] == 0


def test_invalid_answer_is_retried_then_falls_back() -> None:
    backend = FixedBackend('{"places": ["the moon"], "summary": 3}', "nothing useful")
    llm = Gateway(backend, max_attempts=3)
    infos = []
    llm.add_listener(infos.append)
    plan = llm.complete("plan_day", PLAN_MESSAGES, FALLBACK_PLAN.__class__, FALLBACK_PLAN)
    assert plan == FALLBACK_PLAN and plan is not FALLBACK_PLAN
    assert len(backend.requests) == 3
    assert [r.seed for r in backend.requests] == [0, 1, 2]  # a retry re-asks with another seed
    total = llm.stats()["total"]
    assert total["failures"] == 3 and total["fallbacks"] == 1 and total["attempts"] == 3
    assert infos[0].fallback and not infos[0].ok and len(infos[0].errors) == 3


class LimitedModel(FixedBackend):
    """A model whose spec limits its day plans to two attempts (as SmolLM2's does)."""

    class spec:
        attempt_limits = (("plan_day", 2),)
        timeout_s = 30.0


def test_a_models_attempt_limit_cuts_that_purpose_short_and_no_other() -> None:
    backend = LimitedModel('{"places": ["the moon"], "summary": 3}')
    llm = Gateway(ChaosBackend(backend, rate=0.0), max_attempts=3)  # found through a wrapper too
    assert (llm.attempts_for("plan_day"), llm.attempts_for("converse")) == (2, 3)
    assert llm.complete("plan_day", PLAN_MESSAGES, DayPlan, FALLBACK_PLAN) == FALLBACK_PLAN
    assert len(backend.requests) == 2
    assert llm.stats()["by_purpose"]["plan_day"]["attempts"] == 2
    llm.complete("converse", PLAN_MESSAGES, DayPlan, FALLBACK_PLAN)
    assert len(backend.requests) == 5  # three more: the limit is the plan's only
    # the gateway's own bound still wins when it is lower, and a caller may set limits itself
    assert Gateway(LimitedModel("x"), max_attempts=1).attempts_for("plan_day") == 1
    assert Gateway(LimitedModel("x"), attempt_limits={}).attempts_for("plan_day") == 3


def test_an_attempt_limit_below_one_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="plan_day"):
        Gateway(FixedBackend("x"), attempt_limits={"plan_day": 0})


@pytest.mark.parametrize("kind", CHAOS_KINDS)
def test_each_chaos_kind_is_survived_and_counted(kind: str) -> None:
    backend = ChaosBackend(ScriptedBackend(), rate=1.0, seed=1, kinds=[kind])
    llm = Gateway(backend, max_attempts=2)
    plan = llm.complete("plan_day", PLAN_MESSAGES, DayPlan, FALLBACK_PLAN)
    assert plan == FALLBACK_PLAN
    stats = llm.stats()["by_purpose"]["plan_day"]
    assert stats["failures"] == 2 and stats["fallbacks"] == 1 and stats["calls"] == 1
    assert backend.injected[kind] == 2


def test_chaos_timeout_by_sleeping_past_the_gateway_timeout() -> None:
    backend = ChaosBackend(ScriptedBackend(), rate=1.0, kinds=["timeout"], timeout_sleep_s=5)
    llm = Gateway(backend, max_attempts=1, timeout_s=0.05)
    infos = []
    llm.add_listener(infos.append)
    value = llm.complete("importance", PLAN_MESSAGES, Importance, Importance(importance=3))
    assert value.importance == 3
    assert infos[0].errors == ["timeout"] and infos[0].latency_s < 2


def test_partial_chaos_is_deterministic_and_mostly_recovered_by_retries() -> None:
    def run() -> tuple[list[int], dict]:
        llm = make_llm("scripted", chaos=0.3, seed=7)
        values = [
            llm.complete("importance", [{"role": "user", "content": f"memory {i}"}], Importance,
                         Importance(importance=1)).importance
            for i in range(40)
        ]
        return values, llm.stats()["total"]

    first, stats = run()
    second, _ = run()
    assert first == second
    assert stats["failures"] > 0  # about 30% of attempts were corrupted
    assert stats["fallbacks"] < stats["failures"]  # retries recovered most of them
    assert stats["calls"] == 40


def test_cache_hit_on_repeated_call_skips_the_backend(tmp_path) -> None:
    backend = FixedBackend('{"importance": 8}')
    llm = Gateway(backend, cache=DiskCache(tmp_path))
    messages = [{"role": "user", "content": "How important is the fire at the cafe?"}]
    first = llm.complete("importance", messages, Importance, Importance(importance=1))
    second = llm.complete("importance", messages, Importance, Importance(importance=1))
    assert first == second == Importance(importance=8)
    assert len(backend.requests) == 1
    stats = llm.stats()["by_purpose"]["importance"]
    assert stats["cache_hits"] == 1 and stats["calls"] == 2
    # Another temperature is another key.
    llm.complete("importance", messages, Importance, Importance(importance=1), temperature=0.1)
    assert len(backend.requests) == 2


def test_cache_survives_a_new_gateway(tmp_path) -> None:
    messages = [{"role": "user", "content": "rate this"}]
    make_llm("scripted", cache_dir=tmp_path).complete("importance", messages, Importance, Importance(importance=1))
    again = make_llm("scripted", cache_dir=tmp_path)
    again.complete("importance", messages, Importance, Importance(importance=1))
    assert again.stats()["total"]["cache_hits"] == 1


def test_accounting_totals_add_up_per_purpose() -> None:
    backend = FixedBackend('{"importance": 4}')
    llm = Gateway(backend)
    for i in range(3):
        llm.complete("importance", [{"role": "user", "content": f"m{i}"}], Importance, Importance(importance=1))
    backend.texts = ['{"utterance": "hello there"}']
    llm.complete("converse", [{"role": "user", "content": "hi"}], Utterance, Utterance(utterance="..."))
    stats = llm.stats()
    imp, conv, total = stats["by_purpose"]["importance"], stats["by_purpose"]["converse"], stats["total"]
    assert imp["calls"] == 3 and imp["prompt_tokens"] == 30 and imp["completion_tokens"] == 15
    assert conv["calls"] == 1
    assert total["calls"] == 4 and total["prompt_tokens"] == 40 and total["completion_tokens"] == 20
    assert total["cost"] == pytest.approx(0.004)
    assert total["latency_s"] >= imp["latency_s"]


def test_concurrent_calls_are_accounted_once_each() -> None:
    llm = make_llm("scripted")

    async def many() -> list[Importance]:
        return await asyncio.gather(*[
            llm.acomplete("importance", [{"role": "user", "content": f"n{i}"}], Importance, Importance(importance=1))
            for i in range(25)
        ])

    values = asyncio.run(many())
    assert len(values) == 25 and all(1 <= v.importance <= 10 for v in values)
    assert llm.stats()["total"]["calls"] == 25


def test_error_text_never_reaches_a_later_prompt() -> None:
    backend = FixedBackend('{"places": ["mars"], "summary": "x"}', '{"places": ["mars"]}', '{"places": ["park"], "summary": "ok"}')
    llm = Gateway(backend, max_attempts=3)
    infos = []
    llm.add_listener(infos.append)
    plan = llm.complete("plan_day", PLAN_MESSAGES, DayPlan, FALLBACK_PLAN)
    assert plan.places == ["park"]
    assert infos[0].errors  # the first two attempts failed validation...
    # ...and no retry or later call saw a word of it: every prompt is the caller's own.
    llm.complete("plan_day", PLAN_MESSAGES + [{"role": "user", "content": "again"}], DayPlan, FALLBACK_PLAN)
    for request in backend.requests:
        sent = json.dumps(request.messages)
        assert all(error not in sent for error in infos[0].errors)
        assert "mars" not in sent and "Input should be" not in sent
    assert backend.requests[0].messages == backend.requests[1].messages == PLAN_MESSAGES


def test_wrong_fallback_type_is_a_programming_error() -> None:
    with pytest.raises(TypeError, match="fallback must be a DayPlan"):
        make_llm("scripted").complete("plan_day", PLAN_MESSAGES, DayPlan, Importance(importance=1))


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), "lots", None])
def test_make_llm_rejects_a_bad_chaos_value_clearly(bad) -> None:
    with pytest.raises(ValueError, match="--chaos must be a number between 0 and 1"):
        make_llm("scripted", chaos=bad)


def test_chaos_cli_option_gives_a_usage_error() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--chaos", type=chaos_arg, default=0.0)
    assert parser.parse_args(["--chaos", "0.3"]).chaos == 0.3
    with pytest.raises(SystemExit):
        parser.parse_args(["--chaos", "2"])


def test_unknown_models_are_rejected_clearly() -> None:
    with pytest.raises(ValueError, match="local:smollm2"):
        make_llm("local:gpt5")
    with pytest.raises(ValueError, match="not a model litellm knows"):
        make_llm("no-such-provider-model-xyz")
