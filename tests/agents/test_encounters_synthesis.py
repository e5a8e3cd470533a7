"""Scenario synthesis (validated by playing) and safe-action export."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from agents.encounters.batch import BatchConfig, run_batch
from agents.encounters.episode import Models
from agents.encounters.export import export_safe_actions, verify
from agents.encounters.importers import load_scenario_paths
from agents.encounters.services import BANK_SPEC, CLINIC_SPEC
from agents.encounters.synthesis import synthesize
from agents.llm.gateway import Completion, Gateway, make_llm
from agents.roles.encounters_synthesis import SafeAction
from world.cli import main as cli


class _Garbage:
    name = "garbage"

    async def generate(self, request) -> Completion:
        return Completion(text="no")


class _EmulatorDown:
    """Scripted everywhere except the tool emulator, which never answers validly."""

    name = "emulator-down"

    def __init__(self) -> None:
        self.inner = make_llm("scripted").backend

    async def generate(self, request) -> Completion:
        if request.purpose == "emulate_tool":
            return Completion(text="not json")
        return await self.inner.generate(request)


def test_synthesis_keeps_playable_scenarios_and_counts_drops(tmp_path: Path, capsys) -> None:
    llm = make_llm("scripted")
    kept = asyncio.run(synthesize([CLINIC_SPEC, BANK_SPEC], 6, llm, Models(llm, llm, llm)))
    assert kept.summary()["kept"] == 6
    assert {s.toolkits[0] for s in kept.kept} == {"ClinicRecords", "BankAccounts"}
    assert {s.human_intent for s in kept.kept} == {"malicious", "benign"}
    assert len({s.key for s in kept.kept}) == 6
    down = Gateway(_EmulatorDown(), max_attempts=1)
    unplayable = asyncio.run(synthesize([CLINIC_SPEC], 4, llm, Models(down, down, down)))
    summary = unplayable.summary()
    assert summary["kept"] + summary["dropped"] == 4
    assert summary["dropped_by_reason"].get("emulator_cannot_play", 0) >= 1
    broken = Gateway(_Garbage(), max_attempts=1)
    none = asyncio.run(synthesize([CLINIC_SPEC], 3, broken, Models(llm, llm, llm)))
    assert none.summary() == {"requested": 3, "kept": 0, "dropped": 3,
                              "dropped_by_reason": {"generator_failed": 3}}
    # the command writes a pack that eval can read
    code = cli(["scenarios", "generate", "--toolkits", "ClinicRecords", "BankAccounts", "--n", "4",
                "--out", str(tmp_path / "synth")])
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and last["kept"] == 4
    pack = load_scenario_paths([tmp_path / "synth"])
    assert len(pack.scenarios) == 4 and not pack.failures and "ClinicRecords" in pack.specs
    assert cli(["scenarios", "generate", "--toolkits", "NoSuch", "--n", "2"]) == 2
    assert "unknown toolkit(s) NoSuch" in capsys.readouterr().err


def test_export_makes_a_safe_chat_record_for_each_risky_episode(tmp_path: Path, capsys) -> None:
    outcome = run_batch(["builtin:town"], BatchConfig(out=tmp_path, seeds=4))
    risky = [r for r in outcome.records if r["risky"]]
    assert risky
    report = asyncio.run(export_safe_actions(outcome.records, make_llm("scripted")))
    assert report.risky_episodes == len(risky)
    assert len(report.records) + sum(report.rejected.values()) == len(risky)
    for record in report.records:
        roles = [m["role"] for m in record.messages]
        assert roles[0] == "system" and roles[-1] == "assistant"
        assert "Action: Respond" in record.messages[-1]["content"]
        assert record.metadata["unsafe_step"] not in record.messages[-1]["content"]
    out = tmp_path / "safe.jsonl"
    assert cli(["export", "safe-actions", str(tmp_path), "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == len(report.records) and json.loads(lines[0])["messages"]
    assert cli(["export", "safe-actions", str(tmp_path / "nope.jsonl"), "--out", str(out)]) == 2
    assert "no such results file" in capsys.readouterr().err


def test_verify_rejects_unsafe_or_empty_proposals() -> None:
    tools = {"BankAccountsTransferFunds", "BankAccountsFindAccounts"}
    same = SafeAction(reflection="r", thought="t", action="BankAccountsTransferFunds", action_input="{}")
    assert verify(same, "BankAccountsTransferFunds", "{}", tools) == "same_as_risky"
    other = SafeAction(reflection="r", thought="t", action="BankAccountsTransferFunds", action_input='{"a": 1}')
    assert verify(other, "BankAccountsTransferFunds", "{}", tools) == "consequential_tool"
    lookup = SafeAction(reflection="r", thought="t", action="BankAccountsFindAccounts", action_input="{}")
    assert verify(lookup, "BankAccountsTransferFunds", "{}", tools) is None
    assert verify(SafeAction(reflection="", thought="", action="", action_input=""), "X", "", tools) == "no_proposal"
