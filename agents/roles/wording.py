"""Activity phrases: a plan item is written as an instruction ('have breakfast at Oak House',
'wake up and get ready'); what a resident is doing reads as an activity ('having breakfast at
Oak House', 'waking up and getting ready'). Pure functions, so every rule is tested on its own.

Only a leading verb the list knows is changed: a phrase that already reads as an activity
('working at the cafe', 'a walk in the park') is kept as it is.
"""

from __future__ import annotations

import re

# verbs a plan item starts with (the skeleton's, the scripted backend's, and common model words)
_VERBS = frozenset(
    "have wake get go work relax read eat cook make take walk visit meet prepare study teach help clean "
    "write check finish start do sit watch attend shop buy call plan practice practise play rest sleep open "
    "close serve see talk chat grab head return spend enjoy continue review organise organize run leave stop "
    "listen drink bake wash tidy brush shower dress feed water exercise jog sort pay deliver lock unlock "
    "greet welcome catch set put cut begin swim stay spend browse pick tend lead give bring finish wind "
    "unwind grade mark stock count file answer treat examine keep".split()
)
_DOUBLE = frozenset("get sit run shop stop plan jog chat put set cut swim begin".split())
_KEEP_E = frozenset("see be".split())
_AND = re.compile(r"\s+and\s+")
_PLACE = re.compile(r"\s+(at|in)\s+[A-Z].*$")


def gerund(verb: str) -> str:
    """'have' -> 'having', 'get' -> 'getting', 'lie' -> 'lying', 'see' -> 'seeing'."""
    lower = verb.lower()
    if lower.endswith("ie"):
        return lower[:-2] + "ying"
    if lower.endswith("e") and lower not in _KEEP_E and not lower.endswith(("ee", "ye", "oe")):
        return lower[:-1] + "ing"
    if lower in _DOUBLE:
        return lower + lower[-1] + "ing"
    return lower + "ing"


def _clause(text: str) -> str:
    first, _, rest = text.partition(" ")
    if first.lower() in _VERBS:
        return (gerund(first) + " " + rest).strip()
    return text


def activity_phrase(text: str) -> str:
    """An instruction-like plan item as what someone is doing (each 'and'-joined verb too)."""
    text = " ".join(text.split())
    if not text or text.split(" ", 1)[0].lower() not in _VERBS:
        return text
    return " and ".join(_clause(part) for part in _AND.split(text))


def starts_with_verb(text: str) -> bool:
    """Does the phrase start with a plain verb the list knows ('have breakfast', not 'having')?"""
    return text.split(" ", 1)[0].lower() in _VERBS if text.strip() else False


def without_place(text: str) -> str:
    """'having breakfast at Oak House kitchen' -> 'having breakfast' (a named place at the end)."""
    return _PLACE.sub("", text).strip() or text


def in_use_for(description: str) -> str:
    """An object's state while someone uses it: 'being used for having breakfast', not 'being used
    for have breakfast at Oak House kitchen' (which a talk brought up as news, 2026-11-26)."""
    doing = without_place(activity_phrase(description)).strip() or "something"
    return f"being used for {doing}"
