"""Where the viewer's ticks come from: a recorded run folder, or a live engine.

Both feeds hand the viewer :class:`~maps.contracts.TickRecords`, which it folds into its
frame with :func:`replays.frames.apply`; that is the one drawing path for live and replay.
A replay feed can also seek; a live feed can change the engine's pace, pause it, and take
injected commands.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from replays.frames import FrameState
from replays.reader import RunReader
from maps.contracts import TickRecords

GAP_SKIP_S = 300.0  # a jump in game time longer than this (night fast-forward) is not waited out


class ReplayFeed:
    """Plays a run folder at ``speed`` game seconds per real second; can seek anywhere."""

    live = False

    def __init__(self, reader: RunReader, run_dir: str | Path | None = None) -> None:
        self.reader = reader
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self._buffer: deque[TickRecords] = deque()
        self._buffer_from = -1  # ticks after this one are (being) buffered
        self._last_known: int | None = reader.last_tick()
        self._first: int | None = reader.first_tick()

    # -- bounds --------------------------------------------------------------

    def bounds(self) -> tuple[int, int] | None:
        if self._first is None:
            self._first = self.reader.first_tick()
        if self._first is None or self._last_known is None:
            self._last_known = self.reader.last_tick()
        if self._first is None or self._last_known is None:
            return None
        return self._first, self._last_known

    def refresh(self) -> None:
        """Look again for ticks a still-running run has committed since."""
        self._last_known = self.reader.last_tick()
        if self._first is None:
            self._first = self.reader.first_tick()

    # -- playing -------------------------------------------------------------

    def seek(self, tick: int) -> FrameState:
        self._buffer.clear()
        frame = self.reader.frame_at(tick)
        self._buffer_from = frame.tick
        return frame

    def next_tick(self, after: int) -> TickRecords | None:
        """The first committed tick after ``after`` (buffered reads, in chunks)."""
        if after != self._buffer_from:
            self._buffer.clear()
            self._buffer_from = after
        if not self._buffer:
            end = after + 400
            self._buffer.extend(self.reader.ticks(after + 1, end))
            if not self._buffer:
                return None
        return self._buffer[0]

    def take(self) -> TickRecords:
        tr = self._buffer.popleft()
        self._buffer_from = tr.tick
        return tr

    def advance(self, frame_tick: int, play_time: datetime, max_ticks: int = 2000) -> tuple[list[TickRecords], datetime]:
        """Ticks due by ``play_time`` after ``frame_tick``; skips long gaps (night fast-forward)."""
        out: list[TickRecords] = []
        after = frame_tick
        while len(out) < max_ticks:
            nxt = self.next_tick(after)
            if nxt is None:
                break
            if nxt.time > play_time:
                if not out and (nxt.time - play_time).total_seconds() > GAP_SKIP_S:
                    play_time = nxt.time  # jump over the night instead of waiting it out
                else:
                    break
            out.append(self.take())
            after = nxt.tick
        return out, play_time


MAX_PACED_GAP_S = 60.0  # a longer jump in game time (night fast-forward) is not waited out


class LiveFeed:
    """Ticks from a running engine, via its listener; the engine runs on another thread.

    With ``throttle`` the listener itself keeps the engine to ``pace`` game seconds per
    real second and holds it while paused: the engine calls listeners on its own thread
    right after committing a tick, so blocking there pauses the town between ticks without
    reaching into the engine. Pace and pause can then change at any moment from the viewer.
    """

    live = True

    def __init__(self, *, submit: Callable[[dict[str, Any]], Any] | None = None,
                 pace: float | None = None, run_dir: str | Path | None = None,
                 throttle: bool = False) -> None:
        self._queue: queue.Queue[TickRecords] = queue.Queue()
        self._submit = submit
        self.pace = pace
        self.paused = False
        self.throttle = throttle
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.finished = threading.Event()
        self.stopping = threading.Event()
        self.error: str | None = None
        self._wake = threading.Event()
        self._last_time: datetime | None = None
        self._last_wall: float | None = None

    def listener(self, tick: TickRecords) -> None:
        """Give this to ``Engine.add_listener``; called on the engine's thread."""
        self._queue.put(tick)
        if not self.throttle:
            return
        if self._last_time is not None and self._last_wall is not None:
            gap = min(MAX_PACED_GAP_S, max(0.0, (tick.time - self._last_time).total_seconds()))
            while not self.stopping.is_set():
                pace = self.pace
                if not pace:
                    break
                left = self._last_wall + gap / pace - time.monotonic()
                if left <= 0:
                    break
                self._wake.wait(min(left, 0.1))
                self._wake.clear()
        while self.paused and not self.stopping.is_set():
            self._wake.wait(0.1)
            self._wake.clear()
        self._last_time = tick.time
        self._last_wall = time.monotonic()

    def drain(self, max_ticks: int = 5000) -> list[TickRecords]:
        out: list[TickRecords] = []
        while len(out) < max_ticks:
            try:
                out.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return out

    def set_pace(self, pace: float | None) -> None:
        self.pace = pace
        self._wake.set()

    def set_paused(self, paused: bool) -> None:
        self.paused = paused
        self._wake.set()

    def stop(self) -> None:
        """Release an engine held by pause or pace (the viewer is closing)."""
        self.stopping.set()
        self._wake.set()

    def submit(self, command: dict[str, Any]) -> Any:
        if self._submit is None:
            raise RuntimeError("this live feed takes no commands")
        return self._submit(command)
