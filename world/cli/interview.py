"""`townsfolk interview DIR NAME "question" [--at TIME] [--model M]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agents.minds.interview import InterviewError, interview
from memory.runfile import DB_NAME, RunStore, StoreError
from world.failures import redact


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="DIR", help="a run folder (holding run.db)")
    parser.add_argument("name", metavar="NAME", help="the resident's full name")
    parser.add_argument("question", metavar="QUESTION", help="what to ask")
    parser.add_argument("--at", default=None, metavar="TIME",
                        help="memory as it was then: '14:00', 'day 2 14:00', '2026-02-13 14:00', '+7h' (after the "
                             "start) or 'tick:N' (default: the end of the run)")
    parser.add_argument("--model", default="local", help="model for the answer (default: local)")


def run_folder_problem(run_dir: Path) -> str | None:
    """Why ``run_dir`` holds no run to read, said before SQLite turns an empty file into a
    database (an empty run.db is a run killed before it wrote anything, not a run without memories)."""
    db = RunStore.db_path(run_dir)
    if not run_dir.is_dir() and run_dir.suffix != ".db":
        return f"{run_dir}: not a run folder (expected a folder holding {DB_NAME})"
    if not db.is_file():
        return f"{run_dir}: no run here (expected a run folder holding {DB_NAME})"
    if db.stat().st_size == 0:
        return (f"{db}: empty (0 bytes): the run stopped before it wrote anything; "
                "there is nobody to interview")
    return None


def main(args: argparse.Namespace) -> int:
    problem = run_folder_problem(Path(args.run_dir))
    if problem:
        print(f"townsfolk interview: {problem}", file=sys.stderr)
        return 2
    try:
        answer = interview(args.run_dir, args.name, args.question, at=args.at, model=args.model)
    except (InterviewError, FileNotFoundError, StoreError) as exc:
        print(f"townsfolk interview: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        if not getattr(exc, "fatal", False):  # a model that cannot answer at all (agents.llm.errors)
            raise
        explain = getattr(exc, "explain", None)
        print(f"townsfolk interview: --model {args.model}: {redact(explain() if callable(explain) else str(exc))}",
              file=sys.stderr)
        return 2
    print(answer)
    return 0
