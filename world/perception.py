"""What a resident notices each tick (paper's rules, REFERENCE §1).

- vision: tiles within 4 of the resident (a square, as in the original), same arena only;
- attention bandwidth: only the 3 nearest *new* events are kept;
- an event is new when the resident has not already seen that subject in that state, and
  it is not among the resident's 5 most recently perceived events (retention).

Residents are found through a grid of 8x8-tile buckets and objects through a per-tile table
computed once (objects do not move), so a perception costs a handful of lookups. When nothing
in a resident's arena changed and it did not move, the last answer is reused: idle residents
cost almost nothing.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from maps.town import Town

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
    cache_key: tuple | None = None  # (tile, area, area version) of the last look
    truncated: bool = False  # the last look left new events out (bandwidth): look fully again
    nearby: list[str] = field(default_factory=list)
    blocked: set[str] = field(default_factory=set)  # in view, unseen state, but held back by retention

    def snapshot(self) -> dict:
        return {"seen": [[s, p, o] for s, (p, o) in self.seen.items()], "recent": [list(t) for t in self.recent]}

    @classmethod
    def restore(cls, state: dict) -> "Attention":
        a = cls()
        a.seen = {s: (p, o) for s, p, o in state.get("seen", [])}
        a.recent.extend(tuple(t) for t in state.get("recent", []))
        return a


class SpatialIndex:
    """Residents by 8x8 bucket, plus, per area (arena), a version counter and a log of the
    subjects (resident names, object addresses) that changed in a way others could see.

    A resident that did not move only needs to look at what changed in its area since its
    last look, which makes perception in a crowded room cost the number of changes, not
    the number of people.
    """

    LOG_LIMIT = 8192

    def __init__(self, town: Town) -> None:
        self.town = town
        self.buckets: dict[tuple[int, int], set[str]] = {}
        n = len(town.area_address)
        self.version = [0] * n
        self.base = [0] * n  # version of log[area][0]
        self.log: list[list[str]] = [[] for _ in range(n)]

    def add(self, name: str, tile: Tile) -> None:
        self.buckets.setdefault((tile[0] >> BUCKET_SHIFT, tile[1] >> BUCKET_SHIFT), set()).add(name)

    def move(self, name: str, old: Tile, new: Tile) -> None:
        ok = (old[0] >> BUCKET_SHIFT, old[1] >> BUCKET_SHIFT)
        nk = (new[0] >> BUCKET_SHIFT, new[1] >> BUCKET_SHIFT)
        if ok != nk:
            self.buckets[ok].discard(name)
            self.buckets.setdefault(nk, set()).add(name)

    def touch(self, area: int, subject: str) -> None:
        self.version[area] += 1
        log = self.log[area]
        log.append(subject)
        if len(log) > self.LOG_LIMIT:
            cut = len(log) // 2
            del log[:cut]
            self.base[area] += cut

    def changed_since(self, area: int, version: int) -> list[str] | None:
        """Subjects touched in ``area`` after ``version``; None when the log no longer reaches back."""
        base = self.base[area]
        if version < base:
            return None
        return self.log[area][version - base :]

    def around(self, tile: Tile) -> list[str]:
        x, y = tile
        out: list[str] = []
        r = VISION_RADIUS
        for bx in range((x - r) >> BUCKET_SHIFT, ((x + r) >> BUCKET_SHIFT) + 1):
            for by in range((y - r) >> BUCKET_SHIFT, ((y + r) >> BUCKET_SHIFT) + 1):
                b = self.buckets.get((bx, by))
                if b:
                    out.extend(b)
        return out


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
