"""The scripted backend's answers for the reacting prompts (agents/roles/reacting.py)."""

from __future__ import annotations

from typing import Any
import random
import re

from pydantic import BaseModel

from agents.llm.scripted import last_user_text, scripted_responder
from agents.roles.common import fact, section
from agents.roles.planning import emoji_for, pick_place
from agents.roles.reacting import NOBODY


def _least_recent(people: list[str]) -> str:
    """The person here talked to longest ago ('Tom Alvarez (last talk: never)' first)."""
    def ago(line: str) -> float:
        if "never" in line:
            return 1e9
        number = re.search(r"(\d+) (hours|min)", line)
        return float(number.group(1)) * (60 if number.group(2) == "hours" else 1) if number else 0.0
    return max(people, key=ago).split(" (")[0]


@scripted_responder("react")
def _scripted_react(msgs: list[dict], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    text = last_user_text(msgs)
    observed = section(text, "Just observed")
    people = section(text, "People here (and last talk)")
    places = section(text, "Known places")
    home, work = fact(text, "Home"), fact(text, "Workplace")
    here = fact(text, "Current place") or (places[0] if places else "")
    answer: dict[str, Any] = {
        "decision": "continue", "talk_to": NOBODY, "action": "", "place": here if here in places else places[0],
        "minutes": 15, "emoji": "🙂",
    }
    for line in observed:
        lower = line.lower()
        place = pick_place(line, places, home, work)
        if "fire" in lower or "burning" in lower:
            answer.update(decision="react", action=f"rushing to deal with it: {line[:80]}", place=place,
                          minutes=15, emoji="🧯")
            return answer
        if ("announcement" in lower or "thought" in lower) and any(w in lower for w in ("go to", "should", "come to")):
            answer.update(decision="react", action=f"heading over because {line.split(':', 1)[-1].strip()[:80]}",
                          place=place, minutes=30, emoji=emoji_for(line))
            return answer
    news_for = [n.strip() for n in fact(text, "Has news for", "").split(",") if n.strip()]
    if news_for:  # someone here to invite or to tell: talk to them
        answer.update(decision="talk", talk_to=news_for[0])
        return answer
    if fact(text, "At a gathering", "") and people and rng.random() < 0.8:
        # at a party, a meeting, a match: people are there to talk (the least recently talked to first)
        answer.update(decision="talk", talk_to=_least_recent(people))
        return answer
    strangers = [p for p in people if "never" in p or "hours ago" in p]
    if strangers and rng.random() < 0.6:
        answer.update(decision="talk", talk_to=strangers[0].split(" (")[0])
    return answer
