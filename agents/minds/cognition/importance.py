"""Importance of new memories: rated when the mind next decides, one memory per call.

Memories wait in a small queue; when the mind next decides anything (or the queue is full
or old) each waiting memory is rated in its own ``importance`` call. Texts rated before
reuse their rating, and idle residents and objects at rest are 1 without asking (as in the
original code), so a resident watching a quiet room costs nothing. What is stored is the model's rating
combined with the engine's prior (prompts.importance.combined_importance): the keyword prior,
told the importance of the nearest life event when the residents' embedder reads meaning
(cognition.life_events). A tiny model cannot rank.
"""

from __future__ import annotations



from agents.minds.cognition.calls import Caller
from agents.minds.cognition.life_events import LifeEventPrior
from agents.roles.importance import combined_importance, importance_prompt, ratings_fallback, ratings_schema_for
from agents.minds.state import PendingMemory




# The original code rates an 'is idle' event 1 without asking the model. Its objects rest as
# 'idle'; ours rest in their map's default state ('stove is off', 'sink is clean'), which the
# world marks (PerceivedEvent.resting), so those are 1 too: a quickstart morning asked the model
# about 30 such sights of its 65 ratings.
RESTING_IMPORTANCE = 1


def obvious_importance(text: str) -> int | None:
    lower = text.lower()
    if lower.endswith(" is idle") or " is idle " in lower:
        return RESTING_IMPORTANCE
    return None


class ImportanceRater:
    """Rates pending memories in batches; remembers what it has rated."""

    def __init__(self, caller: Caller, summary: str, name: str, batch_max: int = 12,
                 events: LifeEventPrior | None = None):
        self.caller = caller
        self.events = events
        self.summary = summary
        self.name = name
        self.batch_max = batch_max
        self.known: dict[str, int] = {}

    def settle(self, pending: list[PendingMemory]) -> list[PendingMemory]:
        """Fill importances that need no model; return those that still do."""
        unrated = []
        for item in pending:
            if item.importance is None:
                item.importance = self.known.get(item.text) or obvious_importance(item.text)
            if item.importance is None:
                unrated.append(item)
        return unrated

    async def rate(self, pending: list[PendingMemory]) -> None:
        """Give every pending memory an importance: cache, rules, then one call per new text.

        One memory per call, not a numbered batch: SmolLM2 rates a numbered list 1, 2, 3, ... by
        position (issue 11), so a batch stored importances that depended on the order."""
        unrated = self.settle(pending)
        texts = list(dict.fromkeys(item.text for item in unrated))
        # embedded ahead by the memory store's prefetch, and awaited with the tick's other texts
        events = await self.events.aof_texts(texts) if self.events is not None else [None] * len(texts)
        for text, event in zip(texts, events):
            answer = await self.caller.ask(
                "importance",
                importance_prompt(self.summary, self.name, [text]),
                ratings_schema_for([text]),
                ratings_fallback([text]),
                temperature=0.0,
                max_tokens=20,
            )
            self.known[text] = combined_importance(answer.ratings[0], text, event)  # the model's rating and the prior
        for item in unrated:
            item.importance = self.known[item.text]
