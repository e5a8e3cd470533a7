"""Importers on the shared HAICOSYSTEM and ToolEmu data, including the malformed files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.encounters.importers import (
    import_haicosystem,
    import_toolemu,
    load_scenario_paths,
    parse_scenarios,
    ScenarioFileError,
)
from world.cli import main as cli


@pytest.fixture(scope="module")
def hai_dir(shared_dir: Path) -> Path:
    return shared_dir / "external" / "haicosystem"


@pytest.fixture(scope="module")
def toolemu_dir(shared_dir: Path) -> Path:
    return shared_dir / "external" / "toolemu"


def test_haicosystem_imports_132_and_names_each_malformed_file(hai_dir: Path) -> None:
    report = import_haicosystem(hai_dir)
    assert len(report.scenarios) == 132
    assert len(report.failures) == 7
    for failure in report.failures:
        assert failure.path.endswith(".jsonl")
        assert failure.path in failure.error and "JSON Lines" in failure.error
    keys = [s.key for s in report.scenarios]
    assert len(set(keys)) == 132  # upstream repeats codenames; keys stay unique
    assert {"jury_disc_5", "jury_disc_6"} <= set(keys)
    assert report.profiles and all(p.first_name for p in report.profiles)
    med = next(s for s in report.scenarios if s.key == "med_triage")
    assert med.toolkits == ["MedicalTriage"] and med.human_intent == "benign"
    assert "strategy_hint" in med.goal_parts()


def test_import_cli_prints_counts_last_and_errors_per_file(hai_dir: Path, capsys) -> None:
    code = cli(["import", "haicosystem", str(hai_dir)])
    out, err = capsys.readouterr()
    assert code == 1  # some files failed
    assert json.loads(out.strip().splitlines()[-1])["imported"] == 132
    assert json.loads(out.strip().splitlines()[-1])["failed"] == 7
    assert "political_debate_1.jsonl" in err and "financial_advice_1.jsonl" in err


def test_toolemu_cases_become_scenarios_with_their_specs(toolemu_dir: Path, tmp_path: Path, capsys) -> None:
    cases, toolkits = toolemu_dir / "all_cases.json", toolemu_dir / "all_toolkits.json"
    report = import_toolemu(cases, toolkits)
    assert len(report.scenarios) == 144 and not report.failures
    first = report.scenarios[0]
    assert first.starting_speech and first.toolemu and first.toolemu.potential_risky_actions
    assert set(first.toolkits) <= set(report.specs)
    code = cli(["import", "toolemu", str(cases), str(toolkits), "--out", str(tmp_path / "pack")])
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and last["imported"] == 144 and last["failed"] == 0
    again = load_scenario_paths([tmp_path / "pack"])
    assert len(again.scenarios) == 144 and not again.failures
    assert set(first.toolkits) <= set(again.specs)


def test_toolemu_case_with_unknown_toolkit_fails_alone(toolemu_dir: Path, tmp_path: Path) -> None:
    cases = json.loads((toolemu_dir / "all_cases.json").read_text())[:3]
    cases[1]["Toolkits"] = ["NoSuchToolkit"]
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases))
    report = import_toolemu(path, toolemu_dir / "all_toolkits.json")
    assert len(report.scenarios) == 2
    assert len(report.failures) == 1 and "NoSuchToolkit" in report.failures[0].error


def test_bad_field_is_named_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"codename": "x", "scenario": "s", "agent_goals": ["a", "b"],
                                "relationship": 9}))
    with pytest.raises(ScenarioFileError) as info:
        parse_scenarios(path)
    assert "bad.json" in str(info.value) and "relationship" in str(info.value)


def test_eval_refuses_raw_toolemu_cases_with_a_hint(toolemu_dir: Path) -> None:
    with pytest.raises(ScenarioFileError, match="townsfolk import toolemu"):
        parse_scenarios(toolemu_dir / "all_cases.json")
