"""Reflection prompts: three salient questions from recent memories, then insights that
cite the numbered statements they rest on (the evidence pointers).

Purposes: ``reflect_questions``, ``reflect_insights``. The scripted answers (at the end) name the people
and places the memories mention most.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from agents.llm.task import Prompt, Task
from agents.roles.common import Words, bullet, fit_words, facts, messages


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


def questions_prompt(summary: str, name: str, memories: list[str], known: list[str] | None = None
                     ) -> Prompt:
    """``known``: as for :func:`insights_prompt`."""
    user = "\n".join(
        [
            summary,
            facts(name=name, people_and_places_known=", ".join(known or [])),
            "Recent memories:",
            bullet(memories),
            "",
            f"Given only the memories above, what are the 3 most salient high-level questions we can"
            f" answer about {name} and the people and things in {name}'s life?",
        ]
    )
    task = Task({"name": name, "memories": tuple(memories), "known": list(known) if known else None}, scripted_questions)
    return Prompt(messages(user), task)


def insights_prompt(summary: str, name: str, statements: list[str], known: list[str] | None = None
                    ) -> Prompt:
    """``known``: the people and places the resident can name (its ties, the town's places it
    knows), so an insight is about them and not about two capitalised words of a line ('Really
    That plays a real part in Tom Alvarez's life lately', issue 26)."""
    numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(statements, 1))
    user = (
        f"{summary}\n{facts(name=name, people_and_places_known=', '.join(known or []))}\nStatements:\n{numbered}\n\n"
        f"What 5 high-level insights can you infer about {name} from the statements above? "
        'Cite the numbers of the statements each insight rests on, e.g. {"insight": "...", "because_of": [1, 5, 3]}.'
    )
    task = Task({"name": name, "statements": tuple(statements), "known": list(known) if known else None},
                scripted_insights)
    return Prompt(messages(user), task)


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


def scripted_questions(fields: Mapping[str, Any], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    """The scripted backend's questions: about the people and places the memories name most."""
    name = fields["name"] or "I"
    topics = _topics(list(fields["memories"]), name, fields["known"])[:2]
    questions = [f"What is {name}'s relationship with {t}?" for t in topics]
    questions.append(f"What matters most to {name} these days?")
    while len(questions) < 3:
        questions.append(f"How does {name} spend the day?")
    return {"questions": questions[:3]}


def scripted_insights(fields: Mapping[str, Any], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    """The scripted backend's insights: one per person or place the statements name, citing them."""
    name = fields["name"] or "I"
    statements = [(str(i), text) for i, text in enumerate(fields["statements"], 1)]
    insights = []
    for topic in _topics([s for _, s in statements], name, fields["known"])[:4]:
        cited = [int(n) for n, s in statements if topic in s][:5]
        if cited:
            insights.append({"insight": f"{topic} plays a real part in {name}'s life lately", "because_of": cited})
    if statements:
        insights.append({"insight": f"{name} has had a busy, eventful stretch", "because_of": [int(n) for n, _ in statements[:3]]})
    return {"insights": insights[:5]}
