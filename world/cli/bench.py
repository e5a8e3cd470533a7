"""`townsfolk bench NAME ...`: benchmarks, each owned by the module it measures.

Every benchmark module exposes ``add_arguments(parser)`` and ``run(args) -> dict``; the
result is printed as a table and, last, as one JSON line (always with --json, so scripts can
read the final line). Figures are recorded in docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys

BENCHES: dict[str, tuple[str, str]] = {
    "engine": ("world.cli.bench_engine", "tick engine throughput on the scripted backend"),
    "llm": ("world.cli.bench_llm", "LLM calls and tokens per resident per game hour"),
    "retrieval": ("world.cli.bench_retrieval", "FAISS vs numpy vs Python-loop memory retrieval"),
    "viewer": ("world.cli.bench_viewer", "headless viewer frames per second"),
    "eval": ("world.cli.bench_eval", "encounter episodes per hour by worker count"),
    "judges": ("world.cli.bench_judges", "judge agreement with human labels on ASSEBench"),
    "models": ("world.cli.bench_models", "schema-valid and sensible answers of the embedded models"),
    "believability": ("world.cli.bench_believability", "believability checks of a short run on a model"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="bench", metavar="BENCH")
    for name, (module_name, help_text) in BENCHES.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--json", action="store_true", help="print one JSON object as the last line")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            p.set_defaults(_bench_module=None)
            continue
        module.add_arguments(p)
        p.set_defaults(_bench_module=module)


def machine() -> str:
    """A short description of the machine, stored with every result."""
    import os

    return f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}"


def main(args: argparse.Namespace) -> int:
    if not getattr(args, "bench", None):
        print("usage: townsfolk bench {" + ",".join(BENCHES) + "} [--json]", file=sys.stderr)
        return 2
    module = getattr(args, "_bench_module", None)
    if module is None:
        print(f"townsfolk bench {args.bench}: not yet available in this version", file=sys.stderr)
        return 2
    result = module.run(args)
    result.setdefault("bench", args.bench)
    result.setdefault("machine", machine())
    if not args.json:
        for key, value in result.items():
            print(f"{key:>28}: {value}")
    print(json.dumps(result, default=str))
    return 0
