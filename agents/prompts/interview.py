"""Interview prompt: answer a question in character, from retrieved memories only.

Purpose: ``interview``. Nothing of the answer is written back to memory.
"""

from __future__ import annotations

import random
import re
from typing import Any

from pydantic import BaseModel, Field

from agents.llm.scripted import last_user_text, scripted_responder
from agents.prompts.common import Sentence, bullet, fact, facts, messages, section
from agents.prompts.importance import heuristic_importance


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


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3}


@scripted_responder("interview")
def _scripted_answer(msgs: list[dict], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    text = last_user_text(msgs)
    question = fact(text, "Question", "")
    memories = [m for m in section(text, "What you remember") if m != "(none)"]
    if not memories:
        return {"answer": "I don't remember anything about that."}
    q = _words(question)
    ranked = sorted(memories, key=lambda m: (-len(q & _words(m)), -heuristic_importance(m)))
    return {"answer": f"From what I remember: {ranked[0]}" + (f" Also, {ranked[1]}" if len(ranked) > 1 else "")}
