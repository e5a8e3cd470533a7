"""Reflection prompts: three salient questions from recent memories, then insights that
cite the numbered statements they rest on (the evidence pointers).

Purposes: ``reflect_questions``, ``reflect_insights``.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from agents.prompts.common import Words, bullet, fit_words, facts, messages


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
                     ) -> list[dict[str, str]]:
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
    return messages(user)


def insights_prompt(summary: str, name: str, statements: list[str], known: list[str] | None = None
                    ) -> list[dict[str, str]]:
    """``known``: the people and places the resident can name (its ties, the town's places it
    knows), so an insight is about them and not about two capitalised words of a line ('Really
    That plays a real part in Tom Alvarez's life lately', issue 26)."""
    numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(statements, 1))
    user = (
        f"{summary}\n{facts(name=name, people_and_places_known=', '.join(known or []))}\nStatements:\n{numbered}\n\n"
        f"What 5 high-level insights can you infer about {name} from the statements above? "
        'Cite the numbers of the statements each insight rests on, e.g. {"insight": "...", "because_of": [1, 5, 3]}.'
    )
    return messages(user)
