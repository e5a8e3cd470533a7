"""`townsfolk bench society`: the paper's two-day evaluation (Park et al. 2023), on any model.

Seeds notions in the residents' memories (by default: Maria Alvarez plans a Valentine's Day party
at the Willow Cafe on February 14 from 5pm to 7pm; Ben Okafor runs for mayor), runs the town,
then interviews every resident the paper's way ("Did you know there is a Valentine's Day
party?", "Do you know who is running for mayor?", "Do you know <name>?" for every pair) through
the ordinary interview path, and scores each answer against what that resident remembers
(replays.society): knowing needs an answer that shows the information and a memory that carries
it; a claim without a memory is a hallucination. Per seed: knowledge of each notion (count,
share, by game hour), who told whom, invited (knew before it ended) vs came (at the place for
15 minutes inside the window, from position records), pairs who went together, density
before (the residents file) and after (interviews checked against memory), hallucinated
answers; the paper's figures beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agents.llm.gateway import make_llm
from agents.minds.cognition.events import parse_event
from agents.minds.interview import interview_answer
from agents.roles.society import judge_answer
from maps.contracts import LIST_MAX, MEMORY_MAX, Persona, TickRecords
from maps.town import TownError, load_town, residents_files
from memory.runfile import RunStore, StoreError
from replays.health import mind_errors
from replays.notions import Notion, parse_notion
from replays.society import (RunFacts, Scored, asked_together, collect, decided_by, density, diffusion_edges, knowers,
                             memory_edges, pairs_of, persona_edges, presence, remembers, score_notion_answer,
                             score_person_answer, spread_by_hour, went_together, wrong_time)
from world.cli.args import positive_int, whole_number
from world.cli.society_plots import write_plots
from world.clock import parse_duration, parse_start
from world.runner import RunError, RunOptions, build_engine, option_error

ABLATIONS = ("full", "no_reflection", "no_reflection_planning", "no_observation")
PAPER = {"party_known": "12 of 25 (48%)", "candidacy_known": "8 of 25 (32%)", "invited_came": "5 of 12",
         "density": "0.167 -> 0.74", "hallucinated": "1.3%"}
PARTY = ("I am planning a Valentine's Day party at the {place} on February 14 from 5pm to 7pm, and I want to "
         "invite everyone I know.")
CANDIDACY = "I am running for mayor, and I want everyone in town to know."
PARTY_HOSTS = ("Maria Alvarez", "Isabella Rodriguez")  # ours, then the paper's (import smallville)
CANDIDATES = ("Ben Okafor", "Sam Moore")


class BenchInputError(ValueError):
    """A bad option or file, named with what was expected."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--event", action="append", default=[], metavar="TEXT",
                        help="a notion to seed, in its host's words ('I am planning a town meeting at the Town Hall "
                             "on February 14 at 6pm', 'I am running for mayor', 'I am opening a bakery next "
                             "month'); repeatable, each with a --host; "
                             "replaces the default party and candidacy")
    parser.add_argument("--host", action="append", default=[], metavar="NAME",
                        help="the resident who holds the matching --event (in the same order)")
    parser.add_argument("--residents", metavar="FILE", help="residents file (default: the town's largest)")
    parser.add_argument("--town", default="default", help="town name or folder (default: default)")
    parser.add_argument("--model", default="scripted", help="the residents' model (default scripted; e.g. local)")
    parser.add_argument("--judge-model", default=None, metavar="MODEL",
                        help="a model that judges whether each answer says yes (default: the answer's own words)")
    parser.add_argument("--seeds", type=positive_int, default=1, help="runs, seeds 0..N-1 (default 1)")
    parser.add_argument("--first-seed", type=first_seed, default=0, metavar="K",
                        help="start at seed K: seeds K..K+N-1 (default 0), to split a long bench across processes "
                             "or machines into one --out, read back whole later with --resume --seeds")
    parser.add_argument("--ablation", default="full",
                        help=f"architecture(s), comma-separated, compared on the same seeds: {', '.join(ABLATIONS)}")
    parser.add_argument("--start", default="2026-02-13 07:00", help="game start (default a Friday 07:00)")
    parser.add_argument("--duration", default="2d", help="game time (default 2d, as the paper)")
    parser.add_argument("--out", metavar="DIR", help="keep the run folders here (default: a temporary folder)")
    parser.add_argument("--png-dir", metavar="DIR", help="write the diffusion curves and the social graphs here")
    parser.add_argument("--resume", action="store_true",
                        help="with --out: go on with an earlier bench there, with the same options (a stopped run "
                             "continues from its last tick, a seed already scored is read back)")


class Setup:
    """Everything checked before any run starts: a bad option fails in a second."""

    def __init__(self, args: argparse.Namespace) -> None:
        try:
            self.start, self.duration = parse_start(args.start), parse_duration(args.duration)
        except ValueError as exc:
            raise BenchInputError(f"--start/--duration: {exc}") from None
        self.ablations = [a.strip() for a in str(args.ablation).split(",")]
        bad = [a for a in self.ablations if a not in ABLATIONS]
        if bad or len(set(self.ablations)) != len(self.ablations):
            raise BenchInputError(f"--ablation {args.ablation!r}: expected distinct names among {', '.join(ABLATIONS)}")
        self.residents_path = residents_path(args.town, args.residents)
        self.raw, self.personas, self.places = read_residents(args.town, self.residents_path)
        self.names = [p.name for p in self.personas]
        self.notions, self.problems = make_notions(args, self.personas, self.places, self.start)


def residents_path(town: str, given: str | None) -> Path:
    """The residents file: ``--residents`` (a path, or a file name in the town folder) or the town's largest."""
    if given:
        path = Path(given)
        if not path.is_file():
            try:
                path = load_town(town, None).folder / given
            except TownError as exc:
                raise BenchInputError(f"--town {town}: {exc}") from None
        if not path.is_file():
            raise BenchInputError(f"--residents {given}: no such file (expected a residents JSON list)")
        return path.resolve()
    try:
        files = residents_files(town)
    except TownError as exc:
        raise BenchInputError(f"--town {town}: {exc}") from None
    if not files:
        raise BenchInputError(f"--town {town}: no residents*.json file in the town folder")
    return files[-1].resolve()


def read_residents(town: str, path: Path) -> tuple[list[dict[str, Any]], list[Persona], list[str]]:
    """(raw entries, personas, place names) of a residents file checked against the town."""
    try:
        loaded = load_town(town, path)
    except TownError as exc:
        raise BenchInputError(f"--residents: {exc}") from None
    if len(loaded.residents) < 2:
        raise BenchInputError(f"--residents {path}: {len(loaded.residents)} resident(s); the bench needs at least 2 "
                              "(news spreads between people, and 'Do you know X?' needs someone to ask about)")
    raw = json.loads(path.read_text())
    return raw, list(loaded.residents), sorted(loaded.sectors)


def default_events(personas: list[Persona]) -> list[tuple[str, str]]:
    """The paper's two notions: a party at its host's workplace and a candidacy for mayor."""
    names = [p.name for p in personas]
    host = next((n for n in PARTY_HOSTS if n in names), names[0])
    candidate = next((n for n in CANDIDATES if n in names and n != host), next(n for n in names if n != host))
    workplace = next(p.workplace for p in personas if p.name == host).split(":")[0]
    return [(PARTY.format(place=workplace), host), (CANDIDACY, candidate)]


def make_notions(args: argparse.Namespace, personas: list[Persona], places: list[str],
                 start: Any) -> tuple[list[Notion], list[str]]:
    """The notions to seed and the problems found (a host who is not a resident: named, not seeded)."""
    if len(args.event) != len(args.host):
        raise BenchInputError(f"--event and --host: expected one --host per --event, got {len(args.event)} "
                              f"--event and {len(args.host)} --host")
    events = list(zip(args.event, args.host)) or default_events(personas)
    names = {p.name for p in personas}
    notions, problems = [], []
    for i, (text, host) in enumerate(events):
        key = ("party", "candidacy")[i] if not args.event else f"event-{i + 1}"
        if not text.strip() or len(text) > MEMORY_MAX:
            raise BenchInputError(f"--event {text[:60]!r}: expected 1 to {MEMORY_MAX} characters")
        try:
            notion = parse_notion(text, host, key, places, start)
        except ValueError as exc:
            raise BenchInputError(f"--event {exc}") from None
        if host not in names:
            problems.append(f"--host {host!r} of {key}: not a resident of the residents file; not seeded")
            continue
        problems += [f"{key}: {p}" for p in notion.problems]
        if notion.kind == "news" and not passed_on(text, host, sorted(names), start):
            problems.append(f"{key}: the residents will not pass it on: news is something under way with a time "
                            "ahead ('I am opening a bakery next month') or a candidacy ('I am running for mayor')")
        notions.append(notion)
    return notions, problems


def passed_on(text: str, host: str, names: list[str], start: datetime) -> bool:
    """Whether the host's mind reads ``text`` as news of its own to tell (agents' events.py; the
    bench's own reading, replays/notions.py, takes any first-person sentence as news): 'I like
    cheese' is seeded and scored, and nobody is ever told."""
    parsed = parse_event(text, start, {}, speaker=host, names=names)
    return parsed is not None and parsed.event is not None and parsed.event.news


def seeded_file(raw: list[dict[str, Any]], notions: list[Notion], folder: Path, resume: bool = False) -> Path:
    """A copy of the residents file with each notion added to its host's seed memories. On
    ``resume`` the copy already there must be that one: a run goes on only with what it began with."""
    data = json.loads(json.dumps(raw))
    for notion in notions:
        entry = next(e for e in data if e.get("name") == notion.host)
        memories = list(entry.get("seed_memories") or [])
        if len(memories) >= LIST_MAX:
            memories = memories[1:]  # room for the notion; the file's own limit stays
        entry["seed_memories"] = [*memories, notion.text]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "residents-seeded.json"
    if resume and path.exists():
        try:
            before = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise BenchInputError(f"--resume: {path}: unreadable ({exc})") from None
        if before != data:
            raise BenchInputError(f"--resume: {folder} was seeded with other residents or events than these options "
                                  "give (compare its residents-seeded.json); resume with the options it began with")
        return path
    path.write_text(json.dumps(data, indent=1))
    return path


def first_seed(text: str) -> int:
    """--first-seed: a whole number of at least 0."""
    return whole_number(text, 0, "a seed of 0 or more")


def run(args: argparse.Namespace) -> dict[str, Any]:
    try:
        setup = Setup(args)
    except BenchInputError as exc:
        raise SystemExit(f"townsfolk bench society: {exc}") from None
    keep = Path(args.out) if args.out else None
    if args.resume and keep is None:
        raise SystemExit("townsfolk bench society: --resume needs --out DIR (the folder of the bench to go on with)")
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    taken = [f"{a}-seed{n}" for a in setup.ablations for n in seeds if keep and (keep / f"{a}-seed{n}").exists()]
    if taken and not args.resume:
        raise SystemExit(f"townsfolk bench society: --out {keep}: {', '.join(taken)} already there; choose a new --out, "
                         "or go on with them with --resume")
    judge_llm = judge(args)  # a judge that cannot be built fails before the first run
    root = keep or Path(tempfile.mkdtemp(prefix="townsfolk-society-"))
    try:
        rows = [run_seed(args, setup, root, seed, ablation, judge_llm)
                for ablation in setup.ablations for seed in seeds]
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)
    if args.png_dir:
        for row in rows:
            row["pngs"] = write_plots(row, Path(args.png_dir))
    return report(args, setup, rows)


def run_seed(args: argparse.Namespace, setup: Setup, root: Path, seed: int, ablation: str,
             judge_llm: Any = None) -> dict[str, Any]:
    """Run one seed of one architecture, interview everyone, and score it."""
    folder = root / f"{ablation}-seed{seed}"
    resume = bool(getattr(args, "resume", False))
    if resume and (folder / "society.json").exists():
        return scored_before(folder / "society.json")
    try:
        seeded = seeded_file(setup.raw, setup.notions, folder, resume)
    except BenchInputError as exc:
        raise SystemExit(f"townsfolk bench society: {exc}") from None
    t0, c0 = time.perf_counter(), time.process_time()
    resumed = resume and (folder / "run" / "run.db").exists()
    if resumed:
        check_planned_end(folder / "run", setup)
    engine = seed_engine(args, setup, folder, seed, ablation, seeded, resumed)
    asyncio.run(engine.run(engine.context.until, progress=hourly(f"{ablation} seed {seed}", t0)))
    engine.store.close()
    run_s, run_cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"bench society: {ablation} seed {seed}: run done in {run_s:.0f} s; interviewing "
          f"{len(setup.names)} residents ({len(setup.names) * (len(setup.notions) + len(setup.names) - 1)} questions)",
          file=sys.stderr, flush=True)
    facts, health, diverged = read_run(folder / "run")
    t1, c1 = time.perf_counter(), time.process_time()
    # a gateway of its own, as `townsfolk interview` builds one (not the run's, whose answer log
    # belongs to the closed run file)
    answers = interview_all(folder / "run", setup, facts, make_llm(args.model, seed=seed), judge_llm)
    row = score_seed(setup, facts, answers)
    # a resident whose mind failed stood still for those ticks: the figures are of a town with
    # someone frozen in it, which the line and the exit code must say
    row["mind_errors"] = {name: e["errors"] for name, e in health["by_resident"].items() if e["errors"]}
    # a resume whose re-run differed from the record goes on from the recorded world with minds
    # that may remember otherwise: the figures are not those of an uninterrupted run, and say so
    row["resume_diverged_ticks"] = diverged
    row.update(seed=seed, ablation=ablation, run_dir=str(folder / "run") if args.out else "", resumed=resumed,
               run_s=round(run_s, 1), interviews_s=round(time.perf_counter() - t1, 1),
               run_cpu_s=round(run_cpu, 1), interviews_cpu_s=round(time.process_time() - c1, 1))  # CPU: a shared machine
    (folder / "society.json").write_text(json.dumps(  # beside the run: what was seeded, found and scored
        {"seeded": [n.model_dump(mode="json") for n in setup.notions], **row,
         "scored_answers": [a.model_dump() for a in answers]}, indent=1, default=str))
    return row


def seed_engine(args: argparse.Namespace, setup: Setup, folder: Path, seed: int, ablation: str, seeded: Path,
                resumed: bool) -> Any:
    """The seed's engine, new or going on from its run folder; says so on stderr (the first
    tick of an embedded model plans every resident's day and takes minutes)."""
    try:
        if resumed:  # the run's own settings; its planned end is the bench's
            options = RunOptions(model=args.model, resume=folder / "run")
        else:
            options = RunOptions(town=args.town, residents=str(seeded), start=setup.start, duration=setup.duration,
                                 seed=seed, mind="generative", model=args.model, out=folder / "run", ablation=ablation)
        engine = build_engine(options)
    except (ValidationError, RunError, TownError, StoreError) as exc:
        raise SystemExit(f"townsfolk bench society: {option_error(exc)}") from None
    print(f"bench society: {ablation} seed {seed}: {'going on from tick ' + str(engine.tick) if resumed else 'starting'}"
          f" ({len(setup.names)} residents, model {args.model}; a line each game hour)", file=sys.stderr, flush=True)
    return engine


def read_run(run_dir: Path) -> tuple[RunFacts, dict[str, Any], int]:
    """The run's facts for the society measures, its minds' errors and fallbacks, and the re-run
    ticks of its resumes that differed from the record (RunStore.diverged_ticks)."""
    store = RunStore.open(run_dir)
    try:
        return collect(store.iter_ticks(0, None)), mind_errors(store.mind_error_rows()), store.diverged_ticks()
    finally:
        store.close()


def hourly(label: str, started: float) -> Callable[[TickRecords], None]:
    """A progress line on stderr each game hour: a bench on an embedded model runs for hours."""
    last: list[int] = []

    def progress(tr: TickRecords) -> None:
        hour = tr.time.hour
        if last and last[0] == hour:
            return
        last[:] = [hour]
        print(f"bench society: {label}: {tr.time:%a %d %b %H:%M} (tick {tr.tick}, {time.perf_counter() - started:.0f} s)",
              file=sys.stderr, flush=True)

    return progress


def check_planned_end(run_dir: Path, setup: Setup) -> None:
    """Refuse, before the run file is touched, a resume whose options end the run elsewhere."""
    try:
        store = RunStore.open(run_dir)
        try:
            planned = datetime.fromisoformat(store.meta()["planned_end"])
        finally:
            store.close()
    except (StoreError, KeyError, ValueError, sqlite3.DatabaseError) as exc:
        raise SystemExit(f"townsfolk bench society: --resume: {run_dir}: not a run to go on with ({exc})") from None
    if planned != setup.start + setup.duration:
        raise SystemExit(f"townsfolk bench society: --resume: {run_dir} was planned to end at {planned:%Y-%m-%d %H:%M}, "
                         f"these options at {setup.start + setup.duration:%Y-%m-%d %H:%M}; resume with the --start "
                         "and --duration it began with")


def scored_before(path: Path) -> dict[str, Any]:
    """A seed an earlier bench ran and scored (its society.json), as :func:`run_seed` returns it."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"townsfolk bench society: --resume: {path}: unreadable ({exc}); remove it to score "
                         "that seed again") from None
    if not isinstance(data, dict) or "notions" not in data:
        raise SystemExit(f"townsfolk bench society: --resume: {path}: not a scored seed (no 'notions'); remove it "
                         "to score that seed again")
    data.pop("seeded", None)
    data.pop("scored_answers", None)
    return data


def judge(args: argparse.Namespace) -> Any:
    """The judge model's gateway, or None (the answer's own words decide)."""
    if not args.judge_model:
        return None
    try:
        return make_llm(args.judge_model)
    except Exception as exc:
        raise SystemExit(f"townsfolk bench society: --judge-model {args.judge_model}: {exc}") from None


def interview_all(run_dir: Path, setup: Setup, facts: RunFacts, llm: Any, judge_llm: Any) -> list[Scored]:
    """Every resident asked about every notion and every other resident; each answer scored."""
    scored = []
    by_name = {p.name: p for p in setup.personas}
    for name in setup.names:
        memory = remembers(facts, name)
        for notion in setup.notions:
            reply = interview_answer(run_dir, name, notion.question, llm=llm)
            verdict = said_yes(judge_llm, name, notion.question, reply.text)
            scored.append(score_notion_answer(name, reply.text, notion, memory, setup.names, verdict)
                          .model_copy(update={"from_fallback": reply.from_fallback}))
        for other in setup.names:
            if other != name:
                question = f"Do you know {other}?"
                reply = interview_answer(run_dir, name, question, llm=llm)
                verdict = said_yes(judge_llm, name, question, reply.text)
                scored.append(score_person_answer(name, reply.text, other, memory, by_name[name], setup.names, verdict)
                              .model_copy(update={"from_fallback": reply.from_fallback}))
    return scored


def said_yes(judge_llm: Any, name: str, question: str, answer: str) -> bool | None:
    """The judge model's reading of whether the answer says yes (None without a judge)."""
    if judge_llm is None:
        return None
    return judge_answer(judge_llm, name, question, answer)


def score_seed(setup: Setup, facts: RunFacts, answers: list[Scored]) -> dict[str, Any]:
    """The figures of one run: each notion's spread and gathering, who knows whom, hallucinations."""
    n = len(setup.names)
    notions = {notion.key: notion_figures(setup, facts, notion, answers) for notion in setup.notions}
    people = [a for a in answers if a.about in setup.names]
    before = pairs_of(persona_edges(setup.personas), setup.names)
    after = pairs_of(((a.resident, a.about) for a in people if a.knows), setup.names)
    remembered = before | pairs_of(memory_edges(facts, setup.names), setup.names)
    claims = [a for a in answers if a.claims]
    halluc = [a for a in answers if a.hallucinated]
    return {
        "residents": n,
        "names": list(setup.names),
        "notions": notions,
        "density_before": round(density(before, n), 3),
        "density_after": round(density(after, n), 3),
        "density_from_memory": round(density(remembered, n), 3),
        "pairs_before": len(before), "pairs_after": len(after),
        "new_acquaintances": len(after - before),
        "edges_before": sorted(sorted(p) for p in before), "edges_after": sorted(sorted(p) for p in after),
        "answers": len(answers), "claims": len(claims),
        # the engine's answers from memory, where every answer of the model was refused: a 'known'
        # said that way is the engine's reading of the memory, not the model's
        "fallback_answers": sum(1 for a in answers if a.from_fallback),
        "hallucinated": len(halluc),
        "hallucinated_share": round(len(halluc) / len(answers), 4) if answers else None,
        "hallucinated_acquaintances": sum(1 for a in halluc if a.about in setup.names),
        "hallucinated_acquaintance_share": round(sum(1 for a in halluc if a.about in setup.names) / len(people), 4)
        if people else None,  # the paper's 1.3% is of the 'do you know X' answers
        "hallucination_examples": [f"{a.resident} on {a.about}: {a.answer[:160]}" for a in halluc[:3]],
        "problems": list(setup.problems),
    }


def notion_figures(setup: Setup, facts: RunFacts, notion: Notion, answers: list[Scored]) -> dict[str, Any]:
    """Knowledge (from memory and from interviews), the diffusion tree and, for a gathering, who came."""
    n = len(setup.names)
    known = knowers(facts, notion, setup.names)
    mine = [a for a in answers if a.about == notion.key]
    said = sorted(a.resident for a in mine if a.knows)
    out: dict[str, Any] = {
        "what": notion.what, "host": notion.host, "kind": notion.kind, "question": notion.question,
        "known": len(said), "known_share": round(len(said) / n, 3), "knowers": said,
        "known_by_fallback": sorted(a.resident for a in mine if a.knows and a.from_fallback),
        "known_in_memory": len(known),
        "remembered_not_said": sorted(set(known) - set(said)),  # the interview's answer did not show it
        "missed_answers": [f"{a.resident}: {a.answer[:160]}" for a in mine if a.resident in known and not a.knows][:3],
        "hallucinated": sorted(a.resident for a in mine if a.hallucinated),
        "by_hour": spread_by_hour(known, facts.first, facts.last) if facts.first and facts.last else [],
        "told": [list(e) for e in diffusion_edges(known)],
        "via": {name: k.via for name, k in sorted(known.items())},
    }
    if notion.kind == "gathering":
        out.update(gathering_figures(facts, notion, known, setup.names))
        if notion.place and "guests" in out:  # guests whose workplace it is (the barista at the cafe's party)
            staff = {p.name for p in setup.personas if p.workplace.split(":")[0].lower() == notion.place.lower()}
            out["guests_who_work_there"] = sorted(set(out["guests"]) & staff)
    return out


def gathering_figures(facts: RunFacts, notion: Notion, known: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """Invited (knew while it could still be attended, host aside) vs came (at the place inside the window)."""
    if not notion.place or notion.start is None or notion.end is None:
        return {"place": notion.place, "window": None, "attendance": "not measured: " + "; ".join(notion.problems)}
    invited = sorted(n for n, k in known.items() if n != notion.host and k.time < notion.end)
    there = presence(facts, notion.place, notion.start, notion.end)
    came = sorted(n for n in there if n in invited)
    decided = decided_by(facts, notion)
    return {
        "decided": len(decided), "said_going": sorted(n for n, (going, _by) in decided.items() if going),
        "decided_by_rule": sorted(n for n, (_going, by) in decided.items() if by == "rule"),
        "place": notion.place, "window": f"{notion.start:%a %d %b %H:%M}-{notion.end:%H:%M}",
        "invited": len(invited), "came": len(came), "guests": came,
        "host_there": notion.host in there,
        "at_place": sorted(there), "others_at_place": sorted(n for n in there if n not in invited and n != notion.host),
        "went_together": [list(p) for p in went_together(facts, {n: there[n] for n in came}, notion.place)],
        "asked_together": [list(p) for p in asked_together(facts, notion, names)],
        "wrong_time": [list(w) for w in wrong_time(facts, notion)],
    }


def report(args: argparse.Namespace, setup: Setup, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The table: per seed and architecture one line per figure, the paper's beside; ``runs`` for scripts."""
    out: dict[str, Any] = {"model": args.model, "judge_model": args.judge_model or "(answer's words)",
                           "residents": len(setup.names), "residents_file": str(setup.residents_path),
                           "game_time": args.duration, "seeds": args.seeds, "first_seed": args.first_seed}
    for notion in setup.notions:
        out[f"{notion.key}"] = f"{notion.what} (host {notion.host})" + (
            f" at {notion.place}, {notion.start:%a %d %b %H:%M}-{notion.end:%H:%M}" if notion.start and notion.end
            and notion.place else "")
    for row in rows:
        label = f"{row['ablation']} seed {row['seed']}"
        out[label] = summary_line(row)
    for ablation in setup.ablations:
        mine = [r for r in rows if r["ablation"] == ablation]
        if len(mine) > 1:
            out[f"{ablation} mean of {len(mine)}"] = mean_line(mine)
    frozen = [f"{r['ablation']} seed {r['seed']}: mind errors in {len(r['mind_errors'])} residents "
              f"({sum(r['mind_errors'].values())} ticks; {', '.join(sorted(r['mind_errors'])[:5])})"
              for r in rows if r.get("mind_errors")]
    if frozen:  # exit status 1: the bench measured a town where someone could not act
        out["failed"] = frozen
    out["paper"] = ", ".join(f"{k} {v}" for k, v in PAPER.items())
    inexact = [f"{r['ablation']} seed {r['seed']}: resumed, {r['resume_diverged_ticks']} re-run ticks differed from "
               "the record (its world state was imposed; the minds may remember otherwise than an uninterrupted run)"
               for r in rows if r.get("resume_diverged_ticks")]
    out["problems"] = [*setup.problems, *inexact] or "none"
    out["runs"] = rows
    return out


def summary_line(row: dict[str, Any]) -> str:
    """One seed in words: each notion known (and came), density, hallucinations, time."""
    bits = []
    for key, f in row["notions"].items():
        bit = f"{key} {f['known']}/{row['residents']} (memory {f['known_in_memory']}" + (
            f", {len(f['known_by_fallback'])} said by the fallback)" if f.get("known_by_fallback") else ")")
        if "came" in f:
            if "said_going" in f:
                bit += (f", said going {len(f['said_going'])} ({len(f['decided_by_rule'])} of {f['decided']} "
                        "decisions by the rule)")
            bit += (f", came {f['came']}/{f['invited']} ({len(f['guests_who_work_there'])} work there), "
                    f"wrong time {len(f['wrong_time'])}")
        bits.append(bit)
    bits.append(f"density {row['density_before']} -> {row['density_after']}")
    bits.append(f"hallucinated {row['hallucinated']}/{row['answers']}")
    if row.get("mind_errors"):
        bits.append(f"MIND ERRORS {sum(row['mind_errors'].values())} ({', '.join(sorted(row['mind_errors']))})")
    if row.get("resume_diverged_ticks"):
        bits.append(f"RESUMED NOT EXACTLY: {row['resume_diverged_ticks']} re-run ticks differed from the record")
    bits.append(f"run {row['run_s']} s + interviews {row['interviews_s']} s"
                + (f" (CPU {row['run_cpu_s']} + {row['interviews_cpu_s']} s)" if "run_cpu_s" in row else ""))
    return "; ".join(bits)


def mean_line(rows: list[dict[str, Any]]) -> str:
    """The seeds of one architecture averaged: each notion known (and came), density, hallucinations."""
    def mean(values: list[float]) -> str:
        return f"{sum(values) / len(values):.1f}"

    bits = []
    for key in rows[0]["notions"]:
        figures = [r["notions"][key] for r in rows]
        bit = f"{key} known {mean([f['known'] for f in figures])}/{rows[0]['residents']}"
        if all("said_going" in f for f in figures):  # seeds scored before it was counted have none
            bit += (f", said going {mean([len(f['said_going']) for f in figures])} "
                    f"({mean([len(f['decided_by_rule']) for f in figures])} of {mean([f['decided'] for f in figures])} "
                    "decisions by the rule)")
        if all("came" in f for f in figures):
            bit += f", came {mean([f['came'] for f in figures])}/{mean([f['invited'] for f in figures])}"
        bits.append(bit)
    bits.append(f"density {sum(r['density_before'] for r in rows) / len(rows):.3f} -> "
                f"{sum(r['density_after'] for r in rows) / len(rows):.3f}")
    bits.append(f"hallucinated {mean([r['hallucinated'] for r in rows])}/{rows[0]['answers']}")
    return "; ".join(bits)
