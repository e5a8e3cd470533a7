"""The `scripted` backend: deterministic, offline answers derived from the prompt.

Tests and benchmarks need a model that is fast, reproducible and still plausible: a
resident on `scripted` should go to the places its persona names, not to a constant.
Generic answers are built from the output schema (enumerations prefer options the prompt
mentions; numbers and free text are derived from a hash of the prompt). Each role may
register a purpose-specific responder with :func:`scripted_responder`, in its own module of this
package (one per role, named as the role's prompts module in agents/prompts/).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import random
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from maps.contracts import Message
from agents.llm.schemas import json_schema_of
from agents.llm.task import ScriptedAnswer, Task, task_of

Responder = Callable[[list[Message], type[BaseModel], random.Random], dict[str, Any]]

_RESPONDERS: dict[str, Responder] = {}
ROLES = ()


def responders() -> dict[str, Responder]:
    """Every role's responder by purpose; the role modules register on first use (they import prompts)."""
    for role in ROLES:
        importlib.import_module(f"{__name__}.{role}")
    return _RESPONDERS


def scripted_responder(purpose: str) -> Callable[[Responder], Responder]:
    """Register ``fn`` as the scripted answer for ``purpose`` (one per purpose)."""

    def register(fn: Responder) -> Responder:
        _RESPONDERS[purpose] = fn
        return fn

    return register


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
    """The scripted backend's text for one call: the role's answer to its task's fields (or a
    registered responder), else a generic one built from the schema."""
    rng = random.Random(prompt_seed(purpose, messages, seed))
    task = task if task is not None else task_of(messages)
    answer = answer if answer is not None else (task.scripted if task is not None else None)
    if answer is not None and task is not None:
        try:
            data = answer(task.fields, schema, rng)
            schema.model_validate(data)
            return json.dumps(data, ensure_ascii=False)
        except (ValidationError, KeyError, ValueError, TypeError, IndexError):
            rng = random.Random(prompt_seed(purpose, messages, seed))
        return json.dumps(sample_schema(schema, messages, rng), ensure_ascii=False)
    responder = responders().get(purpose)
    if responder is not None:
        # A responder is written for its role's schema; another caller may use the same
        # purpose name with a different schema, which gets the generic answer instead.
        try:
            data = responder(messages, schema, rng)
            schema.model_validate(data)
            return json.dumps(data, ensure_ascii=False)
        except (ValidationError, KeyError, ValueError, TypeError, IndexError):
            rng = random.Random(prompt_seed(purpose, messages, seed))
    return json.dumps(sample_schema(schema, messages, rng), ensure_ascii=False)
