"""`townsfolk inject DIR ...`: poke a live run from another terminal.

    townsfolk inject DIR --whisper NAME "text"
    townsfolk inject DIR --object ADDRESS "state"
    townsfolk inject DIR --announce "text"
    townsfolk inject DIR --encounter NAME SERVICE

The command goes through the run's control socket (replays.control), which only the user
who started the run can reach; the engine validates it against the town and records it in
the run, accepted or refused. Whispers and announcements hold at most 1,000 characters,
names 80, object states 200, and no control characters (terminal escapes); longer or
escaped text is refused here, before it is sent. Exit status: 0 when accepted, 1 when the
run refused it, 2 when it could not be sent.
"""

from __future__ import annotations

import argparse
import json
import sys

from replays import commands, control


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="DIR", help="the folder of a live run")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--whisper", nargs=2, metavar=("NAME", "TEXT"),
                       help="an inner voice for one resident, taken as their own thought")
    group.add_argument("--object", nargs=2, metavar=("ADDRESS", "STATE"),
                       help="set an object's state, e.g. 'Willow Cafe:kitchen:stove' 'burning'")
    group.add_argument("--announce", metavar="TEXT", help="a town-wide event every resident hears")
    group.add_argument("--encounter", nargs=2, metavar=("NAME", "SCENARIO_ID"),
                       help="send a resident to walk to a service for a scored encounter: a scenario id of "
                            "the run's --encounters file, or a service (clinic, bank) for a built-in one")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the run (default 10)")
    parser.add_argument("--json", action="store_true", help="print the run's reply as one JSON line")


def build(args: argparse.Namespace) -> dict:
    if args.whisper:
        return commands.whisper(*args.whisper)
    if args.object:
        return commands.set_object(*args.object)
    if args.encounter:
        return commands.encounter(*args.encounter)
    return commands.announce(args.announce)


def main(args: argparse.Namespace) -> int:
    try:
        command = build(args)
    except commands.CommandError as exc:
        print(f"townsfolk inject: {exc}", file=sys.stderr)
        return 2
    try:
        reply = control.inject(args.run_dir, command, timeout=args.timeout)
    except control.ControlError as exc:
        print(f"townsfolk inject: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(reply, default=str))
    if reply.get("ok"):
        if not args.json:
            when = f" (applies at tick {reply['tick']})" if reply.get("tick") is not None else ""
            print(f"accepted: {commands.describe(command)}{when}")
        return 0
    print(f"townsfolk inject: refused: {reply.get('error') or reply.get('message') or 'no reason given'}",
          file=sys.stderr)
    return 1
