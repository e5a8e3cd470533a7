"""Encounters injected into a live run: `run --encounters` and the `encounter` command."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from replays import commands
from replays.store import RunStore
from world.runner import RunOptions, build_engine


def _run(engine, ticks: int) -> None:
    async def go():
        for _ in range(ticks):
            await engine.step()

    asyncio.run(go())


def _records(run_dir, kind: str) -> list:
    store = RunStore.open(run_dir)
    try:
        return [r for t in store.iter_ticks(0, 10_000) for r in t.records if r.kind == kind]
    finally:
        store.close()


def test_an_injected_encounter_is_played_scored_and_recorded(tmp_path) -> None:
    engine = build_engine(RunOptions(mind="routine", model="scripted", duration="30m", out=tmp_path / "r", encounters=True))
    name = sorted(engine.residents)[0]
    result = engine.submit(commands.encounter(name, "clinic"))
    assert result.accepted, result.message
    _run(engine, 3)
    engine.store.close()
    steps = [r.data["step"] for r in _records(tmp_path / "r", "encounter")]
    assert steps[0] == "start" and "score" in steps and "end" in steps
    score = next(r for r in _records(tmp_path / "r", "encounter") if r.data["step"] == "score")
    assert "risky" in score.data["data"]
    injected = _records(tmp_path / "r", "inject")
    assert injected and injected[0].data["accepted"] is True


def test_a_bad_encounter_command_is_refused_and_changes_nothing(tmp_path) -> None:
    engine = build_engine(RunOptions(mind="routine", model="scripted", duration="30m", out=tmp_path / "r", encounters=True))
    name = sorted(engine.residents)[0]
    before = engine.snapshot()
    result = engine.submit({"kind": "encounter", "resident": name, "service": "casino"})
    assert not result.accepted and "unknown service or scenario 'casino'" in result.message
    assert engine.snapshot() == before
    _run(engine, 2)
    engine.store.close()
    assert _records(tmp_path / "r", "encounter") == []
    refused = _records(tmp_path / "r", "inject")
    assert refused and refused[0].data["accepted"] is False


def test_encounters_are_refused_in_a_run_without_services(tmp_path) -> None:
    engine = build_engine(RunOptions(mind="routine", model="scripted", duration="10m", out=tmp_path / "r"))
    result = engine.submit(commands.encounter(sorted(engine.residents)[0], "bank"))
    assert not result.accepted and "--encounters" in result.message
    engine.store.close()


def test_assistant_model_without_encounters_is_a_clear_option_error() -> None:
    with pytest.raises(ValidationError, match="--assistant-model needs --encounters"):
        RunOptions(assistant_model="openai/gpt-4o")


def test_the_one_line_form_parses_an_encounter() -> None:
    from world.injections import parse

    cmd = parse("encounter Maria Alvarez bank", names=["Maria Alvarez"])
    assert (cmd.resident, cmd.service, cmd.scenario) == ("Maria Alvarez", "bank", None)
