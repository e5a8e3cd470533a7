"""A worker whose workplace is a whole building ('Rosie's Cafe', no room named, as the Smallville
importer gives it) works in the building's public room, where customers come: the dining room,
not the pantry that happens to be listed first. Rosalind stood in the pantry all day and the
host who came to the cafe to tell people never met her. Scripted backend, hashing embedder."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from agents.llm.gateway import make_llm
from agents.minds.cognition.planning import work_room
from agents.minds.conformance import Sandbox, demo_home, demo_persona
from agents.minds.generative import make_mind
from maps.contracts import MindOptions
from memory.embeddings import get_embedder

START = datetime(2026, 2, 13, 7, 0)
CAFE = ["Rosie's Cafe", "Rosie's Cafe:pantry", "Rosie's Cafe:pantry:shelf", "Rosie's Cafe:kitchen",
        "Rosie's Cafe:kitchen:stove", "Rosie's Cafe:dining room", "Rosie's Cafe:dining room:counter",
        "Rosie's Cafe:dining room:table"]


def test_a_whole_building_is_worked_in_its_public_room():
    assert work_room("Rosie's Cafe", CAFE) == "Rosie's Cafe:dining room"
    assert work_room("Rosie's Cafe:kitchen", CAFE) == ""  # a room named is kept as it is
    assert work_room("Nowhere Inn", CAFE) == ""  # no room of it known: the caller's own rule


def test_the_cafe_worker_spends_her_work_hours_in_the_dining_room():
    persona = demo_persona("Rosalind Moss", "Rosie's Cafe", "cafe owner")
    places = CAFE + demo_home("Rosalind Moss")
    mind = make_mind(persona, make_llm("scripted"), None, MindOptions(places=places, start_time=START),
                     embedder=get_embedder("hashing"))
    world = Sandbox({persona.name: mind}, places, START, spawn={persona.name: "Rosalind's House:bedroom"})

    async def go() -> None:
        while not mind.state.blocks and world.time < START + timedelta(hours=1):
            await world.step()
    asyncio.run(go())
    assert mind.work_arena() == "Rosie's Cafe:dining room"
    work = [b for b in mind.state.blocks if "cafe" in b.activity.lower() and b.start.hour >= 9]
    assert work, [(b.start, b.activity) for b in mind.state.blocks]
    mind.state.now = work[0].start
    asyncio.run(mind._extend_steps(work[0].start))
    arenas = {s.arena for s in mind.state.steps}
    assert arenas == {"Rosie's Cafe:dining room"}, [(s.arena, s.description) for s in mind.state.steps]
