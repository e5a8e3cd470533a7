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


def _topics(lines: list[str], exclude: str) -> list[str]:
    counts: Counter[str] = Counter()
    for line in lines:
        for match in _NAME.findall(line):
            first = match.split()[0]
            if first not in _SKIP and match != exclude and first != exclude.split()[0]:
                counts[match] += 1
    return [t for t, _ in counts.most_common()]


@scripted_responder("reflect_questions")
def _scripted_questions(msgs: list[dict], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    text = last_user_text(msgs)
    name = fact(text, "Name", "I")
    memories = [l[2:] for l in text.splitlines() if l.startswith("- ")]
    topics = _topics(memories, name)[:2]
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
    for topic in _topics([s for _, s in statements], name)[:4]:
        cited = [int(n) for n, s in statements if topic in s][:5]
        if cited:
            insights.append({"insight": f"{topic} plays a real part in {name}'s life lately", "because_of": cited})
    if statements:
        insights.append({"insight": f"{name} has had a busy, eventful stretch", "because_of": [int(n) for n, _ in statements[:3]]})
    return {"insights": insights[:5]}
