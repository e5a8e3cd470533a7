"""Reflection fires when summed importance reaches 150, and its insights cite evidence."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from maps.contracts import MindOptions, PerceivedEvent, Perception
from agents.llm.gateway import make_llm
from agents.minds.generative import make_mind
from agents.minds.conformance import DEMO_PLACES, demo_home, demo_persona
from memory.embeddings import get_embedder


def _tick(mind, p):
    intent = mind.decide_fast(p)
    if intent is None:
        intent = asyncio.run(mind.decide(p))
    return intent, mind.drain_records()


def test_reflection_fires_at_threshold_and_cites_evidence():
    persona = demo_persona("Klaus Mueller", "Town Library:reading room", "student")
    places = DEMO_PLACES + demo_home(persona.name)
    mind = make_mind(persona, make_llm("scripted"), None, MindOptions(places=places),
                     embedder=get_embedder("hashing"))
    start = datetime(2023, 2, 13, 9, 0)
    total = 0
    reflections = []
    for tick in range(300):
        now = start + timedelta(seconds=10 * tick)
        who = ("Isabella Rodriguez", "Maria Lopez")[tick % 2]
        event = PerceivedEvent(subject=who, predicate="is", object="planning",
                               description=f"{who} is planning the Valentine party, detail {tick}",
                               address="Town Library:reading room")
        p = Perception(resident=persona.name, tick=tick, time=now, tile=(0, 0), address="Town Library:reading room",
                       events=[event], known_places=places if tick == 0 else [])
        _, records = _tick(mind, p)
        memories = [r.data for r in records if r.kind == "memory"]
        before = total
        total += sum(m["importance"] for m in memories if m["kind"] != "reflection")
        found = [m for m in memories if m["kind"] == "reflection"]
        if found:
            reflections = found
            assert before < 150 <= total  # fired on the very batch that reached the threshold
            break
    assert reflections, f"no reflection after importance {total}"
    assert 1 <= len(reflections) <= 5
    own = {m.id: m for m in mind.memory.all()}
    for r in reflections:
        assert r["evidence"], "an insight must cite evidence"
        assert all(e in own and e < r["memory_id"] for e in r["evidence"])  # earlier memories of mine
        assert own[r["memory_id"]].kind == "reflection"
    assert mind.state.importance_since_reflection < 150  # the counter restarted
    assert mind.caller.counts["reflect_questions"] == 1 and mind.caller.counts["reflect_insights"] == 1


def test_no_reflection_ablation_never_reflects():
    persona = demo_persona("Klaus Mueller", "Town Library:reading room", "student")
    mind = make_mind(persona, make_llm("scripted"), None,
                     MindOptions(places=DEMO_PLACES, ablation="no_reflection"), embedder=get_embedder("hashing"))
    start = datetime(2023, 2, 13, 9, 0)
    for tick in range(40):
        p = Perception(resident=persona.name, tick=tick, time=start + timedelta(seconds=10 * tick), tile=(0, 0),
                       address="Town Library:reading room", whispers=[f"I am in love with Maria, thought {tick}"])
        _tick(mind, p)
    assert mind.state.importance_since_reflection >= 150
    assert "reflect_questions" not in mind.caller.counts
    assert all(m.kind != "reflection" for m in mind.memory.all())
