"""Summary values as words for a terminal: no Python dicts or lists in what a user reads."""

from __future__ import annotations

from typing import Any

LIMIT = 400  # characters of one printed value; the JSON (--json) keeps everything


def readable(value: Any, limit: int = LIMIT) -> str:
    """``{'status': 'ok', 'reasons': []}`` -> 'ok'; ``{'score': 1.0, 'judged': 2}`` -> '1.0 (2 judged)';
    other dicts 'key value, key value' (empty parts left out), lists 'a, b, c'."""
    text = _words(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _words(value: Any) -> str:
    if isinstance(value, dict):
        return _dict_words(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(_words(v) for v in value) if value else "none"
    if isinstance(value, float):
        return f"{value:.4g}"
    return "none" if value is None else str(value)


def _dict_words(value: dict[str, Any]) -> str:
    if "status" in value and "reasons" in value:
        reasons = value.get("reasons") or []
        return str(value["status"]) + (f" ({'; '.join(map(str, reasons))})" if reasons else "")
    if "score" in value and "judged" in value:
        return f"{_words(value['score'])} ({value['judged']} judged)"
    if {"run", "tick"} <= set(value):  # forked_from
        return f"{value['run']} at tick {value['tick']}" + (f" ({value['time']})" if value.get("time") else "")
    parts = [f"{k} {_words(v)}" for k, v in value.items() if v not in (None, [], {}, "")]
    return ", ".join(parts) if parts else "none"
