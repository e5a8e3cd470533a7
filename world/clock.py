"""Game time. A tick is one step of the engine; it normally lasts ``seconds_per_tick`` of game
time (10 s by default, as in the paper), except a night fast-forward tick, which jumps."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

DEFAULT_SECONDS_PER_TICK = 10
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|hr|d|day|days)?\s*$", re.I)


class Clock:
    """Holds the time of the last committed tick and the time the next one will have."""

    def __init__(self, start: datetime, seconds_per_tick: float = DEFAULT_SECONDS_PER_TICK) -> None:
        if seconds_per_tick <= 0:
            raise ValueError(f"seconds per tick must be positive, got {seconds_per_tick}")
        self.start = start
        self.seconds_per_tick = float(seconds_per_tick)
        self.step = timedelta(seconds=self.seconds_per_tick)
        self.time: datetime | None = None  # time of the last committed tick; None before tick 0

    @property
    def next_time(self) -> datetime:
        return self.start if self.time is None else self.time + self.step

    def now(self) -> datetime:
        return self.time if self.time is not None else self.start

    def snapshot(self) -> dict:
        return {"start": self.start.isoformat(), "seconds_per_tick": self.seconds_per_tick,
                "time": self.time.isoformat() if self.time else None}

    def restore(self, state: dict) -> None:
        self.start = datetime.fromisoformat(state["start"])
        self.seconds_per_tick = float(state["seconds_per_tick"])
        self.step = timedelta(seconds=self.seconds_per_tick)
        self.time = datetime.fromisoformat(state["time"]) if state.get("time") else None


def parse_duration(text: str) -> timedelta:
    """'30m', '6h', '1d', '90s', '1.5h' -> timedelta. A bare number means minutes."""
    m = _DURATION.match(str(text))
    if not m:
        raise ValueError(f"expected a duration like 30m, 6h or 1d, got {text!r}")
    value = float(m.group(1))
    unit = (m.group(2) or "m").lower()[0]
    seconds = value * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
    if seconds <= 0:
        raise ValueError(f"expected a positive duration, got {text!r}")
    return timedelta(seconds=seconds)


def parse_start(text: str) -> datetime:
    """'YYYY-MM-DD HH:MM' (or ISO) -> datetime."""
    for fmt in ("%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"):
        try:
            return datetime.strptime(str(text).strip(), fmt)
        except ValueError:
            continue
    raise ValueError(f"expected a date and time like '2026-02-13 07:00', got {text!r}")
