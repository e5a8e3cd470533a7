"""Interviews answer from memory as it was, and write nothing to any memory."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from datetime import datetime, timedelta

import pytest

from maps.contracts import MindOptions
from agents.minds.interview import InterviewError, interview, parse_at
from world.cli.interview import add_arguments, main
from agents.llm.gateway import make_llm
from agents.minds.generative import make_mind
from agents.minds.conformance import DEMO_PLACES, Sandbox, demo_home, demo_persona
from memory.embeddings import get_embedder

FACT = "Isabella is throwing a Valentine's Day party at Hobbs Cafe on Friday at 5pm"


def _digest(db) -> str:
    conn = sqlite3.connect(db)
    try:
        rows = []
        for table in ("memory_records", "memory_access", "memory_embeddings", "social_edges"):
            rows.append(conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall())
        return hashlib.sha256(repr(rows).encode()).hexdigest()
    finally:
        conn.close()


def klaus_alone(folder, hours: float, whisper_at) -> None:
    """Klaus Mueller's scripted hours in the library, run into ``folder``; ``whisper_at(tick)``:
    what his inner voice tells him at that tick (None: nothing)."""
    persona = demo_persona("Klaus Mueller", "Town Library:reading room", "student")
    places = DEMO_PLACES + demo_home(persona.name)
    start = datetime(2023, 2, 13, 9, 0)
    mind = make_mind(persona, make_llm("scripted"), folder / "run.db", MindOptions(places=places, start_time=start),
                     embedder=get_embedder("hashing"))
    world = Sandbox({persona.name: mind}, places, start, spawn={persona.name: "Town Library:reading room"})

    async def run() -> None:
        while world.time < start + timedelta(hours=hours):
            if (whisper := whisper_at(world.tick)) is not None:
                world.bodies[persona.name].whispers.append(whisper)
            await world.step()

    asyncio.run(run())
    mind.memory.close()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("run")
    klaus_alone(folder, 2, lambda tick: FACT if tick == 360 else None)  # an hour in
    return folder


def test_interview_answers_from_memory_and_writes_nothing(run_dir):
    db = run_dir / "run.db"
    before = _digest(db)
    answer = interview(run_dir, "Klaus Mueller", "Is there a party coming up?", model="scripted")
    assert "Valentine" in answer
    early = interview(run_dir, "Klaus Mueller", "Is there a party coming up?", at="09:30", model="scripted")
    assert "Valentine" not in early  # memory as it was before the news
    assert _digest(db) == before


def test_interview_rejects_bad_input(run_dir, tmp_path):
    with pytest.raises(InterviewError, match="no resident named 'Nobody'"):
        interview(run_dir, "Nobody", "hi", model="scripted")
    with pytest.raises(InterviewError, match="no run database"):
        interview(tmp_path, "Klaus Mueller", "hi", model="scripted")
    with pytest.raises(InterviewError, match="--at 'noon'"):
        parse_at("noon", datetime(2023, 2, 13, 9))
    assert parse_at("day 2 14:30", datetime(2023, 2, 13, 9)) == datetime(2023, 2, 14, 14, 30)


def test_interview_command(run_dir, capsys):
    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    code = main(parser.parse_args([str(run_dir), "Klaus Mueller", "What are you doing today?", "--model", "scripted"]))
    assert code == 0 and capsys.readouterr().out.strip()
    code = main(parser.parse_args([str(run_dir), "Klaus Mueller", "hi", "--at", "25:99", "--model", "scripted"]))
    assert code == 2 and "--at" in capsys.readouterr().err


def test_an_answer_made_by_the_engine_is_marked_as_not_the_models(run_dir):
    """A model whose every answer is refused gets the memory-built fallback, which a bench must
    not score as the model's; a model that answers gets its own words marked as its own."""
    import json

    from agents.llm.gateway import Completion, Gateway
    from agents.minds.interview import interview_answer

    class Echo:
        name = "echo"

        async def generate(self, request):
            return Completion(text=json.dumps({"answer": "Klaus Mueller"}), prompt_tokens=1, completion_tokens=1, cost=0.0)

    refused = interview_answer(run_dir, "Klaus Mueller", "Is there a party coming up?", llm=Gateway(Echo(), max_attempts=2))
    assert refused.from_fallback and refused.text and refused.text != "Klaus Mueller"
    own = interview_answer(run_dir, "Klaus Mueller", "Is there a party coming up?", model="scripted")
    assert not own.from_fallback and "Valentine" in own.text



def test_a_knowledge_question_of_news_heard_is_answered_about_it(run_dir):
    """'Did you know there is a ...?' of a resident who heard the news: an answer naming it."""
    from agents.minds.interview import interview_answer

    party = interview_answer(run_dir, "Klaus Mueller", "Did you know there is a Valentine's Day party?", model="scripted")
    assert "party" in party.text.lower() and not party.from_fallback


def test_asked_whether_one_knows_something_the_memories_naming_all_of_it_are_recalled(tmp_path):
    """Asked who runs for mayor, a scripted bench's Grace Kim recalled nine newer memories of
    Eleanor's re-election (one word of the question, 'running', closer by embedding) and not
    the candidacy she had been told: memories naming every word asked about come first."""
    from agents.minds.interview import interview_answer

    later = [f"Neighbour {n} told me Eleanor Ross is running again this autumn." if n % 2 else
             f"Neighbour {n} told me the mayor opened the new library." for n in range(40)]

    def whisper_at(tick: int) -> str | None:
        if tick == 30:
            return "Sam Moore is running for mayor."
        return later.pop(0) if tick > 120 and tick % 15 == 0 and later else None

    klaus_alone(tmp_path, 3, whisper_at)
    answer = interview_answer(tmp_path, "Klaus Mueller", "Do you know who is running for mayor?", model="scripted")
    assert "Sam Moore" in answer.text, answer.text
