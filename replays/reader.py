"""Reading a run folder as frames: exact seeking, time lookups, and following a live run.

:class:`RunReader` sits on a :class:`replays.store.RunStore` (or anything with the same
read methods) and answers "what does the town look like at tick T" by taking the nearest
starting point at or before T and applying the records after it with
:func:`replays.frames.apply`. Starting points are the reader's own keyframes (complete
frames, built by one pass over the run) or, before that pass has reached T, the engine's
stored state snapshots. Either way the map (positions, actions, object states, bubbles)
is exact; the keyframes also make the side panel's history (plans, memories, people talked
to) exact, which a snapshot alone cannot since it does not hold that history.

A reader never writes, so it can read a folder whose run is still going.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from replays.frames import (
    BUBBLE_TICKS,
    INJECT_TICKS,
    FrameState,
    apply_in_place,
    frame_from_snapshot,
)
from replays.records import TickRecords

KEYFRAME_EVERY = 60  # ticks between the reader's own keyframes (10 game minutes at 10 s/tick)
LOOKBACK = max(BUBBLE_TICKS, INJECT_TICKS)


class TickStore(Protocol):
    """The read side of the run store that the reader needs."""

    def meta(self) -> dict[str, Any]: ...

    def last_tick(self) -> int | None: ...

    def iter_ticks(self, start: int = 0, end: int | None = None) -> Iterator[TickRecords]: ...

    def snapshot_at_or_before(self, tick: int) -> Any: ...


class ReaderError(RuntimeError):
    """A run folder cannot be read; the message names the folder and the reason."""


def open_store(run_dir: str | Path) -> TickStore:
    """Open a run folder's store read-only, turning its errors into :class:`ReaderError`."""
    path = Path(run_dir)
    if not path.exists():
        raise ReaderError(f"no run folder at {path}")
    try:
        from replays.store import RunStore
    except ImportError as exc:  # pragma: no cover - the store ships with the package
        raise ReaderError(f"the run store is not available: {exc}") from exc
    try:
        return RunStore.open(path)
    except ReaderError:
        raise
    except Exception as exc:
        raise ReaderError(f"cannot read run folder {path}: {exc}") from exc


def _snapshot_parts(snap: Any) -> tuple[int, dict[str, Any]] | None:
    """Accept (tick, state), {"tick":..., "state":...}, an object with .tick/.state, or None."""
    if snap is None:
        return None
    if isinstance(snap, tuple) and len(snap) == 2:
        return int(snap[0]), dict(snap[1])
    if isinstance(snap, dict):
        if "state" in snap and "tick" in snap:
            return int(snap["tick"]), dict(snap["state"])
        if "tick" in snap:
            return int(snap["tick"]), snap
    tick = getattr(snap, "tick", None)
    state = getattr(snap, "state", None)
    if tick is not None and state is not None:
        return int(tick), dict(state)
    raise ReaderError(f"unexpected snapshot shape from the run store: {type(snap).__name__}")


class RunReader:
    """Frames at any tick of a run, fast; safe to use while the run is still writing.

    Not thread-safe itself: use one reader per thread (``RunReader.open`` is cheap). The
    optional background indexer opens its own store via ``opener``.
    """

    def __init__(self, store: TickStore, *, opener: Callable[[], TickStore] | None = None,
                 initial: FrameState | None = None) -> None:
        self.store = store
        self._opener = opener
        self._initial = initial or FrameState()
        self._lock = threading.Lock()
        self._key_ticks: list[int] = []
        self._key_frames: list[FrameState] = []
        self._ticks: list[int] = []  # every committed tick seen by the indexer, ascending
        self._times: list[datetime] = []
        self._indexed_to: int | None = None  # last tick folded into the keyframe index
        self._index_frame: FrameState | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @classmethod
    def open(cls, run_dir: str | Path, initial: FrameState | None = None) -> "RunReader":
        return cls(open_store(run_dir), opener=lambda: open_store(run_dir), initial=initial)

    # -- bounds and time -----------------------------------------------------

    def meta(self) -> dict[str, Any]:
        return dict(self.store.meta() or {})

    def last_tick(self) -> int | None:
        return self.store.last_tick()

    def first_tick(self) -> int | None:
        first = getattr(self.store, "first_tick", None)
        if callable(first):
            return first()
        with self._lock:
            if self._ticks:
                return self._ticks[0]
        for tr in self.store.iter_ticks(0, None):
            return tr.tick
        return None

    def ticks(self, start: int, end: int | None = None) -> Iterator[TickRecords]:
        """Committed ticks with ``start <= tick <= end`` in order."""
        for tr in self.store.iter_ticks(start, end):
            if tr.tick < start:
                continue
            if end is not None and tr.tick > end:
                break
            yield tr

    def tick_at_time(self, when: datetime) -> int:
        """The last committed tick at or before ``when`` (the first tick if ``when`` is earlier)."""
        lookup = getattr(self.store, "tick_at_time", None)
        if callable(lookup):
            tick = lookup(when)
            if tick is None:
                tick = self.first_tick()
            if tick is None:
                raise ReaderError("the run has no committed ticks yet")
            return int(tick)
        self.index()
        with self._lock:
            if not self._ticks:
                raise ReaderError("the run has no committed ticks yet")
            i = bisect.bisect_right(self._times, when) - 1
            return self._ticks[max(0, i)]

    def time_of(self, tick: int) -> datetime | None:
        with self._lock:
            i = bisect.bisect_left(self._ticks, tick)
            if i < len(self._ticks) and self._ticks[i] == tick:
                return self._times[i]
        lookup = getattr(self.store, "tick_time", None)
        if callable(lookup):
            return lookup(tick)
        for tr in self.ticks(tick, tick):
            return tr.time
        return None

    # -- frames --------------------------------------------------------------

    def frame_at(self, tick: int) -> FrameState:
        """The frame after ``tick`` was applied (exact: equals playing the run from its start)."""
        start_tick, frame = self._start_point(tick)
        if start_tick >= tick:
            return frame.copy()
        new = frame.copy()
        for tr in self.ticks(start_tick + 1, tick):
            apply_in_place(new, tr)
        return new

    def _start_point(self, tick: int) -> tuple[int, FrameState]:
        with self._lock:
            i = bisect.bisect_right(self._key_ticks, tick) - 1
            key = (self._key_ticks[i], self._key_frames[i]) if i >= 0 else None
            indexed_to = self._indexed_to
        snap = _snapshot_parts(self.store.snapshot_at_or_before(tick))
        # Prefer our keyframe (complete panel history) unless the snapshot is much closer.
        if key is not None and (snap is None or indexed_to is not None and indexed_to >= tick
                                or snap[0] - key[0] <= 4 * KEYFRAME_EVERY):
            return key
        if snap is not None:
            return snap[0], self._frame_from_snapshot(*snap)
        if key is not None:
            return key
        return -1, self._initial

    def _frame_from_snapshot(self, tick: int, state: dict[str, Any]) -> FrameState:
        """A snapshot, plus the few ticks before it that still show (bubbles, toasts)."""
        base = frame_from_snapshot(state, tick=tick)
        # Personas and defaults the snapshot may not carry come from the initial frame.
        for name, res in self._initial.residents.items():
            base.residents.setdefault(name, res)
        for addr, st in self._initial.objects.items():
            base.objects.setdefault(addr, st)
        recent = list(self.ticks(max(0, tick - LOOKBACK), tick))
        if recent:
            # Re-apply the last few ticks for their transient effects only; positions and
            # states are already those of the snapshot, and re-applying sets them the same.
            replay = base.copy()
            for tr in recent:
                apply_in_place(replay, tr)
            for name, res in replay.residents.items():
                if name in base.residents:
                    base.residents[name] = _with_transients(base.residents[name], res)
            base.toasts = replay.toasts
            base.encounters = replay.encounters
            base.notes = replay.notes
        base.tick = tick
        if recent and recent[-1].tick == tick:
            base.time = recent[-1].time
        return base

    # -- the keyframe index ------------------------------------------------------

    def index(self, until: int | None = None) -> int | None:
        """Fold the run into keyframes up to ``until`` (default: the last committed tick).

        Returns the last indexed tick. Cheap to call again: it continues where it stopped.
        """
        last = self.store.last_tick() if until is None else until
        if last is None:
            return self._indexed_to
        with self._lock:
            start = -1 if self._indexed_to is None else self._indexed_to
            frame = self._index_frame.copy() if self._index_frame is not None else self._initial.copy()
        if start >= last:
            return start
        self._index_range(self.store, frame, start, last)
        return self._indexed_to

    def _index_range(self, store: TickStore, frame: FrameState, start: int, last: int) -> None:
        ticks: list[int] = []
        times: list[datetime] = []
        keys: list[tuple[int, FrameState]] = []
        prev_key = self._key_ticks[-1] if self._key_ticks else None
        indexed = start
        for tr in store.iter_ticks(start + 1, last):
            if tr.tick <= start:
                continue
            if tr.tick > last or self._stop.is_set():
                break
            apply_in_place(frame, tr)
            ticks.append(tr.tick)
            times.append(tr.time)
            indexed = tr.tick
            if prev_key is None or tr.tick - prev_key >= KEYFRAME_EVERY:
                keys.append((tr.tick, frame.copy()))
                prev_key = tr.tick
            if len(ticks) >= 2000:
                self._publish(ticks, times, keys, indexed, frame)
                ticks, times, keys = [], [], []
        self._publish(ticks, times, keys, indexed, frame)

    def _publish(self, ticks, times, keys, indexed, frame) -> None:
        with self._lock:
            self._ticks.extend(ticks)
            self._times.extend(times)
            for t, f in keys:
                self._key_ticks.append(t)
                self._key_frames.append(f)
            self._indexed_to = indexed
            self._index_frame = frame.copy()

    def indexed_to(self) -> int | None:
        with self._lock:
            return self._indexed_to

    def start_indexing(self, follow: bool = False, poll_s: float = 0.5) -> None:
        """Build the index on a background thread (own store connection); with ``follow``
        keep extending it as a live run commits more ticks."""
        if self._thread is not None or self._opener is None:
            return
        self._stop.clear()

        def work() -> None:
            store = self._opener()
            while not self._stop.is_set():
                last = store.last_tick()
                with self._lock:
                    start = -1 if self._indexed_to is None else self._indexed_to
                    frame = self._index_frame.copy() if self._index_frame is not None else self._initial.copy()
                if last is not None and last > start:
                    self._index_range(store, frame, start, last)
                elif not follow:
                    break
                else:
                    self._stop.wait(poll_s)
            close = getattr(store, "close", None)
            if callable(close):
                close()

        self._thread = threading.Thread(target=work, name="townsfolk-indexer", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
        close = getattr(self.store, "close", None)
        if callable(close):
            close()


def _with_transients(base, replayed):
    """Take the bubble from the replayed resident and everything else from the snapshot."""
    import dataclasses

    return dataclasses.replace(base, bubble=replayed.bubble)
