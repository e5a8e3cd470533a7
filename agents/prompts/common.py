"""Small helpers shared by the resident prompt modules: labelled facts and enum schemas.

Prompts open with 'Key: value' lines. Models read them as plain context; the scripted
responders read them back with :func:`fact`, so a scripted town follows its personas.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

SYSTEM = (
    "You are the mind of a resident of a small town simulation. "
    "Answer with one JSON object that fits the requested fields, nothing else."
)


def facts(**items: Any) -> str:
    """'Key: value' lines, one per item, keys written with spaces."""
    return "\n".join(f"{k.replace('_', ' ').capitalize()}: {v}" for k, v in items.items() if v not in (None, ""))


def fact(text: str, key: str, default: str = "") -> str:
    match = re.search(rf"^{re.escape(key)}: (.*)$", text, re.MULTILINE | re.IGNORECASE)
    return match.group(1).strip() if match else default


def section(text: str, title: str) -> list[str]:
    """The '- ' lines under a 'Title:' line, up to the next blank line."""
    lines = text.splitlines()
    out: list[str] = []
    inside = False
    for line in lines:
        if line.strip().lower() == f"{title.lower()}:":
            inside = True
            continue
        if inside:
            stripped = line.strip()
            if not stripped or (stripped.endswith(":") and not stripped.startswith("- ")):
                break  # a blank line or the next heading ends the section
            if stripped.startswith("- "):
                out.append(stripped[2:].strip())
    return out


def bullet(lines: list[str], empty: str = "(none)") -> str:
    return "\n".join(f"- {line}" for line in lines) if lines else f"- {empty}"


def messages(user: str, system: str = SYSTEM) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


@lru_cache(maxsize=256)
def choice_type(options: tuple[str, ...]) -> Any:
    """A Literal over the options (an enum in the JSON schema)."""
    if not options:
        raise ValueError("an enumeration needs at least one option")
    return Literal[options]  # type: ignore[valid-type]


def short_text(max_length: int = 160, description: str = "") -> Any:
    return Field(max_length=max_length, description=description)


def make_model(name: str, **fields: Any) -> type[BaseModel]:
    return create_model(name, **fields)  # type: ignore[call-overload]
