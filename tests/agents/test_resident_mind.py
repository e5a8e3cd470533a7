"""The Mind contract: records drained, snapshot/restore (with memory cut back), ablations."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from maps.contracts import Mind, MindOptions
from agents.llm.gateway import make_llm
from agents.minds.generative import make_mind
from agents.minds.conformance import DEMO_PLACES, Sandbox, demo_home, demo_persona
from memory.social import density, load_graph
from memory.embeddings import get_embedder
from memory.store import truncate_after


def _world(tmp_path, ablation="full"):
    persona = demo_persona("Klaus Mueller", "Hobbs Cafe:counter", "barista")
    places = DEMO_PLACES + demo_home(persona.name)
    start = datetime(2023, 2, 13, 9, 0)
    mind = make_mind(persona, make_llm("scripted"), tmp_path / "run.db",
                     MindOptions(places=places, start_time=start, ablation=ablation), embedder=get_embedder("hashing"))
    return mind, Sandbox({persona.name: mind}, places, start, spawn={persona.name: "Hobbs Cafe:counter"})


def _advance(world, minutes):
    async def go():
        end = world.time + timedelta(minutes=minutes)
        while world.time < end:
            await world.step()
    asyncio.run(go())


def test_snapshot_restore_rolls_memory_and_plans_back(tmp_path):
    mind, world = _world(tmp_path)
    assert isinstance(mind, Mind)
    _advance(world, 60)
    state = mind.snapshot()
    tick, count, steps = world.tick, len(mind.memory), [s.label() for s in mind.state.steps]
    world.bodies[mind.name].whispers.append("I must tell everyone about the fire drill at the library")
    _advance(world, 60)
    assert len(mind.memory) > count
    truncate_after(tmp_path / "run.db", tick)  # what the engine does before restoring
    mind.restore(state)
    assert len(mind.memory) == count and [s.label() for s in mind.state.steps] == steps
    assert not any("fire drill" in m.text for m in mind.memory.all())
    kinds = {r.kind for r in world.records}
    assert {"memory", "plan", "llm"} <= kinds


def test_no_observation_ablation_keeps_no_memory(tmp_path):
    mind, world = _world(tmp_path, "no_observation")
    _advance(world, 30)
    assert len(mind.memory) == 0 and "plan_day" not in mind.caller.counts
    assert mind.state.steps  # still acts, step by step


def test_social_graph_is_exported_with_the_run(tmp_path):
    mind, world = _world(tmp_path)
    _advance(world, 1)
    mind.social.met("Maria Lopez", world.tick, "talked about coffee")
    graph = load_graph(tmp_path / "run.db")
    assert graph.has_edge("Klaus Mueller", "Maria Lopez")
    assert graph.edges["Klaus Mueller", "Maria Lopez"]["interactions"] == 1
    assert density(graph) == 1.0
