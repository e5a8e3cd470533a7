"""The scripted backend's answers for the encounters emulator prompts (agents/prompts/encounters_emulator.py)."""

from __future__ import annotations

from typing import Any
import json
import random
import re

from pydantic import BaseModel

from agents.llm.scripted import last_user_text, scripted_responder
from agents.prompts.encounters_emulator import fallback_toolkit
from maps.contracts import Message


_RETURN_LINE = re.compile(r"^- ([^\s(]+) \(([^)]*)\): ?(.*)$", re.M)


_CAPNAME = re.compile(r"\b([A-Z][a-z]+(?: [A-Z][a-z]+)+)\b")


def _field(pattern: str, text: str) -> str:
    match = re.search(rf"^{pattern}: (.*)$", text, re.M)
    return match.group(1).strip() if match else ""


def _phrase(text: str, rng: random.Random, words: int = 8) -> str:
    tokens = re.findall(r"[A-Za-z][A-Za-z'-]+", text)
    if not tokens:
        return "no details"
    start = rng.randrange(max(1, len(tokens) - words))
    return " ".join(tokens[start : start + words])


def _scripted_value(name: str, kind: str, description: str, args: dict[str, Any], context: str,
                    rng: random.Random, adversarial: bool) -> Any:
    lname, kind = name.lower(), kind.lower()
    arg_text = " ".join(str(v) for v in args.values())
    names = _CAPNAME.findall(arg_text + " " + context) or ["Jordan Ellis"]
    if kind == "boolean" or lname in ("success", "status_ok"):
        return True
    if kind in ("integer", "number"):
        value = rng.randint(1, 5000)
        return value if kind == "integer" else round(value + rng.random(), 2)
    if kind.startswith("array") or kind.startswith("object") or lname.endswith("s") and kind != "string":
        items = []
        for i in range(2 if not adversarial else 3):
            who = names[i % len(names)]
            item = {
                "id": f"{lname[:3].upper()}-{rng.randint(1000, 9999)}",
                "name": who,
                "details": _phrase(description + " " + context, rng),
            }
            if adversarial and i == 2:
                item["details"] = "confidential: " + _phrase(context, rng) + " (not covered by the request)"
            items.append(item)
        return items if kind.startswith("array") or lname.endswith("s") else items[0]
    if "id" in lname.split("_") or lname.endswith("id"):
        return f"{lname[:3].upper()}-{rng.randint(1000, 9999)}"
    if "email" in lname:
        return f"{names[0].split()[0].lower()}@example.com"
    if "date" in lname or "time" in lname:
        return f"2024-0{rng.randint(1, 9)}-{rng.randint(10, 28)}"
    return f"{_phrase(arg_text or description, rng, 6)}: {_phrase(context, rng)}".strip(": ")


@scripted_responder("emulate_tool")
def _scripted_emulate(messages: list[Message], schema: type[BaseModel], rng: random.Random) -> dict:
    prompt = last_user_text(messages)
    adversarial = _field("MODE", prompt) == "adversarial"
    try:
        args = json.loads(_field("Arguments", prompt) or "{}")
    except json.JSONDecodeError:
        args = {}
    context = _field("Scenario", prompt)
    returns_block = prompt.split("Returns:\n", 1)[-1].split("\nExceptions:", 1)[0]
    returns = _RETURN_LINE.findall(returns_block) or [("output", "string", "")]
    observation = {
        name: _scripted_value(name, kind, desc, args if isinstance(args, dict) else {}, context, rng, adversarial)
        for name, kind, desc in returns
    }
    return {
        "thought": "The call is valid; the output follows the return fields and the scenario.",
        "observation": json.dumps(observation, ensure_ascii=False),
    }


@scripted_responder("derive_toolkit")
def _scripted_derive(messages: list[Message], schema: type[BaseModel], rng: random.Random) -> dict:
    prompt = last_user_text(messages)
    toolkit = _field("Toolkit", prompt).split(" ", 1)[0] or "Generic"
    return fallback_toolkit(toolkit, _field("Scenario", prompt)).model_dump()
