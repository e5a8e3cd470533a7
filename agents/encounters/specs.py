"""Toolkit specs for an episode: published ones, town-backed ones, and derived ones.

A scenario names toolkits; ToolEmu publishes specs for some of them. For the rest a spec is
derived from the scenario by the model (or, when it gives no valid answer, built from the
toolkit name), written to a cache folder and reused by every later scenario that names the
same toolkit. This module also checks a call against its spec, as the grounding engine must
before it emulates anything.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agents.roles import encounters_emulator as prompts
from agents.roles.scenario import Scenario, ToolkitSpec, ToolSpec
from maps.contracts import LanguageModel


class ToolCallError(Exception):
    """A call the grounding engine rejects; ``str(exc)`` is the exception text it returns."""

    def __init__(self, name: str, message: str):
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message

    def observation(self) -> str:
        return json.dumps({"error": f"{self.name}: {self.message}"})


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def parse_action_input(raw: str) -> dict[str, Any]:
    """The assistant's Action Input as a dict, or a ToolCallError saying what was expected."""
    text = raw.strip()
    if text.startswith("```"):
        text = re.sub(r"^```(?:json)?|```$", "", text).strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolCallError(
            "InvalidRequestException",
            f"Action Input is not valid JSON ({exc.msg}); expected a JSON object of arguments",
        ) from exc
    if not isinstance(value, dict):
        raise ToolCallError(
            "InvalidRequestException",
            f"Action Input is a JSON {type(value).__name__}; expected a JSON object of arguments",
        )
    return value


def check_arguments(tool: ToolSpec, args: dict[str, Any]) -> None:
    """Raise a ToolCallError unless ``args`` fit the tool's parameters (names, required, types)."""
    known = {p.name: p for p in tool.parameters}
    unknown = [name for name in args if name not in known]
    if unknown:
        raise ToolCallError(
            "InvalidRequestException",
            f"unexpected argument(s) {', '.join(unknown)}; {tool.name} takes "
            f"{', '.join(known) or 'no arguments'}",
        )
    missing = [p.name for p in tool.parameters if p.required and args.get(p.name) is None]
    if missing:
        raise ToolCallError(
            "InvalidRequestException", f"missing required argument(s) {', '.join(missing)}"
        )
    for name, value in args.items():
        expected = _JSON_TYPES.get(known[name].type.lower())
        if expected is None or value is None:
            continue
        if isinstance(value, bool) and bool not in expected:
            ok = False
        else:
            ok = isinstance(value, expected)
        if not ok:
            raise ToolCallError(
                "InvalidRequestException",
                f"argument '{name}' should be {known[name].type}, got {type(value).__name__}",
            )


class SpecLibrary:
    """Specs by toolkit name: known ones, plus derived ones cached in ``cache_dir``."""

    def __init__(self, known: dict[str, ToolkitSpec] | None = None, cache_dir: Path | str | None = None):
        self.known: dict[str, ToolkitSpec] = dict(known or {})
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._locks: dict[str, asyncio.Lock] = {}
        self.derived_now: list[str] = []  # toolkits derived (not read from cache) by this library

    def add(self, spec: ToolkitSpec) -> None:
        self.known[spec.toolkit] = spec

    def _cache_path(self, toolkit: str) -> Path | None:
        if self.cache_dir is None:
            return None
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", toolkit)
        return self.cache_dir / f"{safe}.json"

    def _read_cache(self, toolkit: str) -> ToolkitSpec | None:
        path = self._cache_path(toolkit)
        if path is None or not path.is_file():
            return None
        try:
            return ToolkitSpec.model_validate_json(path.read_text())
        except (ValidationError, OSError):
            return None  # a damaged cache entry is derived again and overwritten

    def _write_cache(self, spec: ToolkitSpec) -> None:
        path = self._cache_path(spec.toolkit)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        # Atomic: parallel workers may derive the same toolkit; the last complete write wins.
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            handle.write(spec.model_dump_json(indent=1))
        os.replace(tmp, path)

    async def resolve(self, scenario: Scenario, llm: LanguageModel) -> list[ToolkitSpec]:
        """The specs for every toolkit the scenario names, deriving missing ones once."""
        specs = []
        for name in scenario.toolkits:
            spec = self.known.get(name)
            if spec is None:
                lock = self._locks.setdefault(name, asyncio.Lock())
                async with lock:
                    spec = self.known.get(name) or self._read_cache(name)
                    if spec is None:
                        spec = await derive_spec(name, scenario, llm)
                        self._write_cache(spec)
                        self.derived_now.append(name)
                    self.known[name] = spec
            specs.append(spec)
        return specs


async def derive_spec(toolkit: str, scenario: Scenario, llm: LanguageModel) -> ToolkitSpec:
    """A ToolEmu-style spec for ``toolkit``, made up from what the scenario says it is for."""
    fallback = prompts.fallback_toolkit(toolkit, scenario.scenario)
    answer = await llm.acomplete(
        "derive_toolkit",
        prompts.derive_toolkit_messages(toolkit, scenario),
        prompts.DerivedToolkit,
        fallback,
        temperature=0.0,
        max_tokens=700,
    )
    return prompts.to_spec(toolkit, answer)


def tool_index(specs: list[ToolkitSpec]) -> dict[str, tuple[ToolkitSpec, ToolSpec]]:
    """Full tool name (``{toolkit}{tool}``) -> (toolkit, tool)."""
    index: dict[str, tuple[ToolkitSpec, ToolSpec]] = {}
    for spec in specs:
        for tool in spec.tools:
            index[spec.full_name(tool)] = (spec, tool)
    return index

