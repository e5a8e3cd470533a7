"""An action's place: a resident who says a line in the street and walks on is recorded at the
place the walk goes to, never at no place (issue 11: 'Lucy Alvarez: sleep @ ')."""

from __future__ import annotations

import asyncio
from datetime import datetime

from maps.contracts import Intent, Persona
from maps.town import load_town
from world.engine import Engine
from tests.world.test_world_step import Idle


def _street_tiles(town) -> tuple[tuple[int, int], tuple[int, int]]:
    """Two walkable neighbouring tiles with no address (a street)."""
    w, h = town.width, town.height
    for y in range(h):
        for x in range(w - 1):
            if all(town.is_walkable((x + i, y)) and not town.address_at((x + i, y)) for i in (0, 1)):
                return (x, y), (x + 1, y)
    raise AssertionError("the default town has no street")


def test_walking_on_after_a_line_in_the_street_is_recorded_where_the_walk_goes() -> None:
    town = load_town("default")
    people = [Persona(name=n, age=30, occupation="tester", workplace="Willow Cafe:kitchen", home="Oak House")
              for n in ("Ada", "Ben")]
    engine = Engine(town, people, {"Ada": Idle(), "Ben": Idle()}, start=datetime(2026, 2, 13, 9, 0))
    a, b = _street_tiles(town)
    engine.place("Ada", a)
    engine.place("Ben", b)
    run = lambda **i: asyncio.run(engine.step(i))  # noqa: E731
    run(Ada=Intent(kind="go", target="Willow Cafe:kitchen", description="walking to the cafe"), Ben=Intent(kind="wait"))
    run(Ada=Intent(kind="say", to="Ben", utterance="Morning, Ben!"), Ben=Intent(kind="wait"))
    tr = run(Ada=Intent(kind="continue", description="going to sleep at the cafe"), Ben=Intent(kind="wait"))
    actions = [r.data for r in tr.records if r.kind == "action" and r.resident == "Ada"]
    assert actions and actions[-1]["description"] == "going to sleep at the cafe"
    assert actions[-1]["address"] == "Willow Cafe:kitchen"
