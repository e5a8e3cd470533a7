"""Plan times: read the hour a plan item starts at, put it on the resident's waking day, check it.

A resident's day runs from the wake hour to the sleep hour, which may fall after midnight
(wake 9, sleep 0). Hours are compared by their *offset* from the wake hour, so 23:00 comes
before 00:30 for such a resident. A model may write a 12-hour clock ('1:00 prepare for the
party' meaning 13:00): an hour without am/pm that lies outside the waking day, or before the
previous item, is read as the afternoon/evening hour when that one fits. Every function
here is pure, so each rule is tested on its own.
"""

from __future__ import annotations

import re

_TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?(?![\d])", re.IGNORECASE)
_LEADING_TIME = re.compile(r"^\s*\d{1,2}(:\d{2})?\s*(am|pm|a\.m\.|p\.m\.)?\s*[-:–]?\s*", re.IGNORECASE)


def waking_span(wake: int, sleep: int) -> int:
    """Hours from waking to bed (a sleep hour equal to the wake hour means a 16-hour day)."""
    return (sleep - wake) % 24 or 16


def offset(hour: int, wake: int) -> int:
    """Hours since waking at which ``hour`` (0-23) falls."""
    return (hour - wake) % 24


def hour_at(wake: int, hours_after_waking: int) -> int:
    """The clock hour (0-23) ``hours_after_waking`` after the wake hour."""
    return (wake + hours_after_waking) % 24


def read_time(item: str) -> tuple[int, bool] | None:
    """(hour as written, whether am/pm was given) of the first time in ``item``, or None.

    Only a time at the start of the item counts, so '7:30 breakfast' has a time and
    'read 2 chapters' does not. Hours outside 0-23 (or 13+ with am/pm) are not times.
    """
    match = _TIME.match(item.strip())
    if not match:
        return None
    hour = int(match.group(1))
    minutes = match.group(2)
    if minutes is not None and int(minutes) > 59:
        return None
    suffix = (match.group(3) or "").lower().replace(".", "")
    if suffix:
        if not 1 <= hour <= 12:
            return None
        if suffix == "pm" and hour < 12:
            hour += 12
        elif suffix == "am" and hour == 12:
            hour = 0
        return hour, True
    if hour > 24:
        return None
    return hour % 24, False


def place_hour(hour: int, explicit: bool, wake: int, sleep: int, after: int = -1) -> int | None:
    """The clock hour a written hour means on this resident's waking day, or None if none fits.

    Candidates are the hour itself and, for an hour 1-11 written without am/pm, the same
    hour + 12. A candidate fits when its offset from waking is within the day (bedtime
    included) and not before ``after`` (the previous item's offset). The earliest fitting
    candidate wins; failing that, any candidate within the day.
    """
    span = waking_span(wake, sleep)
    candidates = [hour]
    if not explicit and 1 <= hour <= 11:
        candidates.append(hour + 12)
    within = [h for h in candidates if offset(h, wake) <= span]
    ordered = [h for h in within if offset(h, wake) >= after]
    pool = ordered or within
    if not pool:
        return None
    return min(pool, key=lambda h: offset(h, wake))


def strip_time(item: str) -> str:
    """The item's text without its leading time ('7:30 - breakfast' -> 'breakfast')."""
    return _LEADING_TIME.sub("", item).strip()


def normalise_plan(items: list[str], wake: int, sleep: int) -> list[tuple[int, str]]:
    """(clock hour, activity) of each timed item that fits the waking day, in day order.

    Items with no readable time, or a time outside the waking day, are dropped; the rest
    are sorted by their offset from waking (stable, so equal hours keep the model's order).
    """
    out: list[tuple[int, int, str]] = []
    after = -1
    for index, item in enumerate(items):
        read = read_time(item)
        activity = strip_time(item)
        if read is None or not activity:
            continue
        hour = place_hour(read[0], read[1], wake, sleep, after)
        if hour is None:
            continue
        after = max(after, offset(hour, wake))
        out.append((offset(hour, wake), index, activity))
    out.sort()
    return [(hour_at(wake, off), activity) for off, _i, activity in out]


def format_plan(entries: list[tuple[int, str]]) -> list[str]:
    """'HH:00 activity' lines, 24-hour clock."""
    return [f"{hour}:00 {activity}" for hour, activity in entries]


def plan_problems(items: list[str], wake: int, sleep: int) -> list[str]:
    """What is wrong with a plan's times, in words (empty when every item is fine)."""
    problems: list[str] = []
    span = waking_span(wake, sleep)
    last = -1
    for item in items:
        read = read_time(item)
        if read is None:
            problems.append(f"no time at the start of {item!r}")
            continue
        hour = place_hour(read[0], read[1], wake, sleep, last)
        if hour is None:
            problems.append(f"{item!r} is outside the waking hours {wake}:00-{sleep}:00")
            continue
        off = offset(hour, wake)
        if off < last:
            problems.append(f"{item!r} is earlier than the item before it")
        elif off > span:
            problems.append(f"{item!r} is after bedtime")
        last = max(last, off)
    return problems
