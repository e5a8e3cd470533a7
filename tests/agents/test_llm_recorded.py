"""A run's recorded answers: re-run calls get them back exactly, the model is not asked."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field

from agents.llm.gateway import Completion, Gateway, Request
from agents.llm.recorded import AnswerLog


class Mood(BaseModel):
    mood: str = Field(max_length=20)
    level: int = Field(ge=1, le=10)


class Fickle:
    """A model that never answers the same way twice (and sometimes not at all)."""

    name = "fickle"

    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, request: Request) -> Completion:
        self.calls += 1
        if self.calls % 4 == 0:
            return Completion(text="no idea")  # unusable: retried, may end on the fallback
        return Completion(text=f'{{"mood": "mood {self.calls}", "level": {self.calls % 10 + 1}}}')


FALLBACK = Mood(mood="calm", level=5)


def ask(llm: Gateway, n: int) -> list[tuple[Mood, str, bool]]:
    infos: list = []
    llm.add_listener(infos.append)

    async def go() -> list[Mood]:
        return [await llm.acomplete("mood", [{"role": "user", "content": f"how are you, {i % 3}?"}], Mood, FALLBACK)
                for i in range(n)]

    values = asyncio.run(go())
    llm._listeners.remove(infos.append)
    return [(v, i.call_id, i.fallback) for v, i in zip(values, infos)]


def test_a_rerun_gets_the_recorded_answers_and_call_ids() -> None:
    backend = Fickle()
    llm = Gateway(backend, max_attempts=1)
    log = AnswerLog()
    log.attach(llm)
    first = ask(llm, 9)
    recorded = log.take()
    assert [a.call_no for a in recorded] == list(range(1, 10))
    assert any(fb for _, _, fb in first)  # a fallback is an answer too

    # a new process: same gateway kind, fresh counter, a model that would answer otherwise
    backend2 = Fickle()
    backend2.calls = 100
    llm2 = Gateway(backend2, max_attempts=1)
    log2 = AnswerLog()
    log2.attach(llm2)
    log2.start_replay(recorded[3:], first_no=4, next_no=10)  # ticks after a snapshot taken after call 3
    again = ask(llm2, 6)  # the six calls of the re-run ticks
    # the same questions asked in order get the same answers, outcomes and call ids
    pairs = [(q, v) for q, v in zip(first[3:], again)]
    assert all(a == b for a, b in pairs)
    assert backend2.calls == 100 and log2.replayed == 6 and log2.unrecorded == 0
    assert log2.take() == []  # replayed answers are already in the store

    log2.end_replay()
    after = ask(llm2, 1)
    assert after[0][1] == "mood-10"  # numbering goes on after the record
    assert backend2.calls == 101 and log2.take()[0].call_no == 10


def test_a_question_the_record_does_not_hold_is_asked_and_counted() -> None:
    llm = Gateway(Fickle(), max_attempts=1)
    log = AnswerLog()
    log.attach(llm)
    log.start_replay([], first_no=1, next_no=1)
    got = ask(llm, 1)
    assert got[0][0].mood == "mood 1" and log.unrecorded == 1
    log.discard()  # a re-run tick's live answers are not the record's
    assert log.take() == []
    log.end_replay()
    assert log.unused == 0


def test_a_replayed_answer_says_what_the_engine_replaced_in_it_as_the_first_answer_did() -> None:
    """The record keeps an answer as kept (its bad items already replaced), so a re-run's
    validation finds nothing to replace: the reasons must come back from the record, or the
    re-run tick's llm record ('patched') differs and the resume is reported as not exact (the
    SmolLM2 society bench, 2026-11-28: 1 of 16 re-run ticks, a reaction's 'one word' action)."""
    from agents.minds.cognition.calls import patches_of
    from agents.roles.reacting import reaction_schema

    schema = reaction_schema(("Bo Smith",), ("Oak House:bedroom",))

    class OneWord:
        name = "one-word"

        async def generate(self, request: Request) -> Completion:
            return Completion(text='{"decision": "react", "talk_to": "nobody", "action": "nope", '
                                   '"place": "Oak House:bedroom", "minutes": 15, "emoji": "🙂"}')

    def react(llm: Gateway):
        fallback = schema.model_validate({"decision": "continue", "talk_to": "nobody", "action": "",
                                          "place": "Oak House:bedroom", "minutes": 15, "emoji": "🙂"})
        return asyncio.run(llm.acomplete("react", [{"role": "user", "content": "now?"}], schema, fallback))

    llm = Gateway(OneWord(), max_attempts=1)
    log = AnswerLog()
    log.attach(llm)
    first = react(llm)
    assert first.decision == "continue" and patches_of(first)[0] == 1
    recorded = log.take()

    llm2 = Gateway(Fickle(), max_attempts=1)
    log2 = AnswerLog()
    log2.attach(llm2)
    log2.start_replay(recorded, first_no=1, next_no=2)
    again = react(llm2)
    assert log2.replayed == 1 and again == first and patches_of(again) == patches_of(first)
