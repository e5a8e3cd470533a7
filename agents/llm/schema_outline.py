"""A short outline of a JSON schema for the prompt, when a grammar already enforces the schema.

A server of one's own (llama_cpp.server) decodes under a grammar built from the schema it is
sent, so the model cannot write the wrong shape; the prompt only has to say what each key is
for. The full JSON schema in the prompt (``$defs``, ``title``s, ``anyOf`` nests) was 460-1,100
tokens a call, most of a small model's prompt and of its time. The outline keeps what a model
reads for meaning: the keys in order, their types, choices, bounds and descriptions::

    {"currently": text up to 200 chars (one sentence: ...), "parts": list (exactly 4) of text up to 80 chars (...)}

Servers that only promise JSON (no schema) still get the full schema (agents/llm/remote.py).
"""

from __future__ import annotations

import json
from typing import Any

MAX_CHOICES = 40  # choices listed in full up to this many (places, names); then the first ones and a count


def outline(schema: dict[str, Any]) -> str:
    """The outline of ``schema`` (a pydantic JSON schema, with its ``$defs``)."""
    return _node(schema, schema.get("$defs", {}))


def outline_instruction(schema: dict[str, Any]) -> str:
    """The prompt's instruction for a call whose shape a grammar enforces."""
    return "Reply with one JSON object only, no prose, of this shape:\n" + outline(schema)


def _node(node: dict[str, Any], defs: dict[str, Any]) -> str:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _node({**defs.get(ref.rsplit("/", 1)[-1], {}), **{k: v for k, v in node.items() if k != "$ref"}}, defs)
    for key in ("anyOf", "oneOf"):
        options = [o for o in node.get(key) or [] if o.get("type") != "null"]
        if options:
            nullable = len(options) < len(node[key])
            text = " or ".join(_node(o, defs) for o in options)
            return text + (" or null" if nullable else "")
    if "enum" in node or "const" in node:
        return _choices(node.get("enum", [node.get("const")]))
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        return _object(node, defs)
    if kind == "array":
        return _array(node, defs)
    return _scalar(node, kind)


def _object(node: dict[str, Any], defs: dict[str, Any]) -> str:
    fields = []
    for name, sub in (node.get("properties") or {}).items():
        text = _node(sub, defs)
        description = sub.get("description") or _described(sub, defs)
        fields.append(f"{json.dumps(name)}: {text}" + (f" ({description})" if description else ""))
    return "{" + ", ".join(fields) + "}"


def _described(node: dict[str, Any], defs: dict[str, Any]) -> str:
    ref = node.get("$ref")
    if isinstance(ref, str):
        return str(defs.get(ref.rsplit("/", 1)[-1], {}).get("description", "") or "")
    return ""


def _array(node: dict[str, Any], defs: dict[str, Any]) -> str:
    low, high = node.get("minItems"), node.get("maxItems")
    if low is not None and low == high:
        count = f"exactly {low}"
    elif low or high is not None:
        count = f"{low or 0} to {high}" if high is not None else f"at least {low}"
    else:
        count = ""
    items = _node(node.get("items") or {}, defs)
    return f"list ({count}) of {items}" if count else f"list of {items}"


def _scalar(node: dict[str, Any], kind: Any) -> str:
    if kind == "string":
        limit = node.get("maxLength")
        return f"text up to {limit} chars" if limit is not None else "text"
    if kind in ("integer", "number"):
        low, high = node.get("minimum"), node.get("maximum")
        word = "whole number" if kind == "integer" else "number"
        if low is not None and high is not None:
            return f"{word} {low} to {high}"
        if low is not None:
            return f"{word} >= {low}"
        if high is not None:
            return f"{word} <= {high}"
        return word
    if kind == "boolean":
        return "true or false"
    return str(kind or "any value")


def _choices(values: list[Any]) -> str:
    shown = [json.dumps(v, ensure_ascii=False) for v in values[:MAX_CHOICES]]
    more = f" | ... ({len(values) - MAX_CHOICES} more)" if len(values) > MAX_CHOICES else ""
    return "one of " + " | ".join(shown) + more
