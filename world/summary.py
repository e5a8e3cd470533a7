"""The run summary (``run``, ``watch``, ``replay --summary``, run-many's table).

Assembled here, above the layers it draws from: counts and the records digest from the run
file (memory.runfile), mind errors and health (replays.health), leaked facts (replays.leaks)
the believability checks (agents.believability) and the society block (replays.society: the
run's gatherings known and attended, new acquaintances).
"""

from __future__ import annotations

from typing import Any

from agents.believability import summary_block
from maps.contracts import Persona
from maps.town import TownError, load_town
from memory.runfile import RunStore, resident_personas
from replays.health import health, mind_errors
from replays.leaks import leaks_from_notes
from replays.society import FACT_KINDS, collect, society_summary


def run_leaks(store: RunStore) -> list[dict[str, Any]]:
    """Harm diffusion: each leaked fact, its victim and who knew it when."""
    return leaks_from_notes(store.fact_notes())


def run_summary(store: RunStore) -> dict[str, Any]:
    """What a run holds.

    events counts world events (actions, object changes, chat lines, injections, encounter
    steps, notes); conversations counts distinct conversation ids; injected counts accepted
    injected commands (refused ones are under injected_refused); believability never raises
    (a failure to score is in it); resume_diverged_ticks, when there are any, counts the re-run
    ticks of its resumes and fork that differed from the record.
    """
    errors = mind_errors(store.mind_error_rows())
    summary = {
        **store.counts(),
        "mind_errors": errors,
        "health": health(errors),
        "records_digest": store.records_digest(),
        "believability": summary_block(store.conn),
        "leaks": run_leaks(store),
        "society": run_society(store),
    }
    diverged = store.diverged_ticks()
    if diverged:  # a resume or fork whose re-run did not match the record: the run is not the uninterrupted one
        summary["resume_diverged_ticks"] = diverged
    fleet = store.meta().get("fleet")
    if isinstance(fleet, dict):  # --models: what the servers did, kept by the run (world/cli/run.py)
        summary["fleet"] = fleet
    return summary


def run_society(store: RunStore) -> dict[str, Any]:
    """Gatherings known and attended, new acquaintances (replays.society), from the records and
    the residents the run registered; the town's places when its folder can still be read."""
    personas = [Persona.model_validate_json(persona) for _name, persona, _emb in resident_personas(store.conn)]
    facts = collect(store.iter_ticks(0, None, kinds=[k for k in FACT_KINDS if k != "move"]))
    if facts.memories or facts.injects or facts.events:  # a gathering is possible: who was where counts
        collect(store.iter_ticks(0, None, kinds=["move"]), facts)
    # a day of routine minds holds no gathering and no memory, and its moves were most of the
    # summary's time (a 10,000-resident day: four million records read for a list of names)
    return society_summary(facts, personas, town_places(store.meta().get("town")), store.resident_names())


def town_places(town: Any) -> list[str]:
    """The sector names of the run's town, or none when it cannot be loaded (moved, renamed):
    the places seen in the run's position records are used then."""
    if not town:
        return []
    try:
        return sorted(load_town(str(town), None).sectors)
    except (TownError, OSError):
        return []
