"""The `townsfolk` command line.

Each subcommand lives in the module that owns its work; that module exposes
``add_arguments(parser)`` and ``main(args) -> int``. This file only wires them together, so
adding or changing a command never touches another command's code.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

from world.failures import TRACEBACK_ENV, describe_failure, redact

# Offline by default: litellm must not fetch its cost map, the embedder must not call the hub.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Quiet by default: a run prints its progress and its summary, nothing from libraries (no
# "Loading weights" bars, no transformers advisories, no pygame banner).
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

# Imported after the offline defaults above, so no library reads its settings first. Every
# command's module is loaded to build the parser (its add_arguments); a missing one fails here.
from world.cli import (  # noqa: E402
    bench,
    doctor,
    export,
    import_,
    inject,
    interview,
    judge,
    replay,
    run,
    run_many,
    scenarios,
    watch,
)
from world.cli import eval as eval_  # noqa: E402

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[ModuleType, str]] = {
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


def version() -> str:
    """The installed package's version (the checkout's pyproject when not installed)."""
    try:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as installed

        return installed("townsfolk")
    except PackageNotFoundError:
        return "unknown (not installed; pip install -e .)"


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, ModuleType]]:
    parser = argparse.ArgumentParser(
        prog="townsfolk",
        description="A town of generative agents with AI-safety encounters.",
    )
    parser.add_argument("--version", action="version", version=f"townsfolk {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules: dict[str, ModuleType] = {}
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(p)
        modules[name] = module
    return parser, modules


def _survive_any_text() -> None:
    """Print any stored text without a UnicodeEncodeError: a lone surrogate from a refused
    command, or a terminal that is not UTF-8, is written as a backslash escape."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a closed or detached stream
                pass


def _open_files_allowed() -> None:
    """Raise the soft open-file limit to the hard one: a big town holds a file per model and
    socket, and a distribution's default soft limit (1,024) is a leftover of select()."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ImportError, ValueError, OSError):  # not POSIX, or not allowed: the limit stays
        pass


def _quiet_libraries() -> None:
    """Library warnings a user cannot act on (matplotlib's empty legend of a plot with no lines)."""
    warnings.filterwarnings("ignore", message="No artists with labels found to put in legend")
    warnings.filterwarnings("ignore", module="transformers")


def main(argv: Sequence[str] | None = None) -> int:
    _survive_any_text()
    _quiet_libraries()
    _open_files_allowed()
    try:
        parser, modules = build_parser()
    except Exception as exc:  # a command whose options cannot be declared (a broken install or checkout)
        return _failed("(setting up)", exc)
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
        return _failed(args.command, exc)


def _failed(command: str, exc: Exception) -> int:
    """The last word on an error a command did not handle: the cause in words, never a traceback
    (set TOWNSFOLK_TRACEBACK=1 to see one); 2 for a model that cannot answer, 1 otherwise."""
    if os.environ.get(TRACEBACK_ENV):
        raise exc
    explain = getattr(exc, "explain", None)
    if getattr(exc, "fatal", False):  # e.g. agents.llm.errors.ModelUnavailable: cause and fix
        print(f"townsfolk {command}: {redact(explain() if callable(explain) else str(exc))}", file=sys.stderr)
        return 2
    print(f"townsfolk {command}: {describe_failure(exc)}", file=sys.stderr)
    return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
