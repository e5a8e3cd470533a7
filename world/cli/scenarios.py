"""`townsfolk scenarios generate --toolkits ... --n N`: synthesise and validate risk scenarios.

--toolkits takes spec files (ToolEmu format, e.g. all_toolkits.json) and/or toolkit names;
names pick toolkits out of the given files or the town's own (ClinicRecords, BankAccounts).
Kept scenarios are written as a pack (OUT/scenarios/*.json + OUT/toolkits.json) that
`townsfolk eval OUT` runs. The last line is one JSON object with kept and dropped counts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from agents.encounters.episode import Models
from agents.encounters.importers import ImportReport, ScenarioFileError, parse_toolkits, write_pack
from agents.roles.scenario import ToolkitSpec
from agents.encounters.services import SERVICE_SPECS
from agents.encounters.synthesis import synthesize
from agents.llm.gateway import make_llm


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    gen = sub.add_parser("generate", help="new risk scenarios from toolkit specs, validated by playing them")
    gen.add_argument("--toolkits", nargs="+", required=True, metavar="FILE_OR_NAME",
                     help="spec files and/or toolkit names")
    gen.add_argument("--n", type=int, required=True, help="how many candidates to generate")
    gen.add_argument("--out", type=Path, default=Path("runs/synth"), help="pack folder (default runs/synth)")
    gen.add_argument("--model", default="scripted", help="the model that writes scenarios")
    gen.add_argument("--play-model", default=None, help="the model that plays the validation run (default --model)")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--json", action="store_true", help="print one JSON object as the last line")


def resolve_toolkits(items: list[str]) -> list[ToolkitSpec]:
    """Spec files and names -> specs; a name no file (nor the town) defines is an error."""
    from_files: dict[str, ToolkitSpec] = {}
    names: list[str] = []
    for item in items:
        path = Path(item)
        if path.suffix in (".json", ".jsonl") or path.exists():
            if not path.is_file():
                raise ScenarioFileError(f"{path}: no such toolkit spec file")
            from_files.update({s.toolkit: s for s in parse_toolkits(path)})
        else:
            names.append(item)
    known = {**{s.toolkit: s for s in SERVICE_SPECS.values()}, **from_files}
    if not names:
        if not from_files:
            raise ScenarioFileError("--toolkits: give at least one spec file or toolkit name")
        return list(from_files.values())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ScenarioFileError(
            f"--toolkits: unknown toolkit(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    return [known[n] for n in names]


def main(args: argparse.Namespace) -> int:
    if getattr(args, "action", None) != "generate":
        print("usage: townsfolk scenarios generate --toolkits FILE_OR_NAME... --n N [--out DIR]", file=sys.stderr)
        return 2
    if args.n < 1:
        print(f"townsfolk scenarios generate: --n must be at least 1, got {args.n}", file=sys.stderr)
        return 2
    try:
        specs = resolve_toolkits(args.toolkits)
    except ScenarioFileError as exc:
        print(f"townsfolk scenarios generate: {exc}", file=sys.stderr)
        return 2
    generator = make_llm(args.model, seed=args.seed)
    player = make_llm(args.play_model or args.model, seed=args.seed)
    players = Models(player, player, player, args.play_model or args.model, args.play_model or args.model)
    report = asyncio.run(synthesize(specs, args.n, generator, players, seed=args.seed))
    for drop in report.dropped:
        print(f"dropped #{drop.index} ({drop.toolkit}): {drop.reason} {drop.detail}", file=sys.stderr)
    pack = ImportReport(scenarios=report.kept, specs={t: s for s in specs for t in [s.toolkit]
                                                     if any(t in k.toolkits for k in report.kept)})
    write_pack(args.out, pack)
    summary = report.summary() | {"out": str(args.out)}
    if not args.json:
        print(f"kept {summary['kept']} of {summary['requested']} (dropped {summary['dropped']}); "
              f"wrote {args.out}")
    print(json.dumps(summary))
    return 0 if report.kept else 1
