"""`townsfolk run`: run a town headless and write a run folder.

    townsfolk run [--town NAME|PATH] [--agents N] [--start "YYYY-MM-DD HH:MM"] [--duration 30m|6h|1d]
                  [--model local|scripted|<litellm model>] [--seed N] [--pace X] [--out DIR]
                  [--resume DIR] [--fork DIR --at TIME] [--chaos X]

Shows a progress bar (game time, ticks/s, LLM calls) and, while a tick takes long (the first
one plans every resident's day), a line every few seconds with the LLM calls in flight and
done; serves the control channel so that `townsfolk inject` can poke the live run, and
prints a summary at the end. Ctrl-C (SIGINT) and SIGTERM stop it alike: the tick in progress
is committed, the summary printed, the control socket removed, exit status 130 (SIGINT) or
143 (SIGTERM); a second signal stops at once, dropping only the tick in progress. Every
committed tick is kept and `--resume DIR` continues. A model that cannot be reached (no key,
connection refused, unknown model) stops the run with the cause and the fix, exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import threading
import time
from typing import Any

from pydantic import ValidationError

from maps.town import TownError
from maps.contracts import TickRecords
from memory.runfile import StoreError
from replays.control import ControlError, ControlServer, check_channel
from world.cli.readable import readable
from world.cli.args import fleet_model
from world.engine import Engine
from world.failures import files_headroom_problem, out_of_files, redact, too_many_files_message
from world.runner import RunError, RunOptions, build_engine, option_error, submit_durably
from world.stop_signals import StopSignals, Stopped
from world.summary import run_summary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--town", help="town name (e.g. default) or folder; generated[:N[:SEED]] builds a town for N "
                                       "residents (default: --agents), the same for the same N and SEED")
    parser.add_argument("--residents", help="residents file of the town (default: the smallest that fits --agents)")
    parser.add_argument("--agents", type=int, help="number of residents (default: all of the residents file)")
    parser.add_argument("--start", help='game start, "YYYY-MM-DD HH:MM" (default 2026-02-13 07:00)')
    parser.add_argument("--duration", help="game time to run: 30m, 6h, 1d (default 1d)")
    which_model = parser.add_mutually_exclusive_group()
    which_model.add_argument("--model", help="local | scripted | any litellm model string (default local; scripted for routine minds)")
    which_model.add_argument("--models", metavar="FILE", dest="model", type=fleet_model,
                             help="a fleet of OpenAI-compatible servers (YAML or JSON, agents/llm/fleet.py) "
                                  "through litellm's Router: load balancing, per-server concurrency, fail-over; "
                                  "the same as --model fleet:FILE")
    parser.add_argument("--mind", choices=["auto", "generative", "routine"],
                        help="resident minds: generative (LLM), routine (deterministic, no LLM); auto prefers generative")
    parser.add_argument("--seed", type=int, help="random seed (default 0)")
    parser.add_argument("--pace", type=float, help="game seconds per real second (default: as fast as possible)")
    parser.add_argument("--out", help="run folder to write, created with its parents (default runs/<town>-<timestamp>)")
    parser.add_argument("--resume", metavar="DIR", help="continue a run that was stopped or killed")
    parser.add_argument("--fork", metavar="DIR", help="start a new run from a recorded run's state at --at")
    parser.add_argument("--at", metavar="TIME", help="with --fork: 14:00, 'day 2 14:00', '2026-02-13 14:00', +7h or tick:N (within the run)")
    parser.add_argument("--chaos", type=float, default=0.0, help="share of LLM answers to corrupt (0..1), for reliability tests")
    parser.add_argument("--seconds-per-tick", type=float, dest="seconds_per_tick", help="game seconds per tick (default 10)")
    parser.add_argument("--snapshot-every", type=int, dest="snapshot_every", default=60, help="ticks between full snapshots (default 60)")
    parser.add_argument("--ablation", choices=["full", "no_reflection", "no_reflection_planning", "no_observation"],
                        help="switch parts of the generative mind off, as the paper's ablations (default full): "
                             "no_reflection, no_reflection_planning (no reflection, no day plan), no_observation "
                             "(no memory of what is seen)")
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
    with StopSignals("run") as stop:  # SIGTERM as SIGINT, from the first option check to the summary
        try:
            return _main(args, stop)
        except Stopped as exc:
            print(f"townsfolk run: {exc}: stopped", file=sys.stderr)
            return exc.exit_code
        except sqlite3.DatabaseError as exc:  # e.g. --resume of a run.db damaged past the quick check, disk full
            where = getattr(args, "resume", None) or getattr(args, "fork", None) or getattr(args, "out", None) or "the run folder"
            if out_of_files(exc):  # SQLite says 'unable to open database file' when the process is out of files
                print(f"townsfolk run: {where}: {too_many_files_message()}", file=sys.stderr)
                return 1
            print(f"townsfolk run: {where}: the run database could not be read or written ({exc})", file=sys.stderr)
            return 1
        except OSError as exc:
            if not out_of_files(exc):
                raise
            print(f"townsfolk run: {too_many_files_message()}", file=sys.stderr)
            return 1


def _main(args: argparse.Namespace, stop: StopSignals) -> int:
    options = parse_options(args, "run")
    if isinstance(options, int):
        return options
    refused = before_start(args, "run")
    if refused:
        return refused
    engine = start_engine(options, "run")
    if isinstance(engine, int):
        return engine
    return run_engine(engine, options, quiet=args.quiet, control=not args.no_control, as_json=args.json, stop=stop)


# What `run` and `watch` say when a run cannot start: 2 for bad options (ValidationError,
# RunError), 1 for a town or run folder that cannot be used (TownError, StoreError).
START_ERRORS = (RunError, TownError, StoreError)


def start_failed(command: str, exc: Exception) -> int:
    """Say why the run cannot start, as 'townsfolk COMMAND: ...'; return its exit status."""
    if isinstance(exc, ValidationError):
        print(f"townsfolk {command}: {option_error(exc)}", file=sys.stderr)
        return 2
    print(f"townsfolk {command}: {exc}", file=sys.stderr)
    unknown_town = isinstance(exc, TownError) and exc.field == "town"  # --town atlantis: a bad option
    return 2 if isinstance(exc, RunError) or unknown_town else 1


def before_start(args: argparse.Namespace, command: str) -> int:
    """The checks made before the run folder exists, so a refused start leaves no file behind:
    the control channel's directory (exit 2) and open-file headroom (exit 1); 0 when both pass."""
    if not args.no_control and not control_usable(command):
        return 2
    short = files_headroom_problem()
    if short:
        print(f"townsfolk {command}: {short}", file=sys.stderr)
        return 1
    return 0


def control_usable(command: str) -> bool:
    """Check the control channel's socket directory before the run folder is made; False
    (having said why) when it cannot be used, so a refused start leaves no file behind."""
    try:
        check_channel()
    except ControlError as exc:
        print(f"townsfolk {command}: {exc}", file=sys.stderr)
        return False
    return True


def parse_options(args: argparse.Namespace, command: str) -> RunOptions | int:
    """The run options of ``args``, or the exit status after saying which option is wrong."""
    try:
        return options_from_args(args)
    except ValidationError as exc:
        return start_failed(command, exc)


def start_engine(options: RunOptions, command: str) -> Engine | int:
    """A built engine (world.runner.build_engine), or the exit status after saying why not."""
    try:
        return build_engine(options)
    except START_ERRORS as exc:
        return start_failed(command, exc)


def run_engine(engine: Any, options: RunOptions, *, quiet: bool = False, control: bool = True, as_json: bool = False,
               stop: StopSignals | None = None) -> int:
    """Run a built engine to its planned end with progress, control channel and summary.

    With ``stop`` (SIGINT/SIGTERM handling), a first signal ends the run after the tick in
    progress; the exit status is then 128 + the signal number."""
    server = None
    if control:
        server = _control_server(engine)
        if server is None:
            return 2
    started = time.perf_counter()
    try:
        code, fatal = _run_to_end(engine, options, quiet, stop)
    finally:
        if server is not None:
            server.stop()
    if stop is not None and stop.requested:
        code = stop.exit_code
    summary = live_summary(engine, time.perf_counter() - started)
    engine.store.close()
    print_summary(summary, as_json)
    if fatal is not None:
        _print_fatal(fatal, engine, engine.context.run_dir)
    return code or health_exit_code(summary)


def _control_server(engine: Any) -> Any:
    """The control channel `townsfolk inject` reaches the run by; None (said why, the run file
    closed) when it cannot open: a run the user cannot reach, or others can, is not what they asked for."""
    try:
        return ControlServer(engine.context.run_dir, submit_durably(engine)).start()
    except Exception as exc:
        print(f"townsfolk run: {exc}", file=sys.stderr)
        engine.store.close()
        return None


def _run_to_end(engine: Any, options: RunOptions, quiet: bool,
                stop: StopSignals | None) -> tuple[int, BaseException | None]:
    """Run with a progress bar until the planned end, a stop signal or a model that cannot
    answer; (exit status so far, that model's error). Every committed tick is kept."""
    bar = _Progress(engine, {"llm": 0, "ticks": 0}, quiet)

    def progress(tr: TickRecords) -> None:
        bar.update(tr)
        if stop is not None:
            stop.check()  # a tick boundary: the tick just committed is kept

    if stop is not None:
        stop.graceful()
    try:
        with bar:
            asyncio.run(engine.run(engine.context.until, pace=options.pace, progress=progress))
    except KeyboardInterrupt as exc:
        engine.save_snapshot()
        print(f"\ninterrupted after tick {engine.tick}; continue with: townsfolk run --resume {engine.context.run_dir}",
              file=sys.stderr)
        return (exc.exit_code if isinstance(exc, Stopped) else 130), None
    except Exception as exc:
        if not getattr(exc, "fatal", False):  # agents.llm.errors.ModelUnavailable and kin
            raise
        engine.save_snapshot()  # every committed tick is kept; the tick in progress is not
        return 2, exc
    return 0, None


def live_summary(engine: Any, wall: float) -> dict[str, Any]:
    """The summary of a run this process just ran (`run` and `watch`): the run file's
    (world.summary, which counts a resume's inexact ticks) plus wall time, speed, the mind, model accounting."""
    summary = run_summary(engine.store)
    summary["wall_s"] = round(wall, 2)
    summary["ticks_per_s"] = round(engine.stats["ticks"] / wall, 1) if wall > 0 else None
    summary["mind"] = engine.context.mind_kind
    llm = engine.context.llm
    if llm is not None and callable(getattr(llm, "stats", None)):
        summary["llm"] = llm.stats()
        fleet = fleet_stats(getattr(llm, "backend", None))
        if fleet is not None:  # --models: calls and failures per server, the servers down at the end
            summary["fleet"] = fleet
            if engine.store is not None:  # kept with the run: `replay --summary` shows it too
                engine.store.set_meta(fleet=fleet)
        cache = getattr(llm, "cache", None)
        hits = ((summary["llm"] or {}).get("total") or {}).get("cache_hits", 0)
        if cache is not None and hits:  # a second clone's quickstart in a minute: say why
            summary["answer_cache"] = {"path": str(getattr(cache, "path", "")), "hits": hits}
    return summary


# Exit codes of `run` (README, "Exit codes"): 0 ok; 1 the run folder could not be used; 2 bad
# options or an unusable model; 3 the run finished but health is failed (a mind raised);
# 4 the run finished but health is degraded (over 10% of model calls fell back); 130 interrupted.
EXIT_HEALTH = {"ok": 0, "failed": 3, "degraded": 4}


def health_exit_code(summary: dict[str, Any]) -> int:
    """Non-zero when the run's health is not ok, so scripts notice a run that went badly."""
    status = (summary.get("health") or {}).get("status", "ok")
    return EXIT_HEALTH.get(status, 3)


def _print_fatal(exc: BaseException, engine: Any, run_dir: Any) -> None:
    """The cause and the fix of a run stopped by a model that cannot answer, after the summary."""
    explain = getattr(exc, "explain", None)
    text = redact(explain() if callable(explain) else str(exc))
    kept = f"ticks up to {engine.tick} are kept" if engine.tick >= 0 else "no tick was committed"
    print(f"townsfolk run: stopped: {text}\n  {kept}; once fixed, continue with: townsfolk run --resume {run_dir}",
          file=sys.stderr)


class _Progress:
    """A rich progress bar over game time (plain lines when rich is missing or --quiet).

    A heartbeat thread prints a line to stderr every ``heartbeat_s`` while a tick is in
    progress for that long: the first tick of a generative day can take minutes on a small
    machine, and a silent terminal looks like a hang.
    """

    def __init__(self, engine: Any, counts: dict[str, int], quiet: bool, heartbeat_s: float = 5.0) -> None:
        self.engine = engine
        self.counts = counts
        self.quiet = quiet
        self.start = engine.clock.now()
        self.total = max((engine.context.until - self.start).total_seconds(), 1.0)
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.printed = 0.0
        self.progress = None
        self.task = None
        self.heartbeat_s = heartbeat_s
        self.tick_started = self.t0
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def __enter__(self) -> "_Progress":
        if self.quiet:
            return self
        self._beat = threading.Thread(target=self._heartbeat, name="run-progress", daemon=True)
        self._beat.start()
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
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=1.0)
        if self.progress is not None:
            self._refresh(force=True)
            self.progress.__exit__(None, None, None)

    def update(self, tr: TickRecords) -> None:
        self.tick_started = time.perf_counter()
        self.counts["ticks"] += 1
        for r in tr.records:
            if r.kind == "llm":
                self.counts["llm"] += 1
        # Stop at the first tick after the model became unreachable, even if some caller on the
        # way swallowed the error: a run must not go on as a silent day of fallbacks.
        unavailable = getattr(self.engine.context.llm, "unavailable", None)
        if isinstance(unavailable, BaseException):
            raise unavailable
        self._refresh()

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            now = time.perf_counter()
            if now - self.tick_started >= self.heartbeat_s:
                print(self.heartbeat_line(now), file=sys.stderr, flush=True)

    def heartbeat_line(self, now: float) -> str:
        """E.g. 'tick 0 (Fri 07:00) running 35 s: LLM calls 8 in flight, 21 done; 41 s elapsed'."""
        activity = getattr(self.engine.context.llm, "activity", None)
        calls = ""
        if callable(activity):
            a = activity()
            calls = f": LLM calls {a['in_flight']} in flight, {a['done']} done"
        clock = self.engine.clock.next_time.strftime("%a %H:%M")
        return (f"tick {self.engine.tick + 1} ({clock}) running {now - self.tick_started:.0f} s{calls}; "
                f"{now - self.t0:.0f} s elapsed")

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


def print_summary(summary: dict[str, Any], as_json: bool) -> None:
    """The run summary as readable lines, or one JSON line with --json (`run` and `watch` alike)."""
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
                print(f"  {k:>18}: {readable(v)}")
        _print_health(summary)
        llm = summary.get("llm")
        if isinstance(llm, dict) and llm.get("total"):
            t = llm["total"]
            print(f"  {'llm':>18}: " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in t.items()))
            for purpose, s in (llm.get("by_purpose") or {}).items():
                print(f"  {purpose:>18}: calls {s.get('calls')}, fallbacks {s.get('fallbacks', 0)}")
        _print_fleet(summary.get("fleet"))
        cached = summary.get("answer_cache")
        if isinstance(cached, dict):
            print(f"  {'answer cache':>18}: {cached['hits']} model answers reused from {cached['path']} (shared by "
                  "every run on this machine with the same model and prompts; --cache-dir DIR for another)")
        bel = summary.get("believability")
        if isinstance(bel, dict):  # agents/believability.py: share per check (judged), None = nothing to judge
            parts = [f"overall {bel.get('overall')}"] + [
                f"{k} {v.get('score')} ({v.get('judged')})" for k, v in bel.items() if isinstance(v, dict)]
            print(f"  {'believability':>18}: " + ", ".join(parts + ([f"error: {bel['error']}"] if bel.get("error") else [])))
    if as_json:
        print(json.dumps(summary, default=str))


def fleet_stats(backend: Any) -> dict[str, Any] | None:
    """The fleet's per-server accounting (agents/llm/fleet.py), found through wrappers such as chaos."""
    while backend is not None:
        if callable(getattr(backend, "fleet_stats", None)):
            return backend.fleet_stats()
        backend = getattr(backend, "inner", None)
    return None


def _print_fleet(fleet: Any) -> None:
    if not isinstance(fleet, dict):
        return
    for name, s in (fleet.get("endpoints") or {}).items():
        down = " (down at the end)" if name in (fleet.get("down") or []) else ""
        print(f"  {'server ' + name:>18}: calls {s.get('calls')}, ok {s.get('ok')}, failures {s.get('failures')}{down}")


def _print_health(summary: dict[str, Any]) -> None:
    """Mind errors and fallbacks per resident, then the run's health and why."""
    errors = summary.get("mind_errors")
    if isinstance(errors, dict):
        print(f"  {'mind_errors':>18}: errors {errors.get('errors', 0)}, fallbacks {errors.get('fallbacks', 0)}"
              f" of {errors.get('calls', 0)} model calls, {errors.get('patched', 0)} answer items patched")
        for name, e in (errors.get("by_resident") or {}).items():
            print(f"  {name[:18]:>18}: errors {e['errors']}, fallbacks {e['fallbacks']} of {e['calls']},"
                  f" patched {e.get('patched', 0)}")
            for message in e.get("messages", [])[:3]:
                print(f"  {'':>18}  - {redact(message)[:160]}")
    h = summary.get("health")
    if isinstance(h, dict):
        print(f"  {'health':>18}: {h.get('status')}" + "".join(f"\n  {'':>18}  - {r}" for r in h.get("reasons", [])))
