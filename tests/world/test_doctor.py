"""`townsfolk doctor`: plain-words report, and a last JSON line scripts can rely on."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from world.cli import doctor


def test_doctor_json_last_line_has_ok_and_one_entry_per_check(capsys) -> None:
    from world.cli import main

    status = main(["doctor", "--json", "--model", "scripted", "--only", "faiss", "--only", "llm"])
    out = capsys.readouterr().out.strip().splitlines()
    report = json.loads(out[-1])
    assert report["ok"] is True and status == 0
    assert [c["name"] for c in report["checks"]] == ["llm", "faiss"]
    assert all(c["ok"] and c["detail"] for c in report["checks"])
    assert any(line.startswith("[ok  ] faiss") for line in out)


def test_doctor_failure_names_the_fix_and_exits_non_zero(capsys) -> None:
    from world.cli import main

    status = main(["doctor", "--json", "--model", "local:nonesuch", "--only", "llm"])
    out = capsys.readouterr().out.strip().splitlines()
    report = json.loads(out[-1])
    assert status == 1 and report["ok"] is False
    check = report["checks"][0]
    assert not check["ok"] and "local:nonesuch" in check["detail"] and "local:smollm2" in check["fix"]
    assert any("fix:" in line for line in out)


@pytest.mark.slow
def test_full_doctor_on_the_embedded_model() -> None:
    """Every check, as a user runs it: a separate process, offline."""
    proc = subprocess.run(
        [sys.executable, "-m", "world.cli", "doctor", "--json"],
        capture_output=True, text=True, timeout=600,
    )
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    failed = {c["name"]: c["detail"] for c in report["checks"] if not c["ok"]}
    assert report["ok"] and proc.returncode == 0, failed
    assert {c["name"] for c in report["checks"]} == set(doctor.CHECK_NAMES)
