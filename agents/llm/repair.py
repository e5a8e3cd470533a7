"""Turning a model's text into a validated pydantic object, repairing what can be repaired.

Small models wrap JSON in prose or code fences, leave trailing commas, write Python
literals, pick a place name with the wrong case, or overshoot a 1..10 scale. Each of those
is fixed here without another model call; anything else is reported as a failure so the
gateway can retry or fall back. Failure texts stay inside the gateway (they are never put
into a later prompt).
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agents.llm.schemas import json_schema_of

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


class RepairError(ValueError):
    """The text could not be turned into a valid instance of the schema."""


def extract_json_text(text: str) -> str:
    """Return the first balanced JSON object or array found in ``text``."""
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1)
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise RepairError("no JSON object in the answer")
    opening = text[start]
    closing = "}" if opening == "{" else "]"
    depth = 0
    in_string = False
    escaped = False
    for pos in range(start, len(text)):
        ch = text[pos]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch == opening:
            depth += 1
        elif ch == closing:
            depth -= 1
            if depth == 0:
                return text[start : pos + 1]
    # Unterminated: close what is open (a model that ran out of tokens).
    return text[start:] + closing * max(depth, 1)


def loads_lenient(text: str) -> Any:
    """json.loads, then the usual small-model slips: trailing commas, Python literals."""
    raw = extract_json_text(text)
    for candidate in (raw, _TRAILING_COMMA.sub(r"\1", raw)):
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            pass
    try:
        return ast.literal_eval(_TRAILING_COMMA.sub(r"\1", raw))
    except (ValueError, SyntaxError) as exc:
        raise RepairError(f"answer is not JSON: {exc}") from None


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref and ref.startswith("#/$defs/"):
        return root.get("$defs", {}).get(ref.split("/")[-1], {})
    return schema


def _closest(value: str, options: list[Any]) -> Any:
    texts = [str(o) for o in options]
    lowered = {t.lower(): o for t, o in zip(texts, options)}
    if value.lower() in lowered:
        return lowered[value.lower()]
    match = difflib.get_close_matches(value, texts, n=1, cutoff=0.6)
    if match:
        return options[texts.index(match[0])]
    contained = [o for t, o in zip(texts, options) if t.lower() in value.lower()]
    if len(contained) == 1:
        return contained[0]
    return value


def _coerce_number(value: Any, schema: dict[str, Any], kind: str) -> Any:
    """A number (or the first number in a text) clamped to the schema's bounds."""
    if isinstance(value, str):
        found = re.search(r"-?\d+(?:\.\d+)?", value)
        if not found:
            return value
        value = float(found.group())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema:
            value = max(value, schema["minimum"])
        if "maximum" in schema:
            value = min(value, schema["maximum"])
        return int(round(value)) if kind == "integer" else float(value)
    return value


def _coerce_string(value: Any, schema: dict[str, Any]) -> Any:
    """A number written for a text becomes that text; an overlong text is cut to maxLength."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and "maxLength" in schema:
        return value[: schema["maxLength"]]
    return value


def _coerce_array(value: Any, schema: dict[str, Any], root: dict[str, Any]) -> list[Any]:
    """A single value becomes a list of one; each item is coerced; too many are dropped."""
    if not isinstance(value, list):
        value = [value]
    items = schema.get("items", {})
    value = [coerce(v, items, root) for v in value]
    if "maxItems" in schema:
        value = value[: schema["maxItems"]]
    return value


def _coerce_object(value: dict[str, Any], schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """Keys matched whatever their case, each field coerced, unknown keys dropped when forbidden."""
    props = schema.get("properties", {})
    out = dict(value)
    # Keys in another case ("Importance") are common with tiny models.
    lowered = {k.lower(): k for k in out}
    for name, sub in props.items():
        if name not in out and name.lower() in lowered:
            out[name] = out.pop(lowered[name.lower()])
        if name in out:
            out[name] = coerce(out[name], sub, root)
    if schema.get("additionalProperties") is False:
        out = {k: v for k, v in out.items() if k in props}
    return out


def coerce(value: Any, schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """Nudge ``value`` towards ``schema``: clamp numbers, snap enums, unwrap, fill lists."""
    schema = _resolve(schema, root)
    for key in ("anyOf", "oneOf"):
        if key in schema and value is not None:
            options = [_resolve(s, root) for s in schema[key] if s.get("type") != "null"]
            if len(options) == 1:
                return coerce(value, options[0], root)
            return value
    if "enum" in schema and isinstance(value, str):
        return _closest(value, schema["enum"])
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind in ("integer", "number"):
        return _coerce_number(value, schema, kind)
    if kind == "string":
        return _coerce_string(value, schema)
    if kind == "array":
        return _coerce_array(value, schema, root)
    if kind == "object" and isinstance(value, dict):
        return _coerce_object(value, schema, root)
    return value


def parse_answer(text: str, schema: type[T]) -> T:
    """Validate ``text`` as ``schema``; repair on the way. Raises RepairError."""
    if not text or not text.strip():
        raise RepairError("empty answer")
    json_schema = json_schema_of(schema)
    try:
        data = loads_lenient(text)
    except RepairError:
        props = list(json_schema.get("properties", {}))
        if len(props) != 1:
            raise
        only = _resolve(json_schema["properties"][props[0]], json_schema)
        if "{" in text and only.get("type") == "string" and "enum" not in only:
            # A broken JSON object is not a bare answer: as free text it would carry the
            # model's debris (braces, key names) into the simulation.
            raise
        # A one-field schema answered with a bare value ("7" for importance).
        data = {props[0]: text.strip().strip('"')}
    if isinstance(data, list) and json_schema.get("type") == "object":
        props = json_schema.get("properties", {})
        list_fields = [k for k, v in props.items() if _resolve(v, json_schema).get("type") == "array"]
        if len(list_fields) == 1:
            data = {list_fields[0]: data}
    data = coerce(data, json_schema, json_schema)
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "answer"
        raise RepairError(f"{where}: {first.get('msg', 'invalid')}") from None
