"""A host who meets nobody at home or at work goes out to tell people: her day plans an hour in
free time, before the gathering, at a public place she knows that is neither her home nor her
workplace, and that hour's step takes her there. Scripted backend, hashing embedder."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from agents.llm.gateway import make_llm
from agents.minds.cognition.visits import visit_place
from agents.minds.conformance import DEMO_PLACES, Sandbox, demo_home, demo_persona
from agents.minds.generative import make_mind
from maps.contracts import MindOptions
from memory.embeddings import get_embedder

START = datetime(2026, 2, 13, 7, 0)
CONCERT = "I am organising a concert in Johnson Park on February 14 from 6pm to 8pm, and everyone is welcome."


def alone(seed: str):
    """Dana lives alone, works in the library, knows nobody; the one mind of the town."""
    persona = demo_persona("Dana Quill", "Town Library:reading room", "librarian", seed_memories=[seed])
    places = DEMO_PLACES + demo_home("Dana Quill")
    mind = make_mind(persona, make_llm("scripted"), None, MindOptions(places=places, start_time=START),
                     embedder=get_embedder("hashing"))
    world = Sandbox({persona.name: mind}, places, START, spawn={persona.name: "Dana's House:bedroom"})

    async def go() -> None:
        while not mind.state.blocks and world.time < START + timedelta(hours=1):
            await world.step()
    asyncio.run(go())
    return mind


def test_a_host_who_lives_alone_plans_an_hour_out_before_her_gathering():
    mind = alone(CONCERT)
    (known,) = mind.state.events.values()
    assert known.event.host == "Dana Quill" and known.event.start == datetime(2026, 2, 14, 18, 0)
    visits = [b for b in mind.state.blocks if b.visit]
    assert len(visits) == 1, [(b.start, b.activity) for b in mind.state.blocks]
    visit = visits[0]
    assert visit.visit == "Hobbs Cafe:counter"  # a place people spend free time, not her home or the library
    assert visit.start.date() == START.date() and visit.end <= known.event.start
    assert visit.start.hour in (12, 18)  # her lunch break or after work: not work hours
    assert "concert" in visit.activity and not visit.event
    mind.state.now = visit.start
    asyncio.run(mind._extend_steps(visit.start))
    (step,) = mind.state.steps
    assert step.arena == "Hobbs Cafe:counter" and step.end == visit.end  # she walks there and stays the hour
    assert step.description == "telling people at Hobbs Cafe counter about a concert"
    mind.state.now = visit.start + timedelta(minutes=20)  # a talk there that matters: she stays
    asyncio.run(mind._replan_rest(mind.state.now, "Someone said they would come"))
    assert [(s.arena, s.description) for s in mind.state.steps] == [(step.arena, step.description)]
    assert any("tell people about" in m.text for m in mind.memory.all())  # remembered as her plan


def test_nobody_to_tell_means_no_hour_out():
    """A gathering not open to all, and no tie to tell: the day has no visit."""
    mind = alone("I am hosting a book club meeting at Hobbs Cafe on February 14 from 6pm to 8pm.")
    assert mind.state.events and not any(b.visit for b in mind.state.blocks)


def test_the_place_is_never_home_or_work():
    mind = alone(CONCERT)
    assert visit_place(mind).split(":")[0] not in ("Dana's House", "Town Library")
