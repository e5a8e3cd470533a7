"""Importance (poignancy) of new memories, rated 1..10 in one batched call.

Purpose: ``importance``. The scale is the paper's: 1 is purely mundane (brushing teeth,
making the bed), 10 is extremely poignant (a break up, a college acceptance).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field, create_model

from agents.prompts.checks import flat_ratings
from agents.prompts.common import messages


Rating = Annotated[int, Field(ge=1, le=10)]


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


def importance_prompt(summary: str, name: str, texts: list[str]) -> list[dict[str, str]]:
    numbered = "\n".join(f"{i}. {t}" for i, t in enumerate(texts, 1))
    user = (
        f"{summary}\n"
        f"On a scale of 1 to 10, where 1 is purely mundane (brushing teeth, making bed) and 10 is "
        f"extremely poignant (a break up, college acceptance), rate how poignant each memory is "
        f"for {name}.\nMemories:\n{numbered}\n\n"
        f"Answer with {len(texts)} ratings in order."
    )
    return messages(user)


_HIGH = {
    10: ("died", "death", "break up", "broke up", "accepted", "fire", "burning", "proposal", "married"),
    8: ("party", "election", "candidate", "love", "secret", "fight", "argument", "injur", "stolen",
        "emergency", "whisper", "fired", "pregnan", "valentine", "leak", "fraud", "diagnos"),
    6: ("told me", "news", "invite", "plan", "worried", "excited", "promot", "debt", "sick"),
    4: ("talk", "convers", "meet", "said", "working on", "customer", "patient", "class"),
}
_LOW = ("idle", "sleeping", "is asleep", "walking", "brushing", "getting ready", "making bed")


def heuristic_importance(text: str) -> int:
    """Keyword rating: the scripted backend's answer, and the fallback when a model's fails."""
    lower = text.lower()
    if any(w in lower for w in _LOW):
        return 1
    for score, words in _HIGH.items():
        if any(w in lower for w in words):
            return score
    return 3
