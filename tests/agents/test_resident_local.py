"""One resident's morning on the real embedded `local` model: every action at a real place.

Slow (a small model on CPU answers each planning call in seconds); runs in CI.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from maps.contracts import MindOptions
from agents.minds.generative import make_mind
from agents.minds.conformance import DEMO_PLACES, Sandbox, demo_home, demo_persona
from memory.embeddings import get_embedder


@pytest.mark.slow
def test_one_residents_morning_on_the_local_model_is_valid():
    from agents.llm.gateway import make_llm

    llm = make_llm("local", use_cache=False)
    persona = demo_persona("Klaus Mueller", "Hobbs Cafe:counter", "barista at Hobbs Cafe", wake=7, sleep=22,
                           lifestyle="Opens the cafe at 8, walks in the park after work.")
    places = DEMO_PLACES + demo_home(persona.name)
    start = datetime(2023, 2, 13, 6, 55)
    mind = make_mind(persona, llm, None, MindOptions(places=places, start_time=start), embedder=get_embedder("hashing"))
    world = Sandbox({persona.name: mind}, places, start, spawn={persona.name: f"{persona.home}:bedroom"})
    arenas: set[str] = set()

    async def morning() -> None:
        while world.time < datetime(2023, 2, 13, 9, 0):
            await world.step()
            if world.time.hour >= 7:
                step = mind._step_at(world.time)
                assert step is not None, f"no action at {world.time}"
                arenas.add(step.arena)
                assert step.arena in places

    asyncio.run(morning())
    assert arenas and arenas <= set(places)
    assert not world.refused, world.refused
    assert 5 <= len(mind.state.day_plan) <= 8
    assert mind.caller.counts["plan_day"] == 1 and mind.caller.counts["decompose"] >= 1
