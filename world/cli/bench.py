"""`townsfolk bench NAME ...`: benchmarks, each owned by the module it measures.

Every benchmark module exposes ``add_arguments(parser)`` and ``run(args) -> dict``; the
result is printed as a table and, last, as one JSON line (always with --json, so scripts can
read the final line). Figures are recorded in docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from types import ModuleType

from world.cli import (
    bench_believability,
    bench_engine,
    bench_eval,
    bench_judges,
    bench_llm,
    bench_local,
    bench_models,
    bench_retrieval,
    bench_scale,
    bench_society,
    bench_viewer,
)

# name -> (module, one-line help)
BENCHES: dict[str, tuple[ModuleType, str]] = {
    "engine": (bench_engine, "tick engine throughput on the scripted backend"),
    "llm": (bench_llm, "LLM calls and tokens per resident per game hour"),
    "retrieval": (bench_retrieval, "FAISS vs numpy vs Python-loop memory retrieval"),
    "viewer": (bench_viewer, "headless viewer frames per second"),
    "eval": (bench_eval, "encounter episodes per hour by worker count"),
    "judges": (bench_judges, "judge agreement with human labels on ASSEBench"),
    "models": (bench_models, "schema-valid and sensible answers of the embedded models"),
    "believability": (bench_believability, "believability checks of a short run on a model"),
    "local": (bench_local, "embedded model per-call latency with the KV prefix cache off and on"),
    "scale": (bench_scale, "engine cost from 25 to 10,000 residents on generated towns (growth exponent)"),
    "society": (bench_society, "the paper's two days: news, a party, who knows whom, scored from memory"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="bench", metavar="BENCH")
    for name, (module, help_text) in BENCHES.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--json", action="store_true", help="print one JSON object as the last line")
        module.add_arguments(p)
        p.set_defaults(_bench_module=module)


def machine() -> str:
    """A short description of the machine, stored with every result."""
    return f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}"


def main(args: argparse.Namespace) -> int:
    if not getattr(args, "bench", None):
        print("usage: townsfolk bench {" + ",".join(BENCHES) + "} [--json]", file=sys.stderr)
        return 2
    module = args._bench_module
    result = module.run(args)
    result.setdefault("bench", args.bench)
    result.setdefault("machine", machine())
    code = 1 if result.get("failed") else 0  # a bench that could not measure something says so in its exit code
    if not args.json and getattr(module, "PRINTS_ITS_TABLE", False):
        return code  # the bench printed its own table; its figures are one JSON line with --json
    if not args.json:
        for key, value in result.items():
            print(f"{key:>28}: {readable(value)}")
        return code
    print(json.dumps(result, default=str))
    return code


def readable(value: object) -> str:
    """A figure as a person reads it: a nested table is summarised (its whole is in --json),
    never printed as a Python repr."""
    if isinstance(value, dict):
        flat = all(not isinstance(v, (dict, list, tuple)) for v in value.values())
        if flat and len(value) <= 8:
            return ", ".join(f"{k} {v}" for k, v in value.items())
        return f"({len(value)} entries; --json for all)"
    if isinstance(value, (list, tuple)):
        if all(not isinstance(v, (dict, list, tuple)) for v in value) and len(value) <= 8:
            return ", ".join(str(v) for v in value)
        return f"({len(value)} items; --json for all)"
    return str(value)
