"""A memory's importance read from the life event it is nearest to: the engine's prior for the
``importance`` rating, because a tiny model cannot rank (SmolLM2 rated a father's death 1 and a
latte 2; at temperature 0 it rates every memory 1).

The keyword prior (prompts.importance.heuristic_importance) only knows the words on its list. A
sentence embedding knows that "Grandma passed away" is a death and "we had to leave in the night"
is a disaster without either word being listed. The anchors are not written for any test or
bench text:

- 27 of the 43 life events of Holmes and Rahe's Social Readjustment Rating Scale (1967), in our
  own words: those of 25 life change units or more (below that they are changes of habit rather
  than events: vacations, sleeping or eating habits), less sexual difficulties; in three bands by
  the scale's units;
- the examples the importance prompt itself gives for each step of the paper's 1-10 scale
  (prompts.importance.ANCHORS), so everyday memories have something near them too.

A memory takes the importance of its nearest anchor when the cosine is at least
:data:`MIN_COSINE`, and nothing otherwise (the keyword prior then stands alone). Only a semantic
embedder can do this: the hashing stand-in compares shared words, so it gives no prior at all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from threading import Lock
from weakref import WeakKeyDictionary

import numpy as np

# (importance, event): the scale's life change units >= 60 -> 9, 40-59 -> 8, 25-39 -> 7
SCALE_EVENTS: tuple[tuple[int, str], ...] = (
    (9, "My husband or wife died"),
    (9, "We are getting divorced"),
    (9, "My partner and I have separated"),
    (9, "I was sent to prison"),
    (9, "A close member of my family died"),
    (8, "I was badly injured or fell seriously ill"),
    (8, "I got married"),
    (8, "I was fired from my job"),
    (8, "My partner and I got back together"),
    (8, "I retired from work"),
    (8, "Someone in my family became seriously ill"),
    (8, "We are expecting a baby"),
    (7, "A new baby joined the family"),
    (7, "My business is in serious trouble"),
    (7, "Our money situation changed a lot"),
    (7, "A close friend of mine died"),
    (7, "I changed to a completely different line of work"),
    (7, "We argue far more than we used to"),
    (7, "I took out a big loan to buy a home"),
    (7, "The bank took our home because we could not pay"),
    (7, "My responsibilities at work changed"),
    (7, "My child moved out of home"),
    (7, "I am having trouble with my in-laws"),
    (7, "I achieved something outstanding"),
    (7, "My partner started or stopped working"),
    (7, "I started or finished school"),
    (7, "Our living conditions changed"),
)

# The potentially traumatic events of the Life Events Checklist for DSM-5 (LEC-5; Weathers et al.,
# 2013), in our own words: what happens *to* a town rather than in one person's life course, which
# the scale above leaves out (it has no crime, disaster or sudden death). Each at 9. Left out: combat
# and captivity in a war zone, and the checklist's catch-all 'any other very stressful event'.
TRAUMA_EVENTS: tuple[tuple[int, str], ...] = (
    (9, "A flood, storm or earthquake hit us"),
    (9, "There was a fire or an explosion"),
    (9, "I was in a crash on the road"),
    (9, "Someone was badly hurt in an accident at work or at home"),
    (9, "We were exposed to poisonous chemicals"),
    (9, "I was attacked and beaten up"),
    (9, "Someone threatened me with a knife or a gun"),
    (9, "I was sexually assaulted"),
    (9, "Someone was kidnapped"),
    (9, "I have an illness that could kill me"),
    (9, "I saw people suffering terribly"),
    (9, "Someone was murdered"),
    (9, "Someone I know died suddenly"),
    (9, "I caused someone to be badly hurt"),
)

# the importance prompt's own examples for its scale (prompts.importance.ANCHORS), as memories
SCALE_EXAMPLES: tuple[tuple[int, str], ...] = (
    (1, "I brushed my teeth"),
    (1, "I made the bed"),
    (1, "I had a coffee"),
    (3, "I went to work"),
    (3, "I ate a meal"),
    (3, "I went for a walk"),
    (3, "I read a book"),
    (5, "I heard some news"),
    (5, "I got an invitation"),
    (5, "I met someone new"),
    (5, "A small problem came up"),
    (7, "We had an argument"),
    (7, "I fell ill"),
    (7, "I lost my job"),
    (7, "I am planning a party"),
    (9, "Someone died"),
    (9, "There was an accident"),
    (9, "There was a fire"),
    (9, "Someone proposed marriage"),
    (10, "We broke up"),
    (10, "I was accepted to college"),
)

ANCHORS: tuple[tuple[int, str], ...] = SCALE_EVENTS + TRAUMA_EVENTS + SCALE_EXAMPLES
SEMANTIC_EMBEDDERS = frozenset({"minilm"})  # embedders whose cosine means "about the same thing"
# Nearer than this to no anchor: no prior. Chosen on tuning texts only (tests/agents/test_life_events.py:
# the tuning pairs, events worded without keywords, and everyday town memories). At 0.45 five of
# 32 everyday memories were raised to 6 or more ('The rain stopped' read as 'There was an
# accident', 'I took my medicine' as 'I fell ill'); at 0.48 one was, and as many events were read.
MIN_COSINE = 0.48


class LifeEventPrior:
    """The nearest anchor's importance for embedded memories. ``embed`` maps texts to normalised
    vectors (the residents' own embedder, so a memory's vector is the one retrieval uses)."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray], min_cosine: float = MIN_COSINE,
                 aembed: Callable[[list[str]], Awaitable[np.ndarray]] | None = None):
        self.embed = embed
        self.aembed = aembed
        self.min_cosine = min_cosine
        self._anchors: np.ndarray | None = None
        self._lock = Lock()
        self.values = np.array([value for value, _ in ANCHORS], dtype=np.int64)

    def anchors(self) -> np.ndarray:
        with self._lock:
            if self._anchors is None:
                self._anchors = np.asarray(self.embed([text for _, text in ANCHORS]), dtype=np.float32)
            return self._anchors

    def of_vectors(self, vectors: np.ndarray) -> list[int | None]:
        """One importance (or None: near no anchor) per row of ``vectors``."""
        if len(vectors) == 0:
            return []
        cosines = np.asarray(vectors, dtype=np.float32) @ self.anchors().T
        best = cosines.argmax(axis=1)
        return [int(self.values[i]) if cosines[row, i] >= self.min_cosine else None
                for row, i in enumerate(best)]

    def of_texts(self, texts: Sequence[str]) -> list[int | None]:
        return self.of_vectors(self.embed(list(texts))) if texts else []

    async def aof_texts(self, texts: Sequence[str]) -> list[int | None]:
        """:meth:`of_texts`, the texts embedded with everyone else's in this tick (``aembed``:
        CachedEmbedder.aencode), not one resident at a time on the event loop's thread."""
        if not texts:
            return []
        if self.aembed is None:
            return self.of_texts(texts)
        return self.of_vectors(await self.aembed(list(texts)))

    def nearest(self, text: str) -> tuple[str, float]:
        """The nearest anchor and its cosine, for a reader asking why a memory rated as it did."""
        cosines = self.anchors() @ np.asarray(self.embed([text])[0], dtype=np.float32)
        i = int(cosines.argmax())
        return ANCHORS[i][1], float(cosines[i])


_PRIORS: WeakKeyDictionary[object, LifeEventPrior] = WeakKeyDictionary()


def prior_for(embedder: object) -> LifeEventPrior | None:
    """The shared prior of a semantic embedder (its anchors embedded once), or None for one whose
    similarity is not about meaning (hashing)."""
    if getattr(embedder, "name", None) not in SEMANTIC_EMBEDDERS:
        return None
    prior = _PRIORS.get(embedder)
    if prior is None:
        prior = _PRIORS[embedder] = LifeEventPrior(embedder.encode,  # type: ignore[attr-defined]
                                                   aembed=getattr(embedder, "aencode", None))
    return prior
