"""`townsfolk bench society`: a tiny scripted run end to end (the numbers come from the run) and
its bad input (refused before any run, or named and recorded while the run goes on)."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import datetime
from pathlib import Path

import pytest

from world.cli import main as cli_main
from world.cli.bench_society import (BenchInputError, Setup, add_arguments, make_notions, mean_line, read_residents,
                                    residents_path, seeded_file, summary_line)
from world.runner import RunOptions, build_engine

TOWN = "default"
PARTY = "I am planning a Valentine's Day party at the Willow Cafe on February 14 from 5pm to 7pm"


def three_residents(tmp_path: Path, n: int = 3) -> Path:
    """The Alvarez family of the default town, with only their ties to each other."""
    raw = json.loads((Path("maps/towns/default/residents.json")).read_text())[:n]
    names = {r["name"] for r in raw}
    for r in raw:
        r["relationships"] = [t for t in r.get("relationships", []) if t["name"] in names]
    path = tmp_path / "three.json"
    path.write_text(json.dumps(raw))
    return path


def bench_args(*extra: str) -> list[str]:
    return ["bench", "society", "--model", "scripted", "--json", *extra]


def last_json(capsys: pytest.CaptureFixture[str]) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_a_tiny_scripted_bench_scores_what_the_run_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    residents = three_residents(tmp_path)
    out = tmp_path / "runs"
    code = cli_main(bench_args("--residents", str(residents), "--start", "2026-02-14 16:40", "--duration", "50m",
                               "--judge-model", "scripted",
                               "--event", PARTY, "--host", "Maria Alvarez",
                               "--event", "I am running for mayor", "--host", "Lucy Alvarez",
                               "--out", str(out), "--png-dir", str(tmp_path / "png")))
    assert code == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out.strip().splitlines()[-1])
    row = result["runs"][0]
    assert row["residents"] == 3 and row["answers"] == 3 * 2 + 3 * 2  # two notions, two others each
    party, mayor = row["notions"]["event-1"], row["notions"]["event-2"]
    assert party["kind"] == "gathering" and party["window"] == "Sat 14 Feb 17:00-19:00" and party["place"] == "Willow Cafe"
    assert mayor["kind"] == "news" and mayor["question"] == "Do you know who is running for mayor?"
    for figures in (party, mayor):  # every counted knower has a memory that carries it; the host always
        assert set(figures["knowers"]) <= set(figures["via"]) and figures["host"] in figures["via"]
        assert figures["known_in_memory"] == len(figures["via"]) <= 3
        assert figures["by_hour"][-1][1] == figures["known_in_memory"]
    assert party["came"] <= party["invited"] <= 2
    assert set(party["guests"]) <= set(party["at_place"])
    assert 0.0 <= row["density_before"] <= 1.0 and row["density_after"] <= 1.0
    assert row["hallucinated_share"] == round(row["hallucinated"] / row["answers"], 4)
    assert len(row["hallucination_examples"]) == min(3, row["hallucinated"])
    assert Path(out / "full-seed0" / "run" / "run.db").exists()  # --out keeps the run folder, and the scores
    kept = json.loads((out / "full-seed0" / "society.json").read_text())
    assert kept["seeded"][0]["place"] == "Willow Cafe" and kept["answers"] == row["answers"]
    assert result["judge_model"] == "scripted"
    assert sorted(Path(p).name for p in row["pngs"]) == ["full-seed0-diffusion.png", "full-seed0-graph.png"]
    assert result["paper"].startswith("party_known 12 of 25")
    err = captured.err  # hours on an embedded model: progress each game hour, then the interviews
    assert "bench society: full seed 0: Sat 14 Feb 16:40 (tick 0" in err and "Sat 14 Feb 17:00" in err
    assert "run done in" in err and "interviewing 3 residents (12 questions)" in err


def test_unknown_options_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli_main(bench_args("--partay"))
    assert exc.value.code == 2 and "--partay" in capsys.readouterr().err


def test_a_residents_file_with_one_resident_is_refused(tmp_path: Path) -> None:
    lonely = three_residents(tmp_path, 1)
    with pytest.raises(SystemExit, match=r"1 resident\(s\); the bench needs at least 2"):
        cli_main(bench_args("--residents", str(lonely)))
    with pytest.raises(SystemExit, match="--residents nowhere.json: no such file"):
        cli_main(bench_args("--residents", "nowhere.json"))


class Args:
    def __init__(self, events: list[str], hosts: list[str]) -> None:
        self.event, self.host = events, hosts


def test_bad_events_are_named(tmp_path: Path) -> None:
    _raw, people, places = read_residents(TOWN, residents_path(TOWN, str(three_residents(tmp_path))))
    start = datetime(2026, 2, 13, 7)
    notions, problems = make_notions(Args([PARTY, "I am running for mayor"], ["Nobody Here", "Lucy Alvarez"]),
                                     people, places, start)
    assert [n.key for n in notions] == ["event-2"]
    assert problems == ["--host 'Nobody Here' of event-1: not a resident of the residents file; not seeded"]
    _, problems = make_notions(Args(["I am planning a concert at the Moon Bar on Saturday at 8pm"], ["Maria Alvarez"]),
                               people, places, start)
    assert problems[0].startswith("event-1: no place of the town is named")
    with pytest.raises(BenchInputError, match="expected one --host per --event"):
        make_notions(Args([PARTY], []), people, places, start)
    with pytest.raises(BenchInputError, match="--event 'Hello there': cannot tell what the notion is"):
        make_notions(Args(["Hello there"], ["Maria Alvarez"]), people, places, start)
    # news the residents would never pass on is seeded and scored, and said to be so
    notions, problems = make_notions(Args(["I am fond of cheese.", "I am opening a bakery next month."],
                                          ["Maria Alvarez", "Lucy Alvarez"]), people, places, start)
    assert [n.key for n in notions] == ["event-1", "event-2"]
    assert problems == ["event-1: the residents will not pass it on: news is something under way with a time ahead "
                        "('I am opening a bakery next month') or a candidacy ('I am running for mayor')"]


def test_the_default_notions_are_the_papers_two(tmp_path: Path) -> None:
    class Given:
        town, residents, start, duration, ablation = TOWN, None, "2026-02-13 07:00", "2d", "full"
        event: list[str] = []
        host: list[str] = []

    setup = Setup(Given())  # type: ignore[arg-type]
    assert len(setup.names) == 25 and setup.problems == []
    party, mayor = setup.notions
    assert (party.key, party.host, party.place, f"{party.start:%d %H:%M}-{party.end:%H:%M}") == (
        "party", "Maria Alvarez", "Willow Cafe", "14 17:00-19:00")
    assert (mayor.key, mayor.host, mayor.question) == ("candidacy", "Ben Okafor", "Do you know who is running for mayor?")
    Given.ablation = "full,nothing"
    with pytest.raises(BenchInputError, match="--ablation 'full,nothing'"):
        Setup(Given())  # type: ignore[arg-type]


def test_the_seed_lines_and_their_mean_say_the_figures() -> None:
    def row(known: int, came: int, halluc: int) -> dict:
        return {"residents": 4, "answers": 20, "hallucinated": halluc, "density_before": 0.5, "density_after": 0.75,
                "run_s": 1.0, "interviews_s": 2.0,
                "notions": {"party": {"known": known, "known_in_memory": 4, "came": came, "invited": 3,
                                      "guests_who_work_there": ["Grace Kim"], "wrong_time": []}}}

    assert summary_line(row(3, 2, 0)) == ("party 3/4 (memory 4), came 2/3 (1 work there), wrong time 0; "
                                          "density 0.5 -> 0.75; hallucinated 0/20; run 1.0 s + interviews 2.0 s")
    inexact = row(3, 2, 0) | {"resume_diverged_ticks": 16}
    assert summary_line(inexact).endswith("RESUMED NOT EXACTLY: 16 re-run ticks differed from the record; "
                                          "run 1.0 s + interviews 2.0 s")
    assert mean_line([row(3, 2, 0), row(1, 0, 1)]) == ("party known 2.0/4, came 1.0/3.0; density 0.500 -> 0.750; "
                                                       "hallucinated 0.5/20")
    decided = row(3, 2, 0)
    decided["notions"]["party"] |= {"decided": 3, "said_going": ["Ann", "Bo"], "decided_by_rule": ["Bo"]}
    assert "said going 2 (1 of 3 decisions by the rule), came 2/3" in summary_line(decided)
    other = row(1, 0, 1)
    other["notions"]["party"] |= {"decided": 3, "said_going": [], "decided_by_rule": ["Ann", "Bo", "Cy"]}
    assert mean_line([decided, other]).startswith(
        "party known 2.0/4, said going 1.0 (2.0 of 3.0 decisions by the rule), came 1.0/3.0")


def test_a_start_out_of_range_and_a_used_out_folder_are_refused(tmp_path: Path) -> None:
    residents = str(three_residents(tmp_path))
    with pytest.raises(SystemExit, match="--start: expected a date from"):
        cli_main(bench_args("--residents", residents, "--start", "1200-01-01 07:00", "--duration", "10m"))
    (tmp_path / "out" / "full-seed0").mkdir(parents=True)
    with pytest.raises(SystemExit, match="full-seed0 already there; choose a new --out"):
        cli_main(bench_args("--residents", residents, "--out", str(tmp_path / "out")))


def test_a_stopped_bench_goes_on_with_resume_and_scores_as_an_unbroken_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bench on a slow model takes hours: one stopped mid-run goes on from its last tick with
    --resume and scores what an unbroken bench scores; a seed already scored is read back; a
    resume with other options than the run began with is refused, naming what differs."""
    residents = str(three_residents(tmp_path))
    common = ("--residents", residents, "--start", "2026-02-14 16:40", "--duration", "50m",
              "--event", PARTY, "--host", "Maria Alvarez")
    assert cli_main(bench_args(*common, "--out", str(tmp_path / "whole"))) == 0
    captured = capsys.readouterr()
    whole = json.loads(captured.out.strip().splitlines()[-1])["runs"][0]
    assert "bench society: full seed 0: starting (3 residents, model scripted" in captured.err

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    setup = Setup(parser.parse_args(list(common)))
    folder = tmp_path / "broken" / "full-seed0"
    seeded = seeded_file(setup.raw, setup.notions, folder)
    engine = build_engine(RunOptions(residents=str(seeded), start=setup.start, duration=setup.duration, seed=0,
                                     mind="generative", model="scripted", out=folder / "run", ablation="full"))
    asyncio.run(engine.run(setup.start + (setup.duration / 2)))  # stopped half-way, as a killed bench is
    engine.store.close()
    assert not (folder / "society.json").exists()

    assert cli_main(bench_args(*common, "--out", str(tmp_path / "broken"), "--resume")) == 0
    captured = capsys.readouterr()
    resumed = json.loads(captured.out.strip().splitlines()[-1])["runs"][0]
    assert "bench society: full seed 0: going on from tick " in captured.err  # said before the hours go by
    timing = ("run_s", "interviews_s", "run_cpu_s", "interviews_cpu_s", "run_dir", "resumed")
    assert resumed["resumed"] is True and whole["resumed"] is False
    assert {k: v for k, v in resumed.items() if k not in timing} == {k: v for k, v in whole.items() if k not in timing}

    assert cli_main(bench_args(*common, "--out", str(tmp_path / "broken"), "--resume")) == 0  # read back
    again = last_json(capsys)["runs"][0]
    assert again["notions"] == resumed["notions"] and again["run_s"] == resumed["run_s"]

    with pytest.raises(SystemExit, match="--resume needs --out"):
        cli_main(bench_args(*common, "--resume"))
    (folder / "society.json").unlink()
    other = [a if a != PARTY else PARTY.replace("5pm to 7pm", "6pm to 8pm") for a in common]
    with pytest.raises(SystemExit, match="residents-seeded.json"):
        cli_main(bench_args(*other, "--out", str(tmp_path / "broken"), "--resume"))
    longer = [a if a != "50m" else "2h" for a in common]
    with pytest.raises(SystemExit, match="planned to end at 2026-02-14 17:30"):
        cli_main(bench_args(*longer, "--out", str(tmp_path / "broken"), "--resume"))


def test_residents_who_never_met_say_so_in_the_interviews(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two residents with no ties who never meet: each 'Do you know X?' is answered with the
    engine's 'never met' answer (a bench on the default town crashed on it once), not a claim."""
    raw = json.loads((Path("maps/towns/default/residents.json")).read_text())[:2]
    for r in raw:
        r["relationships"] = []
    path = tmp_path / "strangers.json"
    path.write_text(json.dumps(raw))
    assert cli_main(bench_args("--residents", str(path), "--start", "2026-02-14 03:00", "--duration", "10m")) == 0
    row = last_json(capsys)["runs"][0]
    assert row["answers"] == 2 * 2 + 2 and row["hallucinated"] == 0 and row["density_after"] == 0.0


def test_a_bench_whose_resident_could_not_act_says_so_and_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A mind that fails stands its resident still: the figures are of a town with someone frozen
    in it (SmolLM2's two days: 360 ticks of one resident's failing plan), so the seed's line
    names it and the exit status is 1."""
    from agents.minds.generative import Resident

    real = Resident.decide

    async def failing(self: Resident, perception):  # type: ignore[no-untyped-def]
        if self.name == "Lucy Alvarez":
            raise RuntimeError("a mind that cannot decide")
        return await real(self, perception)

    monkeypatch.setattr(Resident, "decide", failing)
    code = cli_main(bench_args("--residents", str(three_residents(tmp_path)), "--start", "2026-02-14 16:40",
                               "--duration", "20m", "--event", PARTY, "--host", "Maria Alvarez"))
    result = last_json(capsys)
    assert code == 1
    row = result["runs"][0]
    assert set(row["mind_errors"]) == {"Lucy Alvarez"} and row["mind_errors"]["Lucy Alvarez"] > 0
    assert "MIND ERRORS" in result["full seed 0"] and "Lucy Alvarez" in result["failed"][0]


def test_a_bench_split_across_processes_is_read_back_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--first-seed runs the later seeds elsewhere into the same --out; --resume --seeds N then
    runs what is missing and reads back the seeds scored there, for one table of all."""
    common = ("--residents", str(three_residents(tmp_path)), "--start", "2026-02-14 16:40", "--duration", "30m",
              "--event", PARTY, "--host", "Maria Alvarez", "--out", str(tmp_path / "split"))
    assert cli_main(bench_args(*common, "--first-seed", "1")) == 0
    later = last_json(capsys)
    assert [r["seed"] for r in later["runs"]] == [1] and later["first_seed"] == 1
    assert sorted(p.name for p in (tmp_path / "split").iterdir()) == ["full-seed1"]
    assert cli_main(bench_args(*common, "--seeds", "2", "--resume")) == 0
    whole = last_json(capsys)
    assert [(r["seed"], r["resumed"]) for r in whole["runs"]] == [(0, False), (1, False)]
    assert whole["runs"][1]["run_s"] == later["runs"][0]["run_s"]  # read back, not run again
    assert "full mean of 2" in whole
    with pytest.raises(SystemExit):
        cli_main(bench_args(*common, "--first-seed", "-1"))
    assert "--first-seed: expected a seed of 0 or more, got -1" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="full-seed1 already there"):
        cli_main(bench_args(*common, "--first-seed", "1"))
