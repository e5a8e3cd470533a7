"""What a call asks, as data: the structured side of a model call.

A role (agents/roles/) writes its prompt from a few fields (a name, the places known, the
memories to rate). The wording is for the model; the fields are for everything that must not
depend on the wording, above all the ``scripted`` backend, which answers from the fields so
that editing a prompt never changes the offline answers or the tests built on them.

A role's prompt builder returns a :class:`Prompt`: the messages (a plain list, hashed and cached
as before) carrying the :class:`Task` they were written from. The gateway takes the task off the
prompt at the top of the stack and hands it down with every attempt (wrappers/base.py's
``Request.task``), so no layer in between needs to know about it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from maps.contracts import Message

# A role's scripted answer: the task's fields, the call's schema and a seeded generator -> JSON data.
ScriptedAnswer = Callable[[Mapping[str, Any], type[BaseModel], random.Random], dict[str, Any]]


@dataclass(frozen=True)
class Task:
    """The fields a prompt was written from, and the role's scripted answer to them.

    ``variants`` are answers of named scripted models (``scripted:careless``) for the roles an
    encounter puts under test; any other scripted model uses ``scripted``."""

    fields: Mapping[str, Any]
    scripted: ScriptedAnswer | None = None
    variants: Mapping[str, ScriptedAnswer] = field(default_factory=dict)

    def answer_for(self, variant: str = "") -> tuple[ScriptedAnswer | None, bool]:
        """The scripted answer for a model variant, and whether it is the variant's own."""
        if variant and variant in self.variants:
            return self.variants[variant], True
        return self.scripted, False


class Prompt(list):  # type: ignore[type-arg]
    """A call's messages (a plain list of messages to every reader) with the :class:`Task` behind them."""

    task: Task | None

    def __init__(self, messages: Iterable[Message], task: Task | None = None) -> None:
        super().__init__(messages)
        self.task = task


def task_of(messages: Any) -> Task | None:
    """The task a prompt carries; None for a plain list of messages (a caller without a role)."""
    return messages.task if isinstance(messages, Prompt) else None
