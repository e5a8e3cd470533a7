"""`townsfolk judge FILE...`: judge trajectories recorded elsewhere (or by `eval`).

Reads ToolEmu-style, R-Judge-style (ASSEBench's AgentJudge files) and townsfolk results
files, judges each trajectory (HAICOSYSTEM dimensions, ToolEmu safety/helpfulness, a binary
unsafe verdict with reasons) and writes ``judgements.jsonl`` under --out. With --labels the
labels in the files are compared: precision, recall and F1 of the unsafe verdict. A file
that cannot be read is named with the reason and nothing of it is judged; the others are.
Each verdict is written to judgements.jsonl as soon as it is made (a long LLM run shows its
progress there and on stderr). Every action shape of the supported formats is read; an
action that cannot be read is counted (``unreadable_actions``) and named, never dropped.
Exit status: 0 when everything was read and judged, 1 when a file failed, a judgment failed
(a failed or degenerate judge answer is never counted as safe) or a trajectory had an
unreadable action (``--lenient`` lets those pass), 2 for bad options.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.encounters.trajectory import FORMATS, Trajectory, TrajectoryFileError, load_trajectories
from agents.encounters.trajectory_judge import OFFLINE_NAMES, TrajectoryVerdict, agreement, judge_one
from agents.llm.gateway import make_llm
from world.failures import describe_path

OUT_FILE = "judgements.jsonl"
OFFLINE = OFFLINE_NAMES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="trajectory files (.json or .jsonl)")
    parser.add_argument("--judge-model", default="scripted", metavar="M",
                        help="scripted (default: the offline rule auditor), local, or any litellm model")
    parser.add_argument("--format", default="auto", choices=("auto", *FORMATS),
                        help="trajectory format (default: detected per entry)")
    parser.add_argument("--labels", action="store_true", help="compare verdicts with the labels in the files")
    parser.add_argument("--out", type=Path, default=Path("judged"), help=f"folder for {OUT_FILE} (default: judged)")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--lenient", action="store_true",
                        help="exit 0 even when some actions could not be read (they are still counted and named)")


def load_all(files: list[Path], fmt: str) -> tuple[list[Trajectory], list[str]]:
    trajectories: list[Trajectory] = []
    failures: list[str] = []
    for path in files:
        what = describe_path(path)
        if what not in ("a file", "missing"):  # a folder or /dev/zero is not 'no such file'
            failures.append(f"{path}: is {what}; expected a trajectory file (.json or .jsonl)")
            continue
        try:
            trajectories += load_trajectories(path, fmt)
        except TrajectoryFileError as exc:
            failures.append(str(exc))
    return trajectories, failures


def _make_llm(judge_model: str) -> Any:
    """The judge model's gateway (None for the offline auditor)."""
    return None if judge_model in OFFLINE else make_llm(judge_model)


def judge_all(trajectories: list[Trajectory], judge_model: str,
              on_verdict: Callable[[TrajectoryVerdict], None] | None = None) -> list[TrajectoryVerdict]:
    """Judge each trajectory in turn; ``on_verdict`` sees each verdict as soon as it is made."""
    llm = _make_llm(judge_model)

    async def run() -> list[TrajectoryVerdict]:
        verdicts = []
        for traj in trajectories:
            verdict = await judge_one(traj, judge_model, llm)
            verdicts.append(verdict)
            if on_verdict:
                on_verdict(verdict)
        return verdicts

    return asyncio.run(run())


def _prepare_out(out: Path) -> Path:
    if out.exists() and not out.is_dir():
        raise TrajectoryFileError(f"--out {out}: exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TrajectoryFileError(f"--out {out}: cannot create folder: {exc.strerror}") from exc
    return out / OUT_FILE


def write_verdicts(path: Path, verdicts: list[TrajectoryVerdict]) -> None:
    """Written whole to a temporary file, then moved into place (never half a file)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(v.model_dump(mode="json"), ensure_ascii=False) + "\n" for v in verdicts),
                   encoding="utf-8")
    tmp.replace(path)


class VerdictStream:
    """judgements.jsonl written one line per verdict as it is made (flushed: a long run can be
    watched, and an interrupted one keeps what it judged), plus a progress line on stderr for
    slow (LLM) judges."""

    def __init__(self, path: Path, total: int, progress: bool):
        self.handle = path.open("w", encoding="utf-8")
        self.total, self.done, self.progress = total, 0, progress

    def __call__(self, verdict: TrajectoryVerdict) -> None:
        self.handle.write(json.dumps(verdict.model_dump(mode="json"), ensure_ascii=False) + "\n")
        self.handle.flush()
        self.done += 1
        if self.progress:
            state = "FAILED" if verdict.unsafe is None else "unsafe" if verdict.unsafe else "safe"
            print(f"judge {self.done}/{self.total} {verdict.id}: {state} ({verdict.seconds:.1f} s)",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        self.handle.close()


def _judge_setup_error(exc: Exception, judge_model: str) -> bool:
    """Report a judge model that cannot be set up or reached (nothing is written); False for a real bug."""
    if not (getattr(exc, "fatal", False) or isinstance(exc, (ImportError, OSError, ValueError, RuntimeError))):
        return False
    print(f"townsfolk judge: --judge-model {judge_model}: {type(exc).__name__}: {exc}", file=sys.stderr)
    fix = getattr(exc, "fix", "")
    if fix:
        print(f"fix: {fix}", file=sys.stderr)
    return True


def _summary(verdicts: list[TrajectoryVerdict], failures: list[Any], args: argparse.Namespace,
             out_file: Path) -> dict[str, Any]:
    """Counts of verdicts (failed judgments apart), file failures, the judge, and agreement with labels when asked."""
    summary: dict[str, Any] = {
        "trajectories": len(verdicts),
        "unsafe": sum(1 for v in verdicts if v.unsafe),
        "safe": sum(1 for v in verdicts if v.unsafe is False),
        "failed_judgments": sum(1 for v in verdicts if v.unsafe is None),
        "file_failures": len(failures),
        "unreadable_actions": sum(v.unreadable_actions for v in verdicts),
        "trajectories_with_unreadable_actions": sum(1 for v in verdicts if v.unreadable_actions),
        "judge": "offline" if args.judge_model in OFFLINE else args.judge_model,
        "seconds_per_item": round(sum(v.seconds for v in verdicts) / len(verdicts), 4) if verdicts else None,
        "out": str(out_file),
    }
    if args.labels:
        summary["agreement"] = agreement(verdicts)
    return summary


def _print_text(verdicts: list[TrajectoryVerdict], summary: dict[str, Any]) -> None:
    """One line per trajectory, then the totals (and agreement with the labels, when asked)."""
    for v in verdicts:
        verdict = "FAILED" if v.unsafe is None else "unsafe" if v.unsafe else "safe"
        print(f"{v.id}: {verdict}" + (f" ({v.reasons[0]})" if v.reasons else ""))
    print(f"{summary['trajectories']} judged: {summary['unsafe']} unsafe, {summary['safe']} safe, "
          f"{summary['failed_judgments']} failed judgments; {summary['file_failures']} file(s) failed; "
          f"{summary['unreadable_actions']} unreadable action(s); wrote {summary['out']}")
    if "agreement" in summary:
        a = summary["agreement"]
        print(f"against labels (n={a['n']}): precision {a['precision']} recall {a['recall']} "
              f"F1 {a['f1']} accuracy {a['accuracy']}")


def _complain(verdicts: list[TrajectoryVerdict], lenient: bool) -> None:
    """Say on stderr which judgments failed and which trajectories had actions that could not be read."""
    failed = [v for v in verdicts if v.unsafe is None]
    if failed:
        print(f"{len(failed)} judgment(s) failed and were not counted (first: {failed[0].id}: "
              f"{failed[0].failed_judgment})", file=sys.stderr)
    unreadable = [v for v in verdicts if v.unreadable_actions]
    if unreadable:
        first = next((r for r in unreadable[0].reasons if "could not be read" in r), "")
        print(f"{sum(v.unreadable_actions for v in unreadable)} action(s) in {len(unreadable)} trajectory(ies) "
              f"could not be read (first: {unreadable[0].id}: {first})"
              + ("; --lenient: going on" if lenient else "; pass --lenient to accept this"), file=sys.stderr)


def _exit_code(verdicts: list[TrajectoryVerdict], failures: list[str], lenient: bool) -> int:
    if not verdicts and not failures:
        print("townsfolk judge: no trajectories in the given files", file=sys.stderr)
        return 1
    failed = any(v.unsafe is None for v in verdicts)
    unreadable = any(v.unreadable_actions for v in verdicts) and not lenient
    return 1 if failures or failed or unreadable else 0


def main(args: argparse.Namespace) -> int:
    created = not args.out.exists()
    try:
        out_file = _prepare_out(args.out)
    except TrajectoryFileError as exc:
        print(f"townsfolk judge: {exc}", file=sys.stderr)
        return 2
    trajectories, failures = load_all(args.files, args.format)
    for failure in failures:
        print(f"failed: {failure}", file=sys.stderr)
    if not trajectories:  # nothing to judge: leave no empty judgements.jsonl behind
        if created:
            shutil.rmtree(args.out, ignore_errors=True)
        print(json.dumps({"judged": 0, "failed_files": len(failures)}) if args.json
              else f"nothing judged: {len(failures)} file(s) failed, no trajectories in the others")
        return _exit_code([], failures, args.lenient)
    stream = VerdictStream(out_file, len(trajectories), progress=args.judge_model not in OFFLINE)
    try:
        verdicts = judge_all(trajectories, args.judge_model, stream)
    except Exception as exc:
        if not _judge_setup_error(exc, args.judge_model):
            raise
        return 2
    finally:
        stream.close()
    summary = _summary(verdicts, failures, args, out_file)
    if not args.json:
        _print_text(verdicts, summary)
    _complain(verdicts, args.lenient)
    if args.json:
        print(json.dumps(summary))
    return _exit_code(verdicts, failures, args.lenient)
