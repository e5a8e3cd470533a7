"""Every role's typed fallback is valid against its schema, whatever the persona holds.

A fallback that fails its own schema froze residents for a whole game hour (issue 9): the
decomposition's 'being used for {activity}' outgrew object_state's 60 characters before any
model was called. Here each fallback is built for long names, long activities and long
addresses, re-validated, and every resident purpose is checked to be covered.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pydantic import BaseModel

import agents.roles.conversation as conversation
import agents.roles.importance as importance
import agents.roles.interview as interview
import agents.roles.attend as attend
import agents.roles.planning as planning
import agents.roles.reacting as reacting
import agents.roles.reflection as reflection
import agents.roles.society as society
from agents.minds.cognition.planning import waking_hours

LONG_NAME = "Priya " + "Shah-" * 40 + "Venkataraman"
LONG_ACTIVITY = "prepare the big surprise party for the whole town " * 12
LONG_ADDRESS = "The Very Long Named Community Centre of Oak Hill " * 3 + ":main hall:stage"
DIGITS = "16,2022,2021,2020 ... 1 2 3"
PLACES = (LONG_ADDRESS, "Oak House:kitchen", "Willow Cafe:counter")


def _fallbacks(activity: str, name: str, address: str) -> dict[str, list[tuple[type[BaseModel], BaseModel]]]:
    places = (address,) + PLACES[1:]
    hours = waking_hours(9, 0)
    day = planning.day_plan_fallback(name, "bartender " * 30, activity, 9, 0, address, address)
    skeleton = planning.day_skeleton(9, 0, address, address)
    decomposition = planning.decomposition_fallback(places, activity, address, 120)
    react = reacting.reaction_fallback((name, "Tom Alvarez"), places, address)
    return {
        "plan_day": [(planning.day_plan_schema(len(day.parts), tuple(p.kind for p in skeleton if not p.fixed), (),
                                               tuple(planning.part_options(p, address) for p in skeleton if not p.fixed),
                                               resident=name),
                      day)],
        "schedule": [(planning.schedule_schema(tuple(hours)),
                      planning.schedule_fallback(planning.plan_from_skeleton(skeleton, day.parts)
                                                 + [f"13:00 {activity}"], hours))],
        "decompose": [(planning.decomposition_schema(places), decomposition)],
        "importance": [(importance.ratings_schema_for(texts), importance.ratings_fallback(texts))
                       for texts in ([activity], [activity, "the chair is idle", "Tom died in a fire"] * 4)],
        "react": [(reacting.reaction_schema((name, "Tom Alvarez"), places), react)],
        "converse": [(conversation.line_schema(name, "Tom Alvarez", prev),
                      conversation.line_fallback("Tom Alvarez", n, name, prev))
                     for n, prev in ((0, ""), (3, "Nice to see you, Tom."), (4, "Good to see you. Take care!"))]
        + [(conversation.line_schema(name, "Tom Alvarez", prev),
            conversation.line_fallback("Tom Alvarez", n, name, prev, activity))
           for n, prev in ((0, ""), (3, f"By the way, {activity}."))],
        "chat_summary": [(conversation.summary_schema(name, "Tom Alvarez"),
                          conversation.chat_summary_fallback("Tom Alvarez", lines, name))
                         for lines in ([f"{name}: {activity}"] * 8, [f"Tom Alvarez: {activity}. {activity}."], [])],
        "attend": [(attend.AttendAnswer, attend.attend_fallback(traits, closeness, invited))
                   for traits, closeness, invited in ((activity, 0.0, False), ("shy", 0.9, True), ("", 0.2, False))],
        "reflect_questions": [(reflection.Questions, reflection.questions_fallback(name))],
        "judge_knows": [(society.Verdict, society.FALLBACK)],  # the society bench's judge
        "reflect_insights": [(reflection.Insights, reflection.insights_fallback())],
        "interview": [(interview.Answer, interview.answer_fallback())]
        + [(interview.answer_schema(name, "What did you do today?", tuple(mems)),
            interview.answer_from_memories(mems, name, "What did you do today?"))
           for mems in ([activity, f"{name} is idle"], [f"{name} is {activity}"], [activity], [])],
    }


@pytest.mark.parametrize("activity", [LONG_ACTIVITY, DIGITS, "x", "   ", "work"])
@pytest.mark.parametrize("name", [LONG_NAME, "Al", "R2 D2 3PO 4"])
def test_every_fallback_is_valid_against_its_schema(activity: str, name: str) -> None:
    for purpose, pairs in _fallbacks(activity, name, LONG_ADDRESS).items():
        for schema, fallback in pairs:
            assert isinstance(fallback, schema), purpose
            again = schema.model_validate(fallback.model_dump())  # re-validated from plain data
            assert again == fallback, purpose


def _asked_purposes() -> set[str]:
    """Every purpose a mind asks the model for: the first argument of each ``.ask("purpose", ...)``
    in agents/minds/ (the Caller is the minds' one way to the model)."""
    found: set[str] = set()
    for path in (Path(__file__).resolve().parents[2] / "agents" / "minds").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "ask"
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                found.add(node.args[0].value)
    return found


def test_every_resident_purpose_has_a_tested_fallback() -> None:
    tested = set(_fallbacks("work", "Al", LONG_ADDRESS))
    resident_purposes = _asked_purposes()
    assert {"plan_day", "decompose", "react", "converse", "importance"} <= resident_purposes, resident_purposes
    assert resident_purposes <= tested, f"purposes without a tested fallback: {resident_purposes - tested}"


def test_decomposition_fallback_keeps_the_activity_within_bounds() -> None:
    fb = planning.decomposition_fallback(PLACES, LONG_ACTIVITY, "nowhere", 200)
    assert 1 <= len(fb.steps) <= planning.MAX_STEPS
    for step in fb.steps:
        assert step.action.startswith("prepare the big surprise party")
        assert len(step.action) <= planning.ACTION_MAX and len(step.object_state) <= planning.OBJECT_STATE_MAX
        assert step.place == PLACES[0]  # an unknown place falls back to a known one


def test_scripted_decomposition_of_a_long_block_is_valid() -> None:
    """The scripted backend answers within the bounds too (it is what tests and CI run)."""
    from agents.llm.scripted import scripted_answer

    schema = planning.decomposition_schema(PLACES)
    msgs = planning.decompose_prompt("", LONG_NAME, LONG_ACTIVITY, __import__("datetime").datetime(2026, 2, 13, 9),
                                     120, list(PLACES), LONG_ADDRESS, LONG_ADDRESS, [])
    answer = schema.model_validate_json(scripted_answer("decompose", msgs, schema))
    assert all(len(s.object_state) <= planning.OBJECT_STATE_MAX for s in answer.steps)


def test_the_day_plan_fallback_stands_when_a_memory_holds_the_skeletons_own_words() -> None:
    """The prompt's memories are checked against the model's parts (a part that copies a thought
    is no activity); the skeleton's words are the engine's. A resident who had thought them
    (SmolLM2's Kenji Mori, Sunday 06:00) got a fallback refused by its own schema, and his plan
    failed every tick for the rest of the run."""
    home, work = "Oak House:bedroom", "Willow Cafe:counter"
    skeleton = planning.day_skeleton(7, 22, home, work)
    free = [p.text for p in skeleton if not p.fixed]
    memories = tuple(f"I thought: {text} and then some more" for text in free)
    day = planning.day_plan_fallback("Kenji Mori", "student", "Kenji Mori is studying for exams", 7, 22, home, work,
                                     memories=memories)
    assert list(day.parts) == [planning.fit_activity(t, planning.PART_MAX, "keeping busy") for t in free]
    schema = type(day)
    assert schema.memories == memories  # the model's answer is still checked against them
    with pytest.raises(ValueError, match="copies a memory"):
        schema(currently="Kenji Mori is studying for exams", parts=list(day.parts))
