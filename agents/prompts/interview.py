"""Interview prompt: answer a question in character, from retrieved memories only.

Purpose: ``interview``. Nothing of the answer is written back to memory.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from agents.prompts.common import Sentence, bullet, facts, messages


class Answer(BaseModel):
    answer: Sentence = Field(description="the answer, in the first person, in character")


def answer_fallback() -> Answer:
    """The typed fallback of ``interview``."""
    return Answer(answer="I'm sorry, I can't think of an answer right now.")


def interview_prompt(summary: str, name: str, time: str, status: str, memories: list[str], question: str) -> list[dict[str, str]]:
    user = "\n".join(
        [
            summary,
            facts(name=name, time=time, status=status),
            "What you remember:",
            bullet(memories),
            "",
            f"Question: {question}",
            f"Answer as {name}, in the first person, using only what {name} remembers. If {name} "
            "does not know, say so.",
        ]
    )
    return messages(user)
