"""Importance (poignancy) of new memories, rated 1..10, one memory per call.

Purpose: ``importance``. The scale is the paper's: 1 is purely mundane (brushing teeth,
making the bed), 10 is extremely poignant (a break up, a college acceptance), given to the model
as an enumeration with anchors (a local model's grammar allows only the ten values). A tiny model
cannot rank (SmolLM2 rated a father's death 1 and a latte 2), so the engine stores
:func:`combined_importance`: the model's rating pulled towards a keyword prior
(:func:`heuristic_importance`), which keeps a death above a latte whatever the model says,
while the model still moves a memory within the prior's neighbourhood. The prompt and schema take
a list (one schema for every backend, and the model-quality check's two-memory probe), but the
rater and the bench send one memory per call: given a numbered list SmolLM2 answers 1, 2, 3, ...
by position (issue 11), and given one memory numbered "1." it answers 1 (so does Qwen); one memory is shown unnumbered.
The keywords match on word boundaries ("plan" is not in "plants").
"""

from __future__ import annotations

import re
from functools import lru_cache
from collections.abc import Mapping
from typing import Annotated, Any, Literal
import random

from pydantic import AfterValidator, BaseModel, Field, create_model

from agents.llm.task import Prompt, Task
from agents.roles.checks import flat_ratings
from agents.roles.common import messages


Rating = Literal[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]  # an enum: the grammar allows exactly these

ANCHORS = (
    (1, "routine, nothing happens (idle, brushing teeth, making the bed, a coffee)"),
    (3, "an ordinary part of the day (work, a meal, a walk, reading)"),
    (5, "notable (news, an invitation, meeting someone, a small problem)"),
    (7, "important (an argument, an illness, losing a job, a party to plan)"),
    (9, "life-changing (a death, an accident, a fire, a proposal)"),
    (10, "extremely poignant (a break up, a college acceptance)"),
)
PRIOR_WEIGHT = 2  # the engine's prior counts twice the model's rating
DEFAULT_IMPORTANCE = 3  # what the keyword prior says of a memory with none of its words


def engine_prior(text: str, event: int | None = None) -> int:
    """The engine's reading of a memory: the keyword prior, told what the nearest life event says
    (``event``, cognition.life_events; None when near none or with no semantic embedder). An event
    can raise a memory (a death worded without any listed word) and can place one the keywords
    know nothing of, but it never lowers a listed word's rating."""
    keyword = heuristic_importance(text)
    if event is None:
        return keyword
    if event >= 6:
        return max(keyword, event)
    return event if keyword == DEFAULT_IMPORTANCE else keyword


def combined_importance(model_rating: int, text: str, event: int | None = None) -> int:
    """The importance a memory is stored with: the model's rating and the engine's prior
    (:func:`engine_prior`), weighted PRIOR_WEIGHT:1. A model that agrees with the prior changes
    nothing (the scripted backend); one that rates at random moves a memory by at most a third of
    the distance."""
    prior = engine_prior(text, event)
    value = (PRIOR_WEIGHT * prior + int(model_rating)) / (PRIOR_WEIGHT + 1)
    return min(10, max(1, int(value + 0.5)))


@lru_cache(maxsize=128)
def ratings_schema(count: int, spread: int = 0) -> type[BaseModel]:
    """Exactly one rating 1..10 per memory, in order: a local model's grammar then enforces
    both the count and the range. One class per (count, spread), cached, so its JSON schema is
    too. ``spread`` is how far apart the memories' plain-reading importances are; when they
    differ a lot, one rating repeated for all of them is refused (see checks.flat_ratings)."""

    def not_flat(value: list[int]) -> list[int]:
        problem = flat_ratings(list(value), spread)
        if problem:
            raise ValueError(problem)
        return value

    return create_model(
        "Ratings",
        ratings=(Annotated[list[Rating], AfterValidator(not_flat)],
                 Field(min_length=count, max_length=count, description="one per memory")),
    )


def ratings_schema_for(texts: list[str]) -> type[BaseModel]:
    """The ratings schema for these memories (their count, and how different they are)."""
    plain = [heuristic_importance(t) for t in texts]
    return ratings_schema(len(texts), max(plain) - min(plain) if plain else 0)


def ratings_fallback(texts: list[str]) -> BaseModel:
    """The typed fallback of ``importance``: each memory's plain-reading importance."""
    return ratings_schema_for(texts)(ratings=[heuristic_importance(t) for t in texts])


def importance_prompt(summary: str, name: str, texts: list[str]) -> Prompt:
    # one memory is not numbered: "1. ..." read as the first rating (SmolLM2 and Qwen answered 1)
    numbered = "\n".join(f"{i}. {t}" for i, t in enumerate(texts, 1)) if len(texts) > 1 else f"- {texts[0]}"
    scale = "\n".join(f"{value} = {meaning}" for value, meaning in ANCHORS)
    user = (
        f"{summary}\n"
        f"On a scale of 1 to 10, where 1 is purely mundane (brushing teeth, making bed) and 10 is "
        f"extremely poignant (a break up, college acceptance), rate how poignant each memory is "
        f"for {name}.\nScale:\n{scale}\n{'Memories' if len(texts) > 1 else 'Memory'}:\n{numbered}\n\n"
        + (f"Answer with {len(texts)} ratings in order." if len(texts) > 1 else "Answer with 1 rating.")
    )
    return Prompt(messages(user), Task({"texts": tuple(texts)}, scripted_importance))


# Words and phrases, matched on word boundaries ("plan" is not in "plants"); a trailing "*" is a
# stem that may go on ("injur*" matches injured, injury).
_HIGH = {
    10: ("died", "death", "funeral", "break up", "broke up", "accepted", "fire", "burning", "proposal",
         "married", "marry", "accident*"),
    8: ("party", "election", "candidate", "love", "loves", "loved", "secret*", "fight*", "argument*", "injur*",
        "hurt", "stolen", "emergency", "whisper*", "fired", "lost my job", "laid off", "arrested", "pregnan*",
        "valentine*", "leak*", "fraud", "diagnos*", "cancer", "surgery", "disease*", "diabetes", "hospitali*"),
    6: ("told me", "news", "invit*", "plan", "plans", "planned", "planning", "worried", "excited", "promot*",
        "debt*", "sick", "treated for", "illness", "medication*"),
    4: ("talk*", "convers*", "meet", "meets", "meeting", "said", "working on", "customer*", "patient*", "class",
        "classes"),
}
_LOW = ("idle", "sleeping", "is asleep", "walking", "brushing", "getting ready", "making bed",
        "bed is made", "swept", "sweeping", "latte*", "newspaper*")


def _keywords(words: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for a keyword list: whole words, or stems where the word ends in ``*``."""
    parts = [re.escape(w[:-1]) + r"\w*" if w.endswith("*") else re.escape(w) + r"\b" for w in words]
    return re.compile(r"\b(?:" + "|".join(parts) + ")", re.I)


_HIGH_RE = tuple((score, _keywords(words)) for score, words in _HIGH.items())
_LOW_RE = _keywords(_LOW)


def heuristic_importance(text: str) -> int:
    """Keyword rating: the scripted backend's answer, and the fallback when a model's fails."""
    if _LOW_RE.search(text):
        return 1
    for score, pattern in _HIGH_RE:
        if pattern.search(text):
            return score
    return DEFAULT_IMPORTANCE


def scripted_importance(fields: Mapping[str, Any], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    """The scripted backend's ratings: the keyword prior of each memory."""
    return {"ratings": [heuristic_importance(t) for t in fields["texts"]]}
