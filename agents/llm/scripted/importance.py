"""The scripted backend's answers for the importance prompts (agents/prompts/importance.py)."""

from __future__ import annotations

from typing import Any
import random
import re

from pydantic import BaseModel

from agents.llm.scripted import last_user_text, scripted_responder
from agents.prompts.importance import heuristic_importance


@scripted_responder("importance")
def _scripted_importance(msgs: list[dict], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    text = last_user_text(msgs)
    items = re.findall(r"^(?:\d+\.|-) (.*)$", re.split(r"Memor(?:ies|y):", text, maxsplit=1)[-1], re.MULTILINE)
    return {"ratings": [heuristic_importance(t) for t in items]}
