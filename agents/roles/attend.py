"""Going to a gathering one heard of: go or skip (the engine gives the slot and the place).

Purpose: ``attend``. The model chooses; ``scripted`` and the typed fallback follow a rule from the
persona's traits and the closeness to the host (:func:`attend_rule`): a close tie or a sociable
nature goes, a retiring one skips a gathering of someone not close.

The question is asked with its two options in both orders (:data:`ORDERS`) and the model's choice
is kept only when both answers agree (:func:`agreed`). SmolLM2-135M answered the option named last
for 39 and 38 of 48 prompts (2026-11-28): its "choice" was the order of the words, not the event.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.llm.task import Prompt, Task
from agents.roles.common import bullet, facts, first_line, messages


class AttendAnswer(BaseModel):
    """Whether the resident will be at a gathering it heard of (the engine gives the slot)."""

    decision: Literal["go", "skip"] = Field(description="go to it, or skip it")


def attend_prompt(summary: str, name: str, fact: str, source: str, relation: str, closeness: float,
                  traits: str, plan: list[str], invited: bool, options: tuple[str, str] = ("go", "skip")) -> Prompt:
    """``fact`` is the event as one sentence (events.describe), ``relation`` how ``name`` stands
    with its host (social memory), ``plan`` the day planned so far. SmolLM2's choice here does not
    follow the tie (2026-11-27: it skipped its wife's party and went to a stranger's; with the
    rule's answer shown as 'usually' it skipped all three cases tried). ``options``: the order the
    question names go and skip in (one of :data:`ORDERS`)."""
    if sorted(options) != ["go", "skip"]:
        raise ValueError(f"attend options must be go and skip in some order, got {options!r}")
    user = "\n".join(
        [
            summary,
            facts(name=name, traits=traits, event=fact, heard_from=source or "my own idea",
                  invited="yes" if invited else "not personally", host=relation,
                  closeness_to_host=f"{closeness:.1f}"),
            "Plan so far:",
            bullet(plan, "(nothing planned yet)"),
            "",
            f"Will {name} go to it? Answer {options[0]} or {options[1]}.",
        ]
    )
    # the closeness as the prompt shows it (one decimal), so the rule reads what the model reads
    task = Task({"traits": first_line(traits), "closeness": float(f"{closeness:.1f}"), "invited": invited}, scripted_attend)
    return Prompt(messages(user), task)


# the two orders the question is asked in: a choice that flips with the order is not the model's
ORDERS: tuple[tuple[str, str], tuple[str, str]] = (("go", "skip"), ("skip", "go"))


def agreed(answers: list[str | None]) -> str | None:
    """The decision when every order was answered (by the model, not its fallback) the same way;
    None when one was not answered or they differ (then the rule decides)."""
    if not answers or any(a is None for a in answers) or len(set(answers)) != 1:
        return None
    return answers[0]


# persona traits that make a resident go to a gathering of someone not close, or stay away from one
SOCIABLE = ("warm", "friendly", "outgoing", "sociable", "curious", "cheerful", "kind", "chatty", "generous",
            "lively", "social", "playful", "talkative", "romantic", "helpful", "energetic")
RETIRING = ("shy", "reserved", "grumpy", "solitary", "private", "withdrawn", "anxious", "gruff", "introverted")


def attend_rule(traits: str, closeness: float, invited: bool) -> str:
    """The scripted answer and the typed fallback: a rule from persona and closeness. A close
    tie or a sociable nature goes; a retiring one skips a gathering of someone not close."""
    lower = traits.lower()
    if any(w in lower for w in RETIRING) and closeness < 0.5 and not invited:
        return "skip"
    return "go" if closeness >= 0.4 or invited or any(w in lower for w in SOCIABLE) else "skip"


def attend_fallback(traits: str, closeness: float, invited: bool) -> AttendAnswer:
    return AttendAnswer(decision=attend_rule(traits, closeness, invited))  # type: ignore[arg-type]


def scripted_attend(fields: Mapping[str, Any], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    """The scripted backend's choice: the rule from persona and closeness (:func:`attend_rule`)."""
    return {"decision": attend_rule(fields["traits"], fields["closeness"], fields["invited"])}
