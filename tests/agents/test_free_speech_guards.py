"""What a tiny model writes as free speech is checked before it is remembered or retold.

Every string here is SmolLM2's own, from the town of bench seed 2 (2026-11-26): its chat
summaries ('Maria Alvarez'; 'I am curious about the life of my family.' five times), a
thought ('worthless,'), a line said twice by the same speaker, and plan parts that were a
memory or the prompt's words. The interview prompt then showed those memories, and the model
copied them into its answers.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from agents.llm.gateway import Completion, Gateway, Request
from agents.roles.conversation import chat_summary_fallback, line_fallback, line_schema, summary_schema
from agents.roles.interview import worth_telling
from agents.roles.planning import day_plan_schema

LUCY, MARIA, TOM = "Lucy Alvarez", "Maria Alvarez", "Tom Alvarez"
LOOP = "I am curious about the life of my family. " * 5 + "I am curious. I."
# Tom's line (said twice) without its third person, which another check refuses on its own
PLEASED = "I am pleased to share that I will be visiting the clinic at Willow Park, in Oak House, on the 13th of February."


class Canned:
    """A backend that always gives the same answer, counting the calls."""

    name = "canned"

    def __init__(self, answer: dict) -> None:
        self.text = json.dumps(answer)
        self.calls = 0

    async def generate(self, request: Request) -> Completion:
        self.calls += 1
        return Completion(text=self.text, prompt_tokens=1, completion_tokens=1, cost=0.0)


@pytest.mark.parametrize("summary", [MARIA, f"{LUCY}: {LOOP}", "We talked.",
                                     "I'm here to support you in any way I can, Maria."])
def test_a_summary_that_sums_up_nothing_is_refused(summary: str) -> None:
    with pytest.raises(ValidationError):
        summary_schema(LUCY, MARIA)(summary=summary, importance=3)


def test_a_thought_of_a_word_or_two_is_dropped_and_counted_but_the_summary_kept() -> None:
    schema = summary_schema(LUCY, MARIA)
    said = "Maria told me the cafe has been slow since the grocer started selling coffee."
    kept = schema(summary=said, importance=5, thought="worthless,")
    assert kept.summary == said and kept.thought == "" and kept.patches() == ["thought: is a word or two, not a thought"]
    meant = schema(summary=said, importance=6, thought="I should buy my coffee at the cafe.")
    assert meant.thought == "I should buy my coffee at the cafe." and meant.patches() == []


def test_a_looping_summary_is_retried_then_replaced_by_the_transcript() -> None:
    lines = [f"{LUCY}: I am curious about the life of my family.", f"{MARIA}: No, I don't."]
    backend = Canned({"summary": f"{LUCY}: {LOOP}", "importance": 2, "thought": "worthless,"})
    schema, fallback = summary_schema(LUCY, MARIA), chat_summary_fallback(MARIA, lines, LUCY)
    answer = Gateway(backend, max_attempts=3).complete("chat_summary", [{"role": "user", "content": "sum up"}],
                                                        schema, fallback)
    assert backend.calls == 3 and answer == fallback
    assert answer.summary.startswith(f"I talked with {MARIA}: ") and answer.summary.count("curious") == 1
    # a transcript that itself loops is kept as the bare fact of the talk
    looping = chat_summary_fallback(MARIA, [f"{LUCY}: {LOOP}"], LUCY)
    assert looping.summary == f"I talked with {MARIA}." and isinstance(looping, schema)


def test_a_speaker_does_not_say_the_same_line_twice_in_one_talk() -> None:
    said = (PLEASED,)
    schema = line_schema(TOM, MARIA, "I would love to have a cake made, and I'm very happy to meet you.", said)
    with pytest.raises(ValidationError):
        schema(utterance=PLEASED)
    with pytest.raises(ValidationError):  # nearly word for word is the same line
        schema(utterance=PLEASED.replace("the 13th of February", "Friday"))
    assert schema(utterance="I'd love some cake too, Maria.").utterance == "I'd love some cake too, Maria."
    assert line_schema(TOM, MARIA, "", ()) is line_schema(TOM, MARIA, "")  # one class however it is asked for
    fallback = line_fallback(MARIA, 3, TOM, "What are you up to?", "the clinic's computer wants a new password",
                             ("By the way, the clinic's computer wants a new password.",), "working at the clinic")
    assert isinstance(fallback, line_schema(TOM, MARIA, "What are you up to?",
                                            ("By the way, the clinic's computer wants a new password.",)))
    assert "password" not in fallback.utterance  # the news was told already: the question is answered


def test_a_line_may_not_say_the_partners_earlier_line_back() -> None:
    """SmolLM2's Tom answered Lucy's 'Nice to see you, Tom.' with Lucy's own opening line, word for
    word (quickstart, 2026-11-26): every earlier line of the talk is checked, not only the last."""
    opener = ("I am excited to talk about my future, and I believe that with the support of Tom Alvarez, "
              "I can make a positive impact on the world.")
    talk = (opener, "By the way, the clinic's records computer keeps asking for a new password.")
    schema = line_schema(TOM, LUCY, "Nice to see you, Tom.", talk)
    with pytest.raises(ValidationError, match="said earlier in this talk"):
        schema(utterance=opener)
    assert schema(utterance="Good to see you too, Lucy. Off to the clinic now.").utterance


def test_an_interview_is_shown_what_is_worth_telling_only() -> None:
    retrieved = [
        "Currently: Classes all day, studies in the library, late to bed.",
        f"{MARIA} is talking with {TOM}",
        f"{LUCY}: {LOOP}",  # her own chat summary, a loop
        "worthless,",  # her thought
        "tv is off",
        f"{TOM} is idle",
        "Mr. Bell tutored me in chemistry last year.",
        "I'm really sorry for the inconvenience you've experienced.",
        "I want to apply to medical school.",
    ]
    assert worth_telling(retrieved, LUCY) == [
        "Currently: Classes all day, studies in the library, late to bed.",
        f"{MARIA} is talking with {TOM}",
        "Mr. Bell tutored me in chemistry last year.",
        "I want to apply to medical school.",
    ]
    assert worth_telling([f"{LUCY}: I told Maria about the chemistry test."], LUCY) == [
        f"{LUCY}: I told Maria about the chemistry test."]


def test_a_plan_part_that_is_a_memory_or_the_prompts_words_is_patched() -> None:
    memories = ("The clinic's records computer keeps asking for a new password.",
                f"{MARIA} is having breakfast at Oak House kitchen",  # seen: another's day may be mine
                "My plan for Thursday 12 February: 19:00 relax and read at Oak House")
    schema = day_plan_schema(4, ("breakfast", "lunch", "dinner", "evening"), memories)
    plan = schema(currently="Busy at the clinic this week.",
                  parts=["having breakfast at Oak House kitchen",
                         "The clinic's records computer keeps asking for a new password",
                         "have dinner at Oak House kitchen", "relax and read at Oak House"])
    assert plan.parts == ["having breakfast at Oak House kitchen", "", "have dinner at Oak House kitchen",
                          "relax and read at Oak House"]
    assert plan.patches() == ["parts.1: copies a memory, not an activity"]
    for words in ("Futures of today", "Current status of today"):
        patched = schema(currently="Busy at the clinic this week.",
                         parts=["having breakfast", "have lunch", "have dinner", words])
        assert patched.parts[3] == "" and "words of the prompt" in patched.patches()[0]
    with pytest.raises(ValidationError):  # most parts no activity: refused whole (retry, then the skeleton)
        schema(currently="Busy.", parts=["Futures of today", "Current status of today",
                                         "The clinic's records computer keeps asking for a new password", "have dinner"])
