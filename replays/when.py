"""Reading the times people type (``--at 14:00``) as a moment of a recorded run."""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta  # noqa: F401

_OFFSET = re.compile(r"^\+(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
_TICK = re.compile(r"^(?:tick[:=]?|#)(\d+)$", re.I)


class TimeError(ValueError):
    """A time the user typed cannot be read; the message says what forms are accepted."""


FORMS = ("'14:00' or '14:00:30' (on the run's first day, or the next day if that is "
         "before the start), '2024-02-13 14:00', '+2h30m' (after the start), or 'tick:123'")


def parse_at(text: str, start: datetime) -> datetime | int:
    """A datetime for clock or date forms, an int for 'tick:N'. ``start`` is the run's start."""
    s = text.strip()
    m = _TICK.match(s)
    if m:
        return int(m.group(1))
    m = _OFFSET.match(s)
    if m and any(m.groups()):
        d, h, mi, se = (int(g) if g else 0 for g in m.groups())
        return start + timedelta(days=d, hours=h, minutes=mi, seconds=se)
    for fmt in ("%H:%M", "%H:%M:%S"):
        try:
            t = datetime.strptime(s, fmt).time()
        except ValueError:
            continue
        when = datetime.combine(start.date(), t, tzinfo=start.tzinfo)
        if when < start:
            when += timedelta(days=1)  # "07:00" in a run that starts at 08:00: next morning
        return when
    try:
        when = datetime.fromisoformat(s)
    except ValueError:
        raise TimeError(f"cannot read the time {text!r}: expected {FORMS}") from None
    if when.tzinfo is None and start.tzinfo is not None:
        when = when.replace(tzinfo=start.tzinfo)
    return when


def clock(t: time | datetime) -> str:
    return t.strftime("%H:%M")
