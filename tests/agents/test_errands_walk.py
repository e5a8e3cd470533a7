"""Errands end to end: the day's plan takes a resident to the service, where the encounter starts.

Needs the errands hook of agents/minds/cognition/planning.py (``with_errands`` in ``plan_day``,
``errand_kind`` in ``decompose``)."""

from __future__ import annotations

import asyncio
from datetime import date, datetime

from agents.encounters.errands import errand_day
from maps.contracts import Persona
from maps.town import load_town
from tests.agents.test_errands import _world


TOWN = load_town("default", "residents25.json")


def test_a_residents_errand_walks_them_to_the_service_and_starts_an_encounter() -> None:
    """End to end on `scripted`: the plan gives 12:00 to the bank, the steps go there, the
    plugin greets the visitor with the errand's scenario."""
    ada = Persona.model_validate({**TOWN.resident("Ben Okafor").model_dump(),
                                  "errands": [{"place": "bank", "purpose": "to check my balance", "hour": 12}]})
    people = [ada, TOWN.resident("George Price")]
    town, engine, plugin = _world(people, datetime(2026, 2, 13, 11, 50))

    async def go():
        for _ in range(300):
            await engine.step()
            if plugin.encounters:
                return

    asyncio.run(go())
    assert [(e.visitor, e.scenario) for e in plugin.encounters] == [("Ben Okafor", "town_bank_balance")]
    assert errand_day(9, datetime(2026, 2, 14, 8, 0)) == date(2026, 2, 13)  # before waking: still yesterday
