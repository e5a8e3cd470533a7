"""The society bench's judge: does an interview answer say yes to the question?

Purpose: ``judge_knows``. Used by ``townsfolk bench society --judge-model M`` in place of the
answer's own words (a denial rule) to read whether a resident claims to know what it was asked;
whether the claim is true is never the judge's call: the bench checks it against the resident's
memory. The fallback is "unclear", which the bench counts as no claim.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.llm.task import Prompt, Task
from agents.roles.common import facts, first_line, messages
from memory.denials import denies

SYSTEM = "You read interview answers and say whether the person answered yes or no. Reply with JSON only."


class Verdict(BaseModel):
    says: Literal["yes", "no", "unclear"] = Field(description="yes: the answer claims to know; no: it says it "
                                                  "does not know; unclear: neither")


FALLBACK = Verdict(says="unclear")


def judge_prompt(name: str, question: str, answer: str) -> Prompt:
    said = " ".join(answer.split())[:800]
    user = (facts(Resident=name, Question=question, Answer=said)
            + "\n\nDoes the answer claim to know what the question asks about? Answer yes, no or unclear.")
    return Prompt(messages(user, SYSTEM), Task({"question": question, "answer": said}, scripted_verdict))


def judge_answer(llm: Any, name: str, question: str, answer: str) -> bool:
    """True when the judge reads the answer as a yes (a failed call is 'unclear': no)."""
    verdict = llm.complete("judge_knows", judge_prompt(name, question, answer), Verdict, FALLBACK, max_tokens=20)
    return verdict.says == "yes"


_ASKED = frozenset("did does know there what where when which running about have heard".split())


def scripted_verdict(fields: Mapping[str, Any], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    """The scripted judge: the answer's own words decide (a denial is no; an answer that names what
    was asked is yes), so that `bench society --judge-model scripted` is deterministic and offline."""
    answer, question = fields["answer"].strip(), first_line(fields["question"])
    asked = {w for w in re.findall(r"[a-z]+", question.lower()) if len(w) > 3 and w not in _ASKED}
    if not answer.strip():
        return {"says": "unclear"}
    if denies(answer):
        return {"says": "no"}
    about = asked & set(re.findall(r"[a-z]+", answer.lower()))
    return {"says": "yes" if about else "unclear"}  # an answer about something else claims nothing
