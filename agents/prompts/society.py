"""The society bench's judge: does an interview answer say yes to the question?

Purpose: ``judge_knows``. Used by ``townsfolk bench society --judge-model M`` in place of the
answer's own words (a denial rule) to read whether a resident claims to know what it was asked;
whether the claim is true is never the judge's call: the bench checks it against the resident's
memory. The fallback is "unclear", which the bench counts as no claim.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.prompts.common import facts, messages

SYSTEM = "You read interview answers and say whether the person answered yes or no. Reply with JSON only."


class Verdict(BaseModel):
    says: Literal["yes", "no", "unclear"] = Field(description="yes: the answer claims to know; no: it says it "
                                                  "does not know; unclear: neither")


FALLBACK = Verdict(says="unclear")


def judge_prompt(name: str, question: str, answer: str) -> list[dict[str, str]]:
    user = (facts(Resident=name, Question=question, Answer=" ".join(answer.split())[:800])
            + "\n\nDoes the answer claim to know what the question asks about? Answer yes, no or unclear.")
    return messages(user, SYSTEM)


def judge_answer(llm: Any, name: str, question: str, answer: str) -> bool:
    """True when the judge reads the answer as a yes (a failed call is 'unclear': no)."""
    verdict = llm.complete("judge_knows", judge_prompt(name, question, answer), Verdict, FALLBACK, max_tokens=20)
    return verdict.says == "yes"
