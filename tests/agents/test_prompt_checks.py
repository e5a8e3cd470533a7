"""Answers that parse but mean nothing are refused, retried, then replaced by the fallback.

Issue 11: a small model copies the instruction, says a name as its chat line, repeats the
partner's line, puts an action where it cannot happen, or rates every memory the same.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from agents.llm.gateway import Completion, Gateway, Request
from agents.prompts.checks import copied_from, fits_place, flat_ratings, just_a_name, repeats
from agents.prompts.conversation import CONVERSE_INSTRUCTION, line_fallback, line_schema
from agents.prompts.importance import ratings_fallback, ratings_schema_for
from agents.prompts.planning import DECOMPOSE_INSTRUCTION, decomposition_fallback, decomposition_schema

PLACES = ("Oak House:bedroom", "Willow Cafe:kitchen", "Town Bank:counter")


def test_pure_checks() -> None:
    assert copied_from("Keep it short and in character; share what Ada would share.",
                       CONVERSE_INSTRUCTION.format(name="Ada", other="Bo"))
    assert copied_from("Nice weather for the market today, is it not?", CONVERSE_INSTRUCTION) is None
    assert just_a_name("Bo Smith:", ("Ada Jones", "Bo Smith")) and just_a_name("bo", ("Bo Smith",))
    assert just_a_name("Bo, did you hear about the party?", ("Bo Smith",)) is None
    assert repeats("Good to know!", "good to know") and repeats("Good to know, Bo.", "Good to know") is None
    assert fits_place("sleeping", "Town Bank:counter") and fits_place("sleeping", "Oak House:bedroom") is None
    assert fits_place("serving coffee", "Willow Cafe:kitchen") is None
    assert flat_ratings([5, 5, 5], spread=7) and flat_ratings([5, 5, 5], spread=2) is None
    assert flat_ratings([5, 5], spread=9) is None  # two memories may well rate the same


def test_schemas_refuse_the_useless_answers() -> None:
    line = line_schema("Ada Jones", "Bo Smith", "Lovely day, Ada!")
    with pytest.raises(ValidationError, match="name"):
        line(utterance="Bo Smith")
    with pytest.raises(ValidationError, match="repeats"):
        line(utterance="Lovely day, Ada!")
    line(utterance="Lovely day indeed, Bo. Coming to the party?")
    steps = decomposition_schema(PLACES)
    with pytest.raises(ValidationError, match="does not fit"):
        steps.model_validate({"steps": [{"action": "sleeping", "minutes": 10, "place": "Town Bank:counter",
                                         "emoji": "😴", "object_state": "used"}]})
    with pytest.raises(ValidationError, match="copies the instruction"):
        steps.model_validate({"steps": [{"action": DECOMPOSE_INSTRUCTION[:80], "minutes": 10,
                                         "place": "Willow Cafe:kitchen", "emoji": "☕", "object_state": "used"}]})
    texts = ["the chair is idle", "Bo told me about the fire at the bakery", "brushing teeth"]
    with pytest.raises(ValidationError, match="same rating"):
        ratings_schema_for(texts)(ratings=[5, 5, 5])
    ratings_schema_for(texts)(ratings=[1, 9, 1])


def test_fallbacks_pass_their_own_checks() -> None:
    fb = decomposition_fallback(PLACES, "sleep in", "Town Bank:counter", 30)
    assert all(s.place == "Oak House:bedroom" for s in fb.steps)  # moved where it fits
    assert line_fallback("Bo Smith", 3, "Ada Jones", "Nice to see you, Bo.").utterance != "Nice to see you, Bo."
    texts = ["the chair is idle", "Bo died in a fire", "walking"]
    assert ratings_fallback(texts).ratings == [1, 10, 1]


class Canned:
    """A backend that always gives the same (useless) answer."""

    name = "canned"

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls = 0

    async def generate(self, request: Request) -> Completion:
        self.calls += 1
        return Completion(text=self.text, prompt_tokens=1, completion_tokens=1, cost=0.0)


def test_a_name_as_chat_line_is_retried_then_falls_back() -> None:
    backend = Canned(json.dumps({"utterance": "Bo Smith", "end": False}))
    llm = Gateway(backend, max_attempts=3)
    schema = line_schema("Ada Jones", "Bo Smith", "")
    fallback = line_fallback("Bo Smith", 0, "Ada Jones", "")
    answer = llm.complete("converse", [{"role": "user", "content": "say"}], schema, fallback)
    assert backend.calls == 3 and answer == fallback
    assert llm.stats()["total"]["fallbacks"] == 1
