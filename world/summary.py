"""The run summary (``run``, ``watch``, ``replay --summary``, run-many's table).

Assembled here, above the layers it draws from: counts and the records digest from the run
file (memory.runfile), mind errors and health (replays.health), leaked facts (replays.leaks)
and the believability checks (agents.believability).
"""

from __future__ import annotations

from typing import Any

from agents.believability import summary_block
from memory.runfile import RunStore
from replays.health import health, mind_errors
from replays.leaks import leaks_from_notes


def run_leaks(store: RunStore) -> list[dict[str, Any]]:
    """Harm diffusion: each leaked fact, its victim and who knew it when."""
    return leaks_from_notes(store.fact_notes())


def run_summary(store: RunStore) -> dict[str, Any]:
    """What a run holds.

    events counts world events (actions, object changes, chat lines, injections, encounter
    steps, notes); conversations counts distinct conversation ids; injected counts accepted
    injected commands (refused ones are under injected_refused); believability never raises
    (a failure to score is in it).
    """
    errors = mind_errors(store.mind_error_rows())
    return {
        **store.counts(),
        "mind_errors": errors,
        "health": health(errors),
        "records_digest": store.records_digest(),
        "believability": summary_block(store.conn),
        "leaks": run_leaks(store),
    }
