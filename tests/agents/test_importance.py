"""Importance of memories (issue 11): the keyword prior matches words, not substrings, and the
rater asks about one memory at a time, so a model that rates a numbered list by position
cannot make a chore outrank a death."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime

from agents.believability import TUNING_PAIRS
from agents.llm.gateway import Completion, Gateway
from agents.minds.cognition.calls import Caller
from agents.minds.cognition.importance import ImportanceRater
from agents.minds.state import PendingMemory
from agents.roles.importance import heuristic_importance, importance_prompt
from agents.llm.gateway import ScriptedBackend
from agents.minds.conformance import DEMO_PLACES, demo_home, demo_persona
from agents.minds.generative import make_mind
from maps.contracts import MindOptions, PerceivedEvent, Perception
from memory.embeddings import get_embedder


def test_the_prior_matches_whole_words_not_parts_of_words() -> None:
    assert heuristic_importance("I watered the plants on the windowsill") == 3  # not "plan"
    assert heuristic_importance("We plan to meet at the pub") == 6
    assert heuristic_importance("She planned a surprise") == 6
    assert heuristic_importance("The fireplace is warm") == 3  # not "fire"
    assert heuristic_importance("The kitchen caught fire") == 10
    assert heuristic_importance("A lovely morning") == 3  # not "love"
    assert heuristic_importance("Tom says he loves Lucy") == 8


def test_the_prior_still_matches_stems_it_names() -> None:
    assert heuristic_importance("Two people were injured") == 8
    assert heuristic_importance("She was diagnosed last week") == 8
    assert heuristic_importance("A long conversation with Tom") == 4
    assert heuristic_importance("Tom is idle") == 1


def test_the_prior_still_orders_its_tuning_pairs() -> None:
    for high, low in TUNING_PAIRS:
        assert heuristic_importance(high) > heuristic_importance(low), (high, low)


def _listed(prompt: str) -> int:
    """How many memories a prompt asks about (a list, or one unnumbered)."""
    return prompt.split("Memories:", 1)[1].strip().count("\n") + 1 if "Memories:" in prompt else 1


class Counting:
    """A tiny model's habit: rate a numbered list 1, 2, 3, ... by position."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, request) -> Completion:
        self.calls += 1
        count = _listed(request.messages[-1]["content"])
        return Completion(text=json.dumps({"ratings": list(range(1, count + 1))}), prompt_tokens=1,
                          completion_tokens=1, cost=0.0)


def _rate(texts: list[str]) -> dict[str, int]:
    backend = Counting()
    rater = ImportanceRater(Caller(Gateway(backend, max_attempts=1), "Alex"), "Alex (34) is kind.", "Alex")
    when = datetime(2026, 2, 13, 8)
    pending = [PendingMemory(kind="event", text=t, tick=0, time=when) for t in texts]
    asyncio.run(rater.rate(pending))
    assert backend.calls == len(set(texts))  # one call per memory, repeats asked once
    return {p.text: p.importance for p in pending}


def test_stored_importance_does_not_depend_on_the_order_memories_arrive_in() -> None:
    texts = ["I bought a latte at the cafe", "My father died this morning", "The cafe floor is being swept",
             "The cafe kitchen caught fire and two people were hurt"]
    forward, backward = _rate(texts), _rate(list(reversed(texts)) + texts[:1])
    assert forward == backward
    assert forward["My father died this morning"] > forward["I bought a latte at the cafe"]


def test_a_single_memory_prompt_asks_for_one_rating() -> None:
    content = importance_prompt("Alex (34) is kind.", "Alex", ["The kettle boiled"])[-1]["content"]
    assert "Memory:\n- The kettle boiled" in content and "1. The kettle" not in content
    assert content.endswith("Answer with 1 rating.")


class Asked(ScriptedBackend):
    """The scripted model, keeping what each importance call asked about."""

    def __init__(self) -> None:
        self.rated: list[str] = []

    async def generate(self, request) -> Completion:
        if request.purpose == "importance":
            self.rated.append(request.messages[-1]["content"].split("Memory:\n- ", 1)[1].split("\n")[0])
        return await super().generate(request)


def test_an_object_at_rest_is_rated_1_without_asking_the_model(tmp_path) -> None:
    """The original code rates an idle object 1 without a call; ours rest in their map's default
    state ('stove is off'), which the world marks. A changed object is still the model's to rate."""
    persona = demo_persona("Klaus Mueller", "Hobbs Cafe:counter", "barista")
    start = datetime(2023, 2, 13, 9, 0)
    backend = Asked()
    mind = make_mind(persona, Gateway(backend), tmp_path / "run.db",
                     MindOptions(places=DEMO_PLACES + demo_home(persona.name), start_time=start),
                     embedder=get_embedder("hashing"))
    stove = "Hobbs Cafe:counter:stove"
    sights = [PerceivedEvent(subject=stove, predicate="is", object="off", description="stove is off",
                             address=stove, resting=True),
              PerceivedEvent(subject="Hobbs Cafe:counter:sink", predicate="is", object="overflowing",
                             description="sink is overflowing", address="Hobbs Cafe:counter:sink")]
    perception = Perception(resident=persona.name, tick=0, time=start, tile=(0, 0), address="Hobbs Cafe:counter",
                            events=sights)
    asyncio.run(mind.decide(perception))
    asyncio.run(mind.flush())
    stored = {m.text: m.importance for m in mind.memory.all()}
    assert stored["stove is off"] == 1 and "stove is off" not in backend.rated
    assert "sink is overflowing" in backend.rated and "sink is overflowing" in stored
