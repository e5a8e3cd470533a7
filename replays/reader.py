"""Reading a run folder as frames: exact seeking, time lookups, and following a live run.

:class:`RunReader` sits on a :class:`memory.runfile.RunStore` (or anything with the same
read methods) and answers "what does the town look like at tick T" by taking the nearest
starting point at or before T and applying the records after it with
:func:`replays.frames.apply`. Starting points are the reader's own keyframes (complete
frames, built by one pass over the run, in the background while viewing) or the engine's
stored state snapshots; from a snapshot, what the viewer accumulates from the stream
(plans, recent memories, people talked to, bubbles, encounters) is rebuilt from those few
record kinds alone. Either way the frame equals playing the run from its start.

A reader never writes, so it can read a folder whose run is still going.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from replays.frames import (
    BUBBLE_TICKS,
    INJECT_TICKS,
    RECENT_MEMORIES,
    RECENT_NOTES,
    FrameState,
    ResidentFrame,
    apply_in_place,
    frame_from_snapshot,
)
from maps.contracts import MemoryPayload, PlanPayload, Record, TickRecords
from memory.runfile import RunStore

KEYFRAME_EVERY = 60  # ticks between the reader's own keyframes (10 game minutes at 10 s/tick)
LOOKBACK = max(BUBBLE_TICKS, INJECT_TICKS) + 1  # ticks whose bubbles/toasts may still show


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


# ---------------------------------------------------------------------------
# Bringing the stream-accumulated fields of a frame forward (RunReader._history)
# ---------------------------------------------------------------------------


def _play_kinds(store: Any, target: FrameState, kinds: tuple[str, ...], after: int, hi: int,
                end_tick: TickRecords) -> None:
    """Apply only records of ``kinds`` in (after, hi] to ``target``, tick by tick, then expire at ``end_tick``."""
    pending: list[Record] = []
    current: int | None = None
    for t, kind, resident, data in store.records_between(kinds, after, hi):
        if current is not None and t != current:
            apply_in_place(target, TickRecords.model_construct(tick=current, time=target.time, records=pending))
            pending = []
        current = t
        pending.append(Record.model_construct(kind=kind, resident=resident, data=json.loads(data)))
    if pending and current is not None:
        apply_in_place(target, TickRecords.model_construct(tick=current, time=target.time, records=pending))
    apply_in_place(target, end_tick)


class _Changes:
    """Field changes per resident, applied together at the end so every step reads the start values.

    A resident first met in the range is added to the frame (empty) when first changed."""

    def __init__(self, frame: FrameState) -> None:
        self.frame = frame
        self.by_name: dict[str, dict[str, Any]] = {}

    def of(self, name: str) -> dict[str, Any]:
        """The pending changes of ``name`` (to fill in)."""
        if name not in self.frame.residents:
            self.frame.residents[name] = ResidentFrame(name=name)
        return self.by_name.setdefault(name, {})

    def apply(self) -> None:
        """Write every pending change into the frame."""
        for name, c in self.by_name.items():
            self.frame.residents[name] = dataclasses.replace(self.frame.residents[name], **c)


def _bubbles(changes: _Changes, recent: FrameState) -> None:
    """Speech bubbles as the last few ticks left them."""
    for name, res in recent.residents.items():
        if res.bubble != changes.frame.residents.get(name, ResidentFrame(name=name)).bubble:
            changes.of(name)["bubble"] = res.bubble


def _talks(changes: _Changes, pair_counts: Iterable[tuple[str, str, int]]) -> None:
    """Lines exchanged, added to the start's counts both ways, as apply() counts them."""
    frame = changes.frame
    talks: dict[str, dict[str, int]] = {}
    for speaker, listener, n in pair_counts:
        if speaker and listener and speaker != listener:
            talks.setdefault(speaker, {})[listener] = talks.get(speaker, {}).get(listener, 0) + n
            talks.setdefault(listener, {})[speaker] = talks.get(listener, {}).get(speaker, 0) + n
    for name, add in talks.items():
        counts = frame.residents[name].talk_counts() if name in frame.residents else {}
        for other, n in add.items():
            counts[other] = counts.get(other, 0) + n
        changes.of(name)["talks"] = tuple(sorted(counts.items()))


def _plans(changes: _Changes, newest_first: Iterable[tuple[int, str, str | None, str]]) -> None:
    """The newest plan (any level) and the newest day plan per resident; unreadable plans are skipped."""
    got_plan: set[str] = set()
    got_day: set[str] = set()
    for _t, _kind, resident, data in newest_first:
        if not resident or (resident in got_plan and resident in got_day):
            continue
        try:
            p = PlanPayload.model_validate(json.loads(data))
        except ValueError:
            continue
        c = changes.of(resident)
        if resident not in got_plan:
            got_plan.add(resident)
            c["plan"], c["plan_level"] = tuple(p.items), p.level
        if p.level == "day" and resident not in got_day:
            got_day.add(resident)
            c["day_plan"] = tuple(p.items)


def _memories(changes: _Changes, newest_first: Iterable[tuple[int, str, str | None, str]]) -> None:
    """The newest few memories per resident after the start's, read newest first until full."""
    newest: dict[str, list[str]] = {}
    for _t, _kind, resident, data in newest_first:
        if not resident or len(newest.get(resident, ())) >= RECENT_MEMORIES:
            continue
        try:
            p = MemoryPayload.model_validate(json.loads(data))
        except ValueError:
            continue
        newest.setdefault(resident, []).append(f"[{p.kind}] {p.text}")
    frame = changes.frame
    for name, mems in newest.items():
        old = frame.residents[name].memories if name in frame.residents else ()
        changes.of(name)["memories"] = (old + tuple(reversed(mems)))[-RECENT_MEMORIES:]


def _town_notes(rows_newest_first: Iterable[tuple[str, str]]) -> list[str]:
    """Town-level notes and accepted announcements, newest first, at most RECENT_NOTES."""
    found: list[str] = []
    for kind, data in rows_newest_first:
        d = json.loads(data)
        if kind == "note":
            text = str(d.get("text", "")) if isinstance(d, dict) else str(d)
        else:
            cmd = d.get("command") or {}
            if not (d.get("accepted") and (cmd.get("kind") or cmd.get("type")) == "announce"):
                continue
            text = f"announcement: {cmd.get('text', '')}"
        if text:
            found.append(text)
            if len(found) >= RECENT_NOTES:
                break
    return found


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
        snap = _snapshot_parts(self.store.snapshot_at_or_before(tick))
        # Our keyframe is complete; a stored snapshot is only worth it when much closer.
        if key is not None and (snap is None or snap[0] - key[0] <= 2 * KEYFRAME_EVERY):
            return key
        if snap is not None:
            return snap[0], self._frame_from_snapshot(snap[0], snap[1], key)
        return -1, self._initial

    def _frame_from_snapshot(self, tick: int, state: dict[str, Any],
                             key: tuple[int, FrameState] | None) -> FrameState:
        """The exact frame at a stored snapshot's tick.

        The snapshot gives what the engine owns (positions, actions, emojis, object states);
        what the viewer accumulates from the stream (plans, recent memories, people talked
        to, speech bubbles, encounters, toasts, town notes) is rebuilt from the records of
        those kinds only, which are few next to moves, so this stays fast late in a day.
        """
        base = frame_from_snapshot(state, tick=tick)
        for name, res in self._initial.residents.items():
            base.residents.setdefault(name, res)
        for addr, st in self._initial.objects.items():
            base.objects.setdefault(addr, st)
        start_tick, start = key if key is not None else (-1, self._initial)
        hist = self._history(start_tick, start, tick)
        for name, res in base.residents.items():
            h = hist.residents.get(name)
            if h is not None:
                base.residents[name] = dataclasses.replace(
                    res, bubble=h.bubble, plan_level=h.plan_level, plan=h.plan, day_plan=h.day_plan,
                    memories=h.memories, talks=h.talks)
        base.toasts, base.encounters, base.notes = hist.toasts, hist.encounters, hist.notes
        when = self.time_of(tick)
        if when is not None:
            base.time = when
        return base

    def _history(self, start_tick: int, start: FrameState, tick: int) -> FrameState:
        """``start`` with the stream-accumulated fields brought from ``start_tick`` to ``tick``.

        Equal to applying every record of (start_tick, tick] for those fields, computed
        without touching moves: the newest plan and memories per resident are read newest
        first, lines exchanged are counted in SQL, and bubbles and toasts only need the last
        few ticks. Encounters are played in full (they are few).
        """
        if not hasattr(self.store, "records_between"):  # a store without ranged queries: play every record (exact, slower)
            frame = start.copy()
            for tr in self.ticks(start_tick + 1, tick):
                apply_in_place(frame, tr)
            return frame
        store: Any = self.store
        lo, hi = start_tick, tick
        frame = start.copy()
        end_tick = TickRecords.model_construct(tick=tick, time=frame.time, records=[])
        # Encounters: every step in the range, in order, with their expiry.
        enc = start.copy()
        _play_kinds(store, enc, ("encounter",), lo, hi, end_tick)
        frame.encounters = enc.encounters
        # Bubbles and toasts: only the last few ticks can still show.
        recent = start.copy()
        _play_kinds(store, recent, ("chat", "inject"), max(lo, tick - LOOKBACK), hi, end_tick)
        frame.toasts = recent.toasts
        changes = _Changes(frame)
        _bubbles(changes, recent)
        _talks(changes, store.chat_pair_counts(lo, hi))
        _plans(changes, store.records_between(("plan",), lo, hi, newest_first=True))
        _memories(changes, store.records_between(("memory",), lo, hi, newest_first=True))
        changes.apply()
        found = _town_notes(store.town_note_rows(lo, hi))
        frame.notes = (frame.notes + tuple(reversed(found)))[-RECENT_NOTES:]
        frame.tick = tick
        return frame

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
