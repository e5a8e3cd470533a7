"""`townsfolk run`: run a town headless and write a run folder.

    townsfolk run [--town NAME|PATH] [--agents N] [--start "YYYY-MM-DD HH:MM"] [--duration 30m|6h|1d]
                  [--model local|scripted|<litellm model>] [--seed N] [--pace X] [--out DIR]
                  [--resume DIR] [--fork DIR --at TIME] [--chaos X]

Shows a progress bar (game time, ticks/s, LLM calls), serves the control channel so that
`townsfolk inject` can poke the live run, and prints a summary at the end. Ctrl-C stops
cleanly; every committed tick is kept and `--resume DIR` continues from there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from pydantic import ValidationError

from maps.town import TownError
from replays.records import TickRecords
from replays.store import StoreError
from world.runner import RunError, RunOptions, build_engine, option_error


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--town", help="town name (e.g. default) or folder")
    parser.add_argument("--residents", help="residents file of the town (default: the smallest that fits --agents)")
    parser.add_argument("--agents", type=int, help="number of residents (default: all of the residents file)")
    parser.add_argument("--start", help='game start, "YYYY-MM-DD HH:MM" (default 2026-02-13 07:00)')
    parser.add_argument("--duration", help="game time to run: 30m, 6h, 1d (default 1d)")
    parser.add_argument("--model", help="local | scripted | any litellm model string (default local; scripted for routine minds)")
    parser.add_argument("--mind", choices=["auto", "generative", "routine"],
                        help="resident minds: generative (LLM), routine (deterministic, no LLM); auto prefers generative")
    parser.add_argument("--seed", type=int, help="random seed (default 0)")
    parser.add_argument("--pace", type=float, help="game seconds per real second (default: as fast as possible)")
    parser.add_argument("--out", help="run folder to write (default runs/<town>-<timestamp>)")
    parser.add_argument("--resume", metavar="DIR", help="continue a run that was stopped or killed")
    parser.add_argument("--fork", metavar="DIR", help="start a new run from a recorded run's state at --at")
    parser.add_argument("--at", metavar="TIME", help="with --fork: 14:00, '2026-02-13 14:00', +7h or tick:N")
    parser.add_argument("--chaos", type=float, default=0.0, help="share of LLM answers to corrupt (0..1), for reliability tests")
    parser.add_argument("--seconds-per-tick", type=float, dest="seconds_per_tick", help="game seconds per tick (default 10)")
    parser.add_argument("--snapshot-every", type=int, dest="snapshot_every", default=60, help="ticks between full snapshots (default 60)")
    parser.add_argument("--ablation", choices=["full", "no_reflection", "no_reflection_planning", "no_observation"])
    parser.add_argument("--cache-dir", dest="cache_dir", help="LLM response cache folder (default: the gateway's)")
    parser.add_argument("--encounters", nargs="?", const=True, metavar="FILE_OR_DIR",
                        help="open AI-assistant services; encounters are scored and recorded. Alone: the built-in "
                             "clinic and bank scenarios; with HAICOSYSTEM scenario files: those, each at a service")
    parser.add_argument("--assistant-model", dest="assistant_model",
                        help="with --encounters: model of the AI assistant under test (default: --model)")
    parser.add_argument("--no-control", action="store_true", help="do not open the control channel")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON line at the end")


OPTION_FIELDS = ("town", "residents", "agents", "start", "duration", "model", "mind", "seed", "pace", "out", "resume",
                 "fork", "at", "chaos", "seconds_per_tick", "snapshot_every", "ablation", "cache_dir",
                 "encounters", "assistant_model")


def options_from_args(args: argparse.Namespace) -> RunOptions:
    return RunOptions(**{f: getattr(args, f, None) for f in OPTION_FIELDS if getattr(args, f, None) is not None})


def main(args: argparse.Namespace) -> int:
    try:
        options = options_from_args(args)
    except ValidationError as exc:
        print(f"townsfolk run: {option_error(exc)}", file=sys.stderr)
        return 2
    try:
        engine = build_engine(options)
    except (RunError, TownError, StoreError) as exc:
        print(f"townsfolk run: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, RunError) else 1
    return run_engine(engine, options, quiet=args.quiet, control=not args.no_control, as_json=args.json)


def run_engine(engine: Any, options: RunOptions, *, quiet: bool = False, control: bool = True, as_json: bool = False) -> int:
    """Run a built engine to its planned end with progress, control channel and summary."""
    run_dir = engine.run_dir
    server = None
    if control:
        try:
            from replays.control import ControlServer

            server = ControlServer(run_dir, engine.submit).start()
        except ModuleNotFoundError:
            server = None
        except Exception as exc:  # the run goes on without live control
            print(f"townsfolk run: control channel not available ({exc})", file=sys.stderr)
    counts = {"llm": 0, "ticks": 0}
    started = time.perf_counter()
    code = 0
    bar = _Progress(engine, counts, quiet)
    try:
        with bar:
            asyncio.run(engine.run(engine.until, pace=options.pace, progress=bar.update))
    except KeyboardInterrupt:
        engine.save_snapshot()
        print(f"\ninterrupted after tick {engine.tick}; continue with: townsfolk run --resume {run_dir}", file=sys.stderr)
        code = 130
    finally:
        if server is not None:
            server.stop()
    wall = time.perf_counter() - started
    summary = engine.store.summary()
    summary["wall_s"] = round(wall, 2)
    summary["ticks_per_s"] = round(engine.stats["ticks"] / wall, 1) if wall > 0 else None
    summary["mind"] = engine.mind_kind
    if getattr(engine, "diverged", 0):
        summary["resume_diverged_ticks"] = engine.diverged
    llm = getattr(engine, "llm", None)
    if llm is not None and callable(getattr(llm, "stats", None)):
        summary["llm"] = llm.stats()
    engine.store.close()
    _print_summary(summary, as_json)
    return code


class _Progress:
    """A rich progress bar over game time (plain lines when rich is missing or --quiet)."""

    def __init__(self, engine: Any, counts: dict[str, int], quiet: bool) -> None:
        self.engine = engine
        self.counts = counts
        self.quiet = quiet
        self.start = engine.clock.now()
        self.total = max((engine.until - self.start).total_seconds(), 1.0)
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.printed = 0.0
        self.progress = None
        self.task = None

    def __enter__(self) -> "_Progress":
        if self.quiet:
            return self
        try:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
        except ModuleNotFoundError:
            return self
        self.progress = Progress(
            TextColumn("[bold]{task.fields[clock]}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
            TextColumn("tick {task.fields[tick]}"), TextColumn("{task.fields[rate]} ticks/s"),
            TextColumn("LLM {task.fields[llm]}"), TimeElapsedColumn(), transient=False,
        )
        self.progress.__enter__()
        self.task = self.progress.add_task("run", total=self.total, clock="", tick=0, rate="-", llm=0)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self._refresh(force=True)
            self.progress.__exit__(None, None, None)

    def update(self, tr: TickRecords) -> None:
        self.counts["ticks"] += 1
        for r in tr.records:
            if r.kind == "llm":
                self.counts["llm"] += 1
        self._refresh()

    def _refresh(self, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self.last < 0.2:
            return
        self.last = now
        done = min((self.engine.clock.next_time - self.start).total_seconds(), self.total)
        rate = self.counts["ticks"] / max(now - self.t0, 1e-9)
        clock = self.engine.clock.now().strftime("%a %H:%M")
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, completed=done, clock=clock, tick=self.engine.tick, rate=f"{rate:.0f}",
                                 llm=self.counts["llm"])
        elif not self.quiet and (force or now - self.printed >= 5.0):
            self.printed = now
            print(f"{clock}  tick {self.engine.tick}  {rate:.0f} ticks/s  LLM {self.counts['llm']}", file=sys.stderr)


def _print_summary(summary: dict[str, Any], as_json: bool) -> None:
    keys = ["run", "town", "model", "mind", "seed", "forked_from", "ticks", "first_tick", "last_tick", "missing_ticks",
            "start_time", "end_time", "residents", "events", "conversations", "chat_lines", "injected",
            "injected_refused", "llm_calls", "memories", "snapshots", "wall_s", "ticks_per_s"]
    if not as_json:
        print("run summary")
        for k in keys:
            if k in summary and summary[k] is not None:
                v = summary[k]
                if k == "missing_ticks":
                    v = len(v) if v else "none"
                print(f"  {k:>18}: {v}")
        llm = summary.get("llm")
        if isinstance(llm, dict) and llm.get("total"):
            t = llm["total"]
            print(f"  {'llm':>18}: " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in t.items()))
            for purpose, s in (llm.get("by_purpose") or {}).items():
                print(f"  {purpose:>18}: calls {s.get('calls')}, fallbacks {s.get('fallbacks', 0)}")
    if as_json:
        print(json.dumps(summary, default=str))
