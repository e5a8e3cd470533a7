"""The `townsfolk` command line.

Each subcommand lives in the module that owns its work; that module exposes
``add_arguments(parser)`` and ``main(args) -> int``. This file only wires them together, so
adding or changing a command never touches another command's code.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from types import ModuleType

# Offline by default: litellm must not fetch its cost map, the embedder must not call the hub.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

def commands() -> dict[str, tuple[ModuleType, str]]:
    """name -> (module, one-line help). Imported when the parser is built, not when the
    package is (a bench module imports world.cli.bench_* alone); a missing module fails here."""
    from world.cli import bench, doctor, export, import_, inject, interview, judge, replay, run, run_many, scenarios, watch
    from world.cli import eval as eval_

    return {
        "run": (run, "run a town headless and write a run folder"),
        "watch": (watch, "run a town with the live viewer attached"),
        "replay": (replay, "play, summarise, export or narrate a run folder"),
        "inject": (inject, "send a command to a live run from another terminal"),
        "interview": (interview, "ask a resident a question from their memory"),
        "eval": (eval_, "score AI assistants over scenario sets"),
        "import": (import_, "import HAICOSYSTEM or ToolEmu scenarios"),
        "judge": (judge, "judge recorded trajectories (ToolEmu, R-Judge, ASSEBench)"),
        "scenarios": (scenarios, "generate new risk scenarios"),
        "export": (export, "export safe-action training records"),
        "bench": (bench, "run a benchmark and print its figures"),
        "doctor": (doctor, "check the set-up: models, embeddings, faiss, pygame"),
        "run-many": (run_many, "run many towns (seeds, ablations) as processes or Ray tasks, with a table"),
    }


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, ModuleType]]:
    parser = argparse.ArgumentParser(
        prog="townsfolk",
        description="A town of generative agents with AI-safety encounters.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules: dict[str, ModuleType] = {}
    for name, (module, help_text) in commands().items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(p)
        modules[name] = module
    return parser, modules


def main(argv: Sequence[str] | None = None) -> int:
    parser, modules = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    module = modules[args.command]
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
