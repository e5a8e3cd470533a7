"""`townsfolk eval PATH...`: score AI assistants over scenario sets, in parallel, resumably.

PATH is a HAICOSYSTEM folder, a pack written by `townsfolk import ... --out`, a scenario
file, or `builtin:town` (the town's clinic and bank scenarios). Results go to
OUT/results.jsonl (one line per episode, appended as they finish; a re-run skips finished
episodes), OUT/episodes.csv (every score), OUT/transcripts/*.md, OUT/summary.json (with the
run's metadata) and OUT/report.md with plots and 95% intervals.

The assistant under test is ``scripted`` (offline, rule-based) unless --model says otherwise;
``--model local`` runs the embedded SmolLM2. The judge is the first --model unless --judge-model
says otherwise. Progress: a bar on a terminal, one line per finished episode otherwise.
Exit status: 0 when every episode ran and was judged, 1 when an episode ended in an error or
its judgment failed (a fallback or degenerate judge answer is counted apart, never as safe),
2 for bad options.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from world.cli.args import episode_turns, folder_problem, positive_int
from agents.encounters.batch import SUMMARY_FILE, BatchConfig, BatchError, BatchOutcome, run_batch
from agents.encounters.metrics import summarise
from agents.encounters.report import write_episodes, write_report, write_transcripts


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="scenario folders/files, or builtin:town")
    parser.add_argument("--model", action="append", dest="models", metavar="M",
                        help="assistant under test (default: scripted, the offline rule-based assistant; "
                             "local: the embedded SmolLM2; or any litellm model); repeatable")
    parser.add_argument("--judge-model", default=None, metavar="M",
                        help="judge (default: the first --model, so scripted when no --model is given)")
    parser.add_argument("--env-model", default=None, metavar="M",
                        help="plays the human and the tools (default: the judge model)")
    parser.add_argument("--workers", type=positive_int, default=1, help="worker processes (default 1)")
    parser.add_argument("--concurrency", type=positive_int, default=4,
                        help="episodes in flight per worker (asyncio; default 4)")
    parser.add_argument("--backend", choices=["local", "ray"], default="local",
                        help="local: episodes in --workers processes on this machine (default); "
                             "ray: Ray tasks on a local instance or the cluster at --ray-address")
    parser.add_argument("--ray-address", default=None, help="an existing Ray cluster (default: RAY_ADDRESS or local)")
    parser.add_argument("--limit", type=positive_int, default=None, help="at most N scenarios")
    parser.add_argument("--seeds", type=positive_int, default=1, help="repetitions per scenario and model")
    parser.add_argument("--emulator", choices=["standard", "adversarial"], default="standard",
                        help="how the tool emulator plays the tools (ToolEmu): standard (plausible outputs, default) "
                             "or adversarial (outputs that tempt the assistant into the scenario's risky actions)")
    parser.add_argument("--max-turns", type=episode_turns, default=20,
                        help="utterances per episode, human and assistant (at least 2; default 20)")
    parser.add_argument("--toolkits", action="append", default=[], metavar="FILE",
                        help="ToolEmu toolkit specs (e.g. all_toolkits.json); repeatable")
    parser.add_argument("--cache-dir", default=None, help="LLM response cache folder")
    parser.add_argument("--out", type=Path, default=Path("runs/eval"), help="output folder (default runs/eval)")
    parser.add_argument("--strict", action="store_true", help="stop if any scenario file fails to load")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress (a bar on a terminal, else one line per finished episode on stderr)")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")


def _progress_lines() -> Any:
    """One line per finished episode on stderr, for a log file or a pipe (no terminal, no bar)."""
    state = {"risky": 0, "errors": 0, "failed": 0}

    def callback(done: int, total: int, record: dict[str, Any] | None) -> None:
        if record is None:
            print(f"eval: {total} episode(s), {done} already finished", file=sys.stderr, flush=True)
            return
        state["risky"] += int(bool(record.get("risky")) and not record.get("error"))
        state["errors"] += int(bool(record.get("error")))
        state["failed"] += int(bool(record.get("judge_fallback")) and not record.get("error"))
        what = "error" if record.get("error") else "judgment failed" if record.get("judge_fallback") else \
            "risky" if record.get("risky") else "not risky"
        print(f"eval {done}/{total} {record.get('episode_id', '?')}: {what} ({record.get('duration_s', 0):.1f} s); "
              f"risky {state['risky']}, errors {state['errors']}, failed judgments {state['failed']}",
              file=sys.stderr, flush=True)

    return callback


def _progress_bar(enabled: bool):
    """A rich progress bar on a terminal, a line per episode elsewhere; returns (callback, context manager)."""
    from contextlib import nullcontext

    if not enabled:
        return None, nullcontext()
    if not sys.stderr.isatty():
        return _progress_lines(), nullcontext()
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


def _git_commit() -> str | None:
    """The checkout's commit (with '+dirty' when it has changes), or None outside a git checkout."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "") if head else None


def _version() -> str:
    try:
        return importlib.metadata.version("townsfolk")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def run_metadata(config: BatchConfig) -> dict[str, Any]:
    """What a reader needs to reproduce the run: version, commit, date, models, backend, settings."""
    return {"townsfolk_version": _version(), "git_commit": _git_commit(),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "python": platform.python_version(), "assistant_models": config.models, "judge_model": config.judge,
            "environment_model": config.env, "backend": config.backend, "workers": config.workers,
            "concurrency": config.concurrency, "seeds": config.seeds, "max_turns": config.max_turns,
            "emulator_mode": config.emulator_mode, "limit": config.limit}


def _print_text(summary: dict[str, Any], outcome: BatchOutcome, report: Path) -> None:
    """The human-readable result: episodes, failures beside the ratios, risk ratio per dimension, the report's path."""
    print(f"episodes {summary['episodes']} (ran {outcome.ran}, already finished {outcome.skipped}, "
          f"errors {summary['errors']})")
    print(f"judged {summary['episodes']}, failed judgments {summary['failed_judgments']}, errors {summary['errors']} "
          "(failed and errored episodes are left out of every ratio)")
    print(f"risk ratio {summary['risk_ratio']}; ToolEmu failure rate {summary['toolemu_failure_rate']} "
          f"(over the {summary['episodes']} judged)")
    for dim, ratio in summary["risk_ratio_by_dimension"].items():
        print(f"  {dim:>32}: {ratio}")
    print(f"report: {report}")


def _headline(summary: dict[str, Any]) -> dict[str, Any]:
    """The --json line: the risk figures first, then everything but the per-group tables."""
    headline = {key: summary[key] for key in ("episodes", "risk_ratio", "risk_ratio_by_dimension", "mean_scores")}
    headline.update({k: v for k, v in summary.items()
                     if k not in headline and not k.startswith("by_") and k != "dimension_by_model"})
    return headline


def main(args: argparse.Namespace) -> int:
    try:
        config = _config(args)
    except ValidationError as exc:
        err = exc.errors()[0]
        print(f"townsfolk eval: --{str(err['loc'][0]).replace('_', '-')}: {err['msg']}", file=sys.stderr)
        return 2
    problem = folder_problem(Path(args.out))
    if problem:
        print(f"townsfolk eval: {problem}", file=sys.stderr)
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
    meta["run"] = run_metadata(config)
    tables = write_episodes(config.out, outcome.records)
    transcripts = write_transcripts(config.out, outcome.records)
    summary.update(_run_figures(outcome, config, report))
    summary.update(episodes_table=[str(p) for p in tables], transcripts=str(transcripts))
    (config.out / SUMMARY_FILE).write_text(json.dumps({**summary, **meta}, indent=1) + "\n")
    if args.json:
        print(json.dumps(_headline(summary), default=str))
    else:
        _print_text(summary, outcome, report)
    return _exit_code(summary, outcome)


def _exit_code(summary: dict[str, Any], outcome: BatchOutcome) -> int:
    """1 when any episode of the batch errored or was not really judged (said on stderr), else 0."""
    failed = summary["failed_judgments"]
    if failed:
        first = summary.get("first_failed_judgment") or ""
        print(f"{failed} judgment(s) failed (fallback or degenerate judge answer) and were not counted; "
              f"first: {first}", file=sys.stderr)
    if failed or summary["errors"]:
        return 1
    return 0 if summary["episodes"] or not outcome.tasks else 1
