"""The scripted backend's answers for the conversation prompts (agents/prompts/conversation.py)."""

from __future__ import annotations

from typing import Any
import random
import re

from pydantic import BaseModel

from agents.llm.scripted import last_user_text, scripted_responder
from agents.minds.cognition.conversation import about_partner
from agents.prompts.common import fact, section
from agents.prompts.importance import heuristic_importance


def _spoken(transcript: list[str]) -> str:
    return " ".join(transcript).lower()


_FILLER = re.compile(
    r"^(conversation with [^:]+:\s*|i heard that\s*|thought:\s*|hi \w+! did you hear\?\s*|"
    r"(oh really\?|interesting\.|i see\.|good to know\.)\s*also,\s*)+",
    re.IGNORECASE,
)


# 'tv is off', 'Tom Alvarez is thinking about what to do next': what is in view, not news to tell
_STATE = re.compile(r"^[\w' .-]{1,40} is (off|on|idle|open|closed|full|empty|\w+ing)\b", re.IGNORECASE)


def _news(memory: str) -> str:
    """A remembered sentence as something to tell (no memory prefixes or chat filler)."""
    return _FILLER.sub("", memory.strip()).strip().rstrip(".")


@scripted_responder("converse")
def _scripted_converse(msgs: list[dict], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    text = last_user_text(msgs)
    other = fact(text, "Partner", "friend").split()[0]
    left = int(fact(text, "Lines left", "4") or 0)
    transcript = section(text, "Conversation so far")
    transcript = [t for t in transcript if t != "(nothing yet)"]
    said = _spoken(transcript)
    memories = section(text, "What you remember")
    # share the most poignant thing remembered that has not been said yet
    partner = fact(text, "Partner", "")
    fresh = [
        m for m in memories
        if _news(m).lower()[:40] not in said and m != "(none)" and not m.startswith(("My plan", "Currently:"))
        and not about_partner(_news(m), partner) and " is talking with " not in m and not m.startswith(("I decided", "I should"))
        and heuristic_importance(m) >= (5 if _STATE.match(_news(m)) else 3)
    ]
    fresh.sort(key=lambda m: -heuristic_importance(m))
    if not transcript:
        line = f"Hi {other}! " + (f"Did you hear? {_news(fresh[0])}." if fresh else "How are you today?")
        return {"utterance": line, "end": False}
    if left <= 1 or len(transcript) >= 5 or not fresh:
        return {"utterance": f"Good talking to you, {other}. See you around!", "end": True}
    opener = rng.choice(("Oh really?", "Interesting.", "I see.", "Good to know."))
    return {"utterance": f"{opener} Also, {_news(fresh[0])}.", "end": False}


@scripted_responder("chat_summary")
def _scripted_summary(msgs: list[dict], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    text = last_user_text(msgs)
    other = fact(text, "Partner", "someone")
    lines = section(text, "Conversation")
    theirs = [_news(l.split(": ", 1)[1]) for l in lines if l.startswith(other + ": ") and ": " in l]
    theirs = [t for t in theirs if t and not t.lower().startswith(("good talking", "how are you"))]
    told = ". ".join(theirs)[:400] or "small talk"
    importance = max([heuristic_importance(t) for t in theirs] + [3])
    thought = f"I should keep in mind what {other} told me." if importance >= 6 else ""
    return {"summary": f"Conversation with {other}: {told}", "importance": importance, "thought": thought}
