"""GBNF grammars from pydantic schemas, for decoding the local model under constraint.

A 135M/270M model cannot be trusted to write JSON, pick a place from a list or stay inside
1..10 on its own; under a grammar it cannot do otherwise. llama.cpp's bundled converter
(``LlamaGrammar.from_json_schema``) ignores integer bounds and leaves free text unbounded
(a small model then rambles until max_tokens and the JSON never closes), so this module
writes the grammar itself for the subset of JSON schema our pydantic models produce:
objects (every property written, in declaration order), enums/Literals, consts, bounded
integers, numbers, booleans, strings with a length cap, lists with their item bounds, tuples,
nullable fields and ``$ref``. Anything else degrades to a generic JSON value, and the
gateway's validation still has the last word.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from agents.llm.schemas import CHARS, FIRST_CHAR, ONE_OF, OPENING, SLOTS, WORDS, json_schema_of

# Caps that keep a small model from running away; validation still applies the schema's own.
DEFAULT_MAX_STRING = 240
DEFAULT_MAX_ITEMS = 32  # for lists without maxItems: room for any batch, not for a runaway
ENUMERATE_INT_RANGE = 200  # integer ranges up to this size become explicit alternatives

_PRIMITIVES = {
    "char": r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    "boolean": '("true" | "false")',
    "null": '"null"',
    "integer": '"-"? ([0-9] | [1-9] [0-9]{0,15})',
    "number": '"-"? ([0-9] | [1-9] [0-9]{0,15}) ("." [0-9]{1,6})?',
    "string": '"\\"" char{0,%d} "\\""' % DEFAULT_MAX_STRING,
    "value": 'object | array | string | number | boolean | null',
    "object": '"{" (string ":" value ("," string ":" value){0,15})? "}"',
    "array": '"[" (value ("," value){0,15})? "]"',
}
_PRIMITIVE_DEPS = {
    "string": ["char"],
    "value": ["object", "array", "string", "number", "boolean", "null"],
    "object": ["string", "value"],
    "array": ["value"],
}

_BAD_NAME = re.compile(r"[^a-zA-Z0-9-]+")
_CHAR_CLASS = re.compile(r"\[\^?[a-zA-Z0-9\u00c0-\u00ff _,.'-]+\]")


class GrammarError(ValueError):
    """The schema uses something this converter cannot express."""


def _literal(value: Any, *, quoted: bool = True) -> str:
    """A GBNF string literal matching the JSON encoding of ``value`` (a string's without its
    quotes when not ``quoted``: the start of a longer JSON string)."""
    text = json.dumps(value, ensure_ascii=False)
    if not quoted and isinstance(value, str):
        text = text[1:-1]
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def _int_range_rule(low: int | None, high: int | None) -> str | None:
    if low is not None and high is not None and 0 <= high - low <= ENUMERATE_INT_RANGE:
        # Longest spelling first is not needed for a grammar, but keeps it readable.
        return "(" + " | ".join(f'"{n}"' for n in range(low, high + 1)) + ")"
    if low is not None and low >= 0:
        return "([0-9] | [1-9] [0-9]{0,15})"
    return None


def integer_bounds(schema: dict[str, Any]) -> tuple[int | None, int | None]:
    """An integer schema's inclusive (low, high); exclusive bounds moved in by one, None if unbounded."""
    low = schema.get("minimum")
    if low is None and "exclusiveMinimum" in schema:
        low = int(schema["exclusiveMinimum"]) + 1
    high = schema.get("maximum")
    if high is None and "exclusiveMaximum" in schema:
        high = int(schema["exclusiveMaximum"]) - 1
    return (None if low is None else int(low)), (None if high is None else int(high))


class _Converter:
    def __init__(self, root: dict[str, Any]):
        self.root = root
        self.rules: dict[str, str] = {}
        self._ref_names: dict[str, str] = {}

    # -- bookkeeping -------------------------------------------------------------------

    def add(self, name: str, body: str) -> str:
        name = _BAD_NAME.sub("-", name).strip("-") or "anon"
        base, i = name, 1
        while name in self.rules and self.rules[name] != body:
            i += 1
            name = f"{base}{i}"
        self.rules[name] = body
        return name

    def primitive(self, name: str) -> str:
        if name not in self.rules:
            self.rules[name] = _PRIMITIVES[name]
            for dep in _PRIMITIVE_DEPS.get(name, []):
                self.primitive(dep)
        return name

    def resolve(self, ref: str) -> dict[str, Any]:
        if not ref.startswith("#/"):
            raise GrammarError(f"only local $ref is supported, got {ref!r}")
        node: Any = self.root
        for part in ref[2:].split("/"):
            node = node[part]
        return node

    # -- schema walk -------------------------------------------------------------------

    def visit(self, schema: dict[str, Any], name: str) -> str:
        """Return a rule name (or inline expression) that matches ``schema``."""
        if "$ref" in schema:
            return self.ref_rule(schema["$ref"])
        if "const" in schema:
            return self.add(name, _literal(schema["const"]))
        if "enum" in schema:
            return self.add(name, " | ".join(_literal(v) for v in schema["enum"]))
        for key in ("anyOf", "oneOf"):
            if key in schema:
                parts = [self.visit(s, f"{name}-{i}") for i, s in enumerate(schema[key])]
                return self.add(name, " | ".join(parts))
        if "allOf" in schema and len(schema["allOf"]) == 1:
            return self.visit(schema["allOf"][0], name)
        kind = schema.get("type")
        if isinstance(kind, list):
            parts = [self.visit({**schema, "type": k}, f"{name}-{k}") for k in kind]
            return self.add(name, " | ".join(parts))
        if kind == "object" or "properties" in schema:
            return self.object_rule(schema, name)
        if kind == "array":
            return self.array_rule(schema, name)
        if kind == "string":
            return self.string_rule(schema, name)
        if kind == "integer":
            return self.integer_rule(schema, name)
        if kind == "number":
            return self.number_rule(schema, name)
        if kind in ("boolean", "null"):
            return self.primitive(kind)
        if not schema or kind is None:
            return self.primitive("value")
        raise GrammarError(f"unsupported schema type {kind!r}")

    def ref_rule(self, ref: str) -> str:
        """One rule per ``$ref``, named for its definition (named first, so recursion ends)."""
        if ref not in self._ref_names:
            self._ref_names[ref] = f"ref-{ref.split('/')[-1]}"
            body = self.visit(self.resolve(ref), self._ref_names[ref] + "-body")
            self._ref_names[ref] = self.add(self._ref_names[ref], body)
        return self._ref_names[ref]

    def integer_rule(self, schema: dict[str, Any], name: str) -> str:
        """A bounded range spelled out (a small model cannot overshoot 1..10), else any integer."""
        body = _int_range_rule(*integer_bounds(schema))
        return self.add(name, body) if body else self.primitive("integer")

    def number_rule(self, schema: dict[str, Any], name: str) -> str:
        """A non-negative number (one digit before the point when the maximum is below 10)."""
        if schema.get("minimum", schema.get("exclusiveMinimum", -1)) >= 0:
            high = schema.get("maximum")
            whole = f"[0-{int(high)}]" if high is not None and high < 10 else "([0-9] | [1-9] [0-9]{0,15})"
            return self.add(name, whole + ' ("." [0-9]{1,6})?')
        return self.primitive("number")

    def object_rule(self, schema: dict[str, Any], name: str) -> str:
        props: dict[str, Any] = schema.get("properties", {})
        if not props:
            return self.primitive("object")
        # Every property is written, in declaration order: a small model does better with one
        # fixed shape than with optional keys, and pydantic accepts explicit defaults.
        parts = []
        for key, sub in props.items():
            value_rule = self.visit(sub, f"{name}-{key}")
            parts.append(f'{_literal(key)} ":" {value_rule}')
        body = '"{" ' + ' "," '.join(parts) + ' "}"'
        return self.add(name or "root", body)

    def array_rule(self, schema: dict[str, Any], name: str) -> str:
        sep = '","'
        prefix = schema.get("prefixItems")
        if prefix:
            items = [self.visit(s, f"{name}-{i}") for i, s in enumerate(prefix)]
            return self.add(name, '"[" ' + f" {sep} ".join(items) + ' "]"')
        slots = schema.get(SLOTS)
        if slots:
            items = [self.visit(self.slot_item(schema.get("items", {}), slot), f"{name}-slot{i}")
                     for i, slot in enumerate(slots)]
            return self.add(name, '"[" ' + f" {sep} ".join(items) + ' "]"')
        item = self.visit(schema.get("items", {}), f"{name}-item")
        low = int(schema.get("minItems", 0))
        high = int(schema.get("maxItems", max(low, DEFAULT_MAX_ITEMS)))
        if high == 0:
            return self.add(name, '"[" "]"')
        if low == 0:
            inner = f"({item} ({sep} {item}){{0,{high - 1}}})?"
        else:
            inner = f"{item} ({sep} {item}){{{low - 1},{high - 1}}}"
        return self.add(name, f'"[" {inner} "]"')

    def slot_item(self, items: dict[str, Any], slot: Any) -> dict[str, Any]:
        """The array's item schema with each field the ``slot`` names narrowed to its values
        (:data:`SLOTS`)."""
        item = self.resolve(items["$ref"]) if "$ref" in items else items
        props = dict(item.get("properties") or {})
        if not isinstance(slot, dict) or not all(k in props and isinstance(v, list) and v for k, v in slot.items()):
            raise GrammarError(f"{SLOTS} slots map the item's fields to lists of values, got {slot!r}")
        for key, values in slot.items():
            props[key] = {**props[key], ONE_OF: values}
        return {**item, "properties": props}

    def string_rule(self, schema: dict[str, Any], name: str) -> str:
        """A string of bounded length; the grammar-only hints (agents/llm/schemas.py) narrow it
        to one of a few values (:data:`ONE_OF`), to one of a few openings (:data:`OPENING`) or to
        a character class (:data:`FIRST_CHAR` for the first character, :data:`CHARS` for every
        other). ``pattern``/``format`` are not expressed: the gateway's validation judges them."""
        choices = schema.get(ONE_OF)
        if choices:
            return self.add(name, " | ".join(_literal(str(v)) for v in choices))
        low = int(schema.get("minLength", 0))
        high = int(schema.get("maxLength", max(low, DEFAULT_MAX_STRING)))
        openings = [str(v) for v in schema.get(OPENING) or ()]
        if openings:  # the rest may be as long as the longest opening leaves
            rest = max(high - max(len(o) for o in openings), 0)
            alternatives = " | ".join(_literal(o, quoted=False) for o in openings)
            self.primitive("char")
            return self.add(name, f'"\\"" ({alternatives}) char{{0,{rest}}} "\\""')
        if schema.get(WORDS):
            return self.words_rule(schema[WORDS], high, name)
        first, chars = schema.get(FIRST_CHAR), schema.get(CHARS)
        for key, value in ((FIRST_CHAR, first), (CHARS, chars)):
            if value is not None and not _CHAR_CLASS.fullmatch(value):
                raise GrammarError(f"{key} must be a character class like [a-z], got {value!r}")
        if (first or chars) and high >= 1:
            rest = chars or self.primitive("char")
            body = f"{first or chars} {rest}{{{max(low - 1, 0)},{high - 1}}}"
            return self.add(name, f'"\\"" ({body}){"?" if low == 0 else ""} "\\""')
        self.primitive("char")
        if low == 0 and high == DEFAULT_MAX_STRING:
            return self.primitive("string")
        return self.add(name, f'"\\"" char{{{low},{high}}} "\\""')


    def words_rule(self, hint: Any, high: int, name: str) -> str:
        """Plain words (:data:`WORDS`): as many as ``high`` characters hold at eight a word."""
        try:
            least, longest = int(hint["min"]), int(hint["longest"])
        except (TypeError, KeyError, ValueError) as exc:
            raise GrammarError(f"{WORDS} must be {{'min': n, 'longest': n}}, got {hint!r}") from exc
        if least < 1 or longest < 2:
            raise GrammarError(f"{WORDS} needs min >= 1 and longest >= 2, got {hint!r}")
        most = max(least, high // 8)
        word = self.add(f"word{longest}", f"[a-zA-Z] [a-z\u00e0-\u00ff']{{0,{longest - 1}}}")
        return self.add(name, f'"\\"" {word} ((" " | ", ") {word}){{{least - 1},{most - 1}}} "\\""')


def schema_to_gbnf(json_schema: dict[str, Any]) -> str:
    """GBNF text for a JSON schema (as produced by pydantic's model_json_schema)."""
    converter = _Converter(json_schema)
    top = converter.visit(json_schema, "root")
    if top != "root":
        converter.rules["root"] = top
    ordered = ["root"] + sorted(k for k in converter.rules if k != "root")
    return "\n".join(f"{k} ::= {converter.rules[k]}" for k in ordered) + "\n"


@lru_cache(maxsize=256)
def _cached(schema_json: str) -> str:
    return schema_to_gbnf(json.loads(schema_json))


def grammar_for(schema: type[BaseModel] | dict[str, Any]) -> str:
    """GBNF for a pydantic model class or a JSON schema dict (memoised)."""
    json_schema = json_schema_of(schema, for_grammar=True) if isinstance(schema, type) else schema
    return _cached(json.dumps(json_schema))
