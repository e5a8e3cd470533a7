"""`townsfolk inject` against a live engine through the control socket."""

from __future__ import annotations

import argparse
import asyncio
from datetime import datetime
from pathlib import Path

import pytest

from maps.contracts import Intent, Perception
from replays import control
from world.cli import inject as inject_command
from replays.control import ControlServer
from replays.reader import RunReader
from memory.runfile import RunStore

maps_town = pytest.importorskip("maps.town")
engine_mod = pytest.importorskip("world.engine")


class EarMind:
    """A mind that keeps doing what it does and remembers every whisper it hears."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.whispers: list[str] = []

    def decide_fast(self, perception: Perception) -> Intent | None:
        self.whispers.extend(perception.whispers)
        return Intent(kind="continue")

    async def decide(self, perception: Perception) -> Intent:
        return Intent(kind="continue")

    def drain_records(self) -> list:
        return []

    def snapshot(self) -> dict:
        return {"whispers": list(self.whispers)}

    def restore(self, state: dict) -> None:
        self.whispers = list(state["whispers"])


def _inject(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    inject_command.add_arguments(parser)
    return inject_command.main(parser.parse_args(list(argv)))


def test_inject_whisper_and_refusals_are_recorded(tmp_path: Path, capsys) -> None:
    town = maps_town.load_town("default")
    personas = town.residents[:2]
    name = personas[0].name
    minds = {p.name: EarMind(p.name) for p in personas}
    run_dir = tmp_path / "run"
    store = RunStore.create(run_dir, {"town": "default", "resident_names": [p.name for p in personas]})
    engine = engine_mod.Engine(town, personas, minds, start=datetime(2024, 2, 13, 9, 0), store=store)
    asyncio.run(engine.step())
    server = ControlServer(run_dir, engine.submit).start()
    try:
        assert _inject(str(run_dir), "--whisper", name, "You should host a party") == 0
        assert "accepted" in capsys.readouterr().out
        # Malformed or unknown commands are refused with a reason and change nothing.
        assert _inject(str(run_dir), "--whisper", "Nobody Atall", "hello") == 1
        assert "no resident named 'Nobody Atall'" in capsys.readouterr().err
        stove = next(a for a in town.addresses("object"))
        sector = stove.split(":")[0]
        assert _inject(str(run_dir), "--object", sector, "on fire") == 1
        assert "not an object" in capsys.readouterr().err
        assert _inject(str(run_dir), "--announce", "   ") == 2
        assert "text" in capsys.readouterr().err
        bad = control.send(run_dir, {"op": "inject", "command": {"kind": "whisper"}})
        assert not bad["ok"] and "resident" in bad["error"]
        objects_before = dict(engine.objects)
        # The run goes on and applies the good command.
        for _ in range(3):
            asyncio.run(engine.step())
        assert minds[name].whispers == ["You should host a party"]
        assert engine.objects == objects_before
    finally:
        server.stop()
        store.close()
    assert _inject(str(run_dir), "--announce", "hello") == 2
    assert "not live" in capsys.readouterr().err
    # Every injected command, accepted or refused, is in the record.
    reader = RunReader.open(run_dir)
    injects = [r.data for tr in reader.ticks(0, None) for r in tr.records if r.kind == "inject"]
    reader.close()
    assert [d["accepted"] for d in injects].count(True) == 1
    assert any(d["command"].get("resident") == name and d["accepted"] for d in injects)
    assert sum(not d["accepted"] for d in injects) >= 3


def test_injected_whisper_reaches_the_residents_memory(tmp_path: Path, monkeypatch) -> None:
    runner = pytest.importorskip("world.runner")
    pytest.importorskip("agents.minds.generative")
    monkeypatch.setenv("TOWNSFOLK_EMBEDDER", "hashing")  # no model load: this is about the plumbing
    run_dir = tmp_path / "gen"
    engine = runner.build_engine(runner.RunOptions(town="default", agents=2, mind="generative", model="scripted",
                                                   duration="10m", out=run_dir))
    asyncio.run(engine.step())
    name = engine.resident_names[0]
    with ControlServer(run_dir, engine.submit):
        assert _inject(str(run_dir), "--whisper", name, "You should host a party at the cafe") == 0
    asyncio.run(engine.step())
    engine.store.close()
    reader = RunReader.open(run_dir)
    memories = [(r.resident, r.data) for tr in reader.ticks(0, None) for r in tr.records if r.kind == "memory"]
    frame = reader.frame_at(reader.last_tick())
    reader.close()
    assert (name, "whisper", "You should host a party at the cafe") in [(n, d["kind"], d["text"]) for n, d in memories]
    assert "[whisper] You should host a party at the cafe" in frame.residents[name].memories


def test_inject_refuses_escapes_and_long_text_before_sending(tmp_path: Path, capsys) -> None:
    run_dir = tmp_path / "not-even-live"
    run_dir.mkdir()
    assert _inject(str(run_dir), "--whisper", "Ada", "\x1b]0;owned\x07hello") == 2
    err = capsys.readouterr().err
    assert "whisper.text" in err and "control character U+001B (ESC)" in err
    assert _inject(str(run_dir), "--announce", "x" * 5000) == 2
    err = capsys.readouterr().err
    assert "at most 1000 characters" in err and len(err) < 1000
