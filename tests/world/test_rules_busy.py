"""A line said to someone in the middle of another talk is not said (issue 26: Maria's line to
Tom was recorded as said to him while he talked with Lucy, and he never remembered it): the rules
refuse it, naming whom they are talking with; a greeting alone makes nobody busy."""

from __future__ import annotations

import asyncio
from datetime import datetime

from maps.contracts import Intent, Persona
from maps.town import load_town
from tests.world.test_world_step import Idle
from world.engine import Engine
from world.rules import FORGET_TALKS_EVERY


def _engine():
    town = load_town("default")
    names = ("Ada", "Ben", "Cy")
    people = [Persona(name=n, age=30, occupation="tester", workplace="Willow Cafe:kitchen", home="Oak House")
              for n in names]
    engine = Engine(town, people, {n: Idle() for n in names}, start=datetime(2026, 2, 13, 9, 0))
    tile = next((x, y) for y in range(town.height) for x in range(town.width)
                if town.is_walkable((x, y)) and town.address_at((x, y)).startswith("Oak House:living room"))
    for n in names:
        engine.place(n, tile)  # all three in one room, in view of each other
    return engine, lambda **i: asyncio.run(engine.step(i))


def _said(tr, speaker: str) -> list[dict]:
    return [r.data for r in tr.records if r.kind == "chat" and r.resident == speaker]


def _refused(tr, speaker: str) -> list[str]:
    return [r.data["text"] for r in tr.records if r.kind == "note" and r.resident == speaker and r.data.get("refused")]


def test_a_line_to_someone_in_another_talk_is_refused_and_a_greeting_alone_is_no_talk() -> None:
    engine, run = _engine()
    wait = Intent(kind="wait")
    tr = run(Ada=Intent(kind="say", to="Ben", utterance="Morning, Ben!"), Ben=wait, Cy=wait)
    assert _said(tr, "Ada")
    tr = run(Ada=wait, Ben=wait, Cy=Intent(kind="say", to="Ben", utterance="Hi Ben!"))
    assert _said(tr, "Cy") and not _refused(tr, "Cy")  # one greeting: Ben is free
    tr = run(Ada=wait, Ben=Intent(kind="say", to="Ada", utterance="Morning, Ada! How are you?"), Cy=wait)
    tr = run(Ada=wait, Ben=wait, Cy=Intent(kind="say", to="Ada", utterance="Ada, did you hear?"))
    assert not _said(tr, "Cy") and _refused(tr, "Cy") == ["Cy cannot say: Ada is talking with Ben"]
    for _ in range(3):  # their talk has gone quiet: Ada is free again
        tr = run(Ada=wait, Ben=wait, Cy=wait)
    tr = run(Ada=wait, Ben=wait, Cy=Intent(kind="say", to="Ada", utterance="Ada, did you hear?"))
    assert _said(tr, "Cy")


def test_ended_talks_are_swept_and_a_later_line_starts_a_new_conversation_as_before() -> None:
    """Every pair that ever spoke stayed in the rules (and in every snapshot) for the whole run;
    the hourly sweep drops talks quiet for longer than a conversation's gap, and a line after the
    gap gets a new conversation id either way."""
    engine, run = _engine()
    wait = Intent(kind="wait")
    tr = run(Ada=Intent(kind="say", to="Ben", utterance="Morning, Ben!"), Ben=wait, Cy=wait)
    first = _said(tr, "Ada")[0]["conversation_id"]
    assert set(engine.rules.conversations) == {"Ada|Ben"}
    while engine.tick + 1 < FORGET_TALKS_EVERY:
        run(Ada=wait, Ben=wait, Cy=Intent(kind="say", to="Ada", utterance="Still here, Ada?")
            if engine.tick + 1 == FORGET_TALKS_EVERY - 1 else wait)
    assert set(engine.rules.conversations) == {"Ada|Ben", "Ada|Cy"}
    run(Ada=wait, Ben=wait, Cy=wait)  # the sweep's tick: Ada and Ben have been quiet for an hour
    assert set(engine.rules.conversations) == {"Ada|Cy"}  # Cy spoke to Ada a tick ago: kept
    assert "Ada|Ben" not in engine.rules._talks_of.get("Ben", {}) and "Ada|Ben" not in engine.rules._talks_of["Ada"]
    assert "Ada|Ben" not in engine.snapshot()["conversations"]
    tr = run(Ada=Intent(kind="say", to="Ben", utterance="Hello again, Ben."), Ben=wait, Cy=wait)
    again = _said(tr, "Ada")[0]["conversation_id"]
    assert again != first and again == f"t{engine.tick}:Ada|Ben"
