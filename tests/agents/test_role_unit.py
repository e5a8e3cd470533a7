"""A role is one unit: its schema, prompt, fallback and scripted answer in one module, and the
scripted backend answers from the fields the prompt was written from, never from its wording.

The toy role below lives in this test alone, as a new role would live in agents/roles/<role>.py:
nothing else in the project is edited to add it (no registry, no backend change).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from agents.llm.gateway import make_llm
from agents.llm.task import Prompt, Task, task_of
from agents.roles.common import facts, messages
from agents.roles.planning import decompose_prompt, decomposition_schema


# --- the toy role: a greeting -----------------------------------------------------------------


class Greeting(BaseModel):
    line: str = Field(min_length=3, max_length=80)


def greeting_fallback(name: str) -> Greeting:
    return Greeting(line=f"Hello, {name}.")


def scripted_greeting(fields: Mapping[str, Any], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    mood = "Lovely" if fields["sunny"] else "Grey"
    return {"line": f"{mood} day, {fields['name']}!"}


def scripted_careful_greeting(fields: Mapping[str, Any], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    return {"line": f"Good day to you, {fields['name']}."}


def greeting_prompt(name: str, sunny: bool, wording: str = "Greet {name} in one line.") -> Prompt:
    user = facts(name=name, weather="sunny" if sunny else "grey") + "\n" + wording.format(name=name)
    task = Task({"name": name, "sunny": sunny}, scripted_greeting, {"careful": scripted_careful_greeting})
    return Prompt(messages(user), task)


# --- what a role unit gives --------------------------------------------------------------------


def _ask(model: str, prompt: Prompt) -> Greeting:
    return make_llm(model).complete("greet", prompt, Greeting, greeting_fallback("Ada"))


def test_a_new_role_is_answered_offline_from_its_fields() -> None:
    assert _ask("scripted", greeting_prompt("Ada", True)).line == "Lovely day, Ada!"
    assert _ask("scripted", greeting_prompt("Ada", False)).line == "Grey day, Ada!"


def test_rewording_the_prompt_does_not_change_what_scripted_says() -> None:
    plain = _ask("scripted", greeting_prompt("Ada", True))
    reworded = _ask("scripted", greeting_prompt("Ada", True, "Say hi to {name}, briefly and warmly, please."))
    assert plain == reworded


def test_a_variant_model_uses_the_roles_own_variant_answer() -> None:
    assert _ask("scripted:careful", greeting_prompt("Ada", True)).line == "Good day to you, Ada."
    assert _ask("scripted:careless", greeting_prompt("Ada", True)).line == "Lovely day, Ada!"  # no careless answer


def test_a_scripted_answer_the_schema_refuses_falls_to_a_valid_generic_one() -> None:
    def too_long(fields: Mapping[str, Any], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
        return {"line": "x" * 500}

    prompt = Prompt(messages("Greet Ada."), Task({"name": "Ada"}, too_long))
    answer = _ask("scripted", prompt)
    assert isinstance(answer, Greeting) and 3 <= len(answer.line) <= 80


def test_the_prompt_is_a_plain_list_of_messages_to_every_other_reader() -> None:
    prompt = greeting_prompt("Ada", True)
    assert prompt == messages(prompt[1]["content"]) and isinstance(prompt, list)
    assert task_of(prompt) is prompt.task and task_of(list(prompt)) is None


def test_a_built_in_role_reads_its_fields_not_its_wording() -> None:
    """decompose's scripted steps come from the block, places and minutes it was asked about:
    with the prompt text blanked, the same fields give the same places and actions."""
    places = ["Willow Cafe:kitchen", "Oak House:bedroom"]
    prompt = decompose_prompt("Maria runs the cafe", "Maria", "work at Willow Cafe", datetime(2026, 2, 13, 8),
                              60, places, "Oak House:bedroom", "Willow Cafe:kitchen", [])
    schema = decomposition_schema(tuple(places))
    blank = Prompt([{"role": m["role"], "content": ""} for m in prompt], prompt.task)
    full, bare = (schema.model_validate(prompt.task.scripted(p.task.fields, schema, random.Random(0)))
                  for p in (prompt, blank))
    assert full == bare
    assert {s.place for s in full.steps} == {"Willow Cafe:kitchen"}
