"""`townsfolk inject DIR ...`: poke a live run from another terminal.

    townsfolk inject DIR --whisper NAME "text"
    townsfolk inject DIR --object ADDRESS "state"
    townsfolk inject DIR --announce "text"
    townsfolk inject DIR --encounter NAME SERVICE

One flag per declared command (maps.contracts.Command subclasses: their ``text_args`` give the
flag's values, ``help_line`` its help), so a new command gets its flag without an edit here.

The command goes through the run's control socket (replays.control), which only the user
who started the run can reach; the engine validates it against the town and records it in
the run, accepted or refused. Whispers and announcements hold at most 1,000 characters,
names 80, object states 200, and no control characters (terminal escapes); longer or
escaped text is refused here, before it is sent. An accepted command is kept in the run file
before the run acknowledges it (``durable``), so a run killed before its tick applies it when
resumed. A run that is still starting is waited for up to ``--timeout``. Exit status: 0 when
accepted, 1 when the run refused it, 2 when it could not be sent.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time

from maps.contracts import command_reference
from maps.plaintext import escape_invisible
from replays import commands, control
from replays.lock import is_held
from world.cli.args import seconds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="DIR", help="the folder of a live run")
    group = parser.add_mutually_exclusive_group(required=True)
    for kind, model in commands.declared().items():  # one flag per declared command (maps.contracts)
        metavars = tuple(a.flag_metavar for a in model.text_args or () if not a.optional)
        if not metavars:
            group.add_argument(f"--{kind}", dest=kind, action="store_true", help=model.summary())
        elif len(metavars) == 1:
            group.add_argument(f"--{kind}", dest=kind, metavar=metavars[0], help=model.summary())
        else:
            group.add_argument(f"--{kind}", dest=kind, nargs=len(metavars), metavar=metavars, help=model.summary())
    parser.add_argument("--timeout", type=seconds, default=10.0,
                        help="seconds to wait for the run, above 0 and at most 86400 (default 10); a run still "
                             "starting (building its town) is waited for this long")
    parser.add_argument("--json", action="store_true", help="print the run's reply (or the error) as one JSON line")
    parser.formatter_class = argparse.RawDescriptionHelpFormatter  # the epilog's lines as they are
    parser.epilog = "\n".join([
        "commands: each one-line form (as Engine.submit takes it and errors name it), its flag here, its viewer mode:",
        *(textwrap.fill(line, 100, subsequent_indent="    ") for line in command_reference())])


def build(args: argparse.Namespace) -> dict:
    """The command of the one flag given, checked for shape (commands.CommandError if malformed)."""
    for kind in commands.declared():
        value = getattr(args, kind, None)
        if value is None or value is False:
            continue
        return commands.from_flag(kind, [] if value is True else [value] if isinstance(value, str) else value)
    raise commands.CommandError(f"no command given; expected one of {', '.join('--' + k for k in commands.declared())}")


def _fail(args: argparse.Namespace, message: str, code: int) -> int:
    """Say why nothing was accepted: on stderr, and with --json also as the JSON line on stdout."""
    if args.json:
        print(json.dumps({"ok": False, "accepted": False, "error": message}))
    print(f"townsfolk inject: {message}", file=sys.stderr)
    return code


def send(run_dir: str, command: dict, timeout: float) -> dict:
    """The run's reply; while the run is starting (its folder locked by the writer, its control
    socket not open yet) ask again until ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return control.inject(run_dir, command, timeout=max(deadline - time.monotonic(), 0.5))
        except control.ControlError as exc:
            if not (is_held(run_dir) and not control.is_live(run_dir)):
                raise
            if time.monotonic() >= deadline:
                raise control.ControlError(
                    f"the run in {run_dir} is still starting (building its town; its control channel is not open "
                    f"yet) after {timeout:g} s; try again, or wait longer with --timeout") from exc
            time.sleep(min(0.5, max(deadline - time.monotonic(), 0.01)))


def main(args: argparse.Namespace) -> int:
    try:
        command = build(args)
    except commands.CommandError as exc:
        return _fail(args, str(exc), 2)
    try:
        reply = send(args.run_dir, command, args.timeout)
    except control.ControlError as exc:
        return _fail(args, str(exc), 2)
    if args.json:
        print(json.dumps(reply, default=str))
    if reply.get("ok"):
        if not args.json:
            when = f" (applies at tick {reply['tick']})" if reply.get("tick") is not None else ""
            kept = "" if reply.get("durable", True) else "; not saved to the run file: lost if the run is killed first"
            print(f"accepted: {commands.describe(command)}{when}{kept}")
        return 0
    why = reply.get('error') or reply.get('message') or 'no reason given'
    print(f"townsfolk inject: refused: {escape_invisible(str(why))}", file=sys.stderr)
    return 1
