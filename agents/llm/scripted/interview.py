"""The scripted backend's answers for the interview prompts (agents/prompts/interview.py)."""

from __future__ import annotations

from typing import Any
import random
import re

from pydantic import BaseModel

from agents.llm.scripted import first_accepted, last_user_text, scripted_responder
from agents.prompts.checks import repeats_itself
from agents.prompts.common import fact, section
from agents.prompts.importance import heuristic_importance
from agents.prompts.interview import never_met


# words of a question that say nothing of its subject ('Did you know there is ...?')
_ASKING = {"know", "there", "what", "about", "have", "your", "does", "with", "that", "this", "tell", "heard", "anyone",
           "someone", "were", "when", "where", "which"}


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3 and w not in _ASKING}


@scripted_responder("interview")
def _scripted_answer(msgs: list[dict], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    text = last_user_text(msgs)
    question = fact(text, "Question", "")
    unknown = fact(text, "Never met or heard of", "")
    if unknown:
        return {"answer": never_met([n.strip() for n in unknown.split(",")]).answer}
    memories = [m for m in section(text, "What you remember") if m != "(none)"]
    if not memories:
        return {"answer": "I don't remember anything about that."}
    q = _words(question)
    ranked = sorted(memories, key=lambda m: (-len(q & _words(m)), -heuristic_importance(m)))
    answer = f"From what I remember: {ranked[0]}"
    both = answer + (f" Also, {ranked[1]}" if len(ranked) > 1 else "")
    # two memories of the same news ('X told me that ...', 'Y told me that ...') say one sentence twice,
    # which the answer's check refuses (then the generic scripted words were kept: bench society, 2026-11-27)
    # any other refusal too ('Hi Hannah! ...' in a line remembered reads as Hannah naming herself):
    # the first answer the call's own checks accept, the best memory alone at the latest
    candidates = [{"answer": a} for a in ([both] * (not repeats_itself(both)) + [answer]
                                          + [f"From what I remember: {m}" for m in ranked[1:3]])]
    return first_accepted(schema, candidates, 0)
