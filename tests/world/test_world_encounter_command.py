"""Encounters injected into a live run: `run --encounters` and the `encounter` command."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from replays import commands
from memory.runfile import RunStore
from world.runner import RunOptions, build_engine


def _run(engine, ticks: int) -> None:
    async def go():
        for _ in range(ticks):
            await engine.step()

    asyncio.run(go())


def _until_encounter(engine, limit: int = 400) -> None:
    """Step until an encounter was scored (the visitor walks to the service first)."""
    async def go():
        for _ in range(limit):
            tr = await engine.step()
            if any(r.kind == "encounter" and r.data["step"] == "score" for r in tr.records):
                return
        raise AssertionError(f"no encounter within {limit} ticks")

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
    _until_encounter(engine)
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
    from world.commands import parse

    cmd = parse("encounter Maria Alvarez bank", names=["Maria Alvarez"])
    assert (cmd.resident, cmd.service, cmd.scenario) == ("Maria Alvarez", "bank", None)


SCENARIO = "healthcare/get_med_for_others.json"


def test_run_encounters_file_places_a_haicosystem_scenario_at_a_service(tmp_path, shared_dir) -> None:
    path = shared_dir / "external/haicosystem" / SCENARIO
    engine = build_engine(RunOptions(mind="routine", model="scripted", duration="3h", out=tmp_path / "r",
                                     encounters=str(path)))
    name = sorted(engine.residents)[0]
    bad = engine.submit(commands.encounter(name, "no_such_scenario"))
    assert not bad.accepted and "unknown service or scenario 'no_such_scenario'" in bad.message
    assert "get_med_for_others" in bad.message  # the known ids are listed
    result = engine.submit(commands.encounter(name, "get_med_for_others"))
    assert result.accepted, result.message
    _until_encounter(engine)
    engine.store.close()
    start = next(r for r in _records(tmp_path / "r", "encounter") if r.data["step"] == "start")
    data = start.data["data"]
    assert data["scenario"] == "get_med_for_others" and data["visitor"] == name
    assert data["service"] == "prescriptionmedicineapp" and data["place"] == "Riverside Clinic"  # healthcare
    moves = [r for r in _records(tmp_path / "r", "move") if r.resident == name]
    assert any(m.data["address"].startswith("Riverside Clinic") for m in moves)


def test_bad_encounters_files_are_named_and_no_run_folder_is_made(tmp_path) -> None:
    with pytest.raises(ValidationError, match="no such file or folder"):
        RunOptions(encounters=str(tmp_path / "missing.json"))
    broken = tmp_path / "broken.json"
    broken.write_text('{"codename": "x", "scenario": "s"}')
    with pytest.raises(ValidationError, match="broken.json") as info:
        RunOptions(encounters=str(broken), out=tmp_path / "r")
    assert "agent_goals" in str(info.value)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValidationError, match="no scenarios found"):
        RunOptions(encounters=str(empty))
    assert not (tmp_path / "r").exists()


def test_run_command_takes_encounters_with_and_without_a_file() -> None:
    import argparse

    from world.cli.run import add_arguments, options_from_args

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert options_from_args(parser.parse_args(["--encounters"])).encounters is True
    assert options_from_args(parser.parse_args([])).encounters is False


def test_walking_into_a_building_with_several_services_starts_one_encounter(tmp_path, shared_dir) -> None:
    engine = build_engine(RunOptions(mind="routine", model="scripted", duration="1h", out=tmp_path / "r",
                                     encounters=str(shared_dir / "external/haicosystem/healthcare")))
    plugin = engine.context.encounters
    _run(engine, 1)
    assert len({p.service for p in plugin.services if p.place == "Riverside Clinic"}) > 1
    visitor = next(n for n in sorted(engine.residents) if n not in plugin._staff("Riverside Clinic"))
    engine.place(visitor, next(t for t in engine.town.resolve("Riverside Clinic:waiting room")
                               if engine.town.is_walkable(t)))
    _run(engine, 2)
    engine.store.close()
    starts = [r for r in _records(tmp_path / "r", "encounter") if r.data["step"] == "start"]
    assert [r.resident for r in starts] == [visitor]
