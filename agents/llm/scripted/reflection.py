"""The scripted backend's answers for the reflection prompts (agents/prompts/reflection.py)."""

from __future__ import annotations

from collections import Counter
from typing import Any
import random
import re

from pydantic import BaseModel

from agents.llm.scripted import last_user_text, scripted_responder
from agents.prompts.common import fact


# a topic is a full name or a place ('Tom Alvarez', 'Willow Cafe'): one capitalised word was also
# 'Valentine', 'Day' and 'Saturday' ('Day plays a real part in George Price's life lately', issue 26)
_NAME = re.compile(r"\b([A-Z][a-z]+ [A-Z][a-z]+)\b")


_SKIP = {"I", "The", "Conversation", "Did", "Hi", "Good", "Also", "Oh", "Today", "Known", "Monday", "Tuesday",
         "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "January", "February", "March", "April", "May",
         "June", "July", "August", "September", "October", "November", "December", "My", "Currently", "Would"}


def _topics(lines: list[str], exclude: str, known: list[str] | None = None) -> list[str]:
    """The people and places the lines name most often. With ``known`` (the prompt's 'People and
    places known'), only those: two capitalised words of a garbled line were taken for a name
    ('Really That plays a real part in Tom Alvarez's life lately', issue 26)."""
    counts: Counter[str] = Counter()
    for line in lines:
        if known is not None:
            found = [k for k in known if k != exclude and re.search(rf"(?<![\w']){re.escape(k)}(?![\w])", line)]
        else:
            found = [m for m in _NAME.findall(line) if m.split()[0] not in _SKIP]
        for match in found:
            if match != exclude and match.split()[0] != exclude.split()[0]:
                counts[match] += 1
    return [t for t, _ in counts.most_common()]


def _known(text: str) -> list[str] | None:
    """The prompt's 'People and places known' list (None when the prompt has none)."""
    listed = fact(text, "People and places known", "")
    return [n.strip() for n in listed.split(",") if n.strip()] if listed else None


@scripted_responder("reflect_questions")
def _scripted_questions(msgs: list[dict], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    text = last_user_text(msgs)
    name = fact(text, "Name", "I")
    memories = [l[2:] for l in text.splitlines() if l.startswith("- ")]
    topics = _topics(memories, name, _known(text))[:2]
    questions = [f"What is {name}'s relationship with {t}?" for t in topics]
    questions.append(f"What matters most to {name} these days?")
    while len(questions) < 3:
        questions.append(f"How does {name} spend the day?")
    return {"questions": questions[:3]}


@scripted_responder("reflect_insights")
def _scripted_insights(msgs: list[dict], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    text = last_user_text(msgs)
    name = fact(text, "Name", "I")
    statements = re.findall(r"^(\d+)\. (.*)$", text.split("Statements:", 1)[-1], re.MULTILINE)
    insights = []
    for topic in _topics([s for _, s in statements], name, _known(text))[:4]:
        cited = [int(n) for n, s in statements if topic in s][:5]
        if cited:
            insights.append({"insight": f"{topic} plays a real part in {name}'s life lately", "because_of": cited})
    if statements:
        insights.append({"insight": f"{name} has had a busy, eventful stretch", "because_of": [int(n) for n, _ in statements[:3]]})
    return {"insights": insights[:5]}
