"""Dormant residents: who the engine leaves out of a tick, and what wakes them.

A mind that answered a 'continue' that changes nothing to a perception with nothing new may
promise to answer the same until a time (``quiet_until``). While it perceives nothing new, the engine neither
builds its Perception nor asks it (world/engine.py ``_perceive_all``). Checking that "nothing
new" for every resident every tick was itself a loop over the whole town; here a dormant
resident costs nothing until one of the things that could change its answer happens:

- its promise runs out (a timer);
- something changes in the buckets its vision square overlaps (the spatial index fires the
  window it watches: world/perception.py ``SpatialIndex._log``);
- something reaches it (a line heard, a whisper, an announcement, a memory, an errand:
  ``Body.stir``, called by every writer of a body's inbox): it wakes;
- the tick applies commands, or gives it an intent, or the engine is restored.

A resident whose view changed is woken only when its Perception would differ (it looks; if it
sees nothing new and the same people, its promise covers it), so the records are the same as
asking everyone every tick (tests/world/test_scale.py).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from datetime import datetime

from world.body import Body
from world.perception import Perceiver, Sight, SpatialIndex


class Dormancy:
    """The residents the engine may leave out of a tick; indices are positions in name order."""

    def __init__(self, order: list[Body], index: SpatialIndex, perceiver: Perceiver) -> None:
        self._order = order
        self._at = {r.name: i for i, r in enumerate(order)}
        self._index = index
        self._perceiver = perceiver
        self._awake: set[int] = set(range(len(order)))
        self._dormant: set[int] = set()
        self._timers: list[tuple[datetime, int]] = []  # (quiet_until, index); stale entries skipped
        self._looks: dict[int, tuple[list[Sight], list[str]]] = {}  # woken by a change in view: this tick's look
        for r in order:
            r.bell = index.rung  # an inbox write or an errand names the body there: it wakes

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
            if len(r.attention.cache_key[3]) != 4:  # type: ignore[index]
                return False
            self._watch(r)
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
        self._index.rung.clear()
        self._looks.clear()

    def wake_names(self, names: Iterable[str]) -> None:
        """These residents are given an intent this tick."""
        for name in names:
            i = self._at.get(name)
            if i is not None and i in self._dormant:
                self._wake(i)

    def wake_due(self, now: datetime) -> None:
        """Wake those whose promise ran out by ``now``, then those stirred since the last tick
        whose Perception would now differ. A stirred one whose view changed looks now: if it sees
        nothing new and the same people nearby, its Perception would be its last one again, which
        its promise covers, so it watches again; else it wakes with that look (:meth:`take_look`)."""
        timers = self._timers
        order = self._order
        while timers and timers[0][0] <= now:
            until, i = heapq.heappop(timers)
            if i in self._dormant and order[i].quiet_until == until:
                self._wake(i)
        rung = self._index.rung
        if rung:
            names = sorted(rung)
            rung.clear()  # emptied in place: it is every body's bell
            for name in names:
                i = self._at.get(name)
                if i is not None and i in self._dormant:
                    self._wake(i)
        stirred = self._index.stirred
        if not stirred:
            return
        names = sorted(stirred)
        stirred.clear()  # emptied in place: the index fills it
        for name in names:
            i = self._at.get(name)
            if i is None or i not in self._dormant:
                continue
            r = order[i]
            if self.sees_nothing_new(i, r):
                if not r.asleep:
                    self._watch(r)
                continue
            self._wake(i)

    def sees_nothing_new(self, i: int, r: Body) -> bool:
        """Whether ``r``'s Perception this tick would be its last one again, which its promise
        covers: unchanged, or, standing still with its view changed, a look now finds no new
        event and the same people nearby. A look that finds more is kept for this tick's
        Perception (:meth:`take_look`)."""
        perceiver = self._perceiver
        if perceiver.unchanged(r):
            return True
        if not perceiver.standing_still(r):
            return False
        att = r.attention
        before = att.nearby
        looked = perceiver.look(r)
        if not looked[0] and looked[1] == before and not att.blocked and not att.truncated:
            return True
        self._looks[i] = looked
        return False

    def _watch(self, r: Body) -> None:
        self._index.watchers.setdefault(r.attention.cache_key[3][0], set()).add(r.name)  # type: ignore[index]

    def take_look(self, i: int) -> tuple[list[Sight], list[str]] | None:
        """The look a resident woken this tick already took (its attention has seen it), if any."""
        return self._looks.pop(i, None) if self._looks else None
