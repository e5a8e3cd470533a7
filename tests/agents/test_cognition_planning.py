"""Planning and reacting on the scripted backend: a full valid day, and a reaction re-plans."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import pytest

from maps.contracts import ChatLine, MindOptions, Perception
from agents.llm.gateway import make_llm
from agents.minds.generative import make_mind
from agents.minds.conformance import DEMO_PLACES, Sandbox, demo_home, demo_persona
from memory.embeddings import get_embedder
from memory.spatial import arena_of


def _town(name: str = "Klaus Mueller"):
    persona = demo_persona(name, "Hobbs Cafe:counter", "barista at Hobbs Cafe")
    places = DEMO_PLACES + demo_home(name)
    return persona, places


def test_day_plan_covers_the_waking_day_at_real_places():
    persona, places = _town()
    llm = make_llm("scripted")
    start = datetime(2023, 2, 13, 6, 30)
    mind = make_mind(persona, llm, None, MindOptions(places=places, start_time=start), embedder=get_embedder("hashing"))
    world = Sandbox({persona.name: mind}, places, start, spawn={persona.name: f"{persona.home}:bedroom"})
    covered: dict[int, str] = {}

    async def day() -> None:
        while world.time < datetime(2023, 2, 13, 22, 0):
            await world.step()
            step = mind._step_at(world.time)
            if 7 <= world.time.hour < 22:
                assert step is not None and not step.sleep, f"no step at {world.time}"
                covered[world.time.hour * 60 + world.time.minute] = step.arena

    asyncio.run(day())
    assert 5 <= len(mind.state.day_plan) <= 8
    # the schedule runs without a gap from waking to bedtime
    assert mind.state.blocks[0].start == datetime(2023, 2, 13, 7, 0)
    assert mind.state.blocks[-1].end == datetime(2023, 2, 13, 22, 0)
    assert all(a.end == b.start for a, b in zip(mind.state.blocks, mind.state.blocks[1:]))
    assert len(covered) == 15 * 60  # every waking minute had a step
    assert set(covered.values()) <= set(places)  # ... at a real place
    assert not world.refused  # every go/use named a real place
    decomposed = [r.data["items"] for r in world.records if r.kind == "plan" and r.data["level"] == "decomposed"]
    assert decomposed and all(1 <= len(items) <= 15 for items in decomposed)
    assert "Hobbs Cafe:counter" in set(covered.values())  # went to work
    # economy: few calls per waking hour, none for walking or following steps
    calls = sum(mind.caller.counts.values())
    assert calls / 15 <= 5, mind.caller.counts


def test_a_reaction_replans_the_rest_of_the_block():
    persona, places = _town()
    llm = make_llm("scripted")
    start = datetime(2023, 2, 13, 10, 0)
    mind = make_mind(persona, llm, None, MindOptions(places=places, start_time=start), embedder=get_embedder("hashing"))
    world = Sandbox({persona.name: mind}, places, start, spawn={persona.name: "Hobbs Cafe:counter"})

    async def go(minutes: int) -> None:
        end = world.time + timedelta(minutes=minutes)
        while world.time < end:
            await world.step()

    asyncio.run(go(20))
    before = [(s.start, s.description) for s in mind.state.steps]
    assert before and not any(s.reaction for s in mind.state.steps)
    world.objects["Hobbs Cafe:counter:coffee machine"] = "on fire, burning"
    asyncio.run(go(2))
    assert mind.caller.counts["react"] >= 1
    assert mind.state.steps[0].reaction and "burning" in mind.state.steps[0].description
    assert mind.state.current is not None and mind.state.current.reaction
    after = [(s.start, s.description) for s in mind.state.steps]
    assert after != before and all(s.arena in places for s in mind.state.steps)
    # the rest of the block was decomposed again, starting when the reaction ends
    assert mind.state.steps[1].start == mind.state.steps[0].end
    plans = [r for r in world.records if r.kind == "plan" and r.data["level"] == "decomposed"]
    assert any("burning" in " ".join(r.data["items"]) for r in plans)


def test_sleep_is_not_decomposed_and_costs_no_calls():
    persona, places = _town()
    llm = make_llm("scripted")
    start = datetime(2023, 2, 13, 1, 0)
    mind = make_mind(persona, llm, None, MindOptions(places=places, start_time=start), embedder=get_embedder("hashing"))
    p = Perception(resident=persona.name, tick=0, time=start, tile=(0, 0), address=f"{persona.home}:kitchen",
                   known_places=places)
    intent = mind.decide_fast(p)
    assert intent is not None and intent.kind == "go" and "bed" in (intent.target or "")
    p2 = p.model_copy(update={"tick": 1, "time": start + timedelta(seconds=10), "arrived": True,
                              "address": f"{persona.home}:bedroom"})
    assert mind.decide_fast(p2).kind in ("use", "sleep")
    assert sum(mind.caller.counts.values()) == 0


def test_a_walk_cut_short_by_a_conversation_is_taken_up_again():
    """Talking stops the body (a 'wait' ends the walk), so afterwards the step must be walked to
    again: a resident stopped on the way to bed used to stand in the kitchen 'sleeping' all night."""
    persona, places = _town()
    llm = make_llm("scripted")
    start = datetime(2023, 2, 13, 23, 30)
    mind = make_mind(persona, llm, None, MindOptions(places=places, start_time=start), embedder=get_embedder("hashing"))
    kitchen = f"{persona.home}:kitchen"
    p = Perception(resident=persona.name, tick=0, time=start, tile=(0, 0), address=kitchen, known_places=places)
    first = mind.decide_fast(p)
    assert first is not None and first.kind == "go" and "bed" in (first.target or "")
    tick, now = 0, start

    def perceive(**kw) -> Perception:
        nonlocal tick, now
        tick, now = tick + 1, now + timedelta(seconds=10)
        return p.model_copy(update={"tick": tick, "time": now, "nearby": ["Maria Lopez"], **kw})

    heard = [ChatLine(speaker="Maria Lopez", listener=persona.name, text="Klaus, did you lock the back door?")]
    p1 = perceive(heard=heard)
    assert mind.decide_fast(p1) is None
    assert asyncio.run(mind.decide(p1)).kind in ("say", "wait")
    for _ in range(4 * mind.tuning.reply_timeout_ticks):  # no answer comes: the talk times out
        pk = perceive()
        intent = mind.decide_fast(pk)
        if intent is None:
            intent = asyncio.run(mind.decide(pk))
        if mind.state.convo is None and intent.kind != "wait":
            break
    assert mind.state.convo is None
    assert intent.kind == "go" and "bed" in (intent.target or ""), intent
