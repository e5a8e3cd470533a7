"""Reading the times people type (``--at 14:00``) as a moment of a recorded run."""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta

_OFFSET = re.compile(r"^\+(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
_TICK = re.compile(r"^(?:tick[:=]?|#)(\d+)$", re.I)
_DAY = re.compile(r"^d(?:ay)?\s*(\d+)\s+(\d{1,2}:\d{2}(?::\d{2})?)$", re.I)


class TimeError(ValueError):
    """A time the user typed cannot be read; the message says what forms are accepted."""


FORMS = ("'14:00' or '14:00:30' (on the run's first day, or the next day if that is "
         "before the start), 'day 2 14:00', '2024-02-13 14:00', '+2h30m' (after the start), or 'tick:123'")


def parse_at(text: str, start: datetime) -> datetime | int:
    """A datetime for clock or date forms, an int for 'tick:N'. ``start`` is the run's start.

    The one reader of --at/--from/--to for every command (run --fork, replay, interview)."""
    s = str(text).strip()
    m = _TICK.match(s)
    if m:
        return int(m.group(1))
    try:
        m = _OFFSET.match(s)
        if m and any(m.groups()):
            d, h, mi, se = (int(g) if g else 0 for g in m.groups())
            return start + timedelta(days=d, hours=h, minutes=mi, seconds=se)
        m = _DAY.match(s)
        if m:
            day = int(m.group(1))
            if day < 1:
                raise TimeError(f"cannot read the time {text!r}: days count from 'day 1' (the run's first day)")
            return datetime.combine(start.date(), _clock(m.group(2), text), tzinfo=start.tzinfo) + timedelta(days=day - 1)
    except OverflowError:
        raise TimeError(f"the time {text!r} is too far from the run's start ({start:%Y-%m-%d %H:%M})") from None
    if re.fullmatch(r"\d{1,2}:\d{2}(?::\d{2})?", s):
        when = datetime.combine(start.date(), _clock(s, text), tzinfo=start.tzinfo)
        if when < start:
            when += timedelta(days=1)  # "07:00" in a run that starts at 08:00: next morning
        return when
    try:
        when = datetime.fromisoformat(s)
    except ValueError:
        raise TimeError(f"cannot read the time {text!r}: expected {FORMS}") from None
    if when.tzinfo is not None and start.tzinfo is None:
        raise TimeError(f"the time {text!r} has a time zone; runs keep local game time: write it without one")
    if when.tzinfo is None and start.tzinfo is not None:
        when = when.replace(tzinfo=start.tzinfo)
    return when


def _clock(s: str, text: str) -> time:
    for fmt in ("%H:%M", "%H:%M:%S"):
        try:
            return datetime.strptime(s, fmt).time()
        except ValueError:
            continue
    raise TimeError(f"cannot read the time {text!r}: hours are 0-23, minutes and seconds 0-59")


def clock(t: time | datetime) -> str:
    return t.strftime("%H:%M")
