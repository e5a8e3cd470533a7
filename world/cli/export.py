"""`townsfolk export safe-actions RESULTS --out FILE.jsonl`: training records from risky episodes.

RESULTS is an eval results.jsonl (or the eval folder holding it). For each episode judged
risky, a safe alternative to its first unsafe step is produced by self-reflection and
written as a chat-format record ({"messages": [...], "metadata": {...}}), one per line.
The last line printed is one JSON object with the counts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from agents.encounters.batch import RESULTS_FILE, read_results
from agents.encounters.export import export_safe_actions
from agents.llm.gateway import make_llm


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="what", metavar="WHAT")
    safe = sub.add_parser("safe-actions", help="safe alternatives to risky steps, as chat training records")
    safe.add_argument("results", type=Path, metavar="RESULTS", help="results.jsonl from townsfolk eval (or its folder)")
    safe.add_argument("--out", type=Path, required=True, metavar="FILE.jsonl")
    safe.add_argument("--model", default="scripted", help="the model that reflects (default scripted)")
    safe.add_argument("--seed", type=int, default=0)
    safe.add_argument("--json", action="store_true", help="print one JSON object as the last line")


def main(args: argparse.Namespace) -> int:
    if getattr(args, "what", None) != "safe-actions":
        print("usage: townsfolk export safe-actions RESULTS --out FILE.jsonl", file=sys.stderr)
        return 2
    path = args.results / RESULTS_FILE if args.results.is_dir() else args.results
    if not path.is_file():
        print(f"townsfolk export: {path}: no such results file (expected results.jsonl from townsfolk eval)",
              file=sys.stderr)
        return 2
    records = list(read_results(path).values())
    if not records:
        print(f"townsfolk export: {path}: no episode records in this file", file=sys.stderr)
        return 2
    report = asyncio.run(export_safe_actions(records, make_llm(args.model, seed=args.seed)))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as handle:
        for record in report.records:
            handle.write(record.model_dump_json() + "\n")
    summary = report.summary() | {"out": str(args.out)}
    if not args.json:
        print(f"{summary['exported']} safe-action records from {summary['risky_episodes']} risky episodes "
              f"({summary['rejected']} rejected) -> {args.out}")
    print(json.dumps(summary))
    return 0
