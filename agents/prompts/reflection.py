"""Reflection prompts: three salient questions from recent memories, then insights that
cite the numbered statements they rest on (the evidence pointers).

Purposes: ``reflect_questions``, ``reflect_insights``.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from typing import Any

from pydantic import BaseModel, Field

from agents.llm.scripted import last_user_text, scripted_responder
from agents.prompts.common import Words, bullet, fit_words, fact, facts, messages


class Questions(BaseModel):
    questions: list[Words] = Field(description="the 3 most salient high-level questions")


class Insight(BaseModel):
    insight: Words
    because_of: list[int] = Field(default_factory=list, description="numbers of the statements it rests on")


class Insights(BaseModel):
    insights: list[Insight] = Field(description="up to 5 high-level insights")


def questions_fallback(name: str) -> Questions:
    """The typed fallback of ``reflect_questions``: one general question."""
    return Questions(questions=[fit_words(f"What matters most to {name} these days?", 400,
                                          "What matters most to me these days?")])


def insights_fallback() -> Insights:
    """The typed fallback of ``reflect_insights``: no insight (nothing is written)."""
    return Insights(insights=[])


def questions_prompt(summary: str, name: str, memories: list[str]) -> list[dict[str, str]]:
    user = "\n".join(
        [
            summary,
            facts(name=name),
            "Recent memories:",
            bullet(memories),
            "",
            f"Given only the memories above, what are the 3 most salient high-level questions we can"
            f" answer about {name} and the people and things in {name}'s life?",
        ]
    )
    return messages(user)


def insights_prompt(summary: str, name: str, statements: list[str]) -> list[dict[str, str]]:
    numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(statements, 1))
    user = (
        f"{summary}\n{facts(name=name)}\nStatements:\n{numbered}\n\n"
        f"What 5 high-level insights can you infer about {name} from the statements above? "
        'Cite the numbers of the statements each insight rests on, e.g. {"insight": "...", "because_of": [1, 5, 3]}.'
    )
    return messages(user)


_NAME = re.compile(r"\b([A-Z][a-z]+(?: [A-Z][a-z]+)?)\b")
_SKIP = {"I", "The", "Conversation", "Did", "Hi", "Good", "Also", "Oh", "Today", "Known"}


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
