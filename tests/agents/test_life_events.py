"""The life-event prior (issue 11): a memory worded without any keyword still reads as the event it
is, with MiniLM; the hashing stand-in gives no prior; the prior raises, never lowers, a keyword's
rating; and a rater with it stores a death above a chore whatever a tiny model says."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime

import numpy as np
import pytest

from agents.believability import TUNING_PAIRS
from agents.llm.gateway import Completion, Gateway
from agents.minds.cognition.calls import Caller
from agents.minds.cognition.importance import ImportanceRater
from agents.minds.state import PendingMemory
from agents.minds.cognition.life_events import ANCHORS, TRAUMA_EVENTS, LifeEventPrior, prior_for
from agents.roles.importance import engine_prior, heuristic_importance
from memory.embeddings import CachedEmbedder, HashingEmbedder, get_embedder


@pytest.fixture(scope="module")
def minilm_prior() -> LifeEventPrior:
    prior = prior_for(get_embedder("minilm"))
    assert prior is not None
    return prior


def test_only_an_embedder_that_reads_meaning_gives_a_prior() -> None:
    assert prior_for(CachedEmbedder(HashingEmbedder())) is None
    minilm = get_embedder("minilm")
    assert prior_for(minilm) is prior_for(minilm)  # the anchors are embedded once per embedder


def test_a_memory_near_no_anchor_has_no_prior() -> None:
    # two orthogonal directions: anchors all on one, the memory on the other
    def embed(texts: list[str]) -> np.ndarray:
        rows = np.zeros((len(texts), 2), dtype=np.float32)
        rows[:, 0] = [0.0 if t == "unrelated" else 1.0 for t in texts]
        rows[:, 1] = [1.0 if t == "unrelated" else 0.0 for t in texts]
        return rows

    prior = LifeEventPrior(embed)
    assert prior.of_texts(["unrelated"]) == [None]
    assert prior.of_texts([ANCHORS[0][1]]) == [ANCHORS[0][0]]
    assert prior.of_texts([]) == []


def test_events_worded_without_any_keyword_read_as_what_they_are(minilm_prior: LifeEventPrior) -> None:
    # none of these has a word of the keyword prior, which rates each of them 3
    salient = ["My husband passed away on Sunday", "We are splitting up after ten years", "They let me go at the office"]
    for text in salient:
        assert heuristic_importance(text) == 3, text
        event = minilm_prior.of_texts([text])[0]
        assert event is not None and event >= 7, (text, minilm_prior.nearest(text))


def test_chores_stay_low(minilm_prior: LifeEventPrior) -> None:
    for text in ["I brushed my teeth before bed", "I made a cup of coffee"]:
        event = minilm_prior.of_texts([text])[0]
        assert event is None or event <= 3, (text, minilm_prior.nearest(text))


# Everyday memories of the town, written as tuning texts (MIN_COSINE was chosen on them): at 0.45
# 'The rain stopped' read as 'There was an accident' and 'I took my medicine' as 'I fell ill'.
# 'I filed the bank's paperwork' still reads as the bank taking a home (0.54): a known miss.
EVERYDAY = ["I cut the vegetables with a sharp knife", "Tom Alvarez is lighting the fireplace",
            "I drove to the market on the main road", "The stove is on", "I watched a crime drama on tv",
            "Lucy Alvarez is reading a book about storms", "I took my medicine", "The rain stopped",
            "Someone knocked on the door", "I cleaned the chemicals off the bench",
            "A patient came in with a sprained ankle", "The bus was late this morning", "walking to Willow Cafe",
            "Lucy Alvarez is having breakfast at Oak House kitchen", "It is cold outside today"]


def test_everyday_memories_are_not_read_as_life_events(minilm_prior: LifeEventPrior) -> None:
    for text, event in zip(EVERYDAY, minilm_prior.of_texts(EVERYDAY)):
        assert event is None or event < 6, (text, event, minilm_prior.nearest(text))


def test_events_the_scale_leaves_out_are_read_from_the_trauma_checklist(minilm_prior: LifeEventPrior) -> None:
    # crime, disaster and sudden death are not in Holmes and Rahe's scale; the LEC-5's events are
    for text in ("Someone threatened me with a knife or a gun", "A flood, storm or earthquake hit us"):
        assert minilm_prior.of_texts([text]) == [9]
    assert minilm_prior.nearest("A man held a gun to the cashier's head")[0] in {t for _, t in TRAUMA_EVENTS}


def test_an_event_raises_a_keyword_rating_but_never_lowers_one() -> None:
    assert engine_prior("Grandpa is gone", 9) == 9  # keywords: 3
    assert engine_prior("My father died this morning", 7) == 10  # keywords: 10, kept
    assert engine_prior("The bed is made", 3) == 1  # a listed chore word stays low
    assert engine_prior("I had tea", 1) == 1  # no keyword: the event places it
    assert engine_prior("I had tea", None) == 3


def test_the_tuning_pairs_keep_their_order_with_the_prior(minilm_prior: LifeEventPrior) -> None:
    for high, low in TUNING_PAIRS:
        hi, lo = minilm_prior.of_texts([high, low])
        assert engine_prior(high, hi) > engine_prior(low, lo), (high, hi, low, lo)


class Ones:
    """SmolLM2 at temperature 0: every memory is a 1."""

    name = "ones"

    async def generate(self, request) -> Completion:
        return Completion(text=json.dumps({"ratings": [1]}), prompt_tokens=1, completion_tokens=1, cost=0.0)


def test_a_rater_with_the_prior_stores_an_unlisted_death_above_a_chore(minilm_prior: LifeEventPrior) -> None:
    when = datetime(2026, 2, 13, 8)
    texts = ["My husband passed away on Sunday", "I brushed my teeth before bed"]

    def rate(events: LifeEventPrior | None) -> dict[str, int | None]:
        rater = ImportanceRater(Caller(Gateway(Ones(), max_attempts=1), "Alex"), "Alex (34) is kind.", "Alex",
                                events=events)
        pending = [PendingMemory(kind="event", text=t, tick=0, time=when) for t in texts]
        asyncio.run(rater.rate(pending))
        return {p.text: p.importance for p in pending}

    keywords_only, with_events = rate(None), rate(minilm_prior)
    assert keywords_only[texts[0]] <= keywords_only[texts[1]] + 1  # the keywords see nothing in either
    assert with_events[texts[0]] >= 6 > with_events[texts[1]]
