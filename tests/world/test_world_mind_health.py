"""Residents never freeze, and when a mind does fail the run says so (issue 9).

A full scripted day of every built-in residents file runs with zero mind errors and zero
fallbacks; a mind that raises is recorded, counted per resident in the summary, logged once
per distinct error, and makes the run's health 'failed' (and `run` exit non-zero).
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from maps.contracts import Intent, Perception, Persona
from maps.town import load_town
from replays.health import health, mind_errors
from maps.contracts import Record
from memory.runfile import RunStore
from world.engine import Engine
from world.cli.run import health_exit_code
from world.runner import RunOptions, build_engine
from world.summary import run_summary

REPO = Path(__file__).resolve().parents[2]
START = datetime(2026, 2, 13, 7, 0)


@pytest.mark.parametrize("residents", sorted((REPO / "maps/towns/default").glob("residents*.json")),
                         ids=lambda p: p.name)
def test_a_scripted_day_of_every_built_in_residents_file_has_no_mind_error(
    residents: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOWNSFOLK_EMBEDDER", "hashing")  # the plumbing is under test, not MiniLM
    engine = build_engine(RunOptions(model="scripted", mind="generative", residents=str(residents), duration="1d",
                                     out=tmp_path / "run", cache_dir=tmp_path / "cache"))
    asyncio.run(engine.run(engine.context.until))
    summary = run_summary(engine.store)
    engine.store.close()
    data = json.loads(residents.read_text())
    n = len(data["residents"] if isinstance(data, dict) else data)
    assert summary["residents"] == n
    errors = summary["mind_errors"]
    assert errors["errors"] == 0 and errors["fallbacks"] == 0, errors["by_resident"]
    assert errors["calls"] == summary["llm_calls"] > 10 * n  # every resident planned and acted
    assert summary["health"] == {"status": "ok", "reasons": []}
    acting = set(summary["resident_names"])
    with RunStore.open(tmp_path / "run") as store:
        decomposed = {r[0] for r in store.conn.execute(
            "SELECT DISTINCT resident FROM records WHERE kind = 'plan' AND data LIKE '%decomposed%'")}
    assert decomposed == acting  # nobody stood still all day


class Broken(RuntimeError):
    pass


class Fatal(RuntimeError):
    fatal = True


class Failing:
    """A mind whose every decision raises (the same error each time)."""

    def __init__(self, name: str, exc: Exception | None = None) -> None:
        self.name = name
        self.exc = exc

    def decide_fast(self, p: Perception) -> Intent | None:
        return None if self.exc is not None else Intent()

    async def decide(self, p: Perception) -> Intent:
        raise self.exc  # type: ignore[misc]

    def drain_records(self) -> list[Record]:
        return []

    def snapshot(self) -> dict:
        return {}

    def restore(self, state: dict) -> None:
        pass


def _persona(name: str) -> Persona:
    return Persona(name=name, age=30, occupation="tester", workplace="Willow Cafe:kitchen", home="Oak House")


def test_a_mind_that_raises_is_counted_logged_once_and_fails_the_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    town = load_town("default")
    minds = {"Ada Failing": Failing("Ada Failing", Broken("the plan has no steps")), "Bo Fine": Failing("Bo Fine")}
    store = RunStore.create(tmp_path / "run", {"resident_names": sorted(minds)})
    engine = Engine(town, [_persona(n) for n in minds], minds, start=START, store=store)
    # A library configured with logging.config's disable_existing_loggers (Ray's init does) may
    # have switched our loggers off earlier in this process: the engine's own must be on here.
    for name in [n for n in logging.root.manager.loggerDict if n.split(".")[0] == "world"]:
        logging.getLogger(name).disabled = False
    with caplog.at_level(logging.ERROR):
        asyncio.run(engine.run(START + timedelta(minutes=5)))
    summary = run_summary(store)
    store.close()
    ticks = summary["ticks"]
    assert ticks == 30
    errors = summary["mind_errors"]
    assert errors["errors"] == ticks
    assert list(errors["by_resident"]) == ["Ada Failing"]
    assert errors["by_resident"]["Ada Failing"]["messages"] == ["Broken: the plan has no steps"]
    assert summary["health"]["status"] == "failed"
    assert "Ada Failing" in summary["health"]["reasons"][0]
    failed_lines = [r for r in caplog.records if "mind of" in r.getMessage()]
    assert len(failed_lines) == 1  # one line per distinct error, not one per tick
    assert health_exit_code(summary) == 3


def test_a_fatal_error_stops_the_run_instead_of_being_counted(tmp_path: Path) -> None:
    town = load_town("default")
    minds = {"Ada Failing": Failing("Ada Failing", Fatal("missing API key"))}
    engine = Engine(town, [_persona("Ada Failing")], minds, start=START)
    with pytest.raises(Fatal):
        asyncio.run(engine.run(START + timedelta(minutes=5)))


def _llm(resident: str, fallback: bool, error: str = "") -> tuple[str, str, str]:
    return ("llm", resident, json.dumps({"purpose": "decompose", "fallback": fallback, "error": error}))


def test_health_is_degraded_when_over_a_tenth_of_calls_fall_back() -> None:
    rows = [_llm("Ada", False)] * 8 + [_llm("Ada", True, "steps: too long")] * 2
    errors = mind_errors(rows)
    assert errors["fallbacks"] == 2 and errors["calls"] == 10
    assert errors["by_resident"]["Ada"]["messages"] == ["fallback on decompose: steps: too long"]
    assert health(errors)["status"] == "degraded"
    assert "2 of 10" in health(errors)["reasons"][0]
    assert health_exit_code({"health": health(errors)}) == 4
    assert health(mind_errors([_llm("Ada", False)] * 9 + [_llm("Ada", True)]))["status"] == "ok"  # exactly 10%
    assert health_exit_code({"health": {"status": "ok", "reasons": []}}) == 0


def test_run_prints_the_failure_and_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from world.cli.run import run_engine

    options = RunOptions(mind="routine", duration="10m", out=tmp_path / "run")
    engine = build_engine(options)
    first = next(iter(engine.residents.values()))
    first.mind = Failing(first.name, Broken("no plan"))
    code = run_engine(engine, options, quiet=True, control=False)
    out = capsys.readouterr().out
    assert code == 3
    assert "health: failed" in out and f"{first.name[:18]}: errors" in out and "Broken: no plan" in out
    with RunStore.open(tmp_path / "run") as store:
        assert run_summary(store)["mind_errors"]["by_resident"][first.name]["errors"] == store.counts()["ticks"]


def test_patched_answer_items_are_counted_and_shown_but_are_not_fallbacks() -> None:
    """A day plan with one part that was no activity keeps its other parts; the patch is named in
    the summary (not hidden), and the call is not a fallback."""
    from agents.minds.cognition.calls import patches_of
    from agents.roles.planning import day_plan_schema

    answer = day_plan_schema(4)(currently="Ada is fine.", parts=["Mercury", "lunch with Tom", "cook", "relax"])
    patched, reason = patches_of(answer)
    assert patched == 1 and "one word that is no activity" in reason
    row = ("llm", "Ada", json.dumps({"purpose": "plan_day", "call_id": "c", "prompt_hash": "h", "ok": True,
                                     "patched": patched, "patch_reason": reason}))
    errors = mind_errors([row] + [_llm("Ada", False)] * 3)
    assert (errors["patched"], errors["fallbacks"], errors["calls"]) == (1, 0, 4)
    assert errors["by_resident"]["Ada"]["messages"][0].startswith("1 patched on plan_day: parts.0")
    assert health(errors)["status"] == "ok"
