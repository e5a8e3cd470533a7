"""Information diffusion: a fact told to one resident reaches a third through conversations."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from maps.contracts import MindOptions
from agents.llm.gateway import make_llm
from agents.minds.generative import make_mind
from agents.minds.conformance import DEMO_PLACES, Sandbox, demo_home, demo_persona
from memory.embeddings import get_embedder

FACT = "Isabella is throwing a Valentine's Day party at Hobbs Cafe on Friday at 5pm"


def test_fact_spreads_from_one_resident_to_a_third_through_a_second():
    names = ["Ayesha Khan", "Klaus Mueller", "Maria Lopez"]
    personas = [demo_persona(n, "Town Library:reading room", "student") for n in names]
    places = DEMO_PLACES + [a for n in names for a in demo_home(n)]
    llm = make_llm("scripted")
    start = datetime(2023, 2, 13, 9, 0)
    options = MindOptions(places=places, start_time=start)
    minds = {p.name: make_mind(p, llm, None, options, embedder=get_embedder("hashing")) for p in personas}
    # Ayesha and Maria are not on speaking terms: the news can only travel through Klaus
    a, k, m = (minds[n] for n in names)
    a.state.last_talk["Maria Lopez"] = m.state.last_talk["Ayesha Khan"] = start + timedelta(days=30)
    world = Sandbox(minds, places, start, spawn={n: "Town Library:reading room" for n in names})
    world.bodies["Ayesha Khan"].whispers.append(FACT)

    async def run() -> None:
        while world.time < start + timedelta(hours=5):
            await world.step()
            if any("valentine" in r.text.lower() for r in m.memory.all()):
                break
        for _ in range(3 * k.tuning.reply_timeout_ticks):  # let the last talk close on both sides
            await world.step()

    asyncio.run(run())
    pairs = {(c.speaker, c.listener) for c in world.chat}
    assert ("Ayesha Khan", "Maria Lopez") not in pairs and ("Maria Lopez", "Ayesha Khan") not in pairs
    assert any("valentine" in r.text.lower() for r in k.memory.all() if r.kind == "chat")
    told = [r for r in m.memory.all() if "valentine" in r.text.lower()]
    assert told and told[0].kind == "chat", [r.text for r in m.memory.all()][-10:]
    # conversations are bounded and leave ties in the social graph
    assert k.social.knows("Ayesha Khan") and k.social.knows("Maria Lopez")
    assert m.social.tie("Klaus Mueller").interactions >= 1
    by_convo: dict[tuple[str, str], int] = {}
    for c in world.chat:
        key = tuple(sorted((c.speaker, c.listener)))
        by_convo[key] = by_convo.get(key, 0) + 1
    assert world.refused == [] or all("not in view" in r for r in world.refused)


def test_a_resident_in_a_conversation_stays_talking_between_its_own_lines():
    """Listening is part of talking: between its lines a resident used to follow its plan (walk
    off to breakfast mid-conversation, 'thinking about what to do next' between two replies)."""
    names = ["Ayesha Khan", "Klaus Mueller"]
    personas = [demo_persona(n, "Town Library:reading room", "student") for n in names]
    places = DEMO_PLACES + [a for n in names for a in demo_home(n)]
    start = datetime(2023, 2, 13, 9, 0)
    options = MindOptions(places=places, start_time=start)
    llm = make_llm("scripted")
    minds = {p.name: make_mind(p, llm, None, options, embedder=get_embedder("hashing")) for p in personas}
    world = Sandbox(minds, places, start, spawn={n: "Town Library:reading room" for n in names})
    world.bodies["Ayesha Khan"].whispers.append(FACT)
    checked = 0

    async def run() -> None:
        nonlocal checked
        while world.time < start + timedelta(hours=2) and not checked >= 6:
            talking = {n: m.state.convo.partner for n, m in minds.items() if m.state.convo is not None}
            await world.step()
            for name, partner in talking.items():
                if minds[name].state.convo is not None:  # open before and after this tick
                    assert world.bodies[name].description == f"talking with {partner}", (world.tick, name)
                    assert world.bodies[name].dest is None  # not walking away
                    checked += 1

    asyncio.run(run())
    assert checked >= 2 and world.chat
