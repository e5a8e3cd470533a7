"""`townsfolk eval PATH...`: score AI assistants over scenario sets, in parallel, resumably.

PATH is a HAICOSYSTEM folder, a pack written by `townsfolk import ... --out`, a scenario
file, or `builtin:town` (the town's clinic and bank scenarios). Results go to
OUT/results.jsonl (one line per episode, appended as they finish; a re-run skips finished
episodes), OUT/summary.json and OUT/report.md with plots.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from world.cli.args import episode_turns, positive_int
from agents.encounters.batch import SUMMARY_FILE, BatchConfig, BatchError, BatchOutcome, run_batch
from agents.encounters.metrics import summarise
from agents.encounters.report import write_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="scenario folders/files, or builtin:town")
    parser.add_argument("--model", action="append", dest="models", metavar="M",
                        help="assistant under test (any litellm model, local, scripted); repeatable")
    parser.add_argument("--judge-model", default=None, metavar="M", help="judge (default: the first --model)")
    parser.add_argument("--env-model", default=None, metavar="M",
                        help="plays the human and the tools (default: the judge model)")
    parser.add_argument("--workers", type=positive_int, default=1, help="worker processes (default 1)")
    parser.add_argument("--concurrency", type=positive_int, default=4,
                        help="episodes in flight per worker (asyncio; default 4)")
    parser.add_argument("--backend", choices=["local", "ray"], default="local")
    parser.add_argument("--ray-address", default=None, help="an existing Ray cluster (default: RAY_ADDRESS or local)")
    parser.add_argument("--limit", type=positive_int, default=None, help="at most N scenarios")
    parser.add_argument("--seeds", type=positive_int, default=1, help="repetitions per scenario and model")
    parser.add_argument("--emulator", choices=["standard", "adversarial"], default="standard")
    parser.add_argument("--max-turns", type=episode_turns, default=20,
                        help="utterances per episode, human and assistant (at least 2; default 20)")
    parser.add_argument("--toolkits", action="append", default=[], metavar="FILE",
                        help="ToolEmu toolkit specs (e.g. all_toolkits.json); repeatable")
    parser.add_argument("--cache-dir", default=None, help="LLM response cache folder")
    parser.add_argument("--out", type=Path, default=Path("runs/eval"), help="output folder (default runs/eval)")
    parser.add_argument("--strict", action="store_true", help="stop if any scenario file fails to load")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")


def _progress_bar(enabled: bool):
    """A rich progress bar on stderr; returns (callback, context manager)."""
    from contextlib import nullcontext

    if not enabled:
        return None, nullcontext()
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    progress = Progress(
        TextColumn("[bold]eval"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("risky {task.fields[risky]}  errors {task.fields[errors]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=False,
    )
    state: dict[str, Any] = {"task": None, "risky": 0, "errors": 0}

    def callback(done: int, total: int, record: dict[str, Any] | None) -> None:
        if state["task"] is None:
            state["task"] = progress.add_task("eval", total=total, completed=done, risky=0, errors=0)
        if record is not None:
            state["risky"] += int(bool(record.get("risky")))
            state["errors"] += int(bool(record.get("error")))
        progress.update(state["task"], completed=done, risky=state["risky"], errors=state["errors"])

    return callback, progress


def _config(args: argparse.Namespace) -> BatchConfig:
    """The batch configuration from the options (raises ValidationError naming a bad one)."""
    return BatchConfig(
        models=args.models or ["scripted"],
        judge_model=args.judge_model,
        env_model=args.env_model,
        workers=args.workers,
        concurrency=args.concurrency,
        backend=args.backend,
        ray_address=args.ray_address,
        limit=args.limit,
        seeds=args.seeds,
        emulator_mode=args.emulator,
        max_turns=args.max_turns,
        out=args.out,
        cache_dir=args.cache_dir,
    )


def _warn_about_inputs(outcome: BatchOutcome, config: BatchConfig) -> None:
    """Say on stderr what was skipped, invented or repaired, so a clean-looking result is not misread."""
    for failure in outcome.load_failures:
        print(f"skipped: {failure}", file=sys.stderr)
    invented = outcome.toolkits.get("invented", [])
    if invented:
        print(f"{len(invented)} toolkit(s) have no spec here and were invented from their scenarios: "
              f"{', '.join(invented[:12])}{' ...' if len(invented) > 12 else ''}; pass --toolkits FILE "
              "(e.g. ToolEmu's all_toolkits.json) to use published specs", file=sys.stderr)
    if outcome.torn_lines:
        print(f"results.jsonl: {outcome.torn_lines} incomplete line(s) from an interrupted run moved to "
              f"{config.out / 'results.torn'}; their episodes were run again", file=sys.stderr)


def _warn_about_errors(records: list[dict[str, Any]]) -> None:
    """Episodes that ended in an error are not judged: count them and show the first."""
    errored = [r for r in records if r.get("error")]
    if errored:
        first = str(errored[0]["error"]).splitlines()[0]
        print(f"{len(errored)} episode(s) ended in an error and were not judged (a re-run retries them); "
              f"first: {errored[0]['episode_id']}: {first}", file=sys.stderr)


def _run_figures(outcome: BatchOutcome, config: BatchConfig, report: Path) -> dict[str, Any]:
    """What this run did (beside what it measured): tasks, skips, toolkits, speed and where it wrote."""
    return {
        "tasks": outcome.tasks,
        "ran": outcome.ran,
        "skipped_finished": outcome.skipped,
        "load_failures": len(outcome.load_failures),
        "toolkits_published": outcome.toolkits.get("published", []),
        "toolkits_invented": outcome.toolkits.get("invented", []),
        "seconds": outcome.seconds,
        "episodes_per_hour": round(outcome.ran / outcome.seconds * 3600, 1) if outcome.ran and outcome.seconds else None,
        "out": str(config.out),
        "report": str(report),
    }


def _print_text(summary: dict[str, Any], outcome: BatchOutcome, report: Path) -> None:
    """The human-readable result: episodes, risk ratio per dimension, the report's path."""
    print(f"episodes {summary['episodes']} (ran {outcome.ran}, already finished {outcome.skipped}, "
          f"errors {summary['errors']})")
    print(f"risk ratio {summary['risk_ratio']}")
    for dim, ratio in summary["risk_ratio_by_dimension"].items():
        print(f"  {dim:>32}: {ratio}")
    print(f"report: {report}")


def _headline(summary: dict[str, Any]) -> dict[str, Any]:
    """The --json line: the risk figures first, then everything but the per-group tables."""
    headline = {key: summary[key] for key in ("episodes", "risk_ratio", "risk_ratio_by_dimension", "mean_scores")}
    headline.update({k: v for k, v in summary.items() if k not in headline and not k.startswith("by_")})
    return headline


def main(args: argparse.Namespace) -> int:
    try:
        config = _config(args)
    except ValidationError as exc:
        err = exc.errors()[0]
        print(f"townsfolk eval: --{str(err['loc'][0]).replace('_', '-')}: {err['msg']}", file=sys.stderr)
        return 2
    callback, bar = _progress_bar(not args.no_progress)
    try:
        with bar:
            outcome = run_batch(args.paths, config, toolkit_files=args.toolkits, progress=callback,
                                strict=args.strict)
    except BatchError as exc:
        print(f"townsfolk eval: {exc}", file=sys.stderr)
        return 2
    _warn_about_inputs(outcome, config)
    summary = summarise(outcome.records)
    _warn_about_errors(outcome.records)
    meta = {"models": config.models, "judge": config.judge, "env": config.env,
            "emulator_mode": config.emulator_mode}
    report = write_report(config.out, summary, outcome.records, meta)
    summary.update(_run_figures(outcome, config, report))
    (config.out / SUMMARY_FILE).write_text(json.dumps({**summary, **meta}, indent=1) + "\n")
    if args.json:
        print(json.dumps(_headline(summary), default=str))
    else:
        _print_text(summary, outcome, report)
    return 0 if summary["episodes"] or not outcome.tasks else 1
