"""`townsfolk run` and `townsfolk bench engine` from the command line."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from memory.runfile import RunStore
from world.cli import main


def last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def test_run_writes_a_run_folder_and_a_summary(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    code = main(["run", "--mind", "routine", "--duration", "30m", "--start", "2026-03-01 08:00", "--seed", "3",
                 "--out", str(out), "--quiet", "--no-control", "--json"])
    assert code == 0
    summary = last_json(capsys.readouterr().out)
    assert summary["ticks"] == 180 and summary["missing_ticks"] == []
    assert summary["start_time"] == "2026-03-01T08:00:00" and summary["end_time"] == "2026-03-01T08:29:50"
    assert summary["residents"] == 8 and summary["mind"] == "routine"
    for key in ("first_tick", "last_tick", "resident_names", "events", "conversations", "injected", "llm_calls"):
        assert key in summary
    meta = RunStore.open(out).meta()
    assert meta["seed"] == 3 and meta["town_name"] == "Willowbrook" and meta["versions"]["store_schema"] == 1


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--duration", "3 fortnights"], "--duration: expected a duration like 30m"),
        (["--start", "tomorrow"], "--start: expected a date and time"),
        (["--agents", "0"], "--agents"),
        (["--pace", "-1"], "--pace"),
        (["--chaos", "2"], "--chaos"),
        (["--at", "14:00"], "--at needs --fork"),
        (["--fork", "x"], "--fork needs --at"),
        (["--resume", "x", "--fork", "y", "--at", "1"], "exclude each other"),
        (["--resume", "somewhere", "--seed", "2"], "drop --seed"),
        (["--town", "atlantis"], "no such town"),
        (["--resume", "/nonexistent/run"], "no run here"),
    ],
)
def test_bad_options_are_named(argv: list[str], expected: str, capsys) -> None:
    code = main(["run", "--quiet", "--no-control", *argv])
    assert code in (1, 2)
    assert expected in capsys.readouterr().err


def test_more_agents_than_the_files_hold_are_generated(tmp_path: Path, capsys) -> None:
    code = main(["run", "--mind", "routine", "--agents", "30", "--duration", "5m", "--out", str(tmp_path / "r"),
                 "--quiet", "--no-control", "--json"])
    assert code == 0
    summary = last_json(capsys.readouterr().out)
    assert summary["residents"] == 30 and "Maria Alvarez" in summary["resident_names"]


def test_a_live_run_takes_commands_from_the_control_channel(tmp_path: Path, capsys) -> None:
    control = pytest.importorskip("replays.control")
    out = tmp_path / "live"
    codes: list[int] = []
    worker = threading.Thread(target=lambda: codes.append(main(
        ["run", "--mind", "routine", "--duration", "10m", "--pace", "300", "--out", str(out), "--quiet", "--json"])))
    worker.start()
    try:
        deadline = time.time() + 30
        while not control.is_live(out):
            assert time.time() < deadline and worker.is_alive()
            time.sleep(0.05)
        good = control.inject(out, {"kind": "announce", "text": "The bakery is giving away bread"})
        bad = control.inject(out, {"kind": "whisper", "resident": "Nobody", "text": "psst"})
    finally:
        worker.join(timeout=60)
    assert codes == [0]
    assert good["accepted"] and not bad["accepted"] and "no resident named 'Nobody'" in bad["error"]
    summary = last_json(capsys.readouterr().out)
    assert summary["injected"] == 1 and summary["injected_refused"] == 1


def test_bench_engine_reports_its_figures(capsys) -> None:
    code = main(["bench", "engine", "--agents", "3", "--duration", "20m", "--json"])
    assert code == 0
    result = last_json(capsys.readouterr().out)
    assert result["agents"] == 3 and result["ticks"] == 120
    assert result["wall_s"] > 0 and result["agent_ticks_per_s"] > 0
