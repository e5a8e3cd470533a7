"""`townsfolk replay DIR ...`: play, summarise, narrate or export a run folder.

    townsfolk replay DIR [--at TIME] [--speed X]          open the viewer
    townsfolk replay DIR --summary [--json]                what the run holds
    townsfolk replay DIR --timeline [--md FILE]            a Markdown account of the day
    townsfolk replay DIR --png-dir D --at T1 [--at T2 ..]  frames as PNG files
    townsfolk replay DIR --export day.gif [--from T --to T]

The folder may belong to a run that is still going: everything here reads it read-only.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from datetime import datetime, timedelta
from pathlib import Path

from agents.minds.interview import interview
from maps.contracts import TimeError, parse_at
from memory.runfile import RunStore, StoreError
from replays.export import ExportError, write_gif, write_pngs
from replays.feeds import ReplayFeed
from replays.leaks import plot_leaks
from replays.reader import ReaderError, open_store
from replays.runview import open_run
from replays.timeline import build_timeline
from replays.viewer import NoDisplayError, Viewer, check_display
from world.cli.args import size_type
from world.cli.readable import readable
from world.summary import run_leaks, run_summary


def _speed(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected game seconds per real second (e.g. 60), got {text!r}") from None
    if not 0 < v <= 100000:
        raise argparse.ArgumentTypeError(f"speed must be above 0 and at most 100000, got {text}")
    return v


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="DIR", help="a run folder (holds run.db)")
    parser.add_argument("--at", action="append", default=[], metavar="TIME",
                        help="where to start (viewer) or which frames to draw (--png-dir); "
                             "'14:00', 'day 2 14:00', '2026-02-13 14:00', '+2h30m' or 'tick:120'; repeat for several frames")
    parser.add_argument("--speed", type=_speed, default=60.0, metavar="X",
                        help="replay speed in game seconds per real second (default 60)")
    parser.add_argument("--select", metavar="NAME", help="select this resident (viewer and pictures)")
    parser.add_argument("--size", type=size_type, default=None, metavar="WxH",
                        help="window / picture size (default 1600x900 window, 1920x1080 PNG, 960x540 GIF)")
    parser.add_argument("--summary", action="store_true", help="print what the run holds")
    parser.add_argument("--json", action="store_true", help="with --summary: last line is one JSON object")
    parser.add_argument("--timeline", action="store_true", help="a Markdown account of the day")
    parser.add_argument("--md", metavar="FILE", help="with --timeline: write to FILE instead of printing")
    parser.add_argument("--leaks-plot", dest="leaks_plot", metavar="FILE.png",
                        help="plot harm diffusion (residents who know each leaked fact, over time) as a PNG")
    parser.add_argument("--png-dir", metavar="D", help="write the frames at each --at time as PNG files into D")
    parser.add_argument("--export", metavar="FILE.gif", help="write an animated GIF of the run (needs Pillow)")
    parser.add_argument("--from", dest="from_", metavar="T", help="with --export: start time")
    parser.add_argument("--to", metavar="T", help="with --export: end time")
    parser.add_argument("--frames", type=int, default=240, metavar="N", help="with --export: at most N frames (default 240)")
    parser.add_argument("--model", default="local", help="model for interviews in the viewer (default local)")


def _fail(message: str) -> int:
    print(f"townsfolk replay: {message}", file=sys.stderr)
    return 2


def main(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    modes = [m for m in ("summary", "timeline", "png_dir", "export") if getattr(args, m)]
    problem = _option_problem(args, modes)
    if problem:
        return _fail(problem)
    try:
        return _dispatch(run_dir, args, modes)
    except ReaderError as exc:
        return _fail(str(exc))
    except sqlite3.DatabaseError as exc:  # damage the integrity check on open did not see
        return _fail(f"{RunStore.db_path(run_dir)}: the run database is damaged or unreadable ({exc})")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:  # a stored record's bytes damaged in place
        return _fail(f"{RunStore.db_path(run_dir)}: a stored record is damaged and cannot be read ({exc})")
    except OSError as exc:  # an output path that cannot be written (--md, --png-dir, --export)
        where = exc.filename or args.md or args.png_dir or args.export or run_dir
        return _fail(f"{where}: cannot write there ({exc.strerror or exc})")
    except (ExportError, TimeError, StoreError) as exc:
        return _fail(str(exc))


def _option_problem(args: argparse.Namespace, modes: list[str]) -> str | None:
    """What is wrong with the options as given (before the run is opened), or None."""
    pairs = [(len(modes) > 1, "choose one of --summary, --timeline, --png-dir, --export"),
             (args.json and not args.summary, "--json goes with --summary"),
             (args.md and not args.timeline, "--md goes with --timeline"),
             ((args.from_ or args.to) and not args.export, "--from/--to go with --export"),
             (args.frames < 1, "--frames must be at least 1")]
    pairs += [(path is not None and not str(path).strip(), f"{option}: expected a path, got an empty one")
              for option, path in (("--md", args.md), ("--png-dir", args.png_dir), ("--export", args.export))]
    for bad, message in pairs:
        if bad:
            return message
    for option, values in (("--at", args.at), ("--from", [args.from_]), ("--to", [args.to])):
        for value in values:
            try:
                if value is not None:
                    parse_at(value, datetime(2000, 1, 1))  # the form only; the run's span is checked later
            except TimeError as exc:
                return f"{option} {value}: {exc}"
    if args.md and Path(args.md).is_dir():
        return f"--md {args.md}: is a folder; expected a file name such as day.md"
    if args.export and Path(args.export).is_dir():
        return f"--export {args.export}: is a folder; expected a file name such as day.gif"
    if args.png_dir and Path(args.png_dir).exists() and not Path(args.png_dir).is_dir():
        return f"--png-dir {args.png_dir}: is a file; expected a folder for the frames"
    return None


def _dispatch(run_dir: Path, args: argparse.Namespace, modes: list[str]) -> int:
    """Run the one mode asked for: leaks plot, summary, timeline, PNG frames, GIF, or the viewer."""
    if getattr(args, "leaks_plot", None):
        return _leaks_plot(run_dir, args.leaks_plot) if not modes else _fail("--leaks-plot goes alone")
    if args.summary:
        return _summary(run_dir, args.json)
    if args.timeline:
        return _timeline(run_dir, args.md)
    if args.select and (args.png_dir or args.export):
        names = _resident_names(run_dir)
        if names and args.select not in names:
            return _fail(f"--select {args.select}: no such resident (residents: {', '.join(names)})")
    if args.png_dir:
        return _pngs(run_dir, args)
    if args.export:
        return _gif(run_dir, args)
    if len(args.at) > 1:
        return _fail("the viewer starts at one --at TIME (several go with --png-dir)")
    return _view(run_dir, args)


def _pngs(run_dir: Path, args: argparse.Namespace) -> int:
    if not args.at:
        return _fail("--png-dir needs at least one --at TIME")
    for p in write_pngs(run_dir, args.at, args.png_dir, args.size or (1920, 1080), args.select):
        print(p)
    return 0


def _gif(run_dir: Path, args: argparse.Namespace) -> int:
    if not args.export.lower().endswith(".gif"):
        return _fail(f"--export {args.export}: only .gif animations are supported")
    info = write_gif(run_dir, args.export, args.from_, args.to, args.size or (960, 540),
                     max_frames=args.frames, select=args.select)
    print(f"wrote {info['path']}: {info['frames']} frames, ticks {info['from_tick']}..{info['to_tick']}")
    return 0


def _resident_names(run_dir: Path) -> list[str]:
    store = open_store(run_dir)
    try:
        return sorted(store.meta().get("resident_names") or [])
    finally:
        store.close()


def _summary(run_dir: Path, as_json: bool) -> int:
    store = open_store(run_dir)
    try:
        summary = run_summary(store)
    finally:
        store.close()
    if not as_json:
        width = max(len(k) for k in summary)
        for key, value in summary.items():
            if key == "resident_names":
                value = ", ".join(value)
            elif key == "missing_ticks":
                value = "none" if not value else f"{len(value)}: {value[:20]}{' ...' if len(value) > 20 else ''}"
            print(f"{key:>{width}}: {readable(value)}")
    else:
        print(json.dumps(summary, default=str))
    return 0


def _leaks_plot(run_dir: Path, png: str) -> int:
    if not png.lower().endswith(".png"):
        return _fail(f"--leaks-plot {png}: expected a .png file name")
    store = open_store(run_dir)
    try:
        leaks = run_leaks(store)
        end = store.counts().get("end_time")
    finally:
        store.close()
    out = plot_leaks(leaks, png, title=f"Harm diffusion — {run_dir.name}", end=end)
    print(f"wrote {out}: {len(leaks)} leaked fact(s)")
    return 0


def _timeline(run_dir: Path, md: str | None) -> int:
    store = open_store(run_dir)
    try:
        meta = store.meta()
        text = build_timeline(store.iter_ticks(0, None), meta, title=f"A day in {meta.get('town_name') or meta.get('town') or 'town'} — {run_dir.name}")
    finally:
        store.close()
    if md:
        out = Path(md)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        print(f"wrote {out} ({len(text.splitlines())} lines)")
    else:
        sys.stdout.write(text)
    return 0


def _view(run_dir: Path, args: argparse.Namespace) -> int:
    try:
        check_display()
    except NoDisplayError as exc:
        return _fail(str(exc))
    run = open_run(run_dir)
    feed = ReplayFeed(run.reader, run_dir)
    bounds = feed.bounds()
    if bounds is None:
        return _fail(f"{run_dir}: the run has no committed ticks yet")
    viewer = Viewer(run.map, feed, size=args.size or (1600, 900), speed=args.speed, run_dir=run_dir,
                    model=args.model, title=run.title, interviewer=interview)
    run.reader.start_indexing(follow=True)
    if args.at:
        start = run.reader.time_of(bounds[0])
        end = run.reader.time_of(bounds[1])
        assert start is not None and end is not None
        when = parse_at(args.at[0], start)
        if isinstance(when, int) and not bounds[0] <= when <= bounds[1]:
            return _fail(f"--at {args.at[0]}: outside the run (ticks {bounds[0]} to {bounds[1]})")
        if not isinstance(when, int) and not start <= when <= end + timedelta(minutes=1):
            return _fail(f"--at {args.at[0]}: {when:%Y-%m-%d %H:%M} is outside the run "
                         f"({start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M})")
        viewer.seek(when if isinstance(when, int) else run.reader.tick_at_time(when))
    else:
        viewer.seek(bounds[0])
    if args.select:
        if args.select not in viewer.frame.residents:
            return _fail(f"--select {args.select}: no such resident (residents: {', '.join(sorted(viewer.frame.residents))})")
        viewer.select(args.select)
    try:
        viewer.run()
    finally:
        run.reader.close()
    return 0
