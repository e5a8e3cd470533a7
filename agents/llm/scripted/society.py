"""The scripted backend's judge of interview answers (agents/prompts/society.py): the answer's own
words decide (a denial is no; an answer that names what was asked is yes), so that `bench society --judge-model scripted` is deterministic and offline."""

from __future__ import annotations

import random
import re
from typing import Any

from pydantic import BaseModel

from agents.llm.scripted import last_user_text, scripted_responder
from agents.prompts.common import fact

_ASKED = frozenset("did does know there what where when which running about have heard".split())
_NO = re.compile(r"^\s*no\b|\b(?:do not|don'?t|haven'?t|have not|never) (?:know|met|heard|remember)\b", re.I)


@scripted_responder("judge_knows")
def _judge(msgs: list[dict], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    text = last_user_text(msgs)
    answer, question = fact(text, "Answer", ""), fact(text, "Question", "")
    asked = {w for w in re.findall(r"[a-z]+", question.lower()) if len(w) > 3 and w not in _ASKED}
    if not answer.strip():
        return {"says": "unclear"}
    if _NO.search(answer):
        return {"says": "no"}
    about = asked & set(re.findall(r"[a-z]+", answer.lower()))
    return {"says": "yes" if about else "unclear"}  # an answer about something else claims nothing
