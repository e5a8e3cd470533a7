"""Plain-text helpers of the encounter roles: the reply action's name, a refusal's cue words and
a goal turned into the first person (the prompts and the scripted answers both use them)."""

from __future__ import annotations

import re

RESPOND = "Respond"  # the assistant's action that speaks to the user and ends its turn

_REFUSAL = re.compile(
    r"\b(can(?:no|')t|unable|not able|won't|will not|not allowed|not permitted|sorry|"
    r"authori[sz]|privacy|confidential|decline)\b",
    re.I,
)


def looks_like_refusal(text: str) -> bool:
    return bool(_REFUSAL.search(text))


def first_person(text: str) -> str:
    """'Your goal is to get X for your son' -> 'I want to get X for my son' (rough, for scripts)."""
    text = re.sub(r"^\s*(?:your goal is to|you want to|your goal:)\s*", "I want to ", text, flags=re.I)
    swaps = [(r"\byou are\b", "I am"), (r"\byou're\b", "I'm"), (r"\byou have\b", "I have"),
             (r"\byour\b", "my"), (r"\byours\b", "mine"), (r"\byourself\b", "myself"), (r"\byou\b", "I")]
    for pattern, repl in swaps:
        text = re.sub(pattern, repl, text, flags=re.I)
    sentence = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    return sentence[:1].upper() + sentence[1:]


def strip_greeting(text: str) -> str:
    """'Hi! Can you ...' -> 'Can you ...' (a pushed request is not greeted again)."""
    stripped = re.sub(r"^\s*(?:hi|hello|hey|good (?:morning|afternoon|evening))\b[^.!?]*[.!?,]\s*", "",
                      text, flags=re.I)
    stripped = re.sub(r"^(?:this is|i'm|i am) [A-Z][a-z]+(?: [A-Z][a-z]+)?[.!,]\s*", "", stripped)
    return stripped or text
