"""With the real engine: replaying a run folder draws exactly what the live viewer drew."""

from __future__ import annotations

import asyncio
import hashlib
import random
from pathlib import Path

import pygame
import pytest

from replays import control
from replays.export import init_headless
from replays.feeds import LiveFeed, ReplayFeed
from replays.frames import frame_from_snapshot
from replays.mapview import from_town
from replays.runview import open_run
from replays.viewer import Viewer

runner = pytest.importorskip("world.runner")

SIZE = (1280, 720)


def _digest(surface: pygame.Surface, viewer: Viewer) -> str:
    h = hashlib.sha1()
    for rect in (viewer.map_rect, viewer.panel_rect):
        h.update(pygame.image.tobytes(surface.subsurface(rect), "RGB"))
    return h.hexdigest()


def _engine(run_dir: Path, duration: str = "20m"):
    opts = runner.RunOptions(town="default", agents=4, mind="routine", duration=duration, out=run_dir, seed=1)
    return runner.build_engine(opts)


def test_replay_equals_live_with_the_engine(tmp_path: Path) -> None:
    init_headless()
    run_dir = tmp_path / "run"
    engine = _engine(run_dir)
    mapview = from_town(engine.town)
    for name, res in engine.residents.items():
        mapview.personas[name] = res.persona.model_dump()
    who = sorted(engine.residents)[0]
    feed = LiveFeed(submit=engine.submit, pace=None)
    live = Viewer(mapview, feed, size=SIZE, frame=frame_from_snapshot(engine.state()), run_dir=run_dir)
    live.select(who)
    surf = pygame.Surface(SIZE)
    drawn: dict[int, str] = {}

    def on_tick(tr) -> None:
        feed.listener(tr)
        live.update(0.0)
        live.draw(surf)
        drawn[live.frame.tick] = _digest(surf, live)

    engine.add_listener(on_tick)
    asyncio.run(engine.run(engine.context.until))
    engine.store.close()
    assert len(drawn) == 120

    run = open_run(run_dir)
    replay = Viewer(run.map, ReplayFeed(run.reader, run_dir), size=SIZE, run_dir=run_dir)
    replay.select(who)
    replay.paused = True
    for tick in range(120):
        replay.step(+1)
        assert replay.frame.tick == tick
        replay.draw(surf)
        assert _digest(surf, replay) == drawn[tick], f"tick {tick} differs"
    for tick in random.Random(2).sample(range(120), 10):  # seeking lands on the same pictures
        replay.seek(tick)
        replay.draw(surf)
        assert _digest(surf, replay) == drawn[tick], f"seek to {tick} differs"
    run.reader.close()


def test_watch_runs_the_town_and_closes_cleanly(tmp_path: Path) -> None:
    from world.cli.watch import watch

    run_dir = tmp_path / "watched"
    engine = _engine(run_dir, duration="10m")
    assert watch(engine, pace=1e6, size=(800, 600), close_after=1.0) == 0
    assert not control.socket_path(run_dir).exists()
    run = open_run(run_dir)
    assert run.reader.last_tick() == 59
    run.reader.close()
