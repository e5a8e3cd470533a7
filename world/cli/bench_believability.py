"""`townsfolk bench believability`: run a short town on a model and score how believable it was.

The run's own checks (agents.believability: plans at work, actions in fitting places, no
degenerate text, replies that answer, importance of salient memories), plus the two that need
the model: the importance probe on held-out pairs (never the pairs the keyword prior was tuned
on) and one interview question per resident, judged against what that resident remembers; an
answer that is the engine's memory-built fallback is not the model's, so it counts as a failure
(and in ``interview_fallback_share``). The default town is three residents of one house at
breakfast; whether they talk is the model's choice, so after the run each resident also answers a
fixed greeting from the next (agents.believability.reply_probe) and ``conversation_answers``
judges those replies with the run's conversations (``probe_replies``); a fallback reply counts as
a failure too (and in ``reply_fallback_share``). Every check reports how many items it judged,
and ``unjudged`` names those that judged nothing (their score is n/a, not perfect).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from agents.believability import (PROBE_PAIRS, SENSE, Check, combine, importance_probe, interview_check, model_answers,
                                  read_run, reply_probe, score_run_db, score_texts, with_fallbacks)
from agents.llm.models import resolve_local_name
from agents.minds.cognition.life_events import prior_for
from agents.minds.interview import interview_answer
from memory.embeddings import get_embedder
from memory.runfile import RunStore, connect_readonly
from memory.store import registered_residents
from world.cli.args import positive_int
from world.clock import parse_duration, parse_start
from world.runner import RunOptions, build_engine

QUESTION = "What have you been doing today, and who have you seen?"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="scripted",
                        help="model to score (default scripted; e.g. local), or several separated by commas "
                             "(scripted,local,local:qwen) to score them side by side in one run")
    parser.add_argument("--agents", type=positive_int, default=3,
                        help="residents (default 3: the Alvarez family of Oak House, who meet at breakfast)")
    parser.add_argument("--duration", default="1h", help="game time (default 1h)")
    parser.add_argument("--start", default="2026-02-13 07:00", help="game start (default a Friday 07:00)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--town", default="default")
    parser.add_argument("--run", default=None, metavar="DIR",
                        help="score a run folder already made (e.g. the quickstart's runs/<folder>) with the checks "
                             "that need no model, and list what each caught; runs nothing, calls no model")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if getattr(args, "run", None):
        return score_folder(Path(args.run))
    try:
        duration, start = parse_duration(args.duration), parse_start(args.start)
        models = model_list(args.model)
    except ValueError as exc:
        raise SystemExit(f"townsfolk bench believability: {exc}") from None
    if len(models) == 1:
        return _score_model(args, models[0], start, duration)
    rows = [_score_model(args, model, start, duration) for model in models]
    return side_by_side(rows)


def model_list(value: str) -> list[str]:
    """The models of ``--model`` (comma-separated), checked before any of them runs: an unknown
    embedded model should fail in a second, not after the first model's ten minutes."""
    models = [m.strip() for m in value.split(",")]
    if not all(models):
        raise ValueError(f"--model {value!r}: expected model names separated by commas, found an empty one")
    if len(set(models)) != len(models):
        raise ValueError(f"--model {value!r}: a model is named twice")
    for model in models:
        if model == "local" or model.startswith("local:"):
            resolve_local_name(model.partition(":")[2] or None)
    return models


def side_by_side(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One line per check with every model's score and judged count ('scripted 1.00 (6) | local
    0.90 (10)'), then the per-model results in ``runs`` for scripts."""
    models = [r["model"] for r in rows]
    checks = list(rows[0]["scores"])

    def cell(row: dict[str, Any], name: str) -> str:
        return f"{row['model']} {_fmt(row['scores'].get(name), 2)} ({row['judged'].get(name, 0)})"

    out: dict[str, Any] = {"models": ", ".join(models)}
    out["overall"] = " | ".join(f"{r['model']} {_fmt(r['overall'], 3)}" for r in rows)
    for name in checks:
        out[name] = " | ".join(cell(r, name) for r in rows)
    for key in ("conversations", "probe_replies", "interview_fallback_share", "run_s", "probe_and_interviews_s"):
        out[key] = " | ".join(f"{r['model']} {r[key]}" for r in rows)
    out["runs"] = rows
    return out


def _fmt(score: float | None, digits: int) -> str:
    return "n/a" if score is None else f"{score:.{digits}f}"


def _score_model(args: argparse.Namespace, model: str, start: Any, duration: Any) -> dict[str, Any]:
    args = argparse.Namespace(**{**vars(args), "model": model})
    with tempfile.TemporaryDirectory(prefix="townsfolk-believability-") as tmp:
        measured = _run_and_ask(args, Path(tmp) / "run", start, duration)
    texts, answers = measured["texts"], measured["answers"]
    embedder = get_embedder(texts.embedder) if texts.embedder else get_embedder()
    memories_of = {name: [t for n, t, _ in texts.memories if n == name] for name in texts.personas}
    own, fallback_share = model_answers(answers)
    run_conversations = len(texts.conversations)
    texts.conversations += measured["replies"]  # judged with the run's own, by the same check
    interviews = interview_check(((name, answer, memories_of.get(name, [])) for name, answer in own),
                                 list(texts.personas))
    checks: dict[str, Check] = {
        "importance_order": measured["probe"],
        "interview_answers": with_fallbacks(interviews, len(answers) - len(own), "interview answer(s)"),
    }
    score = score_texts(texts, embedder.encode, extra=checks, embedder=embedder.name)
    score = combine({**score.checks, "conversation_answers": with_fallbacks(
        score.checks["conversation_answers"], measured["reply_fallbacks"], "probe reply(ies)")})
    return {
        "model": args.model,
        "agents": args.agents,
        "game_time": args.duration,
        "embedder": embedder.name,
        "overall": round(score.overall, 3) if score.overall is not None else None,
        **{name: _show(check) for name, check in score.checks.items()},
        "importance_model_alone": _show(measured["model_alone"]),
        "scores": {name: None if c.score is None else round(c.score, 3) for name, c in score.checks.items()},
        "judged": {name: c.judged for name, c in score.checks.items()},
        "unjudged": [name for name, c in score.checks.items() if not c.judged],
        "conversations": run_conversations,
        "probe_replies": len(measured["replies"]),
        "reply_fallback_share": None if measured["reply_fallback"] is None else round(measured["reply_fallback"], 3),
        "interviews": len(answers),
        "interview_fallback_share": None if fallback_share is None else round(fallback_share, 3),
        "run_s": measured["run_s"],
        "probe_and_interviews_s": measured["model_s"],
        "sense_overall": _mean(score.checks, SENSE),
        "caught": caught(score.checks),
    }


def _run_and_ask(args: argparse.Namespace, run_dir: Path, start: Any, duration: Any) -> dict[str, Any]:
    """Run the town, then ask its model the importance probe and one interview question per
    resident, and read the run's texts back; the run folder is gone after this returns."""
    options = RunOptions(town=args.town, agents=args.agents, start=start, duration=duration, seed=args.seed,
                         mind="generative", model=args.model, out=run_dir)
    t0 = time.perf_counter()
    engine = build_engine(options)
    asyncio.run(engine.run(engine.context.until))
    run_s = time.perf_counter() - t0
    engine.store.close()
    llm = engine.context.llm
    t1 = time.perf_counter()
    events = prior_for(get_embedder())  # what the residents' rater used (none with the hashing embedder)
    probe = asyncio.run(importance_probe(llm, events=events))
    model_alone = asyncio.run(importance_probe(llm, stored=False))  # reported, not in the overall
    answers = _interviews(run_dir, llm)
    conn = connect_readonly(RunStore.db_path(run_dir))
    try:
        texts = read_run(conn)
    finally:
        conn.close()
    replies, reply_fallback = asyncio.run(reply_probe(llm, texts.personas, texts.memories, start + duration))
    asked = min(PROBE_PAIRS, len(texts.personas)) if reply_fallback is not None else 0
    model_s = time.perf_counter() - t1
    return {"probe": probe, "model_alone": model_alone, "answers": answers, "texts": texts,
            "replies": replies, "reply_fallback": reply_fallback, "reply_fallbacks": asked - len(replies),
            "run_s": round(run_s, 1), "model_s": round(model_s, 1)}


def _interviews(run_dir: Path, llm: Any) -> list[tuple[str, str, bool]]:
    """(resident, answer, whether it is the engine's fallback) for one question per resident."""
    names = sorted(registered_residents(RunStore.db_path(run_dir)))
    answers = [(name, interview_answer(run_dir, name, QUESTION, llm=llm)) for name in names]
    return [(name, a.text, a.from_fallback) for name, a in answers]


def score_folder(run_dir: Path) -> dict[str, Any]:
    """The checks that need no model over a run folder already made, and what each caught."""
    db = RunStore.db_path(run_dir)
    if not db.exists():
        raise SystemExit(f"townsfolk bench believability: --run {run_dir}: no run database there ({db.name})")
    conn = connect_readonly(db)
    try:
        score = score_run_db(conn)
    finally:
        conn.close()
    return {"run": str(run_dir), "overall": None if score.overall is None else round(score.overall, 3),
            "sense_overall": _mean(score.checks, SENSE),
            **{name: _show(check) for name, check in score.checks.items()},
            "caught": caught(score.checks)}


def _mean(checks: dict[str, Check], names: tuple[str, ...]) -> float | None:
    """The mean of the named checks that judged something (issue 30's bar is on the sense checks)."""
    scores = [checks[n].score for n in names if n in checks and checks[n].score is not None]
    return round(sum(scores) / len(scores), 3) if scores else None


def caught(checks: dict[str, Check]) -> dict[str, list[str]]:
    """What each check caught: its failures (up to three), for every check that failed something."""
    return {name: list(check.failures) for name, check in checks.items() if check.failures}


def _show(check: Check) -> str:
    score = "n/a" if check.score is None else f"{check.score:.2f}"
    failures = f"; e.g. {check.failures[0]}" if check.failures else ""
    return f"{score} of {check.judged}{failures}"
