"""`townsfolk watch [run options]`: run a town with the live viewer attached.

Takes every option of `townsfolk run` (the same engine is built by world.runner), plus the
window's. The engine runs on a worker thread; each committed tick reaches the viewer through
the engine's listener, the same TickRecords a replay of the folder draws. The viewer sets
the pace (+/-) and pauses (space) between ticks; the control channel is open so that
`townsfolk inject DIR ...` works from another terminal. Closing the window stops the run
after the tick in progress; `townsfolk run --resume DIR` continues it. SIGINT (Ctrl-C) and
SIGTERM close the window the same way (exit status 130 or 143); a second signal stops at once.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import threading
import time
from typing import Any

from agents.minds.interview import interview
from replays.control import ControlServer
from replays.feeds import LiveFeed
from replays.frames import frame_from_snapshot
from replays.mapview import from_town
from replays.viewer import NoDisplayError, Viewer, check_display
from world.cli import run as run_command
from world.cli.args import window_size
from world.failures import redact
from world.runner import submit_durably
from world.stop_signals import StopSignals

log = logging.getLogger(__name__)
DEFAULT_PACE = 60.0


class ViewerClosed(BaseException):
    """Raised from the tick listener to stop the engine cleanly between two ticks.

    A BaseException so that the engine's guard around listeners (which keeps a broken
    viewer from stopping the town) lets it through: closing the window is a request to stop.
    """


class WatchFeed(LiveFeed):
    """A live feed whose listener ends the run once the window has closed.

    ``loading_status`` (set by :func:`watch`) says what the engine is doing before its first
    tick, for the viewer's loading screen.
    """

    loading_status: Any = None

    def listener(self, tick: Any) -> None:
        super().listener(tick)
        if self.stopping.is_set():
            raise ViewerClosed()


KEYS = """keys in the window:
  click a resident    select and follow them (their plan, memories and relationships in the panel)
  Tab / f             select the next resident / follow the selected one on or off
  Space               pause or play;  + / -  faster or slower;  . / ,  one tick on or back
  Home / End          (replays) jump to the start / the end
  arrows, drag        pan;  wheel, PageUp / PageDown  zoom;  0  fit the map
  Enter or /          open the command box: whisper, set an object, announce, interview
                      (Tab switches mode, Enter sends, Esc closes)
  Esc                 clear the selection;  q or closing the window  stop (the tick is committed)"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = KEYS
    run_command.add_arguments(parser)
    parser.add_argument("--size", default="1600x900", metavar="WxH", help="window size (default 1600x900)")
    parser.add_argument("--select", metavar="NAME", help="select this resident when the window opens")
    parser.add_argument("--close-after", type=float, dest="close_after", metavar="SECONDS",
                        help="close the window after this many real seconds (scripted demos, smoke tests)")
    parser.add_argument("--join", metavar="NAME", default=None,
                        help="join the town as a resident called NAME: click the map to walk, type in the box to "
                             "say a line to whoever is near (a name already taken is refused)")


def _window(text: str) -> tuple[int, int]:
    """--size for a live window: at least 640x480, so the side panel fits."""
    try:
        return window_size(text, least=(640, 480))
    except ValueError as exc:
        raise ValueError(f"--size: {exc}") from None


def main(args: argparse.Namespace) -> int:
    try:
        size = _window(args.size)
    except ValueError as exc:
        print(f"townsfolk watch: {exc}", file=sys.stderr)
        return 2
    options = run_command.parse_options(args, "watch")
    if isinstance(options, int):
        return options
    if getattr(args, "join", None):
        options = options.model_copy(update={"join": [args.join]})
    try:
        import pygame  # noqa: F401 - optional: only the viewer needs it
    except ImportError:
        print("townsfolk watch: the viewer needs pygame (pip install pygame)", file=sys.stderr)
        return 2
    try:
        check_display()
    except NoDisplayError as exc:
        print(f"townsfolk watch: {exc}; `townsfolk run` runs a town without a window", file=sys.stderr)
        return 2
    refused = run_command.before_start(args, "watch")
    if refused:
        return refused
    engine = run_command.start_engine(options, "watch")
    if isinstance(engine, int):
        return engine
    return watch(engine, pace=options.pace or DEFAULT_PACE, size=size, select=args.select,
                 control=not args.no_control, as_json=args.json, close_after=args.close_after)


def watch(engine: Any, *, pace: float = DEFAULT_PACE, size: tuple[int, int] = (1600, 900),
          select: str | None = None, control: bool = True, as_json: bool = False,
          close_after: float | None = None) -> int:
    """Run ``engine`` to its planned end on a worker thread while the viewer shows it."""
    run_dir = engine.context.run_dir
    meta = engine.store.meta() if engine.store is not None else {}
    feed = WatchFeed(submit=submit_durably(engine), pace=pace, run_dir=run_dir, throttle=True)
    engine.add_listener(feed.listener)
    try:
        server = _control_server(engine) if control else None
    except Exception as exc:  # refuse rather than run without the channel (or with one others can reach)
        print(f"townsfolk watch: {exc}", file=sys.stderr)
        if engine.store is not None:
            engine.store.close()
        return 2
    viewer = _live_viewer(engine, feed, meta, size, select)
    outcome: dict[str, Any] = {"stopped": False}
    feed.loading_status = _loading_status(engine, time.monotonic())
    started = time.perf_counter()
    thread = threading.Thread(target=_run_engine, args=(engine, feed, outcome), name="townsfolk-engine", daemon=True)
    thread.start()
    stop = _close_on_signal(viewer)
    try:
        viewer.run(close_after=close_after)
    finally:
        if not feed.finished.is_set():
            print("stopping the run after the tick in progress ...", file=sys.stderr)
        feed.stop()
        thread.join()
        if outcome["stopped"]:
            engine.save_snapshot()
        if server is not None:
            server.stop()
        stop.__exit__()
    summary = _summary(engine, time.perf_counter() - started)
    if engine.store is not None:
        engine.store.close()
    if outcome["stopped"]:
        print(f"stopped after tick {engine.tick}; continue with: townsfolk run --resume {run_dir}", file=sys.stderr)
    if feed.error:
        print(f"townsfolk watch: the run failed: {redact(str(feed.error))}", file=sys.stderr)
    run_command.print_summary(summary, as_json)  # the same as `townsfolk run` (one JSON line with --json)
    if stop.requested:
        return stop.exit_code
    if feed.error:
        return 1
    return run_command.health_exit_code(summary)  # the same codes as `run`: 3 failed, 4 degraded


def _control_server(engine: Any) -> Any:
    """The control channel for ``townsfolk inject`` while the window is open."""
    return ControlServer(engine.context.run_dir, submit_durably(engine)).start()


def _live_viewer(engine: Any, feed: Any, meta: dict, size: tuple[int, int], select: str | None) -> Any:
    """The window on the engine's town, with each resident's persona for the side panel."""
    mapview = from_town(engine.town)
    for name, res in getattr(engine, "residents", {}).items():
        persona = getattr(res, "persona", None)
        if persona is not None:
            mapview.personas[name] = persona.model_dump()
    viewer = Viewer(mapview, feed, size=size, frame=frame_from_snapshot(engine.state()), run_dir=engine.context.run_dir,
                    model=str(meta.get("model") or "local"), title=f"{meta.get('town_name') or mapview.name} — {engine.context.run_dir}",
                    interviewer=interview, player=next(iter(meta.get("players") or []), None))
    if select:
        if select not in viewer.frame.residents:
            print(f"townsfolk watch: --select {select}: no such resident", file=sys.stderr)
        else:
            viewer.select(select)
    return viewer


def _run_engine(engine: Any, feed: Any, outcome: dict[str, Any]) -> None:
    """The engine thread: run to the planned end; a closed window stops it, a failure is kept for the summary."""
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(engine.run(engine.context.until, pace=None))
    except ViewerClosed:
        outcome["stopped"] = True
    except Exception as exc:
        log.exception("the run failed")
        feed.error = f"{type(exc).__name__}: {exc}"
    finally:
        loop.close()
        feed.finished.set()


def _close_on_signal(viewer: Any) -> Any:
    """SIGINT/SIGTERM close the window (the run stops after the tick in progress); again: at once."""
    stop = StopSignals("watch").__enter__()
    stop.graceful(lambda: setattr(viewer, "running", False))
    return stop


def _summary(engine: Any, wall: float) -> dict[str, Any]:
    """The run summary `townsfolk run` prints, for the part of the run this window watched."""
    if engine.store is None:
        return {}
    return run_command.live_summary(engine, wall)


def _loading_status(engine: Any, since: float) -> Any:
    """What the viewer's loading screen says until the first tick is committed: the minds are
    being built (nothing asked of the model yet), then the day is being planned."""

    def status() -> list[str]:
        waited = time.monotonic() - since
        people = len(getattr(engine, "residents", {}) or {})
        calls = 0
        llm = engine.context.llm
        if llm is not None and callable(getattr(llm, "stats", None)):
            try:
                calls = int(llm.stats().get("total", {}).get("calls", 0))
            except Exception:  # a status line must never break the window
                calls = 0
        model = getattr(llm, "model", "") or "the model"
        if calls == 0:
            head = "loading: building minds"
            what = f"{people} residents: memories, embeddings and the model ({model})"
        else:
            head = "loading: first tick"
            what = f"{people} residents planning their day: {calls} calls to {model} so far"
        return [head, what, f"{waited:.0f} s so far; the town appears when tick 0 is committed"]

    return status
