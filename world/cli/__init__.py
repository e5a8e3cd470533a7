"""The `townsfolk` command line.

Each subcommand lives in the module that owns its work; that module exposes
``add_arguments(parser)`` and ``main(args) -> int``. This file only wires them together, so
adding or changing a command never touches another command's code.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

# Offline by default: litellm must not fetch its cost map, the embedder must not call the hub.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("world.cli.run", "run a town headless and write a run folder"),
    "watch": ("world.cli.watch", "run a town with the live viewer attached"),
    "replay": ("world.cli.replay", "play, summarise, export or narrate a run folder"),
    "inject": ("world.cli.inject", "send a command to a live run from another terminal"),
    "interview": ("world.cli.interview", "ask a resident a question from their memory"),
    "eval": ("world.cli.eval", "score AI assistants over scenario sets"),
    "import": ("world.cli.import_", "import HAICOSYSTEM or ToolEmu scenarios"),
    "judge": ("world.cli.judge", "judge recorded trajectories (ToolEmu, R-Judge, ASSEBench)"),
    "scenarios": ("world.cli.scenarios", "generate new risk scenarios"),
    "export": ("world.cli.export", "export safe-action training records"),
    "bench": ("world.cli.bench", "run a benchmark and print its figures"),
    "doctor": ("world.cli.doctor", "check the set-up: models, embeddings, faiss, pygame"),
    "run-many": ("world.cli.run_many", "run many towns (seeds, ablations) as processes or Ray tasks, with a table"),
}


def _load(module: str):
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            return None
        raise


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, object]]:
    parser = argparse.ArgumentParser(
        prog="townsfolk",
        description="A town of generative agents with AI-safety encounters.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules: dict[str, object] = {}
    for name, (module_name, help_text) in COMMANDS.items():
        module = _load(module_name)
        p = sub.add_parser(name, help=help_text, description=help_text)
        if module is not None:
            module.add_arguments(p)
            modules[name] = module
    return parser, modules


def main(argv: Sequence[str] | None = None) -> int:
    parser, modules = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    module = modules.get(args.command)
    if module is None:
        print(f"townsfolk {args.command}: not yet available in this version", file=sys.stderr)
        return 2
    if extra:
        parser.error(f"unrecognized arguments for '{args.command}': {' '.join(extra)}")
    try:
        return int(module.main(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if not getattr(exc, "fatal", False):  # e.g. agents.llm.errors.ModelUnavailable: cause and fix
            raise
        explain = getattr(exc, "explain", None)
        print(f"townsfolk {args.command}: {explain() if callable(explain) else exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
