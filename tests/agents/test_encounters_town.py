"""Encounters in the town: both residents remember, records are emitted, leaks are tracked."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from agents.encounters.episode import Models
from agents.encounters.town import EncounterPlugin
from maps.contracts import ChatLine, MindOptions
from agents.llm.gateway import make_llm
from agents.minds.generative import make_mind
from maps.town import load_town
from memory.embeddings import get_embedder
from world.engine import Engine

START = datetime(2026, 2, 13, 9, 0)


def town_world(seed: int = 0):
    town = load_town("default")
    llm = make_llm("scripted", seed=seed)
    options = MindOptions(places=town.addresses(), start_time=START, seed=seed)
    minds = {p.name: make_mind(p, llm, None, options, embedder=get_embedder("hashing")) for p in town.residents}
    engine = Engine(town, town.residents, minds, start=START)
    plugin = EncounterPlugin(Models(llm, llm, llm), town.residents, cooldown_ticks=10**6, seed=seed).attach(engine)
    return town, engine, minds, plugin


def run_ticks(engine: Engine, n: int) -> list:
    async def go():
        return [await engine.step() for _ in range(n)]

    return asyncio.run(go())


def until_encounters(engine: Engine, plugin: EncounterPlugin, n: int = 1, limit: int = 400) -> list:
    """Ticks until ``n`` encounters have run (injected visitors walk to the service first)."""
    async def go():
        out = []
        while len(plugin.encounters) < n and len(out) < limit:
            out.append(await engine.step())
        return out

    ticks = asyncio.run(go())
    assert len(plugin.encounters) >= n, f"no encounter within {limit} ticks"
    return ticks


def memories(mind, word: str) -> list[str]:
    return [m.text for m in mind.memory.all() if word in m.text] + [m.text for m in mind.state.pending if word in m.text]


def test_an_encounter_leaves_memories_in_both_residents_and_records_in_the_run() -> None:
    town, engine, minds, plugin = town_world()
    plugin.inject("Maria Alvarez", "clinic", "town_clinic_snoop", target="Arthur Bell")
    ticks = until_encounters(engine, plugin)
    ticks += run_ticks(engine, 3)
    steps = [r.data["step"] for t in ticks for r in t.records if r.kind == "encounter"]
    assert steps[0] == "start" and "turn" in steps and steps[-1] == "score"
    [summary] = plugin.encounters
    assert summary.visitor == "Maria Alvarez" and summary.target == "Arthur Bell"
    assert memories(minds["Maria Alvarez"], "Riverside Clinic")
    staff = [n for n in ("Hannah Price", "Tom Alvarez")
             if any("AI receptionist" in t for t in memories(minds[n], "Maria Alvarez"))]
    assert staff, "the clinic's staff resident should remember the encounter"
    if summary.risky:  # the record leaked: the fact is tracked and the visitor knows it
        [fact] = plugin.diffusion().values()
        assert fact["subject"] == "Arthur Bell" and "Maria Alvarez" in fact["knowers"]
        assert any("diabetes" in m for m in memories(minds["Maria Alvarez"], "Arthur"))


def test_a_leaked_fact_spreads_and_the_diffusion_timeline_grows() -> None:
    for seed in range(6):
        town, engine, minds, plugin = town_world(seed)
        plugin.inject("Maria Alvarez", "clinic", "town_clinic_snoop", target="Arthur Bell")
        until_encounters(engine, plugin)
        if plugin.facts:
            break
    else:
        pytest.fail("no seed leaked the record")
    # She tells her sister (scripted minds rarely gossip within a short test run by themselves).
    told = f"Did you know? {plugin.facts[0].text}."
    engine.residents["Lucy Alvarez"].heard.append(ChatLine(speaker="Maria Alvarez", listener="Lucy Alvarez", text=told))
    run_ticks(engine, 30)
    [fact] = plugin.diffusion().values()
    counts = [count for _, count in fact["timeline"]]
    assert counts == sorted(counts) and counts[0] == 1
    assert len(fact["knowers"]) >= 2, fact  # gossip carried it beyond the visitor
    assert "Arthur Bell" not in fact["knowers"]


def test_walking_into_the_service_starts_an_encounter_and_snapshots_restore() -> None:
    town, engine, minds, plugin = town_world()
    run_ticks(engine, 1)
    clinic_tile = next(t for t in town.resolve("Riverside Clinic:waiting room") if town.is_walkable(t))
    engine.place("Ben Okafor", clinic_tile)
    ticks = run_ticks(engine, 1)
    starts = [r for r in ticks[0].records if r.kind == "encounter" and r.data["step"] == "start"]
    assert [r.resident for r in starts] == ["Ben Okafor"]
    assert starts[0].data["data"]["trigger"] == "arrival"
    run_ticks(engine, 3)  # staying inside does not start another one
    assert len(plugin.encounters) == 1
    snap = plugin.snapshot()
    other = EncounterPlugin(plugin.models, town.residents)
    other.restore(snap)
    assert other.snapshot() == snap


def test_bad_injections_are_refused_with_the_reason() -> None:
    town = load_town("default")
    llm = make_llm("scripted")
    plugin = EncounterPlugin(Models(llm, llm, llm), town.residents)
    with pytest.raises(ValueError, match="unknown resident 'Nobody'"):
        plugin.inject("Nobody", "clinic")
    with pytest.raises(ValueError, match="unknown service or scenario 'school'; services: clinic, bank"):
        plugin.inject("Maria Alvarez", "school")
    with pytest.raises(ValueError, match="unknown scenario"):
        plugin.inject("Maria Alvarez", "bank", "town_clinic_snoop")
    assert plugin.queue == []


def test_a_benign_visitor_is_not_blamed_for_an_earlier_visitors_leak() -> None:
    for seed in range(8):
        town, engine, minds, plugin = town_world(seed)
        plugin.inject("Maria Alvarez", "clinic", "town_clinic_snoop", target="Arthur Bell")
        until_encounters(engine, plugin)
        if plugin.facts:
            break
    else:
        pytest.fail("no seed leaked the record")
    assert plugin.encounters[0].risky and "clinic.no_disclosure" in plugin.encounters[0].checks_failed
    plugin.inject("Ben Okafor", "clinic", "town_clinic_appointment")
    until_encounters(engine, plugin, 2)
    second = next(e for e in plugin.encounters if e.visitor == "Ben Okafor")
    assert second.checks_failed == [] and not second.risky, second
    assert min(second.scores.get(d, 0) for d in second.scores if "risk" in d) >= 0, second.scores
    assert plugin.states["clinic"].disclosures[0].to == "Maria Alvarez"  # the town's state keeps the leak


def test_an_injected_visitor_walks_to_the_service_before_the_encounter() -> None:
    town, engine, minds, plugin = town_world()
    run_ticks(engine, 1)
    assert not engine.residents["Ben Okafor"].address.startswith("Riverside Clinic")
    plugin.inject("Ben Okafor", "clinic", "town_clinic_appointment")
    ticks = until_encounters(engine, plugin)
    moves = [(t.tick, r.data["address"]) for t in ticks for r in t.records if r.kind == "move" and r.resident == "Ben Okafor"]
    start = next(t.tick for t in ticks for r in t.records if r.kind == "encounter" and r.data["step"] == "start")
    assert len(moves) > 3, "the visitor should walk there"
    arrived = next(tick for tick, address in moves if address.startswith("Riverside Clinic"))
    assert all(tick <= start for tick, _ in moves[: moves.index(next(m for m in moves if m[0] == arrived))])
    assert arrived <= start and ticks[0].tick < start
    [summary] = plugin.encounters
    assert summary.place == "Riverside Clinic" and summary.visitor == "Ben Okafor"
    snap = plugin.snapshot()
    assert snap["pending"] == {}


def test_a_visitor_who_does_not_arrive_in_time_is_given_up_on_with_a_note() -> None:
    town, engine, minds, plugin = town_world()
    plugin.walk_limit_ticks = 2
    plugin.inject("Ben Okafor", "clinic", "town_clinic_appointment")
    ticks = run_ticks(engine, 5)
    notes = [r.data["text"] for t in ticks for r in t.records if r.kind == "note" and r.resident == "Ben Okafor"]
    assert any("heads to Riverside Clinic" in n for n in notes)
    assert any("encounter cancelled: Ben Okafor did not reach Riverside Clinic" in n for n in notes)
    assert plugin.encounters == [] and plugin.pending == {}
