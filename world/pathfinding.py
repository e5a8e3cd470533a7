"""Shortest walks on the town's walkable grid: networkx A*, with a cache.

Residents walk one tile per tick along these paths. Paths are cached per (start, goal);
residents commute between the same tiles every day, so most requests are cache hits.
"""

from __future__ import annotations

from collections import OrderedDict

import networkx as nx
import numpy as np

Tile = tuple[int, int]


class PathFinder:
    def __init__(self, walkable: np.ndarray, cache_size: int = 20000) -> None:
        self.walkable = walkable
        self.graph = nx.Graph()
        h, w = walkable.shape
        ys, xs = np.nonzero(walkable)
        for y, x in zip(ys.tolist(), xs.tolist()):
            self.graph.add_node((x, y))
            if x + 1 < w and walkable[y, x + 1]:
                self.graph.add_edge((x, y), (x + 1, y))
            if y + 1 < h and walkable[y + 1, x]:
                self.graph.add_edge((x, y), (x, y + 1))
        self._cache: OrderedDict[tuple[Tile, Tile], tuple[Tile, ...]] = OrderedDict()
        self.cache_size = cache_size
        self.hits = 0
        self.misses = 0

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
        try:
            nodes = nx.astar_path(self.graph, start, goal, heuristic=_manhattan)
        except (nx.NetworkXNoPath, nx.NodeNotFound):
            raise ValueError(f"no walkable path from {start} to {goal}") from None
        result = tuple(nodes[1:])
        # (no reverse-path reuse: a path must depend only on (start, goal), never on what was
        # asked before, or a resumed run, whose cache starts empty, could walk differently)
        self._cache[key] = result
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return result


def _manhattan(a: Tile, b: Tile) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])
