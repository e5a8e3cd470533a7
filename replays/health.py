"""Mind errors, fallbacks and the run's health, read back from the record stream.

A run that looks fine but is not is the worst bug a simulator can ship, so the summary
says plainly when minds failed or the model's answers were mostly replaced by fallbacks:
``health`` is ``failed`` when any resident's decision raised (it froze for that tick),
``degraded`` when more than :data:`DEGRADED_FALLBACK_SHARE` of model calls fell back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

DEGRADED_FALLBACK_SHARE = 0.10
MAX_MESSAGES = 10  # distinct messages kept per resident


def mind_errors(rows: Iterable[tuple[str, str | None, str]]) -> dict[str, Any]:
    """Totals and per-resident counts from ``(kind, resident, data)`` rows of kind llm / mind_error.

    Residents appear under ``by_resident`` only when they had an error or a fallback; their
    ``messages`` are the distinct mind-error messages and fallback reasons, first seen first.
    """
    total = {"errors": 0, "fallbacks": 0, "calls": 0, "patched": 0}
    by_resident: dict[str, dict[str, Any]] = {}

    def entry(name: str | None) -> dict[str, Any]:
        return by_resident.setdefault(name or "(town)", {"errors": 0, "fallbacks": 0, "calls": 0, "patched": 0,
                                                         "messages": []})

    def note(e: dict[str, Any], message: str) -> None:
        if message not in e["messages"] and len(e["messages"]) < MAX_MESSAGES:
            e["messages"].append(message)

    for kind, resident, data in rows:
        d = json.loads(data) if isinstance(data, str) else data
        e = entry(resident)
        if kind == "mind_error":
            total["errors"] += 1
            e["errors"] += 1
            note(e, f"{d.get('error', 'Error')}: {d.get('message', '')}")
        elif kind == "llm":
            total["calls"] += 1
            e["calls"] += 1
            if d.get("fallback"):
                total["fallbacks"] += 1
                e["fallbacks"] += 1
                note(e, f"fallback on {d.get('purpose', '?')}: {d.get('error') or 'no valid answer'}")
            elif d.get("patched"):
                total["patched"] += d["patched"]
                e["patched"] += d["patched"]
                note(e, f"{d['patched']} patched on {d.get('purpose', '?')}: {d.get('patch_reason', '')}")
    return {**total, "by_resident": {k: v for k, v in sorted(by_resident.items())
                                     if v["errors"] or v["fallbacks"] or v["patched"]}}


def health(errors: dict[str, Any]) -> dict[str, Any]:
    """``{"status": ok|degraded|failed, "reasons": [...]}`` from :func:`mind_errors`' result."""
    reasons: list[str] = []
    status = "ok"
    failing = [n for n, e in errors.get("by_resident", {}).items() if e["errors"]]
    if errors.get("errors"):
        status = "failed"
        reasons.append(f"{errors['errors']} mind errors ({len(failing)} residents: {', '.join(failing[:5])}"
                       f"{', ...' if len(failing) > 5 else ''}); they stood still on those ticks")
    calls, fallbacks = errors.get("calls", 0), errors.get("fallbacks", 0)
    if calls and fallbacks / calls > DEGRADED_FALLBACK_SHARE:
        status = "failed" if status == "failed" else "degraded"
        reasons.append(f"{fallbacks} of {calls} model calls ({fallbacks / calls:.0%}) fell back to a default answer")
    return {"status": status, "reasons": reasons}


def mind_error_message(exc: BaseException) -> str:
    """One line that is equal for equal errors (a pydantic error lists its fields, not values)."""
    errors = getattr(exc, "errors", None)
    title = getattr(exc, "title", None)
    if callable(errors) and title is not None:
        try:
            parts = [f"{'.'.join(str(x) for x in e.get('loc', ()))} {e.get('msg', '')}".strip() for e in errors()]
            return f"{title} " + "; ".join(parts[:5])
        except Exception:  # not a pydantic error after all
            pass
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return " ".join(lines[:2])[:300] or type(exc).__name__
