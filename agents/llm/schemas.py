"""JSON schemas of output models, computed once per class.

Every call needs its schema's JSON form (cache key, repair, scripted answers, grammars,
response_format); pydantic rebuilds it on each request, which dominated cheap calls. A
model class's schema never changes, so it is memoised here. The returned dict is shared:
treat it as read-only.
"""

from __future__ import annotations

import threading
from typing import Any

from pydantic import BaseModel

_CACHE: dict[tuple[type[BaseModel], bool], dict[str, Any]] = {}
_LOCK = threading.Lock()

FIRST_CHAR = "x-first-char"
"""A hint for the embedded model's grammar only: a GBNF character class the string's first
character must match (``"[a-zA-Z]"`` for an activity: no '7:00', '2020-02-06 12:32' or '{').
Not validated, and left out of the schema everyone else sees (servers, cache keys, prompts), so a
remote model that writes 'Making coffee' is not refused for a capital."""

CHARS = "x-chars"
"""A grammar-only hint: a GBNF character class every character after the first must match
(``"[a-zA-Z ,'-]"``: words, no digits or emoji). SmolLM2 filled an object's state with sixty
pineapple emoji, hundreds of tokens at a few a character; under this class it writes words."""

ONE_OF = "x-one-of"
"""A grammar-only hint: the string is one of these values (a list). Validation keeps the field's
own type, so a remote model's other choice is not refused; the embedded model picks one of a few
emoji in two or three tokens instead of writing up to eight of them."""

OPENING = "x-opening"
"""A grammar-only hint: the string starts with one of these literal openings (a list). An interview
answer starts 'I ' or 'I'': SmolLM2 began every answer with the resident's own name and
went on in the third person ('Lucy Alvarez has been working on a new project ...'), which the
answer check refuses, so every interview ended in the engine's fallback."""

WORDS = "x-words"
"""A grammar-only hint: the string is whole words, at least ``min`` of them, each a letter and
then at most ``longest`` - 1 lower-case letters or apostrophes, joined by a space or a comma and
a space. Under WORDS_ONLY's character class SmolLM2 wrote words run together
('wakeupandgetting', 'addOneMovieImgReloads') and identifiers ('create-bread-in-bread-spoon',
an object's state 'Mixed-Sorted-Sorted-'); under this hint it cannot. A minimum of two words was
tried and left out: SmolLM2 then padded a single word into nonsense the checks passed ('step
ical', 'Monday ireamariel'), where a refused single word is retried or falls back to the engine's
words (docs/BENCHMARKS.md, 'Fewer model calls a morning')."""

SLOTS = "x-slots"
"""A grammar-only hint on an array: one item per slot, in order, each slot a mapping of the item's
string fields to the values (a list) that field may take there. A meal's steps are a preparation,
the meal and what comes after (``[{"action": [...]}, {"action": [...]}, ...]``): choosing one
step among all of a meal's, SmolLM2 chose one and spent the hour on it, never eating. Validation
keeps the array's own bounds, so a remote model words its steps as it likes."""

GRAMMAR_HINTS = frozenset({FIRST_CHAR, CHARS, ONE_OF, OPENING, WORDS, SLOTS})

WORDS_ONLY = {FIRST_CHAR: "[a-zA-Z]", CHARS: "[a-zA-Z\u00c0-\u00ff ,'-]"}
"""json_schema_extra for a short text a reader takes as words (a step's action, an object's
state): letters (accented ones too), spaces, commas, apostrophes and hyphens; no digits, no
underscores ('start_morning_breakfast'), no emoji, no JSON."""


PLAIN_WORDS = {WORDS: {"min": 1, "longest": 12}}
"""json_schema_extra for an activity or an object's state (a plan part, an hour's activity, a
step's action and object state): plain words ('making coffee', 'brewing')."""


SAME_SCHEMA_AS = "same_json_schema_as"
"""A class attribute (``ClassVar``) naming the model whose JSON schema a class shares: a subclass
made per call only to add checks (a conversation line that must not repeat the previous one)
has its parent's fields and title, so its schema is looked up, not generated again."""


def json_schema_of(schema: type[BaseModel], *, for_grammar: bool = False) -> dict[str, Any]:
    """``schema.model_json_schema()``, memoised per class (read-only result); grammar-only hints
    (:data:`GRAMMAR_HINTS`) are kept only ``for_grammar``."""
    same = schema.__dict__.get(SAME_SCHEMA_AS)
    if same is not None:
        schema = same
    key = (schema, for_grammar)
    cached = _CACHE.get(key)
    if cached is None:
        cached = schema.model_json_schema()
        if not for_grammar:
            cached = _without_hints(cached)
        with _LOCK:
            _CACHE[key] = cached
    return cached


def _without_hints(node: Any) -> Any:
    """A copy of a JSON schema without grammar-only keys."""
    if isinstance(node, dict):
        return {k: _without_hints(v) for k, v in node.items() if k not in GRAMMAR_HINTS}
    if isinstance(node, list):
        return [_without_hints(v) for v in node]
    return node
