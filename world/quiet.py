"""Dormant residents: who the engine leaves out of a tick, and what wakes them.

A mind that answered a 'continue' that changes nothing to a perception with nothing new may promise to answer
the same until a time (``quiet_until``). While it perceives nothing new, the engine neither
builds its Perception nor asks it (world/engine.py ``_perceive_all``). Checking that "nothing
new" for every resident every tick was itself a loop over the whole town; here a dormant
resident costs nothing until one of the things that could change its answer happens:

- its promise runs out (a timer);
- something changes in the buckets its vision square overlaps (the spatial index fires the
  window it watches: world/perception.py ``SpatialIndex._log``);
- something reaches it (a line heard, a whisper, an announcement, a memory, an errand:
  ``Body.stir``, called by every writer of a body's inbox);
- the tick applies commands, or gives it an intent, or the engine is restored.

A stirred resident is woken only when :meth:`Perceiver.unchanged` says its Perception would
differ, so the records are the same as asking everyone every tick (tests/world/test_scale.py).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from datetime import datetime

from world.body import Body
from world.perception import SpatialIndex


class Dormancy:
    """The residents the engine may leave out of a tick; indices are positions in name order."""

    def __init__(self, order: list[Body], index: SpatialIndex) -> None:
        self._order = order
        self._at = {r.name: i for i, r in enumerate(order)}
        self._index = index
        self._awake: set[int] = set(range(len(order)))
        self._dormant: set[int] = set()
        self._timers: list[tuple[datetime, int]] = []  # (quiet_until, index); stale entries skipped
        for r in order:
            r.bell = index.stirred  # an inbox write names the body there

    @property
    def count(self) -> int:
        """How many residents this tick leaves out."""
        return len(self._dormant)

    def awake(self) -> list[int]:
        """The residents to look at this tick, in name order (the order records are written in)."""
        return sorted(self._awake)

    def doze(self, i: int, r: Body) -> bool:
        """Leave ``r`` out until something wakes it; False when its view cannot be watched (it is
        then asked to check every tick, as before watching existed)."""
        if not r.asleep:
            window = r.attention.cache_key[3]  # type: ignore[index]
            if len(window) != 4:
                return False
            self._index.watchers.setdefault(window[0], []).append(r.name)
        self._awake.discard(i)
        self._dormant.add(i)
        heapq.heappush(self._timers, (r.quiet_until, i))  # type: ignore[arg-type]
        return True

    def _wake(self, i: int) -> None:
        self._dormant.discard(i)
        self._awake.add(i)
        self._order[i].quiet_until = None

    def wake_all(self) -> None:
        """Everyone is looked at again and forgets its promise (commands, a restore)."""
        for r in self._order:
            r.quiet_until = None
        self._awake = set(range(len(self._order)))
        self._dormant.clear()
        self._timers.clear()
        self._index.watchers.clear()
        self._index.stirred.clear()

    def wake_names(self, names: Iterable[str]) -> None:
        """These residents are given an intent this tick."""
        for name in names:
            i = self._at.get(name)
            if i is not None and i in self._dormant:
                self._wake(i)

    def wake_due(self, now: datetime, unchanged: Callable[[Body], bool]) -> None:
        """Wake those whose promise ran out by ``now``, then those stirred since the last tick
        whose Perception would now differ (a stirred one that would see nothing new watches again)."""
        timers = self._timers
        order = self._order
        while timers and timers[0][0] <= now:
            until, i = heapq.heappop(timers)
            if i in self._dormant and order[i].quiet_until == until:
                self._wake(i)
        stirred = self._index.stirred
        if not stirred:
            return
        names = sorted(stirred)
        stirred.clear()  # emptied in place: it is every body's bell
        for name in names:
            i = self._at.get(name)
            if i is None or i not in self._dormant:
                continue
            r = order[i]
            if not unchanged(r):
                self._wake(i)
            elif not r.asleep:
                self._index.watchers.setdefault(r.attention.cache_key[3][0], []).append(name)  # type: ignore[index]
