"""The JSON schema sent to a server that turns it into a decoding grammar (llama.cpp's).

llama-cpp-python's server (``python -m llama_cpp.server``) takes ``response_format:
{"type": "json_object", "schema": {...}}`` and decodes under a grammar built from the
schema by llama.cpp's converter. That converter leaves free text and lists unbounded (a
small model then rambles until max_tokens and the JSON never closes), ignores integer
bounds and lets optional keys be skipped. So the schema sent is the pydantic one tightened
the way agents/llm/grammar.py tightens the embedded model's grammar: strings and lists
capped, small integer ranges spelled out as enums, every property required (pydantic
accepts explicit defaults). Validation against the real schema still has the last word.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

from pydantic import BaseModel

from agents.llm.grammar import DEFAULT_MAX_ITEMS, DEFAULT_MAX_STRING, ENUMERATE_INT_RANGE, integer_bounds
from agents.llm.schemas import json_schema_of

_CACHE: dict[type[BaseModel], dict[str, Any]] = {}
_LOCK = threading.Lock()
_NESTED_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_NESTED_MAPS = ("properties", "$defs", "definitions")


def bounded_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The tightened JSON schema of ``schema`` (memoised per class; treat as read-only)."""
    cached = _CACHE.get(schema)
    if cached is None:
        cached = tighten(copy.deepcopy(json_schema_of(schema)))
        with _LOCK:
            _CACHE[schema] = cached
    return cached


def tighten(node: Any) -> Any:
    """``node`` (a JSON schema, modified in place) with the caps above; returned for chaining."""
    if not isinstance(node, dict):
        return node
    for key in _NESTED_LISTS:
        for sub in node.get(key) or []:
            tighten(sub)
    for key in _NESTED_MAPS:
        for sub in (node.get(key) or {}).values():
            tighten(sub)
    for key in ("items", "additionalProperties"):
        tighten(node.get(key))
    kind = node.get("type")
    if kind == "string":
        _cap_string(node)
    elif kind == "array" and "items" in node and "maxItems" not in node:
        node["maxItems"] = max(int(node.get("minItems", 0)), DEFAULT_MAX_ITEMS)
    elif kind == "integer":
        _enumerate_integers(node)
    if node.get("properties"):
        node["required"] = list(node["properties"])
    return node


def _cap_string(node: dict[str, Any]) -> None:
    if "maxLength" in node or any(k in node for k in ("enum", "const", "pattern", "format")):
        return
    node["maxLength"] = max(int(node.get("minLength", 0)), DEFAULT_MAX_STRING)


def _enumerate_integers(node: dict[str, Any]) -> None:
    """A small bounded range becomes an enum: the converter ignores minimum/maximum."""
    if "enum" in node or "const" in node:
        return
    low, high = integer_bounds(node)
    if low is not None and high is not None and 0 <= high - low <= ENUMERATE_INT_RANGE:
        node["enum"] = list(range(low, high + 1))
