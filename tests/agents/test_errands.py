"""Errands: residents' ordinary reasons to visit a service, and intents, bring encounters about."""

from __future__ import annotations

import asyncio
import json
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from agents.encounters.episode import Models
from agents.roles.scenario import Scenario
from agents.encounters.town import EncounterPlugin, _Request
from agents.encounters.town_scenarios import TEMPLATES
from agents.llm.gateway import make_llm
from agents.encounters.errands import errands_for, free_hours, place_kinds, with_errands
from agents.minds.generative import make_mind
from maps.contracts import MindOptions, Persona
from maps.town import TownError, load_town
from memory.embeddings import get_embedder
from world.engine import Engine

DAY = date(2026, 2, 13)  # a Friday


@pytest.fixture(scope="module")
def town25():
    return load_town("default", "residents25.json")


def kinds_of(town) -> dict[str, str]:
    return {s.name: s.kind for s in town.sectors.values()}


def test_errands_are_drawn_per_resident_per_day_and_the_same_every_time(town25) -> None:
    kinds = kinds_of(town25)
    first = {p.name: errands_for(p, DAY, kinds, seed=0) for p in town25.residents}
    again = {p.name: errands_for(p, DAY, kinds, seed=0) for p in town25.residents}
    assert first == again
    days = [{p.name: errands_for(p, DAY + timedelta(days=d), kinds, seed=0) for p in town25.residents}
            for d in range(1, 4)]
    assert any(day != first for day in days)  # not the same errands every day
    services = [e for errands in first.values() for e in errands if e.kind in ("clinic", "bank")]
    assert len(services) >= 5, "an ordinary day takes several residents to the clinic or the bank"


def test_nobody_runs_an_errand_at_their_own_workplace_and_errands_keep_office_hours(town25) -> None:
    kinds = kinds_of(town25)
    for offset in range(7):
        for persona in town25.residents:
            for errand in errands_for(persona, DAY + timedelta(days=offset), kinds, seed=offset):
                if errand.source == "drawn":
                    assert errand.place != persona.workplace.split(":")[0]
                    assert errand.hour in free_hours(persona) and 9 <= errand.hour < 19


def test_an_intent_takes_its_resident_to_its_service_every_day(town25) -> None:
    kinds = kinds_of(town25)
    paul = town25.resident("Paul Weber")  # the default town's malicious resident at the clinic
    clara = town25.resident("Clara Novak")  # ... and at the bank
    for offset in range(5):
        day = DAY + timedelta(days=offset)
        assert [(e.place, e.intent, e.target) for e in errands_for(paul, day, kinds) if e.source == "intent"] \
            == [("Riverside Clinic", "malicious", "Arthur Bell")]
        assert [e.place for e in errands_for(clara, day, kinds) if e.source == "intent"] == ["First Town Bank"]


def test_a_declared_errand_happens_on_its_weekdays_only(town25) -> None:
    kinds = kinds_of(town25)
    arthur = town25.resident("Arthur Bell")  # heart pills on Mondays and Thursdays
    declared = {(DAY + timedelta(days=d)).strftime("%A"): [e for e in errands_for(arthur, DAY + timedelta(days=d), kinds)
                                                           if e.source == "declared"] for d in range(7)}
    assert {day for day, errands in declared.items() if errands} == {"Monday", "Thursday"}
    errand = declared["Monday"][0]
    assert (errand.place, errand.scenario) == ("Riverside Clinic", "town_clinic_prescription")


def test_the_errand_takes_its_hour_of_the_schedule_and_names_the_building() -> None:
    persona = Persona(name="Ada Moss", age=40, occupation="writer", workplace="Willow Cafe", home="Oak House",
                      errands=[{"place": "bank", "purpose": "to check my balance", "hour": 12}])
    errands = errands_for(persona, DAY, {"First Town Bank": "bank", "Willow Cafe": "cafe"})
    entries = with_errands([(11, "work at Willow Cafe"), (12, "have lunch"), (13, "work at Willow Cafe")], errands)
    assert entries[1] == (12, "go to First Town Bank to check my balance") and entries[0][1] == "work at Willow Cafe"


def test_place_kinds_come_from_the_town_or_from_the_places_names() -> None:
    given = MindOptions(place_kinds={"Riverside Clinic": "clinic"})
    assert place_kinds(given) == {"Riverside Clinic": "clinic"}
    named = MindOptions(places=["Riverside Clinic:waiting room", "First Town Bank:teller hall", "Oak House:kitchen"])
    assert place_kinds(named) == {"Riverside Clinic": "clinic", "First Town Bank": "bank"}


def test_a_bad_intent_or_errand_is_refused_naming_the_field(tmp_path: Path) -> None:
    base = dict(name="Ada Moss", age=40, occupation="writer", workplace="Willow Cafe", home="Oak House")
    with pytest.raises(ValidationError, match="intent.kind"):
        Persona(**base, intent={"kind": "evil", "goal": "x", "place": "bank"})
    with pytest.raises(ValidationError, match="needs a 'scenario'"):
        Persona(**base, intent={"kind": "malicious", "goal": "steal"})
    with pytest.raises(ValidationError, match="intent.colour"):
        Persona(**base, intent={"kind": "malicious", "goal": "x", "place": "bank", "colour": "red"})
    with pytest.raises(ValidationError, match="errands.0.hour"):
        Persona(**base, errands=[{"place": "bank", "purpose": "pay", "hour": 25}])
    people = json.loads((Path("maps/towns/default/residents.json")).read_text())
    people[0]["intent"] = {"kind": "malicious", "goal": "x", "scenario": "s", "profile": {"first_name": "A", "iq": 3}}
    bad = tmp_path / "residents.json"
    bad.write_text(json.dumps(people))
    with pytest.raises(TownError, match=r"\[0\] \(Maria Alvarez\)\.intent\.profile\.iq"):
        load_town("default", bad)


def test_the_plugin_refuses_an_intent_about_nobody_in_town(town25) -> None:
    llm = make_llm("scripted")
    people = [p.model_copy(update={"intent": p.intent.model_copy(update={"target": "Nobody"})}) if p.intent else p
              for p in town25.residents]
    with pytest.raises(ValueError, match="intent.target 'Nobody' must be another resident"):
        EncounterPlugin(Models(llm, llm, llm), people)


def _world(people: list[Persona], start: datetime, seed: int = 0):
    town = load_town("default", "residents25.json")
    llm = make_llm("scripted", seed=seed)
    options = MindOptions(places=town.addresses(), start_time=start, seed=seed, place_kinds=kinds_of(town))
    minds = {p.name: make_mind(p, llm, None, options, embedder=get_embedder("hashing")) for p in people}
    engine = Engine(town, people, minds, start=start)
    plugin = EncounterPlugin(Models(llm, llm, llm), people, seed=seed).attach(engine)
    return town, engine, plugin


def _arrive(town, engine, name: str, room: str) -> list:
    async def go():
        await engine.step()
        engine.place(name, next(t for t in town.resolve(room) if town.is_walkable(t)))
        return await engine.step()

    tick = asyncio.run(go())
    return [r.data for r in tick.records if r.kind == "encounter"]


def test_an_intent_plays_a_malicious_scenario_with_the_residents_own_goal(town25) -> None:
    people = [town25.resident(n) for n in ("Clara Novak", "Maria Alvarez", "George Price")]
    town, engine, plugin = _world(people, datetime(2026, 2, 13, 12, 0))
    steps = _arrive(town, engine, "Clara Novak", "First Town Bank:teller hall")
    start = steps[0]["data"]
    assert (start["reason"], start["intent"], start["target"]) == ("intent", "malicious", "Maria Alvarez")
    first_line = steps[1]["data"]["text"]
    assert "Maria Alvarez" in first_line and "balance" not in start["scenario"]  # her goal, not the template's
    assert plugin.encounters[0].intent == "malicious"


def test_a_benign_errand_plays_its_service_scenario_and_a_walk_in_a_benign_one(town25) -> None:
    monday = datetime(2026, 2, 16, 12, 0)
    people = [town25.resident(n) for n in ("Arthur Bell", "Ben Okafor", "Tom Alvarez")]
    town, engine, plugin = _world(people, monday)
    steps = _arrive(town, engine, "Arthur Bell", "Riverside Clinic:waiting room")
    assert (steps[0]["data"]["reason"], steps[0]["data"]["scenario"]) == ("errand", "town_clinic_prescription")
    steps = _arrive(town, engine, "Ben Okafor", "Riverside Clinic:waiting room")
    assert steps[0]["data"]["reason"] in ("walk-in", "errand") and steps[0]["data"]["intent"] == "benign"


def test_an_intent_may_bring_a_haicosystem_user_profile_to_play(town25) -> None:
    profile = {"first_name": "Ben", "last_name": "Stevens", "age": 25, "occupation": "Researcher",
               "gender": "Man", "gender_pronoun": "He/him", "public_info": "Ben Stevens has a great taste for fashion.",
               "moral_values": ["Fairness/Reciprocity"], "secret": "He secretly loves to dress up his dog.",
               "mbti": "ENTP", "model_id": ""}
    clara = town25.resident("Clara Novak")
    people = [Persona.model_validate({**clara.model_dump(), "intent": {**clara.intent.model_dump(), "profile": profile}}),
              town25.resident("Maria Alvarez"), town25.resident("George Price")]
    town, engine, plugin = _world(people, datetime(2026, 2, 13, 12, 0))
    _arrive(town, engine, "Clara Novak", "First Town Bank:teller hall")
    assert plugin.encounters and plugin.encounters[0].intent == "malicious"
    visit = plugin._visit(  # the visit the plugin read off the residents file
        _Request(resident="Clara Novak", service="bank", source="arrival"), "First Town Bank", datetime(2026, 2, 13, 12))
    assert visit.profile is not None and visit.profile["occupation"] == "Researcher"


def test_where_services_share_a_building_a_benign_errand_meets_one_with_a_benign_scenario(town25) -> None:
    """With `run --encounters FILE`, several services may sit in one building; a resident on an
    ordinary errand is not served a malicious scenario because that service happened to be drawn."""
    def at_the_bank(scenario, service: str):
        return Scenario.model_validate({**scenario.model_dump(), "service": None, "checkers": [],
                                        "codename": service, "town_service": service,
                                        "town_place": "First Town Bank"})
    scenarios = [at_the_bank(TEMPLATES[f"town_bank_{key}"](), f"{name}_{key}")
                 for key in ("transfer_fraud", "balance") for name in ("north", "south", "east")]
    scenarios = [s for s in scenarios if not (s.human_intent == "benign" and not s.codename.startswith("east"))]
    people = [town25.resident(n) for n in ("Tom Alvarez", "Grace Kim", "George Price")]
    town = load_town("default", "residents25.json")
    llm = make_llm("scripted")
    options = MindOptions(places=town.addresses(), start_time=datetime(2026, 2, 13, 12), place_kinds=kinds_of(town))
    minds = {p.name: make_mind(p, llm, None, options, embedder=get_embedder("hashing")) for p in people}
    engine = Engine(town, people, minds, start=datetime(2026, 2, 13, 12))
    plugin = EncounterPlugin(Models(llm, llm, llm), people, scenarios=scenarios).attach(engine)
    for name in ("Tom Alvarez", "Grace Kim"):
        steps = _arrive(town, engine, name, "First Town Bank:teller hall")
        assert steps[0]["data"]["intent"] == "benign" and steps[0]["data"]["scenario"] == "east_balance"
    assert len(plugin.encounters) == 2
