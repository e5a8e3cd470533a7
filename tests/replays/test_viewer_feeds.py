"""Feeds: replay playback by game time (skipping the night), live pacing and pausing."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

from replays.export import init_headless
from replays.feeds import LiveFeed, ReplayFeed
from replays.frames import FrameState
from replays.mapview import grid_map
from replays.reader import RunReader
from maps.contracts import Record, TickRecords
from memory.runfile import RunStore
from replays.viewer import Viewer

T0 = datetime(2024, 2, 13, 22, 0)


def _tick(k: int, when: datetime) -> TickRecords:
    return TickRecords(tick=k, time=when, records=[Record(kind="move", resident="Ada", data={"tile": [k % 5 + 4, 5]})])


def test_replay_plays_by_game_time_and_skips_the_night(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, {"resident_names": ["Ada"]})
    times = [T0 + timedelta(seconds=10 * k) for k in range(10)]
    times.append(datetime(2024, 2, 14, 7, 0))  # night fast-forward: one tick jumps 9 hours
    times += [times[-1] + timedelta(seconds=10 * k) for k in range(1, 5)]
    for k, when in enumerate(times):
        store.commit_tick(_tick(k, when))
    init_headless()
    reader = RunReader.open(tmp_path)
    v = Viewer(grid_map(1, 1), ReplayFeed(reader, tmp_path), size=(800, 600), speed=10.0)
    v.seek(0)
    v.update(2.0)  # 20 game seconds at speed 10: two more ticks
    assert v.frame.tick == 2
    v.change_speed(+1)
    assert v.speed > 10.0
    v.speed = 10.0
    v.update(8.0)  # to 22:01:40: tick 9 is due; the next is 9 hours away
    assert v.frame.tick == 9
    v.update(0.1)  # the night is not waited out
    assert v.frame.tick == 10 and v.frame.time.hour == 7
    v.paused = True
    v.update(100.0)
    assert v.frame.tick == 10
    v.step(+1)
    assert v.frame.tick == 11
    v.step(-1)
    assert v.frame.tick == 10
    reader.close()
    store.close()


def test_live_feed_paces_and_pauses_the_engine_thread() -> None:
    feed = LiveFeed(pace=1000.0, throttle=True)
    done: list[int] = []

    def engine() -> None:
        for k in range(6):
            feed.listener(_tick(k, T0 + timedelta(seconds=10 * k)))
            done.append(k)

    feed.set_paused(True)
    th = threading.Thread(target=engine, daemon=True)
    th.start()
    time.sleep(0.3)
    assert done == []  # held after the first tick while paused
    assert [t.tick for t in feed.drain()] == [0]
    feed.set_paused(False)
    th.join(2.0)
    assert done == list(range(6))
    # At 1000 game s per real s, five 10 s ticks take ~50 ms; at 20 they would take 2.5 s.
    feed2 = LiveFeed(pace=20.0, throttle=True)
    start = time.monotonic()
    for k in range(3):
        feed2.listener(_tick(k, T0 + timedelta(seconds=10 * k)))
    assert time.monotonic() - start >= 0.9
    feed2.stop()  # a stopping viewer never holds the engine
    feed2.set_paused(True)
    t = time.monotonic()
    feed2.listener(_tick(3, T0 + timedelta(seconds=30)))
    assert time.monotonic() - t < 0.5


def test_live_viewer_draws_what_arrives() -> None:
    init_headless()
    feed = LiveFeed(pace=60.0)
    v = Viewer(grid_map(1, 1), feed, size=(800, 600), frame=FrameState())
    feed.listener(_tick(0, T0))
    feed.listener(_tick(1, T0 + timedelta(seconds=10)))
    v.update(0.0)
    assert v.frame.tick == 1 and v.frame.residents["Ada"].tile == (5, 5)
