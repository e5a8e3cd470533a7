"""The `scripted` backend: deterministic, offline answers.

Tests and benchmarks need a model that is fast, reproducible and still plausible: a resident on
`scripted` should go to the places its persona names, not to a constant. A role answers its own
calls from the fields its prompt was written from (the call's ``Task``, agents/llm/task.py; the
answers live in each role's module in agents/roles/), so rewording a prompt never changes what
scripted says. A call without a task, or one whose answer the schema refuses, gets a generic
answer built from the output schema (enumerations prefer options the prompt mentions; numbers
and free text are derived from a hash of the prompt). The generator is seeded from the purpose,
the messages and the attempt's seed: the same call gets the same answer in every process.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from maps.contracts import Message
from agents.llm.schemas import json_schema_of
from agents.llm.wrappers.base import Completion, Request
from agents.llm.task import ScriptedAnswer, Task, task_of

def prompt_seed(purpose: str, messages: list[Message], seed: int) -> int:
    blob = json.dumps([purpose, messages, seed], sort_keys=True, ensure_ascii=False)
    return int.from_bytes(hashlib.sha256(blob.encode()).digest()[:8], "big")


def last_user_text(messages: list[Message]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return message.get("content", "")
    return messages[-1].get("content", "") if messages else ""


def first_accepted(schema: type[BaseModel], candidates: list[dict[str, Any]], default: int = -1) -> dict[str, Any]:
    """The first candidate answer the call's own schema accepts (its checks refuse what a reader
    would), else ``candidates[default]``: a responder offers its best wording first, plainer ones
    after, and never falls to the generic sampler's prompt words."""
    for data in candidates:
        try:
            schema.model_validate(data)
            return data
        except ValueError:
            continue
    return candidates[default]


_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


def _sentence(text: str, rng: random.Random, words: int = 10) -> str:
    tokens = _WORD.findall(text)
    if not tokens:
        return "nothing in particular"
    start = rng.randrange(max(1, len(tokens) - words))
    return " ".join(tokens[start : start + words])


class SchemaSampler:
    """Builds a schema-valid value from a JSON schema and a prompt."""

    def __init__(self, root: dict[str, Any], prompt: str, rng: random.Random):
        self.root = root
        self.prompt = prompt
        self.lower = prompt.lower()
        self.rng = rng

    def _resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        ref = schema.get("$ref")
        if ref:
            return self.root.get("$defs", {})[ref.split("/")[-1]]
        return schema

    def pick_option(self, options: list[Any]) -> Any:
        """Prefer the option the prompt mentions most; ties broken by the seeded rng."""
        counts = [self.lower.count(str(o).lower()) for o in options]
        best = max(counts)
        if best == 0:
            return self.rng.choice(options)
        return self.rng.choice([o for o, c in zip(options, counts) if c == best])

    def value(self, schema: dict[str, Any], name: str = "") -> Any:
        schema = self._resolve(schema)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.pick_option(schema["enum"])
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
                return self.value(options[0], name)
        if "allOf" in schema:
            return self.value(schema["allOf"][0], name)
        if "default" in schema and schema.get("type") not in ("object", "array"):
            if self.rng.random() < 0.5:
                return schema["default"]
        kind = schema.get("type", "string")
        if kind == "object":
            props = schema.get("properties", {})
            return {key: self.value(sub, key) for key, sub in props.items()}
        if kind == "array":
            low = schema.get("minItems", 1)
            high = max(low, min(schema.get("maxItems", 3), low + 3))
            count = self.rng.randint(low, high)
            return [self.value(schema.get("items", {}), name) for _ in range(count)]
        if kind == "integer":
            low = int(schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1))
            high = int(schema.get("maximum", schema.get("exclusiveMaximum", low + 11) - 1))
            return self.rng.randint(low, max(low, high))
        if kind == "number":
            low = float(schema.get("minimum", 0.0))
            high = float(schema.get("maximum", low + 1.0))
            return round(self.rng.uniform(low, high), 3)
        if kind == "boolean":
            return self.rng.random() < 0.5
        text = _sentence(self.prompt, self.rng)
        max_len = schema.get("maxLength")
        if max_len:
            text = text[:max_len]
        min_len = schema.get("minLength", 0)
        return text.ljust(min_len, ".")


def sample_schema(schema: type[BaseModel], messages: list[Message], rng: random.Random) -> dict[str, Any]:
    """A generic answer for any schema, steered by the last user message."""
    root = json_schema_of(schema)
    return SchemaSampler(root, last_user_text(messages), rng).value(root)


def scripted_answer(
    purpose: str, messages: list[Message], schema: type[BaseModel], seed: int = 0,
    answer: ScriptedAnswer | None = None, task: Task | None = None,
) -> str:
    """The scripted backend's text for one call: the role's answer to its task's fields, else (no
    task, or an answer the schema refuses) a generic one built from the schema."""
    rng = random.Random(prompt_seed(purpose, messages, seed))
    task = task if task is not None else task_of(messages)
    answer = answer if answer is not None else (task.scripted if task is not None else None)
    if answer is not None and task is not None:
        try:
            data = answer(task.fields, schema, rng)
            schema.model_validate(data)
            return json.dumps(data, ensure_ascii=False)
        except (ValidationError, KeyError, ValueError, TypeError, IndexError):
            rng = random.Random(prompt_seed(purpose, messages, seed))  # the generic answer starts afresh
    return json.dumps(sample_schema(schema, messages, rng), ensure_ascii=False)


def approx_tokens(text: str) -> int:
    """A cheap token estimate (about 4 characters a token) for backends that give none."""
    return max(1, len(text) // 4) if text else 0


# Scripted models that answer some purposes their own way (a role's ``Task.variants``): the two
# kinds of assistant an encounter tests for (agents/roles/encounters_roles/variants.py).
SCRIPTED_VARIANTS = ("careless", "careful")


class ScriptedBackend:
    """Deterministic answers: each role's own from its task's fields, else built from the schema.

    A variant (``scripted:careless``, ``scripted:careful``) answers some purposes its own way
    (the assistant under test of an encounter) and every other purpose as plain ``scripted``."""

    name = "scripted"  # class defaults: a subclass that keeps its own __init__ is plain scripted
    variant = ""

    def __init__(self, variant: str = "") -> None:
        if variant and variant not in SCRIPTED_VARIANTS:
            raise ValueError(f"unknown scripted model 'scripted:{variant}'; expected scripted or one of "
                             + ", ".join(f"scripted:{v}" for v in SCRIPTED_VARIANTS))
        self.variant = variant
        self.name = f"scripted:{variant}" if variant else "scripted"

    async def generate(self, request: Request) -> Completion:
        purpose = request.purpose
        answer, own = request.task.answer_for(self.variant) if request.task else (None, False)
        if own:  # a variant's own answer is seeded apart from the plain one
            purpose = f"{purpose}:{self.variant}"
        text = scripted_answer(purpose, request.messages, request.schema, request.seed, answer, request.task)
        prompt = sum(approx_tokens(m.get("content", "")) for m in request.messages)
        return Completion(text=text, prompt_tokens=prompt, completion_tokens=approx_tokens(text))
