"""Each gateway wrapper alone (agents/llm/wrappers/), over a backend that counts what it is asked."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel, ConfigDict, Field

from agents.llm.cache import DiskCache
from agents.llm.errors import ModelUnavailable, Unreachable
from agents.llm.recorded import AnswerLog
from agents.llm.wrappers.accounting import Accounting, Ledger, Metering
from agents.llm.wrappers.availability import AvailabilityGate
from agents.llm.wrappers.base import Call, CallInfo, Completion, Request
from agents.llm.wrappers.caching import Caching
from agents.llm.wrappers.recording import Recording
from agents.llm.wrappers.retrying import Retrying
from agents.llm.wrappers.transport import Backoff, Transport


class Importance(BaseModel):
    importance: int = Field(ge=1, le=10)


FALLBACK = Importance(importance=1)
MESSAGES = [{"role": "user", "content": "How important is the fire at the cafe?"}]


class Counted:
    """A backend that answers the given texts (or raises the given errors) in turn; keeps requests."""

    name = "counted"

    def __init__(self, *answers: str | BaseException) -> None:
        self.answers = list(answers)
        self.requests: list[Request] = []

    async def generate(self, request: Request) -> Completion:
        self.requests.append(request)
        answer = self.answers[min(len(self.requests), len(self.answers)) - 1]
        if isinstance(answer, BaseException):
            raise answer
        return Completion(text=answer, prompt_tokens=10, completion_tokens=3, cost=0.5)


def call(messages: list | None = None, purpose: str = "importance") -> Call:
    info = CallInfo(call_id=f"{purpose}-1", purpose=purpose, prompt_hash="h", ok=False, fallback=False,
                    cached=False, attempts=0, latency_s=0.0)
    return Call(purpose, messages or MESSAGES, Importance, FALLBACK, 0.7, 64, info)


def answer(layer, c: Call | None = None) -> tuple[BaseModel, CallInfo]:
    c = c or call()
    return asyncio.run(layer.answer(c)), c.info


def refused() -> Unreachable:
    return Unreachable("connection refused", "start the server", retryable=True)


# -- caching ----------------------------------------------------------------------------------


def test_a_cache_hit_skips_the_inner_layers(tmp_path) -> None:
    backend = Counted('{"importance": 8}')
    caching = Caching(Retrying(backend, max_attempts=3, seed=0), DiskCache(tmp_path), model="m", seed=0)
    first, info1 = answer(caching)
    second, info2 = answer(caching)
    assert first == second == Importance(importance=8)
    assert len(backend.requests) == 1  # the second call never reached the retries or the model
    assert (info1.cached, info2.cached, info2.ok, info2.attempts) == (False, True, True, 0)


def test_a_fallback_is_never_cached(tmp_path) -> None:
    backend = Counted("no idea")
    caching = Caching(Retrying(backend, max_attempts=2, seed=0), DiskCache(tmp_path), model="m", seed=0)
    assert answer(caching)[0] == FALLBACK and answer(caching)[0] == FALLBACK
    assert len(backend.requests) == 4 and len(caching.cache) == 0


def test_a_changed_grammar_hint_asks_again(tmp_path) -> None:
    """The embedded model's answer follows the grammar, so an answer cached under other
    grammar-only hints is not served (the same schema with its hint is served)."""
    from agents.llm.schemas import ONE_OF, json_schema_of

    class Hinted(BaseModel):
        model_config = ConfigDict(title="Importance")  # the same schema but for the hint
        importance: int = Field(ge=1, le=10, json_schema_extra={ONE_OF: [1, 5, 10]})

    assert json_schema_of(Hinted) == json_schema_of(Importance) != json_schema_of(Hinted, for_grammar=True)

    backend = Counted('{"importance": 8}', '{"importance": 5}')
    caching = Caching(Retrying(backend, max_attempts=3, seed=0), DiskCache(tmp_path), model="m", seed=0)
    assert answer(caching)[0] == Importance(importance=8)
    hinted = Call("importance", MESSAGES, Hinted, Hinted(importance=1), 0.7, 64, call().info)
    assert answer(caching, hinted)[0] == Hinted(importance=5)
    assert answer(caching, call())[1].cached and len(backend.requests) == 2


# -- retrying ---------------------------------------------------------------------------------


def test_bad_answers_are_reseeded_then_the_typed_fallback_is_returned() -> None:
    backend = Counted('{"importance": "very"}', "", "I cannot answer that")
    invalid: list[str] = []
    retrying = Retrying(backend, max_attempts=3, seed=5, on_invalid=invalid.append)
    value, info = answer(retrying)
    assert value == FALLBACK and value is not FALLBACK and isinstance(value, Importance)
    assert [r.seed for r in backend.requests] == [5, 6, 7]
    assert info.fallback and not info.ok and info.attempts == 3 and len(info.errors) == 3
    assert invalid == ["importance"] * 3


def test_a_later_good_answer_wins_and_errors_name_the_failure() -> None:
    backend = Counted(asyncio.TimeoutError(), refused(), ValueError("boom"), '{"importance": 4}')
    value, info = answer(Retrying(backend, max_attempts=4, seed=0))
    assert value == Importance(importance=4) and info.ok and not info.fallback
    assert info.errors == ["timeout", "unreachable: connection refused", "ValueError"]


def test_an_unavailable_model_is_not_a_bad_answer() -> None:
    gate_error = ModelUnavailable("m", "no key", "export KEY")
    retrying = Retrying(Counted(gate_error), max_attempts=3, seed=0)
    with pytest.raises(ModelUnavailable):
        answer(retrying)


# -- accounting -------------------------------------------------------------------------------


def test_accounting_counts_every_call_and_tells_the_listeners() -> None:
    ledger = Ledger()
    backend = Counted("nonsense", '{"importance": 6}')
    inner = Retrying(Metering(backend, ledger), max_attempts=2, seed=0,
                     on_invalid=lambda p: ledger.add(p, failures=1))
    top = Accounting(inner, ledger)
    heard: list[CallInfo] = []
    top.listeners.append(heard.append)
    c = call()
    c.info = top.new_info("importance", "h")
    asyncio.run(top.answer(c))
    top.number_from(41)
    assert top.new_info("importance", "h").call_id == "importance-41"
    stats = ledger.stats("m")
    imp = stats["by_purpose"]["importance"]
    assert (imp["calls"], imp["attempts"], imp["failures"], imp["fallbacks"]) == (1, 2, 1, 0)
    assert (imp["prompt_tokens"], imp["completion_tokens"], imp["cost"]) == (20, 6, 1.0)
    assert stats["total"]["calls"] == 1 and stats["model"] == "m"
    assert [i.call_id for i in heard] == ["importance-1"] and heard[0].latency_s > 0
    assert top.activity() == {"in_flight": 0, "done": 1}


def test_metering_counts_an_unreachable_attempt_as_a_failure() -> None:
    ledger = Ledger()
    with pytest.raises(Unreachable):
        asyncio.run(Metering(Counted(refused()), ledger).generate(Request("p", MESSAGES, Importance, 0.7, 64, 0)))
    total = ledger.stats("m")["total"]
    assert (total["attempts"], total["failures"], total["unreachable"]) == (1, 1, 1)


# -- recorded answers -------------------------------------------------------------------------


def test_a_recorded_answer_is_replayed_before_the_inner_layers() -> None:
    backend = Counted('{"importance": 9}')
    log = AnswerLog()
    recording = Recording(Retrying(backend, max_attempts=1, seed=0), log)
    first, _ = answer(recording)
    recorded = log.take()
    assert first == Importance(importance=9) and len(recorded) == 1 and len(backend.requests) == 1

    backend.answers = ['{"importance": 2}']  # the model would now answer otherwise
    log.start_replay(recorded, first_no=1, next_no=2)
    again, info = answer(recording)
    assert again == first and info.ok and log.replayed == 1
    assert len(backend.requests) == 1  # not asked
    log.end_replay()
    assert answer(recording)[0] == Importance(importance=2) and len(backend.requests) == 2


# -- availability and transport ---------------------------------------------------------------


def test_the_gate_closes_after_unreachable_attempts_in_a_row_and_an_answer_resets_it() -> None:
    request = Request("p", MESSAGES, Importance, 0.7, 64, 0)
    backend = Counted(refused(), refused(), '{"importance": 3}', refused(), refused(), refused())
    gate = AvailabilityGate(backend, "m", unavailable_after=3)
    outcomes = []
    for _ in range(6):
        try:
            asyncio.run(gate.generate(request))
            outcomes.append("answer")
        except ModelUnavailable:
            outcomes.append("unavailable")
        except Unreachable:
            outcomes.append("unreachable")
    assert outcomes == ["unreachable", "unreachable", "answer", "unreachable", "unreachable", "unavailable"]
    with pytest.raises(ModelUnavailable):  # closed for good: the backend is not asked again
        asyncio.run(gate.generate(request))
    assert len(backend.requests) == 6


def test_transport_backs_off_with_the_same_seed_and_times_out_each_try() -> None:
    retried: list[str] = []
    backend = Counted(refused(), refused(), '{"importance": 3}')
    transport = Transport(backend, 5.0, Backoff(tries=3, base_s=0.001, cap_s=0.002), on_retry=retried.append)
    done = asyncio.run(transport.generate(Request("p", MESSAGES, Importance, 0.7, 64, 7)))
    assert done.text == '{"importance": 3}' and [r.seed for r in backend.requests] == [7, 7, 7]
    assert retried == ["p", "p"]

    class Slow:
        name = "slow"

        async def generate(self, request: Request) -> Completion:
            await asyncio.sleep(5)
            return Completion(text="late")

    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(Transport(Slow(), 0.05, Backoff()).generate(Request("p", MESSAGES, Importance, 0.7, 64, 0)))


# -- the composed order (agents.llm.gateway.compose) -----------------------------------------


def test_composed_order_replay_before_cache_and_every_call_accounted(tmp_path) -> None:
    from agents.llm.gateway import Gateway

    backend = Counted('{"importance": 5}')
    llm = Gateway(backend, model="m", cache=DiskCache(tmp_path), max_attempts=2)
    log = AnswerLog()
    log.attach(llm)
    llm.complete("importance", MESSAGES, Importance, FALLBACK)  # asked, cached, recorded
    recorded = log.take()
    llm.cache.put(Caching(None, None, model="m", seed=0).key(call()), "importance", '{"importance": 7}')
    log.start_replay(recorded, first_no=1, next_no=2)
    heard: list[CallInfo] = []
    llm.add_listener(heard.append)
    assert llm.complete("importance", MESSAGES, Importance, FALLBACK).importance == 5  # the record, not the cache
    log.end_replay()
    assert llm.complete("importance", MESSAGES, Importance, FALLBACK).importance == 7  # now the cache
    imp = llm.stats()["by_purpose"]["importance"]
    assert len(backend.requests) == 1 and imp["calls"] == 3 and imp["attempts"] == 1 and imp["cache_hits"] == 1
    assert [i.call_id for i in heard] == ["importance-1", "importance-2"]  # the replayed call kept its id
