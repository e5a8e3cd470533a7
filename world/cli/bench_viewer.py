"""`townsfolk bench viewer`: frames per second of the viewer, headless, at 1920x1080.

Draws the whole window (map, residents with labels and bubbles, encounter badges, side
panel, command box, time bar) for ``--frames`` frames while 25 residents walk the default
town: every frame folds one tick of records (moves for everyone, some actions and chat
lines) into the frame with ``apply`` and draws it, as the viewer does when playing fast.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from datetime import datetime, timedelta
from typing import Any

from maps.contracts import Record, TickRecords
from memory.runfile import RunStore, Snapshot
from replays.export import init_headless
from replays.feeds import LiveFeed
from replays.frames import FrameState, apply, apply_in_place
from replays.mapview import grid_map, load_mapview
from replays.reader import RunReader
from replays.viewer import Viewer
from world.cli.args import window_size

ACTIONS = [("cooking breakfast", "🍳"), ("reading the paper", "📰"), ("walking to work", "🚶"),
           ("having coffee", "☕"), ("writing a report", "✍"), ("chatting with a friend", "💬"),
           ("tidying up", "🧹"), ("sleeping", "😴")]
LINES = ["Good morning! Lovely weather today, isn't it?",
         "Have you heard about the party at the cafe on Friday?",
         "I need to pick up some bread from the grocer before it closes.",
         "The stove at the cafe was acting up again this morning."]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--frames", type=int, default=300, help="frames to draw (default 300)")
    parser.add_argument("--residents", type=int, default=25, help="residents on the map (default 25)")
    parser.add_argument("--size", default="1920x1080", help="resolution (default 1920x1080)")
    parser.add_argument("--town", default="default", help="town name or folder (default: default)")
    parser.add_argument("--zoom", type=int, default=None, help="tile size in pixels (default: fit the map)")
    parser.add_argument("--run", metavar="DIR", default=None,
                        help="measure seeking in this run folder (default: a generated full day, 8,640 ticks)")
    parser.add_argument("--seeks", type=int, default=40, help="random seeks to time (default 40)")


def _tick(n: int, t0: datetime, names: list[str], pos: dict[str, tuple[int, int]],
          free: list[tuple[int, int]], free_set: set[tuple[int, int]], rng: random.Random) -> TickRecords:
    recs: list[Record] = []
    for name in names:
        x, y = pos[name]
        steps = [(x + dx, y + dy) for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)) if (x + dx, y + dy) in free_set]
        if steps:
            pos[name] = rng.choice(steps)
        recs.append(Record(kind="move", resident=name, data={"tile": list(pos[name]), "address": ""}))
        if rng.random() < 0.03:
            desc, emoji = rng.choice(ACTIONS)
            recs.append(Record(kind="action", resident=name, data={"description": desc, "emoji": emoji}))
        if rng.random() < 0.02:
            other = rng.choice(names)
            recs.append(Record(kind="chat", resident=name,
                               data={"speaker": name, "listener": other, "text": rng.choice(LINES)}))
    return TickRecords(tick=n, time=t0 + timedelta(seconds=10 * n), records=recs)


@dataclass
class _Crowd:
    """Residents random-walking the free tiles of a map; ``tick(n)`` makes the records of tick n."""

    names: list[str]
    free: list[tuple[int, int]]
    free_set: set[tuple[int, int]]
    pos: dict[str, tuple[int, int]]
    rng: random.Random
    t0: datetime = datetime(2024, 2, 13, 8, 0)

    @classmethod
    def on(cls, mapview: Any, residents: int, rng: random.Random) -> "_Crowd":
        """The map's own residents first, then generated ones, each on a random free tile."""
        free = [(x, y) for y in range(mapview.height) for x in range(mapview.width) if (x, y) not in mapview.blocked]
        names = list(mapview.personas)[:residents]
        names += [f"Resident {i + 1}" for i in range(residents - len(names))]
        return cls(names, free, set(free), {n: rng.choice(free) for n in names}, rng)

    def tick(self, n: int) -> TickRecords:
        """Everyone steps once; some act or speak."""
        return _tick(n, self.t0, self.names, self.pos, self.free, self.free_set, self.rng)


def _load_map(town: str) -> tuple[Any, str]:
    """The town's map view and its name; a generated grid of similar size when the town cannot load here."""
    try:
        mapview = load_mapview(town)
        return mapview, mapview.name
    except Exception as exc:  # no town data here: a generated one of similar size
        return grid_map(7, 3, 13, 3), f"generated grid ({exc.__class__.__name__} loading {town!r})"


def _warm_up(viewer: Any, screen: Any, crowd: _Crowd) -> None:
    """An encounter badge and a selected resident, so every part of the window is drawn; builds the static layer."""
    warm = crowd.tick(0)
    warm.records.append(Record(kind="encounter", resident=crowd.names[0],
                               data={"encounter_id": "bench", "step": "score",
                                     "data": {"scores": {"targeted_safety_risks": -5}}}))
    viewer.frame = apply(viewer.frame, warm)
    viewer.select(crowd.names[0])
    viewer.draw(screen)  # builds the static layer once (cached afterwards)


def _draw_frames(viewer: Any, feed: Any, screen: Any, crowd: _Crowd, frames: int) -> tuple[list[float], float]:
    """Per-frame seconds (sorted) and the wall time of ``frames`` frames, each folding one tick and drawing."""
    import pygame

    times: list[float] = []
    start = time.perf_counter()
    for n in range(1, frames + 1):
        f0 = time.perf_counter()
        feed.listener(crowd.tick(n))
        viewer.update(1 / 30)
        viewer.draw(screen)
        pygame.display.flip()
        times.append(time.perf_counter() - f0)
    wall = time.perf_counter() - start
    times.sort()
    return times, wall


def run(args: argparse.Namespace) -> dict[str, Any]:
    init_headless()
    import pygame

    w, h = window_size(args.size)
    mapview, town = _load_map(args.town)
    crowd = _Crowd.on(mapview, args.residents, random.Random(0))
    feed = LiveFeed(pace=60.0)
    viewer = Viewer(mapview, feed, size=(w, h), frame=FrameState(), title="bench")
    if args.zoom:
        viewer.camera.tile_px = args.zoom
    screen = pygame.display.set_mode((w, h))
    _warm_up(viewer, screen, crowd)
    times, wall = _draw_frames(viewer, feed, screen, crowd, args.frames)
    seek = measure_seeks(args.run, crowd.names, crowd.free, args.seeks)
    return {
        "fps": round(args.frames / wall, 1),
        "frames": args.frames,
        "residents": len(crowd.names),
        "resolution": f"{w}x{h}",
        "tile_px": viewer.camera.tile_px,
        "frame_ms_p50": round(1000 * statistics.median(times), 2),
        "frame_ms_p95": round(1000 * times[int(0.95 * (len(times) - 1))], 2),
        "town": town,
        "video_driver": pygame.display.get_driver(),
        **seek,
    }


def _write_day(run_dir: Path, names: list[str], free: list[tuple[int, int]], ticks: int = 8640,
               snapshot_every: int = 60) -> None:
    """A full recorded day (10 s ticks) with the engine's snapshot cadence, for seek timing."""
    rng = random.Random(1)
    free_set = set(free)
    pos = {n: rng.choice(free) for n in names}
    t0 = datetime(2024, 2, 13, 0, 0)
    store = RunStore.create(run_dir, {"town": "default", "resident_names": names, "seed": 1})
    frame = FrameState()
    for n in range(ticks):
        tr = _tick(n, t0, names, pos, free, free_set, rng)
        apply_in_place(frame, tr)
        snap = None
        if n % snapshot_every == 0:
            state = {"tick": n, "time": tr.time.isoformat(), "objects": dict(frame.objects),
                     "residents": {k: {"tile": list(r.tile), "address": r.address, "action": r.action,
                                       "emoji": r.emoji} for k, r in frame.residents.items()}}
            snap = Snapshot(tick=n, time=tr.time, state=state, minds={})
        store.commit_tick(tr, snap)
    store.close()


def measure_seeks(run: str | None, names: list[str], free: list[tuple[int, int]], n: int) -> dict[str, Any]:
    """Time ``frame_at`` for random ticks: first from snapshots alone, then with the index."""
    with tempfile.TemporaryDirectory() as tmp:
        if run is None:
            run_dir = Path(tmp) / "day"
            t = time.perf_counter()
            _write_day(run_dir, names, free)
            made = time.perf_counter() - t
        else:
            run_dir, made = Path(run), 0.0
        reader = RunReader.open(run_dir)
        first, last = reader.first_tick(), reader.last_tick()
        if first is None or last is None:
            return {"seek_error": f"{run_dir}: no committed ticks"}
        rng = random.Random(7)
        targets = [rng.randint(first, last) for _ in range(n)]
        cold = []
        for tick in targets:
            t = time.perf_counter()
            reader.frame_at(tick)
            cold.append(1000 * (time.perf_counter() - t))
        t = time.perf_counter()
        reader.index()
        index_s = time.perf_counter() - t
        warm = []
        for tick in targets:
            t = time.perf_counter()
            reader.frame_at(tick)
            warm.append(1000 * (time.perf_counter() - t))
        reader.close()
    return {
        "seek_run": run or f"generated day ({last - first + 1} ticks, {len(names)} residents, made in {made:.1f} s)",
        "seek_ms_p50": round(statistics.median(cold), 1),
        "seek_ms_max": round(max(cold), 1),
        "seek_indexed_ms_p50": round(statistics.median(warm), 1),
        "seek_indexed_ms_max": round(max(warm), 1),
        "index_build_s": round(index_s, 2),
    }
