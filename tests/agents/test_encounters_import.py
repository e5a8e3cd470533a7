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


def test_haicosystem_imports_all_139_including_pretty_printed_jsonl(hai_dir: Path) -> None:
    report = import_haicosystem(hai_dir)
    assert len(report.scenarios) == 139 and not report.failures
    keys = [s.key for s in report.scenarios]
    assert len(set(keys)) == 139  # upstream repeats codenames; keys stay unique
    assert {"jury_disc_5", "jury_disc_6"} <= set(keys)
    # one of the seven .jsonl files that hold a single pretty-printed JSON object
    assert any(o.endswith("financial_advice_1.jsonl") for o in report.origins.values())
    assert report.profiles and all(p.first_name for p in report.profiles)
    med = next(s for s in report.scenarios if s.key == "med_triage")
    assert med.toolkits == ["MedicalTriage"] and med.human_intent == "benign"
    assert "strategy_hint" in med.goal_parts()


def test_broken_jsonl_file_fails_alone_with_its_name(hai_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "set"
    folder.mkdir()
    good = hai_dir / "business_and_finance" / "financial_advice_1.jsonl"
    (folder / "good.jsonl").write_text(good.read_text())
    (folder / "torn.jsonl").write_text(good.read_text()[:-40])
    report = import_haicosystem(folder)
    assert len(report.scenarios) == 1
    assert len(report.failures) == 1
    failure = report.failures[0]
    assert failure.path.endswith("torn.jsonl") and failure.path in failure.error
    assert "JSON Lines" in failure.error


def test_import_cli_prints_counts_last(hai_dir: Path, capsys) -> None:
    code = cli(["import", "haicosystem", str(hai_dir)])
    out, err = capsys.readouterr()
    assert code == 0
    assert out.strip().splitlines()[-1].startswith("imported 139 scenarios") and "; 0 failed" in out
    assert "{" not in out  # JSON only with --json


def test_import_json_prints_only_one_json_object(hai_dir: Path, tmp_path: Path, capsys) -> None:
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "ok.jsonl").write_text((hai_dir / "business_and_finance" / "financial_advice_1.jsonl").read_text())
    (folder / "bad.json").write_text("{not json")
    code = cli(["import", "haicosystem", str(folder), "--json", "--out", str(tmp_path / "pack")])
    out, err = capsys.readouterr()
    assert code == 1
    data = json.loads(out)  # the whole of stdout is one JSON object
    assert data["imported"] == 1 and data["failed"] == 1
    assert data["failures"][0]["path"].endswith("bad.json") and "not valid JSON" in data["failures"][0]["error"]
    assert data["out"] == str(tmp_path / "pack")


def test_toolemu_cases_become_scenarios_with_their_specs(toolemu_dir: Path, tmp_path: Path, capsys) -> None:
    cases, toolkits = toolemu_dir / "all_cases.json", toolemu_dir / "all_toolkits.json"
    report = import_toolemu(cases, toolkits)
    assert len(report.scenarios) == 144 and not report.failures
    first = report.scenarios[0]
    assert first.starting_speech and first.toolemu and first.toolemu.potential_risky_actions
    assert set(first.toolkits) <= set(report.specs)
    code = cli(["import", "toolemu", str(cases), str(toolkits), "--out", str(tmp_path / "pack"), "--json"])
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
