"""A generative mind's state is one MindState: snapshots are its dump, in the format run files hold."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import Path

from agents.llm.gateway import make_llm
from agents.minds.conformance import DEMO_PLACES, Sandbox, demo_home, demo_persona
from agents.minds.generative import make_mind
from agents.minds.state import SNAPSHOT_ORDER
from maps.contracts import MindOptions
from memory.embeddings import get_embedder


def _mind(tmp_path: Path, db: str = "a.db"):
    persona = demo_persona("Ayesha Khan", "Hobbs Cafe:counter", "barista")
    options = MindOptions(places=DEMO_PLACES + demo_home("Ayesha Khan"), start_time=datetime(2023, 2, 13, 6, 30))
    return make_mind(persona, make_llm("scripted", use_cache=False), tmp_path / db, options,
                     embedder=get_embedder("hashing")), options


def test_a_snapshot_restores_to_the_same_state_and_keeps_the_run_file_format(tmp_path: Path) -> None:
    mind, options = _mind(tmp_path)
    world = Sandbox({mind.name: mind}, options.places, options.start_time, spawn={mind.name: "Ayesha's House:bedroom"})
    asyncio.run(world.run(options.start_time + timedelta(hours=1)))
    snap = mind.snapshot()
    assert tuple(snap) == SNAPSHOT_ORDER and snap["day_plan"] and isinstance(snap["now"], str)
    other, _ = _mind(tmp_path, "b.db")
    other.restore(snap)
    assert other.snapshot() == snap
    assert other.state == mind.state


def test_a_snapshot_from_before_a_field_existed_still_restores(tmp_path: Path) -> None:
    mind, _ = _mind(tmp_path)
    old = mind.snapshot()
    for key in ("started", "sleep", "react_seen", "last_reaction"):
        old.pop(key)
    mind.restore(old)
    assert mind.state.started is True and mind.state.sleep is None and mind.state.react_seen == {}


def test_cognition_state_lives_only_in_mind_state(tmp_path: Path) -> None:
    """No attribute of the mind forwards to or shadows a state field: cognition writes mind.state.x."""
    from agents.minds.routine import RoutineMind
    from agents.minds.state import MindState, RoutineState

    mind, _ = _mind(tmp_path)
    for field in MindState.model_fields:
        assert not hasattr(type(mind), field) and field not in vars(mind), field
        assert not hasattr(type(mind), "_" + field) and "_" + field not in vars(mind), field
    routine = RoutineMind(demo_persona("Klaus Mueller", "Town Library:reading room", "librarian"))
    for field in RoutineState.model_fields:
        assert not hasattr(type(routine), "_" + field), field
