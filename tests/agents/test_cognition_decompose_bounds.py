"""Decomposition stays within its schema's bounds for every window length.

The bounds (at most MAX_STEPS steps, short texts) keep a small model's answer short; the
scripted answer must honour them too, or the scripted backend would silently fall back to
its generic answer and a scripted town would stop following its plans.
"""

from __future__ import annotations

import random
from datetime import datetime

import pytest

from agents.llm.repair import parse_answer
from agents.roles.planning import MAX_STEPS, decompose_prompt, decomposition_schema, scripted_steps

PLACES = ["Willow Cafe:kitchen", "Oak House:bedroom"]


@pytest.mark.parametrize("minutes", [5, 15, 60, 120, 240])
def test_scripted_steps_fit_the_schema_for_any_window(minutes: int) -> None:
    schema = decomposition_schema(tuple(PLACES))
    msgs = decompose_prompt("Maria runs the cafe", "Maria", "work at Willow Cafe", datetime(2026, 2, 13, 8),
                            minutes, PLACES, "Oak House:bedroom", "Willow Cafe:kitchen", [])
    answer = schema.model_validate(scripted_steps(msgs.task.fields, schema, random.Random(minutes)))
    assert 1 <= len(answer.steps) <= MAX_STEPS
    assert all(step.place == "Willow Cafe:kitchen" for step in answer.steps)


def test_digit_lists_are_not_actions_and_long_text_is_truncated() -> None:
    schema = decomposition_schema(tuple(PLACES))
    step = {"minutes": 10, "place": "Willow Cafe:kitchen", "emoji": "☕", "object_state": "x" * 500}
    with pytest.raises(ValueError, match="steps.0.action"):
        parse_answer('{"steps": [%s]}' % str({**step, "action": "16,2022,2021,2020"}).replace("'", '"'), schema)
    ok = parse_answer('{"steps": [%s]}' % str({**step, "action": "making coffee"}).replace("'", '"'), schema)
    assert ok.steps[0].action == "making coffee" and len(ok.steps[0].object_state) == 60
