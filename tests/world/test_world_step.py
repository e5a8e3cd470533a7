"""The engine's step API: a test drives a town with hand-written intents (as PettingZoo's step),
and a plugin serves its own injected command kind through the registry."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Literal

import pytest

from maps.contracts import Command, Intent, Name, Persona, Record, Short
from maps.town import load_town
from world.engine import Engine

START = datetime(2026, 2, 13, 9, 0)


@pytest.fixture(scope="module")
def town():
    return load_town("default")


class Idle:
    """A mind that must not be asked: the test gives every intent."""

    def decide_fast(self, p):
        raise AssertionError("the step's intents replace the mind's decision")

    async def decide(self, p):
        raise AssertionError("the step's intents replace the mind's decision")

    def drain_records(self) -> list[Record]:
        return []

    def snapshot(self) -> dict:
        return {}

    def restore(self, state: dict) -> None:
        pass


def two_residents(town) -> Engine:
    people = [Persona(name=n, age=30, occupation="tester", workplace="Willow Cafe:kitchen", home="Oak House")
              for n in ("Ada", "Ben")]
    engine = Engine(town, people, {"Ada": Idle(), "Ben": Idle()}, start=START)
    cafe = town.resolve("Willow Cafe:kitchen")
    engine.place("Ada", cafe[0])
    engine.place("Ben", cafe[1])
    return engine


def step(engine: Engine, **intents: Intent):
    return asyncio.run(engine.step({k.replace("_", " "): v for k, v in intents.items()}))


def test_hand_written_intents_move_talk_and_are_refused_by_the_rules(town) -> None:
    engine = two_residents(town)
    step(engine, Ada=Intent(kind="wait"), Ben=Intent(kind="wait"))
    tr = step(engine, Ada=Intent(kind="say", to="Ben", utterance="Coffee?"), Ben=Intent(kind="go", target="Nowhere Street"))
    chats = [r for r in tr.records if r.kind == "chat"]
    assert [(c.data["speaker"], c.data["listener"], c.data["text"]) for c in chats] == [("Ada", "Ben", "Coffee?")]
    refused = [r for r in tr.records if r.kind == "note" and r.data.get("refused")]
    assert [r.resident for r in refused] == ["Ben"] and "cannot go" in refused[0].data["text"]
    assert engine.stats["refused_intents"] == 1

    start = engine.residents["Ben"].tile
    tr = step(engine, Ada=Intent(kind="say", to="Ada", utterance="hi"), Ben=Intent(kind="go", target="Oak House"))
    moves = [r for r in tr.records if r.kind == "move"]
    assert [m.resident for m in moves] == ["Ben"] and tuple(moves[0].data["tile"]) != start
    assert engine.residents["Ben"].dest == "Oak House"
    assert any(r.resident == "Ada" and "cannot talk to oneself" in r.data.get("text", "") for r in tr.records)
    assert engine.residents["Ada"].tile == town.resolve("Willow Cafe:kitchen")[0]  # a refusal moves nobody


def test_step_names_an_unknown_resident(town) -> None:
    engine = two_residents(town)
    with pytest.raises(ValueError, match="no resident named 'Cy'"):
        step(engine, Cy=Intent(kind="wait"))
    assert engine.tick == -1


class BellCommand(Command):
    """Ring a resident's bell (a plugin's own command kind)."""

    kind: Literal["bell"] = "bell"
    resident: Name
    tone: Short

    def describe(self) -> str:
        return f"ring {self.resident}'s bell ({self.tone})"


class Bells:
    """A plugin that serves the `bell` command: its check and its apply."""

    commands = {"bell": BellCommand}

    def __init__(self) -> None:
        self.rung: list[str] = []

    async def on_tick(self, view) -> list[Record]:
        return []

    def check_command(self, cmd: BellCommand) -> str | None:
        return None if cmd.tone in ("low", "high") else f"bell: tone must be low or high, got {cmd.tone!r}"

    def handle_command(self, cmd: BellCommand) -> None:
        self.rung.append(cmd.resident)

    def snapshot(self) -> dict:
        return {"rung": list(self.rung)}

    def restore(self, state: dict) -> None:
        self.rung = list(state["rung"])


def test_a_plugin_serves_its_own_command_with_its_text(town) -> None:
    engine = two_residents(town)
    assert not engine.submit({"kind": "bell", "resident": "Ada", "tone": "low"}).accepted  # not served yet
    bells = Bells()
    engine.add_plugin(bells)
    bad = engine.submit({"kind": "bell", "resident": "Ada", "tone": "shrill"})
    typo = engine.submit({"kind": "bell", "resident": "Adda", "tone": "low"})
    good = engine.submit({"kind": "bell", "resident": "Ada", "tone": "low"})
    assert not bad.accepted and "tone must be low or high" in bad.message
    assert not typo.accepted and "did you mean Ada" in typo.message
    assert good.accepted and good.message == "queued for tick 0: ring Ada's bell (low)"
    tr = step(engine, Ada=Intent(kind="wait"), Ben=Intent(kind="wait"))
    injects = [r.data for r in tr.records if r.kind == "inject"]
    assert [(d["accepted"], d["text"]) for d in injects][-1] == (True, "ring Ada's bell (low)")
    assert bells.rung == ["Ada"] and engine.snapshot()["plugins"] == [{"rung": ["Ada"]}]


def test_an_object_that_is_not_a_plugin_is_refused(town) -> None:
    engine = two_residents(town)
    with pytest.raises(TypeError, match="lacks commands, check_command, handle_command"):
        engine.add_plugin(object.__new__(type("Half", (), {"on_tick": None, "snapshot": None, "restore": None})))


def test_the_rules_and_perception_work_on_just_the_state_they_are_given(town) -> None:
    """Rules and Perceiver need no engine: bodies, objects and the spatial index suffice, so a
    test (or a newcomer) can see exactly what each one reads and changes."""
    from world.body import make_bodies
    from world.pathfinding import PathFinder
    from world.perception import ObjectSight, Perceiver, SpatialIndex
    from world.rules import Rules

    people = [Persona(name=n, age=30, occupation="tester", workplace="Willow Cafe:kitchen", home="Oak House")
              for n in ("Ada", "Ben")]
    bodies = make_bodies(town, people, {"Ada": Idle(), "Ben": Idle()})
    objects, index, stats = town.default_states(), SpatialIndex(town), {"refused_intents": 0}
    for b in bodies.values():
        index.add(b.name, b.tile)
    rules = Rules(town, bodies, objects, index, PathFinder(town.walkable), stats)
    perceiver = Perceiver(bodies, objects, index, ObjectSight(town))
    cafe = town.resolve("Willow Cafe:kitchen")
    rules.place(bodies["Ada"], cafe[0])
    rules.place(bodies["Ben"], cafe[1])
    seen = {name: perceiver.perceive(b, 0, START) for name, b in bodies.items()}
    assert seen["Ada"].nearby == ["Ben"]
    records: list[Record] = []
    rules.apply(bodies["Ada"], Intent(kind="say", to="Ben", utterance="Coffee?"), seen["Ada"], 0, records)
    rules.apply(bodies["Ben"], Intent(kind="use", target="Nowhere"), seen["Ben"], 0, records)
    assert [(r.kind, r.resident) for r in records if r.kind in ("chat", "note")] == [("chat", "Ada"), ("note", "Ben")]
    assert stats["refused_intents"] == 1
    assert [c.text for c in perceiver.perceive(bodies["Ben"], 1, START).heard] == ["Coffee?"]
