"""Shortest walks on the town's walkable grid: A* on the grid itself, with a shared route cache.

Residents walk one tile per tick along these paths. The search runs on flat tile indices of
a padded copy of the walkable grid (no graph object: a networkx graph of a 10,000-resident
town took gigabytes and seconds to build). It is networkx's ``astar_path`` step for step —
the same heap order, the same tie-breaking counter, neighbours in the order networkx's grid
graph held them (up, left, right, down) — so a walk is the tile sequence networkx gave, and
runs recorded before this module changed replay unchanged.

Routes are cached per (start, goal), one cache per engine shared by every resident:
residents commute between the same few goal tiles of a place every day (world/rules.py's
goal spread), so most requests are hits. The cache grows with the town (``cache_size``), and
tiles are interned, so a cached route costs a pointer per step.
"""

from __future__ import annotations

from collections import OrderedDict
from heapq import heappop, heappush

import numpy as np

Tile = tuple[int, int]

ROUTES_PER_RESIDENT = 8  # routes cached per resident (a day is ~6 walks), beyond the minimum


class PathFinder:
    """A* over ``walkable`` (bool [y, x]) with an LRU route cache (see the module docstring)."""

    def __init__(self, walkable: np.ndarray, cache_size: int = 20000) -> None:
        self.walkable = walkable
        h, w = walkable.shape
        self.width, self.height = w, h
        self._stride = w + 2  # one blocked tile of padding on every side: no bounds checks
        padded = np.zeros((h + 2, w + 2), dtype=np.uint8)
        padded[1:-1, 1:-1] = walkable.astype(bool)
        self._free = bytearray(padded.tobytes())
        self._tiles: dict[int, Tile] = {}  # flat index -> the one tuple for that tile
        self._cache: OrderedDict[tuple[Tile, Tile], tuple[Tile, ...]] = OrderedDict()
        self.cache_size = cache_size
        self.hits = 0
        self.misses = 0

    def fit(self, residents: int) -> None:
        """Grow the cache to hold a day of walks for ``residents`` (never shrinks it)."""
        self.cache_size = max(self.cache_size, residents * ROUTES_PER_RESIDENT)

    def _index(self, t: Tile) -> int | None:
        x, y = t
        if not (0 <= x < self.width and 0 <= y < self.height):
            return None
        i = (y + 1) * self._stride + x + 1
        return i if self._free[i] else None

    def _tile(self, i: int) -> Tile:
        t = self._tiles.get(i)
        if t is None:
            y, x = divmod(i, self._stride)
            t = self._tiles[i] = (x - 1, y - 1)
        return t

    def path(self, start: Tile, goal: Tile) -> tuple[Tile, ...]:
        """Tiles to walk from ``start`` to ``goal``, excluding ``start`` (empty if already there).

        Raises ValueError when no path exists (a tile is not walkable or walled off).
        """
        if start == goal:
            return ()
        key = (start, goal)
        cached = self._cache.get(key)
        if cached is not None:
            self.hits += 1
            self._cache.move_to_end(key)
            return cached
        self.misses += 1
        s, g = self._index(start), self._index(goal)
        nodes = self._astar(s, g) if s is not None and g is not None else None
        if nodes is None:
            raise ValueError(f"no walkable path from {start} to {goal}")
        result = tuple(self._tile(i) for i in nodes[1:])
        # (no reverse-path reuse: a path must depend only on (start, goal), never on what was
        # asked before, or a resumed run, whose cache starts empty, could walk differently)
        self._cache[key] = result
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return result

    def _astar(self, source: int, target: int) -> list[int] | None:
        """networkx.astar_path with the Manhattan heuristic, on flat indices (None: no path).

        The heap holds one int per entry, ``f << 32 | counter``: the order of networkx's
        ``(f, counter, ...)`` tuples (the counter is unique, so a tie never reaches the rest)
        at the cost of int comparisons; the entry's node, cost and parent sit in three lists
        at the counter's index."""
        stride = self._stride
        free = self._free
        tx, ty = target % stride, target // stride
        steps = (-stride, -1, 1, stride)  # up, left, right, down: networkx's adjacency order
        nodes, costs, parents = [source], [0], [-1]  # entry (its counter) -> node, cost, parent
        queue: list[int] = [0]
        enqueued: dict[int, int] = {}  # node -> cost of the best path queued to it
        explored: dict[int, int] = {}  # node -> parent (-1 for the source)
        low = 0xFFFFFFFF
        while queue:
            entry = heappop(queue) & low
            cur, dist, parent = nodes[entry], costs[entry], parents[entry]
            if cur == target:
                path = [cur]
                node = parent
                while node != -1:
                    path.append(node)
                    node = explored[node]
                path.reverse()
                return path
            if cur in explored:
                if explored[cur] == -1:
                    continue
                if enqueued[cur] < dist:
                    continue
            explored[cur] = parent
            ncost = dist + 1
            for step in steps:
                nb = cur + step
                if not free[nb]:
                    continue
                q = enqueued.get(nb)
                if q is not None and q <= ncost:
                    continue
                enqueued[nb] = ncost
                heappush(queue, ((ncost + abs(nb % stride - tx) + abs(nb // stride - ty)) << 32) | len(nodes))
                nodes.append(nb)
                costs.append(ncost)
                parents.append(cur)
        return None
