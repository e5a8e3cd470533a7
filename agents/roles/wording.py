"""Activity phrases: a plan item is written as an instruction ('have breakfast at Oak House',
'wake up and get ready'); what a resident is doing reads as an activity ('having breakfast at
Oak House', 'waking up and getting ready'). Pure functions, so every rule is tested on its own.

Only a leading verb the list knows is changed: a phrase that already reads as an activity
('working at the cafe', 'a walk in the park') is kept as it is.

Also the words of news between residents: whether a memory names the partner
(:func:`about_partner`), and a teller's sentence in the third person (:func:`in_third_person`).
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


def about_partner(text: str, partner: str) -> bool:
    """Does this memory name the partner (full name or first name)? Then it is their own news,
    never something to tell them: 'Lucy wants to study medicine' is not news to Lucy."""
    names = [partner.strip(), *partner.split()[:1]]
    return any(re.search(rf"(?<![\w']){re.escape(n)}(?![\w])", text, re.IGNORECASE) for n in names if len(n) > 1)


_MODAL = r"am|was|have|had|will|would|can|could|should|must|did|do|might|may"
_AS_THIRD = {"am": "is", "have": "has", "do": "does", "'m": " is", "'ve": " has", "'ll": " will", "'d": " would"}
_UNTURNED = "\x00"
_IRREGULAR_PAST = {"went", "made", "met", "taught", "saw", "told", "got", "gave", "took", "found", "knew", "grew",
                   "left", "lost", "won", "ran", "bought", "brought", "built", "came", "began", "wrote", "sold"}


def in_third_person(sentence: str, speaker: str) -> str | None:
    """``speaker``'s sentence as a listener can keep it: their first person made theirs ('Lucy
    Alvarez is the brightest student in my class' -> '... in Grace's class'), or None when it
    cannot be said plainly ('we', 'our', 'I love ...'): the teller's 'my' was kept in the
    listener's memory as the listener's own (issue 26)."""
    first = speaker.split()[0] if speaker.split() else "they"
    if re.search(r"\b(we|us|our|ours|ourselves|we're|we've|we'll)\b", sentence, re.IGNORECASE):
        return None

    def subject(match: re.Match) -> str:
        verb = match.group(1) or match.group(2)
        if verb.startswith("'"):
            return first + _AS_THIRD[verb.lower()]
        if re.fullmatch(_MODAL, verb, re.IGNORECASE) or verb.endswith("ed") or verb.lower() in _IRREGULAR_PAST:
            return f"{first} {_AS_THIRD.get(verb.lower(), verb)}"
        return _UNTURNED  # a present tense verb ('I teach'): not turned, the sentence is dropped below

    text = re.sub(r"\bI(?:('m|'ve|'ll|'d)|\s+([A-Za-z]+))", subject, sentence)
    if _UNTURNED in text:
        return None
    text = re.sub(r"\b(my|mine)\b", f"{first}'s", text, flags=re.IGNORECASE)
    text = re.sub(r"\b(me|myself)\b", first, text, flags=re.IGNORECASE)
    return None if re.search(r"\bI\b", text) else text
