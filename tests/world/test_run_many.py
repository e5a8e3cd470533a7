"""`townsfolk run-many`: a batch of towns, each in its own run folder, a table across them,
resumable, and a failing town shown in the table and the exit code."""

from __future__ import annotations

import json
from pathlib import Path

from world.cli import main as cli
from world.cli.run_many import RUNS_FILE, TABLE_FILE

TINY = ["--mind", "routine", "--agents", "2", "--duration", "10m"]


def test_run_many_runs_each_seed_in_its_own_folder_and_resumes(tmp_path: Path, capsys) -> None:
    out = tmp_path / "batch"
    code = cli(["run-many", "--out", str(out), "--seeds", "0", "1", "--workers", "2", "--json", *TINY])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and result["failed"] == []
    assert [t["town"] for t in result["towns"]] == ["full-seed0", "full-seed1"]
    assert all(t["exit"] == 0 and t["ticks"] == 60 for t in result["towns"])
    for name in ("full-seed0", "full-seed1"):
        assert (out / name).is_dir() and any((out / name).iterdir())
    rows = [json.loads(line) for line in (out / RUNS_FILE).read_text().splitlines()]
    assert sorted(r["summary"]["seed"] for r in rows) == [0, 1]
    table = (out / TABLE_FILE).read_text()
    assert "| full-seed0 | 0 |" in table and "| full-seed1 | 0 |" in table
    with (out / RUNS_FILE).open("a") as handle:  # a batch killed while writing a row
        handle.write('{"name": "full-seed2", "ex')
    again = cli(["run-many", "--out", str(out), "--seeds", "0", "1", "2", *TINY])
    captured = capsys.readouterr()
    assert again == 0 and "2 towns already finished" in captured.err and "full-seed2 ok" in captured.err
    lines = (out / RUNS_FILE).read_text().splitlines()  # the latest row per town; the torn line is gone
    assert [json.loads(line)["name"] for line in lines] == ["full-seed0", "full-seed1", "full-seed2"]


def test_a_failing_town_shows_in_the_table_and_exit_code(tmp_path: Path, capsys) -> None:
    out = tmp_path / "batch"
    code = cli(["run-many", "--out", str(out), "--town", str(tmp_path / "no_such_town"), *TINY])
    captured = capsys.readouterr()
    assert code == 1
    assert "full-seed0 FAILED" in captured.err and "no_such_town" in captured.err
    assert "failed: full-seed0" in captured.out
    row = json.loads((out / RUNS_FILE).read_text().splitlines()[0])
    assert row["exit"] != 0 and "no_such_town" in row["error"]
    assert "no_such_town" in (out / TABLE_FILE).read_text()


def test_run_many_bad_option_is_a_clear_error(tmp_path: Path, capsys) -> None:
    assert cli(["run-many", "--out", str(tmp_path / "b"), "--workers", "0"]) == 2
    assert "--workers must be at least 1" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()
