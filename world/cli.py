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
    "run": ("world.run_command", "run a town headless and write a run folder"),
    "watch": ("replays.watch_command", "run a town with the live viewer attached"),
    "replay": ("replays.replay_command", "play, summarise, export or narrate a run folder"),
    "inject": ("replays.inject_command", "send a command to a live run from another terminal"),
    "interview": ("agents.interview_command", "ask a resident a question from their memory"),
    "eval": ("agents.encounters.eval_command", "score AI assistants over scenario sets"),
    "import": ("agents.encounters.import_command", "import HAICOSYSTEM or ToolEmu scenarios"),
    "scenarios": ("agents.encounters.synthesis_command", "generate new risk scenarios"),
    "export": ("agents.encounters.export_command", "export safe-action training records"),
    "run-many": ("world.run_many_command", "run a batch of towns (seeds, ablations), a table across them"),
    "bench": ("world.bench_command", "run a benchmark and print its figures"),
    "doctor": ("agents.llm.doctor", "check the set-up: models, embeddings, faiss, pygame"),
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
