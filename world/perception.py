"""What a resident notices each tick (paper's rules, REFERENCE §1).

- vision: tiles within 4 of the resident (a square, as in the original), same arena only;
- attention bandwidth: only the 3 nearest *new* events are kept;
- an event is new when the resident has not already seen that subject in that state, and
  it is not among the resident's 5 most recently perceived events (retention).

Residents are found through a grid of 8x8-tile buckets and objects through a per-tile table
computed once (objects do not move), so a perception costs a handful of lookups. When nothing
changed in the buckets around a resident and it did not move, the last answer is reused: idle
residents cost almost nothing, however many people live in town.

:class:`Perceiver` is a collaborator of the loop (world/engine.py, ``engine.perceiver``): it
reads the bodies, the object states, the spatial index and object sight it is given, and
changes only the perceiving body (its attention, and its inbox, emptied into the Perception).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from maps.contracts import PerceivedEvent, Perception, build
from maps.town import Town

if TYPE_CHECKING:
    from world.body import Body

Tile = tuple[int, int]
Triple = tuple[str, str, str]

VISION_RADIUS = 4
ATTENTION_BANDWIDTH = 3
RETENTION = 5
BUCKET_SHIFT = 3  # 8x8-tile buckets; must be >= the vision radius


@dataclass
class Sight:
    """One event in view, before the newness / bandwidth cut."""

    distance: float
    subject: str
    predicate: str
    object: str
    description: str
    address: str


@dataclass
class Attention:
    """A resident's perceptual memory, kept by the world (it decides what is *new*)."""

    seen: dict[str, tuple[str, str]] = field(default_factory=dict)  # subject -> (predicate, object)
    recent: deque = field(default_factory=lambda: deque(maxlen=RETENTION))  # last perceived triples
    cache_key: tuple | None = None  # (tile, area, index version, buckets in view) of the last look
    truncated: bool = False  # the last look left new events out (bandwidth): look fully again
    nearby: list[str] = field(default_factory=list)
    blocked: set[str] = field(default_factory=set)  # in view, unseen state, but held back by retention
    nearby_set: set[str] | None = None  # ``nearby`` as a set, kept by a look again (None: build it)

    def snapshot(self) -> dict:
        # the dict copied whole (subject -> [predicate, object] once encoded): a list of triples
        # built per subject was a twentieth of a 1,000-resident day
        return {"seen": dict(self.seen), "recent": [list(t) for t in self.recent]}

    @classmethod
    def restore(cls, state: dict) -> "Attention":
        a = cls()
        seen = state.get("seen", [])
        if isinstance(seen, dict):
            a.seen = {s: (po[0], po[1]) for s, po in seen.items()}
        else:  # [[subject, predicate, object], ...]: snapshots written before 2026-11-27
            a.seen = {s: (p, o) for s, p, o in seen}
        a.recent.extend(tuple(t) for t in state.get("recent", []))
        return a


class SpatialIndex:
    """Residents by 8x8-tile bucket, plus, per bucket, a log of the subjects (resident names,
    object addresses) that changed there in a way others could see, stamped with a global
    change counter (``version``).

    A resident that did not move only needs to look at what changed in the four buckets its
    vision square overlaps since its last look, which makes perception cost the number of
    changes nearby, not the number of people in town (a per-area log made everyone standing
    in the street re-read every step of every walker in it).
    """

    LOG_LIMIT = 256  # entries kept per bucket; an older look than that looks again fully

    def __init__(self, town: Town) -> None:
        self.town = town
        self._object_buckets: dict[str, tuple[tuple[int, int], ...]] = {
            addr: tuple(sorted({_bucket(t) for t in obj.tiles})) for addr, obj in town.objects.items()
        }
        # dormant residents (world/quiet.py): window (its top-left bucket) -> names waiting for a
        # change in it; the names whose window changed since the engine last looked; the names
        # something reached directly (each body's bell). All are emptied in place, never
        # replaced, because they are shared
        self.watchers: dict[tuple[int, int], set[str]] = {}
        self.stirred: set[str] = set()
        self.rung: set[str] = set()
        self.clear()

    def clear(self) -> None:
        """Empty, as new (a restore re-adds everyone; the shared index object stays the same)."""
        self.watchers.clear()
        self.stirred.clear()
        self.rung.clear()
        self.buckets: dict[tuple[int, int], set[str]] = {}
        self.where: dict[str, Tile] = {}
        self.version = 0
        self._log_ver: dict[tuple[int, int], list[int]] = {}
        self._log_sub: dict[tuple[int, int], list[str]] = {}
        self._base: dict[tuple[int, int], int] = {}  # versions up to this were cut from the log
        # window (its top-left bucket) -> the last version logged in any of its 2x2 buckets: an
        # idle resident learns that nothing changed around it in one lookup
        self._win_last: dict[tuple[int, int], int] = {}

    def add(self, name: str, tile: Tile) -> None:
        self.buckets.setdefault(_bucket(tile), set()).add(name)
        self.where[name] = tile

    def move(self, name: str, old: Tile, new: Tile) -> None:
        """``name`` stepped from ``old`` to ``new``: seen leaving one place and arriving at another."""
        ok = (old[0] >> BUCKET_SHIFT, old[1] >> BUCKET_SHIFT)
        nk = (new[0] >> BUCKET_SHIFT, new[1] >> BUCKET_SHIFT)
        self.where[name] = new
        if ok != nk:
            self.buckets[ok].discard(name)
            self.buckets.setdefault(nk, set()).add(name)
            self._log(ok, name, (old, new))
        self._log(nk, name, (old, new))

    def touch(self, area: int, subject: str) -> None:
        """``subject`` (a resident or an object address) changed in a way others see. ``area``
        is where it is (kept for the callers; the buckets come from the subject itself)."""
        tile = self.where.get(subject)
        if tile is not None:
            self._log((tile[0] >> BUCKET_SHIFT, tile[1] >> BUCKET_SHIFT), subject, (tile,))
            return
        for key in self._object_buckets.get(subject, ()):
            self._log(key, subject)

    def _log(self, key: tuple[int, int], subject: str, tiles: tuple[Tile, ...] | None = None) -> None:
        """``subject`` changed in bucket ``key``; ``tiles``: where a resident was and is (None for
        an object: everyone watching the bucket is stirred)."""
        self.version += 1
        v = self.version
        bx, by = key
        win = self._win_last
        k1, k2, k3 = (bx - 1, by - 1), (bx - 1, by), (bx, by - 1)
        win[k1] = win[k2] = win[k3] = win[key] = v
        watchers = self.watchers
        if watchers:  # the residents dozing with this bucket in view are stirred
            for k in (k1, k2, k3, key):
                names = watchers.get(k)
                if names:
                    self._stir(k, names, tiles)
        subs = self._log_sub.get(key)
        if subs is None:
            self._log_sub[key] = [subject]
            self._log_ver[key] = [self.version]
            return
        vers = self._log_ver[key]
        if subs[-1] == subject:  # the same subject again (a step, then its action): one entry, newest stamp
            vers[-1] = self.version
            return
        subs.append(subject)
        vers.append(self.version)
        if len(subs) > self.LOG_LIMIT:
            cut = len(subs) // 2
            self._base[key] = vers[cut - 1]
            del subs[:cut], vers[:cut]

    def _stir(self, window: tuple[int, int], names: set[str], tiles: tuple[Tile, ...] | None) -> None:
        """Stir the watchers of ``window`` that could see the change: a window spans 16x16
        tiles and a vision square 9x9, so a step at the far side of a crowded cafe stirred
        everyone in it, and each looked for nothing (a third of a 1,000-resident day). Those
        out of range keep watching; what changed stays in the log for their next look."""
        if tiles is None:
            del self.watchers[window]
            self.stirred.update(names)
            return
        near = [n for n in names if self._in_view(n, window, tiles)]
        if len(near) == len(names):
            del self.watchers[window]
        else:
            names.difference_update(near)
        self.stirred.update(near)

    def _in_view(self, name: str, window: tuple[int, int], tiles: tuple[Tile, ...]) -> bool:
        """Whether any of ``tiles`` lies in the vision square of ``name``. One not in the index,
        or no longer standing where it watched ``window`` from (woken and gone since), is
        stirred and so dropped, as every watcher was before: kept, the names of everyone who
        ever dozed in a cafe would be read at each step in it."""
        at = self.where.get(name)
        if at is None:
            return True
        x, y = at
        r = VISION_RADIUS
        if ((x - r) >> BUCKET_SHIFT, (y - r) >> BUCKET_SHIFT) != window:
            return True
        return any(abs(x - tx) <= r and abs(y - ty) <= r for tx, ty in tiles)

    def changed_since(self, tile: Tile, version: int) -> list[str] | None:
        """Subjects touched after ``version`` in the buckets the vision square of ``tile``
        overlaps; None when a log no longer reaches back that far."""
        return self.changed_in(_window(tile), version)

    def changed_in(self, window: tuple[tuple[int, int], ...], version: int) -> list[str] | None:
        """Subjects touched after ``version`` in these buckets (see :meth:`changed_since`)."""
        if len(window) == 4 and self._win_last.get(window[0], 0) <= version:
            return []  # nothing logged in the window since (its first bucket names it)
        out: list[str] | None = None
        for key in window:
            vers = self._log_ver.get(key)
            if not vers or vers[-1] <= version:
                continue
            if self._base.get(key, 0) > version:
                return None
            subs = self._log_sub[key]
            i = bisect_right(vers, version)
            if out is None:
                out = subs[i:]
            else:
                out.extend(subs[i:])
        return out if out is not None else []

    def around(self, tile: Tile) -> list[str]:
        out: list[str] = []
        buckets = self.buckets
        for key in _window(tile):
            b = buckets.get(key)
            if b:
                out.extend(b)
        return out


def _bucket(tile: Tile) -> tuple[int, int]:
    return (tile[0] >> BUCKET_SHIFT, tile[1] >> BUCKET_SHIFT)


_WINDOWS: dict[Tile, tuple[tuple[int, int], ...]] = {}  # tile -> its window; a town has a bounded set of tiles


def _window(tile: Tile) -> tuple[tuple[int, int], ...]:
    """The buckets the vision square around ``tile`` overlaps (four when the radius is 4), made
    once per tile: every walker asks each step, and building the list was 5 % of a 10,000-resident
    morning (py-spy, 2026-11-28)."""
    hit = _WINDOWS.get(tile)
    if hit is None:
        x, y = tile
        r = VISION_RADIUS
        hit = _WINDOWS[tile] = tuple((bx, by) for bx in range((x - r) >> BUCKET_SHIFT, ((x + r) >> BUCKET_SHIFT) + 1)
                                     for by in range((y - r) >> BUCKET_SHIFT, ((y + r) >> BUCKET_SHIFT) + 1))
    return hit


class ObjectSight:
    """For each tile, the objects visible from it (same arena, within the vision square),
    with their distance; computed on first use per tile."""

    def __init__(self, town: Town) -> None:
        self.town = town
        self._by_area: dict[int, list] = {}
        for obj in town.objects.values():
            area = town.area_id(obj.tiles[0])
            self._by_area.setdefault(area, []).append(obj)
        self._cache: dict[Tile, list[tuple[float, str, str]]] = {}
        self._maps: dict[Tile, dict[str, tuple[float, str]]] = {}

    def visible(self, tile: Tile) -> list[tuple[float, str, str]]:
        hit = self._cache.get(tile)
        if hit is not None:
            return hit
        x, y = tile
        area = self.town.area_id(tile)
        out = []
        for obj in self._by_area.get(area, ()):
            best = None
            for ox, oy in obj.tiles:
                if abs(ox - x) <= VISION_RADIUS and abs(oy - y) <= VISION_RADIUS:
                    d = math.hypot(ox - x, oy - y)
                    best = d if best is None or d < best else best
            if best is not None:
                out.append((best, obj.address, obj.name))
        out.sort()
        self._cache[tile] = out
        return out

    def visible_map(self, tile: Tile) -> dict[str, tuple[float, str]]:
        """address -> (distance, name) of the objects visible from ``tile``."""
        hit = self._maps.get(tile)
        if hit is None:
            hit = self._maps[tile] = {addr: (d, name) for d, addr, name in self.visible(tile)}
        return hit


def choose(sights: list[Sight], attention: Attention) -> tuple[list[Sight], bool]:
    """Keep the nearest new events up to the bandwidth; remember them as seen.

    Returns the chosen events and whether some new events were left out (so the caller does
    not reuse this answer next tick: the rest are still new).
    """
    seen = attention.seen
    recent = attention.recent
    fresh = [
        s for s in sights
        if seen.get(s.subject) != (s.predicate, s.object) and (s.subject, s.predicate, s.object) not in recent
    ]
    if not fresh:
        return [], False
    fresh.sort(key=lambda s: (s.distance, s.description))
    chosen = fresh[:ATTENTION_BANDWIDTH]
    for s in chosen:
        seen[s.subject] = (s.predicate, s.object)
        recent.append((s.subject, s.predicate, s.object))
    return chosen, len(fresh) > ATTENTION_BANDWIDTH


class Perceiver:
    """Each Body's Perception for a tick, from what it is given (see the module docstring).

    ``cache`` False looks at everything every tick (the reference the cache is tested against).
    """

    def __init__(self, bodies: Mapping[str, "Body"], objects: Mapping[str, str], index: SpatialIndex,
                 sight: ObjectSight, cache: bool = True, defaults: Mapping[str, str] | None = None) -> None:
        self.residents = bodies
        self.objects = objects  # address -> state, shared with the rules (changed in place)
        self.defaults = dict(defaults or {})  # address -> the map's resting state (events marked ``resting``)
        self.index = index
        self.sight = sight
        self.perception_cache = cache

    def look(self, r: "Body") -> tuple[list[Sight], list[str]]:
        """What an awake ``r`` sees this tick (the chosen new events and who is nearby), its
        attention updated as seen; :meth:`perceive` makes the Perception of it."""
        att = r.attention
        area = r.area
        version = self.index.version
        ck = att.cache_key
        changed = None
        if ck is not None and ck[0] == r.tile:
            window = ck[3]
            if self.perception_cache and ck[1] == area and not att.truncated:
                changed = self.index.changed_in(window, ck[2])
        else:
            window = _window(r.tile)
        if changed is None:
            chosen, nearby = self._look(r)
        elif changed or att.blocked:
            chosen, nearby = self._look_again(r, changed)
        else:
            chosen, nearby = [], att.nearby
        att.cache_key = (r.tile, area, version, window)
        att.nearby = nearby
        return chosen, nearby

    def perceive(self, r: "Body", tick: int, now: datetime,
                 looked: tuple[list[Sight], list[str]] | None = None) -> Perception:
        """``looked``: this tick's :meth:`look`, when it was taken already (a dormant resident
        stirred by a change in view, world/quiet.py)."""
        att = r.attention
        if r.asleep:  # a sleeper sees nothing (they still hear what is said to them)
            chosen: list[Sight] = []
            nearby: list[str] = []
            att.cache_key = None
        else:
            chosen, nearby = looked if looked is not None else self.look(r)
        events = [
            build(PerceivedEvent, {"subject": s.subject, "predicate": s.predicate, "object": s.object,
                                   "description": s.description, "address": s.address, "distance": s.distance,
                                   "resting": self.defaults.get(s.subject) == s.object})
            for s in chosen
        ]
        known: list[str] = []
        if r.known_dirty:
            known = r.known_places()
            r.known_dirty = False
        p = build(Perception, {
            "resident": r.name, "tick": tick, "time": now, "tile": r.tile, "address": r.address, "events": events,
            "nearby": list(nearby), "heard": r.heard, "unsaid": r.unsaid, "whispers": r.whispers, "announcements": r.announcements,
            "arrived": r.arrived, "known_places": known, "memories": r.memories,
        })
        if r.heard:
            r.heard = []
        if r.unsaid:
            r.unsaid = []
        if r.whispers:
            r.whispers = []
        if r.announcements:
            r.announcements = []
        if r.memories:
            r.memories = []
        r.arrived = False
        return p

    def unchanged(self, r: "Body") -> bool:
        """Whether ``r``'s Perception this tick would be its last one again (the same nearby, no
        new event, nothing heard or arrived): asleep, or standing where it stood with nothing
        changed in view since its last look (what :meth:`perceive`'s cache reuses)."""
        if r.asleep:
            return not (r.has_inbox() or r.arrived or r.known_dirty)
        if not self.standing_still(r):
            return False
        ck = r.attention.cache_key
        # the look's version stays the last real one: what changed since then is what a look
        # would read (nothing, or the resident is woken and reads it all)
        return self.index.changed_in(ck[3], ck[2]) == []  # type: ignore[index]  # mostly one lookup

    def standing_still(self, r: "Body") -> bool:
        """Awake, not walking, where it stood at its last look, nothing reached it, and that look
        left nothing out: if its Perception differs now, only what is in view can have changed."""
        if r.asleep or r.has_inbox() or r.arrived or r.known_dirty or r.walking:
            return False
        att = r.attention
        ck = att.cache_key
        return not (ck is None or ck[0] != r.tile or ck[1] != r.area or att.truncated or att.blocked
                    or not self.perception_cache)

    @staticmethod
    def _is_new(att: Attention, key: str, s: str, p: str, o: str, blocked: set[str]) -> bool:
        """Sort one thing in view: new (True), or already known or held back by retention (then
        noted in ``blocked``). Asked before its Sight is made: most of what is in view is known,
        and building each one's description and distance was a tenth of a 1,000-resident day."""
        if att.seen.get(s) == (p, o):
            return False
        if (s, p, o) in att.recent:
            blocked.add(key)
            return False
        return True

    def _look(self, r: "Body") -> tuple[list[Sight], list[str]]:
        """Everything in view, from scratch."""
        att = r.attention
        x, y = r.tile
        area = r.area
        fresh: list[Sight] = []
        blocked: set[str] = set()
        nearby: list[str] = []
        residents = self.residents
        is_new = self._is_new
        for name in self.index.around(r.tile):
            o = residents[name]
            if o.area != area or o is r:
                continue
            ox, oy = o.tile
            if abs(ox - x) > 4 or abs(oy - y) > 4:
                continue
            nearby.append(name)
            s, p, ob = o.event
            if is_new(att, name, s, p, ob, blocked):
                fresh.append(Sight(((ox - x) ** 2 + (oy - y) ** 2) ** 0.5, s, p, ob,
                                   f"{name} is {o.description or 'idle'}", o.action_address or o.address))
        objects = self.objects
        for dist, addr, oname in self.sight.visible(r.tile):
            state = objects[addr]
            if is_new(att, addr, addr, "is", state, blocked):
                fresh.append(Sight(dist, addr, "is", state, f"{oname} is {state}", addr))
        nearby.sort()
        att.blocked = blocked
        att.nearby_set = None
        chosen, att.truncated = choose(fresh, att) if fresh else ([], False)
        return chosen, nearby

    def _look_again(self, r: "Body", changed: list[str]) -> tuple[list[Sight], list[str]]:
        """Only what changed in the area since the last look (and what retention held back):
        gives exactly what :meth:`_look` would, at the cost of the changes."""
        att = r.attention
        x, y = r.tile
        area = r.area
        fresh: list[Sight] = []
        blocked: set[str] = set()
        # the set of who was nearby is kept between looks, and the sorted list rebuilt only when
        # someone came into view or left it: in a cafe of eighty both were a fifth of the look
        nearby_set = att.nearby_set if att.nearby_set is not None else set(att.nearby)
        moved = False
        residents = self.residents
        objects = self.objects
        is_new = self._is_new
        view = self.sight.visible_map(r.tile)
        for key in sorted(set(changed) | att.blocked):
            o = residents.get(key)
            if o is not None:
                if o is r:
                    continue
                ox, oy = o.tile
                if o.area != area or abs(ox - x) > 4 or abs(oy - y) > 4:
                    if key in nearby_set:
                        nearby_set.discard(key)
                        moved = True
                    continue
                if key not in nearby_set:
                    nearby_set.add(key)
                    moved = True
                s, p, ob = o.event
                if is_new(att, key, s, p, ob, blocked):
                    fresh.append(Sight(((ox - x) ** 2 + (oy - y) ** 2) ** 0.5, s, p, ob,
                                       f"{key} is {o.description or 'idle'}", o.action_address or o.address))
            else:
                seen_from_here = view.get(key)
                if seen_from_here is None:
                    continue
                dist, oname = seen_from_here
                state = objects[key]
                if is_new(att, key, key, "is", state, blocked):
                    fresh.append(Sight(dist, key, "is", state, f"{oname} is {state}", key))
        att.blocked = blocked
        chosen, att.truncated = choose(fresh, att) if fresh else ([], False)
        att.nearby_set = nearby_set
        return chosen, sorted(nearby_set) if moved else att.nearby
