"""`townsfolk import haicosystem DIR` / `import toolemu CASES TOOLKITS` / `import smallville DIR --out FILE`.

Reads a scenario set, reports each file that fails (with the reason) and, with --out,
writes the imported scenarios as a pack `townsfolk eval` reads. The last line printed says
how many were imported and failed; with --json stdout holds only one JSON object (the
counts, each failure's path and error). `smallville` turns the Generative Agents release's
personas into a residents file of a town. Exit status 1 when anything failed, 2 for a bad --out.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from world.cli.args import folder_problem

from agents.encounters.importers import (
    ImportReport,
    ScenarioFileError,
    import_haicosystem,
    import_toolemu,
    write_pack,
)
from maps.smallville import main as smallville_main


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("import HAICOSYSTEM scenario folders, ToolEmu cases and toolkits, or Smallville "
                          "(Generative Agents) personas as a residents file")
    sub = parser.add_subparsers(dest="source", metavar="SOURCE", title="sources (haicosystem, toolemu, smallville)")
    hai = sub.add_parser("haicosystem", help="a folder of HAICOSYSTEM scenario files")
    hai.add_argument("directory", type=Path, metavar="DIR")
    hai.add_argument("--out", type=Path, default=None, help="write the scenarios as a pack here")
    hai.add_argument("--json", action="store_true", help="print only one JSON object (counts, failures)")
    tool = sub.add_parser("toolemu", help="ToolEmu test cases and their toolkit specs")
    tool.add_argument("cases", type=Path, metavar="CASES", help="all_cases.json")
    tool.add_argument("toolkits", type=Path, metavar="TOOLKITS", help="all_toolkits.json")
    tool.add_argument("--out", type=Path, default=None, help="write the scenarios as a pack here")
    tool.add_argument("--json", action="store_true", help="print only one JSON object (counts, failures)")
    ville = sub.add_parser("smallville", help="Generative Agents (Smallville) personas as a residents file")
    ville.add_argument("directory", type=Path, metavar="DIR", help="the release's personas folder (<Name>/bootstrap_memory/scratch.json)")
    ville.add_argument("--town", default="default", help="the town they move into (name or folder; default: default)")
    ville.add_argument("--out", type=Path, required=True, metavar="FILE", help="the residents file to write")


def main(args: argparse.Namespace) -> int:
    if not getattr(args, "source", None):
        print("usage: townsfolk import {haicosystem DIR | toolemu CASES TOOLKITS | smallville DIR --out FILE} [--out DIR]", file=sys.stderr)
        return 2
    if args.source == "smallville":
        return smallville_main(args)
    problem = folder_problem(args.out) if args.out is not None else None
    if problem:
        print(f"townsfolk import: {problem}", file=sys.stderr)
        return 2
    try:
        if args.source == "haicosystem":
            report = import_haicosystem(args.directory)
        else:
            for path, what in ((args.cases, "CASES"), (args.toolkits, "TOOLKITS")):
                if not path.is_file():
                    raise ScenarioFileError(f"{path}: no such file ({what})")
            report = import_toolemu(args.cases, args.toolkits)
    except ScenarioFileError as exc:
        print(f"townsfolk import: {exc}", file=sys.stderr)
        failure = {"path": str(getattr(args, "directory", None) or args.cases), "error": str(exc)}
        if getattr(args, "json", False):
            print(json.dumps({"imported": 0, "failed": 1, "failures": [failure]}))
        return 1
    try:
        _print(report, args)
    except OSError as exc:  # --out: disk full, a folder that went away
        print(f"townsfolk import: --out {args.out}: cannot write the pack ({exc.strerror or exc})", file=sys.stderr)
        return 1
    return 1 if report.failures else 0


def _print(report: ImportReport, args: argparse.Namespace) -> None:
    as_json = getattr(args, "json", False)
    for failure in report.failures:
        print(f"failed: {failure.error}", file=sys.stderr)
    by_domain: dict[str, int] = {}
    for scenario in report.scenarios:
        by_domain[scenario.domain] = by_domain.get(scenario.domain, 0) + 1
    summary = report.summary()
    summary["profiles"] = len(report.profiles)
    summary["toolkit_specs"] = len(report.specs)
    summary["by_domain"] = dict(sorted(by_domain.items()))
    if not as_json:
        for domain, count in sorted(by_domain.items()):
            print(f"{domain:>24}: {count}")
    if args.out is not None and not report.scenarios:
        if not as_json:
            print(f"(nothing written to {args.out}: no scenario was imported)")
    elif args.out is not None:
        write_pack(args.out, report)
        summary["out"] = str(args.out)
        if not as_json:
            print(f"wrote {len(report.scenarios)} scenarios to {args.out}")
    elif not as_json:
        print("(nothing written; pass --out DIR to write the scenarios as a pack)")
    if as_json:
        summary["failures"] = [f.model_dump() for f in report.failures]
        print(json.dumps(summary))
    else:
        print(f"imported {summary['imported']} scenarios ({summary['profiles']} profiles, "
              f"{summary['toolkit_specs']} toolkit specs); {summary['failed']} failed")
