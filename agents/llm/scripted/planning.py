"""The scripted backend's answers for the planning prompts (agents/roles/planning.py)."""

from __future__ import annotations

from typing import Any
import random

from pydantic import BaseModel

from agents.llm.scripted import last_user_text, scripted_responder
from agents.roles.plan_times import strip_time
from agents.roles.wording import activity_phrase, in_use_for, starts_with_verb, without_place
from agents.roles.common import clip, fit_words, fact, section
from agents.roles.planning import (ACTION_MAX, MAX_STEPS, OBJECT_STATE_MAX, attend_rule, emoji_for, pick_place,
                                     schedule_from_plan)


@scripted_responder("plan_day")
def _scripted_day(msgs: list[dict], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    text = last_user_text(msgs)
    name = fact(text, "Name", "I")
    work = fact(text, "Workplace", "work")
    # a gathering the resident knows of is not placed here: the engine gives it its own slot at
    # its time (agents/minds/cognition/gatherings.py), where an evening 'go to the party I heard
    # about' put it on the wrong day and after it ended (issue 26)
    parts = []
    for line in section(text, "Open parts"):
        _kind, _, usual = strip_time(line).partition(" (usually: ")
        parts.append(usual.rstrip(")"))
    first = name.split()[0]
    return {"currently": f"{first} is keeping up with work at {work} and the people around them.", "parts": parts}


@scripted_responder("schedule")
def _scripted_schedule(msgs: list[dict], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    text = last_user_text(msgs)
    hours = [int(h) for h in fact(text, "Hours", "8").split(",") if h.strip().isdigit()]
    plan = section(text, "Plan")
    return {"hours": [{"hour": h, "activity": a} for h, a in schedule_from_plan(plan, hours)]}


def _step_actions(block: str) -> tuple[str, ...]:
    """The scripted steps of a block as activity phrases: 'getting ready to have breakfast',
    'having breakfast at Oak House kitchen', ..., 'almost done having breakfast'."""
    doing = activity_phrase(block)
    short = without_place(doing)
    ready = f"getting ready to {without_place(block)}" if starts_with_verb(block) and "ready" not in block else doing
    return (ready, doing, doing, "taking a short break", doing, doing, f"almost done {short}")


@scripted_responder("decompose")
def _scripted_decompose(msgs: list[dict], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    text = last_user_text(msgs)
    block = fact(text, "Block", "keep busy")
    minutes = int(fact(text, "Minutes", "60") or 60)
    places = section(text, "Known places")
    home = fact(text, "Home", "")
    work = fact(text, "Workplace", "")
    place = pick_place(block, places, home, work)
    steps = []
    left = minutes
    i = 0
    actions = _step_actions(block)
    # At most MAX_STEPS; decompose() rescales the lengths to fill the window exactly.
    while left > 0 and len(steps) < MAX_STEPS:
        length = min(left, rng.choice((10, 15, 15)))
        if length < 5:
            steps[-1]["minutes"] = min(15, steps[-1]["minutes"] + length)
            break
        action = actions[min(i, len(actions) - 2)]
        if i > 0 and (left <= 15 or len(steps) == MAX_STEPS - 1):
            action = actions[-1]
        action = fit_words(action, ACTION_MAX, "keeping busy")
        steps.append(
            {
                "action": action,
                "minutes": length,
                "place": place,
                "emoji": emoji_for(action),
                "object_state": clip(in_use_for(block), OBJECT_STATE_MAX),
            }
        )
        left -= length
        i += 1
    return {"steps": steps}


@scripted_responder("attend")
def _scripted_attend(msgs: list[dict], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    """Go or skip by the rule from persona and closeness (agents/prompts/planning.attend_rule)."""
    text = last_user_text(msgs)
    try:
        closeness = float(fact(text, "Closeness to host", "0") or 0)
    except ValueError:
        closeness = 0.0
    return {"decision": attend_rule(fact(text, "Traits", ""), closeness, fact(text, "Invited", "") == "yes")}
