"""One speaks at a time (issue 26: two openers in a row, one never answered, began 38 of the 139
talks of a scripted bench). Two residents who speak to each other in the same tick: the first in
name order is said, the other's line is not, and its speaker learns so from its next Perception
(``unsaid``) together with the line to answer. A line to someone speaking to a third person in
that tick waits too. A line refused for another reason (out of view, a talk going on) is unsaid
as well, so that no mind believes it said what nobody heard."""

from __future__ import annotations

import asyncio
from datetime import datetime

from maps.contracts import Intent, Perception, Persona
from maps.town import load_town
from tests.world.test_world_step import Idle
from world.engine import Engine


class Scripted(Idle):
    """A mind that says what the test queued for it and keeps every Perception it got."""

    def __init__(self) -> None:
        self.queue: list[Intent] = []
        self.seen: list[Perception] = []

    def decide_fast(self, p: Perception) -> Intent:
        self.seen.append(p)
        return self.queue.pop(0) if self.queue else Intent(kind="wait")

    async def decide(self, p: Perception) -> Intent:
        return self.decide_fast(p)


def _engine(names=("Ada", "Ben", "Cy")):
    town = load_town("default")
    people = [Persona(name=n, age=30, occupation="tester", workplace="Willow Cafe:kitchen", home="Oak House")
              for n in names]
    minds = {n: Scripted() for n in names}
    engine = Engine(town, people, minds, start=datetime(2026, 2, 13, 9, 0), quiet=False)
    tile = next((x, y) for y in range(town.height) for x in range(town.width)
                if town.is_walkable((x, y)) and town.address_at((x, y)).startswith("Oak House:living room"))
    for n in names:
        engine.place(n, tile)  # all in one room, in view of each other
    return engine, minds


def _step(engine: Engine, minds: dict[str, Scripted], **says: tuple[str, str] | tuple[str, str, str]):
    """One tick; ``says``: name -> (listener, line[, news])."""
    for name, said in says.items():
        to, text, *news = said
        minds[name].queue.append(Intent(kind="say", to=to, utterance=text, news=news[0] if news else None))
    return asyncio.run(engine.step())


def _chats(tr) -> list[tuple[str, str, str]]:
    return [(r.data["speaker"], r.data["listener"], r.data["text"]) for r in tr.records if r.kind == "chat"]


def test_two_openers_at_once_the_first_in_name_order_is_said_and_the_other_answers_it() -> None:
    engine, minds = _engine()
    engine_refused = engine.stats["refused_intents"]
    invite = "Hi Ada! I'm hosting a football match in Willow Park on Saturday. Would you like to come?"
    tr = _step(engine, minds, Ada=("Ben", "Hi Ben! How are you today?"),
               Ben=("Ada", invite, "Ben is hosting a football match at Willow Park"))
    assert _chats(tr) == [("Ada", "Ben", "Hi Ben! How are you today?")]
    assert not [r for r in tr.records if r.kind == "note" and r.data.get("refused")]  # a turn, not a refusal
    assert engine.stats["refused_intents"] == engine_refused
    _step(engine, minds)
    ben_sees = minds["Ben"].seen[-1]
    assert [(h.speaker, h.text) for h in ben_sees.heard] == [("Ada", "Hi Ben! How are you today?")]
    assert [(u.listener, u.text, u.news) for u in ben_sees.unsaid] == [
        ("Ada", invite, "Ben is hosting a football match at Willow Park")]
    assert minds["Ada"].seen[-1].heard == [] and minds["Ada"].seen[-1].unsaid == []
    _step(engine, minds)  # told once, in the Perception of the tick after
    assert minds["Ben"].seen[-1].unsaid == []


def test_a_line_to_someone_speaking_to_another_waits_for_its_turn() -> None:
    engine, minds = _engine()
    tr = _step(engine, minds, Ada=("Ben", "Morning, Ben!"), Cy=("Ada", "Ada, did you hear?"))
    assert _chats(tr) == [("Ada", "Ben", "Morning, Ben!")]
    _step(engine, minds)
    assert [u.text for u in minds["Cy"].seen[-1].unsaid] == ["Ada, did you hear?"]
    tr = _step(engine, minds, Cy=("Ada", "Ada, did you hear?"))  # Ada is not mid-sentence now
    assert _chats(tr) == [("Cy", "Ada", "Ada, did you hear?")]


def test_a_refused_line_is_unsaid_too_and_survives_a_snapshot() -> None:
    engine, minds = _engine()
    _step(engine, minds, Ada=("Ben", "Morning, Ben! How are you?"))
    _step(engine, minds, Ben=("Ada", "Fine, thanks, Ada."))
    tr = _step(engine, minds, Cy=("Ada", "Ada, a word?"))  # Ada and Ben are in a talk
    assert not _chats(tr)
    assert [r.data["text"] for r in tr.records if r.kind == "note"] == ["Cy cannot say: Ada is talking with Ben"]
    state = engine.snapshot()
    engine.residents["Cy"].unsaid = []
    engine.restore(state)  # a run resumed here tells Cy all the same
    assert [u.text for u in engine.residents["Cy"].unsaid] == ["Ada, a word?"]
    older = {**state, "residents": {n: {k: v for k, v in b.items() if k != "unsaid"}
                                    for n, b in state["residents"].items()}}
    engine.restore(older)  # a snapshot written before lines could be held back: none are
    assert all(b.unsaid == [] for b in engine.residents.values())
    engine.restore(state)
    _step(engine, minds)
    assert [u.text for u in minds["Cy"].seen[-1].unsaid] == ["Ada, a word?"]


def test_three_who_speak_round_in_a_ring_the_first_is_said() -> None:
    """Ada to Ben, Ben to Cy, Cy to Ada in one tick: decided on the lines meant, each listener was
    'speaking to someone else' and nobody spoke; decided on the lines said, Ada speaks, Ben (just
    spoken to) answers her before opening a talk with Cy, and Cy's line to Ada waits."""
    engine, minds = _engine()
    tr = _step(engine, minds, Ada=("Ben", "Hi Ben!"), Ben=("Cy", "Hi Cy!"), Cy=("Ada", "Hi Ada!"))
    assert _chats(tr) == [("Ada", "Ben", "Hi Ben!")]
    _step(engine, minds)
    assert [u.text for u in minds["Ben"].seen[-1].unsaid] == ["Hi Cy!"]
    assert [u.text for u in minds["Cy"].seen[-1].unsaid] == ["Hi Ada!"]


def test_one_spoken_to_still_answers_the_talk_it_is_in() -> None:
    """Being spoken to holds back only a line that would open a talk: Ben, in a talk with Ada,
    answers her even when Cy greets him in the same tick (Cy, first in name order, is said)."""
    engine, minds = _engine(("Ada", "Ben", "Abe"))
    _step(engine, minds, Ada=("Ben", "Morning, Ben!"))
    tr = _step(engine, minds, Abe=("Ben", "Hi Ben!"), Ben=("Ada", "Morning, Ada!"))
    assert _chats(tr) == [("Abe", "Ben", "Hi Ben!"), ("Ben", "Ada", "Morning, Ada!")]
