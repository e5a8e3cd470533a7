"""The town as the viewer needs it: a grid, walls, and named areas with their tiles.

The viewer draws from this small, flat description instead of from the loader's own
classes, so rendering does not depend on how maps/ models its place tree; :func:`from_town`
is the one adapter between the two.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from maps.town import load_town

AreaKind = Literal["sector", "arena", "object"]


@dataclass(frozen=True)
class Area:
    """A named place on the map: a sector (building), an arena (room) or an object."""

    kind: AreaKind
    name: str
    address: str
    tiles: frozenset[tuple[int, int]]

    @property
    def bbox(self) -> tuple[int, int, int, int]:
        """(min_x, min_y, max_x, max_y) in tiles, inclusive."""
        xs = [t[0] for t in self.tiles]
        ys = [t[1] for t in self.tiles]
        return min(xs), min(ys), max(xs), max(ys)

    @property
    def centre(self) -> tuple[float, float]:
        x0, y0, x1, y1 = self.bbox
        return (x0 + x1 + 1) / 2, (y0 + y1 + 1) / 2


@dataclass
class MapView:
    """A town for drawing: size in tiles, blocked tiles, and areas (sectors, rooms, objects)."""

    name: str
    width: int
    height: int
    blocked: frozenset[tuple[int, int]] = frozenset()
    areas: list[Area] = field(default_factory=list)
    default_states: dict[str, str] = field(default_factory=dict)
    personas: dict[str, dict[str, Any]] = field(default_factory=dict)
    terrain: dict[str, frozenset[tuple[int, int]]] = field(default_factory=dict)
    _index: dict[tuple[int, int], list[Area]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.width <= 0 or self.height <= 0:
            raise ValueError(f"map {self.name!r}: size must be positive, got {self.width}x{self.height}")
        for area in self.areas:
            if not area.tiles:
                raise ValueError(f"map {self.name!r}: area {area.address!r} has no tiles")

    def of_kind(self, kind: AreaKind) -> list[Area]:
        return [a for a in self.areas if a.kind == kind]

    def areas_at(self, tile: tuple[int, int]) -> list[Area]:
        """Areas covering ``tile``, most specific (object) first."""
        if self._index is None:
            index: dict[tuple[int, int], list[Area]] = {}
            for area in self.areas:
                for t in area.tiles:
                    index.setdefault(t, []).append(area)
            order = {"object": 0, "arena": 1, "sector": 2}
            for lst in index.values():
                lst.sort(key=lambda a: order[a.kind])
            self._index = index
        return self._index.get(tile, [])

    def object_at(self, tile: tuple[int, int]) -> Area | None:
        for area in self.areas_at(tile):
            if area.kind == "object":
                return area
        return None

    def find(self, address: str) -> Area | None:
        for area in self.areas:
            if area.address == address:
                return area
        return None


# ---------------------------------------------------------------------------
# Adapter from maps.town.Town
# ---------------------------------------------------------------------------


def _rect_tiles(obj: Any) -> frozenset[tuple[int, int]]:
    """Every tile of a place: its rectangle when it has one, else its listed tiles."""
    rect = getattr(obj, "rect", None)
    if rect is not None:
        return frozenset((x, y) for y in range(rect.y, rect.y + rect.h) for x in range(rect.x, rect.x + rect.w))
    return frozenset((int(t[0]), int(t[1])) for t in (getattr(obj, "tiles", None) or ()))


def from_town(town: Any) -> MapView:
    """Build a :class:`MapView` from a loaded town (``maps.town.load_town``).

    Walls and other non-walkable tiles are drawn as walls; a terrain kind such as 'water'
    or 'road' is kept so the static layer can colour it.
    """
    width, height = int(town.width), int(town.height)
    walkable = town.walkable  # bool [y, x]
    blocked: set[tuple[int, int]] = set()
    terrain: dict[str, set[tuple[int, int]]] = {}
    kinds = dict(getattr(town, "terrain_kinds", {}) or {})
    grid = getattr(town, "terrain", None)
    for y in range(height):
        for x in range(width):
            kind = kinds.get(int(grid[y][x]), "") if grid is not None else ""
            if kind == "wall" or (not bool(walkable[y][x]) and kind in ("", "grass", "ground", "floor")):
                blocked.add((x, y))
            elif kind and kind not in ("grass", "ground"):
                terrain.setdefault(kind, set()).add((x, y))
    areas: list[Area] = []
    for sector in town.sectors.values():
        areas.append(Area("sector", sector.name, sector.name, _rect_tiles(sector)))
        for arena in sector.arenas.values():
            areas.append(Area("arena", arena.name, f"{sector.name}:{arena.name}", _rect_tiles(arena)))
            for obj in arena.objects.values():
                areas.append(Area("object", obj.name, obj.address, _rect_tiles(obj)))
    defaults = dict(town.default_states()) if callable(getattr(town, "default_states", None)) else {}
    personas: dict[str, dict[str, Any]] = {}
    for p in getattr(town, "residents", None) or []:
        data = p.model_dump() if hasattr(p, "model_dump") else dict(p)
        personas[str(data.get("name"))] = data
    return MapView(
        str(getattr(town, "name", "town")), width, height, frozenset(blocked), areas, defaults, personas,
        terrain={k: frozenset(v) for k, v in terrain.items() if v},
    )


def load_mapview(name_or_path: str) -> MapView:
    """Load a town by name or path with maps.town and adapt it for drawing."""
    return from_town(load_town(name_or_path))


# ---------------------------------------------------------------------------
# A generated town, for benchmarks and tests when no town data is at hand
# ---------------------------------------------------------------------------


def grid_map(sectors_x: int = 4, sectors_y: int = 3, sector_size: int = 12, street: int = 3,
             name: str = "grid") -> MapView:
    """A regular town of walled buildings with two rooms and two objects each.

    Building (bx, by) spans ``sector_size`` tiles with a one-tile wall ring, a door in the
    bottom wall, an inner wall splitting it into a "front" and "back" room (with a gap),
    a "table" in the front room and a "bed" in the back room.
    """
    pitch = sector_size + street
    width = street + sectors_x * pitch
    height = street + sectors_y * pitch
    blocked: set[tuple[int, int]] = set()
    areas: list[Area] = []
    defaults: dict[str, str] = {}
    for by in range(sectors_y):
        for bx in range(sectors_x):
            x0 = street + bx * pitch
            y0 = street + by * pitch
            x1 = x0 + sector_size - 1
            y1 = y0 + sector_size - 1
            sname = f"House {by * sectors_x + bx + 1}"
            tiles = {(x, y) for x in range(x0, x1 + 1) for y in range(y0, y1 + 1)}
            areas.append(Area("sector", sname, sname, frozenset(tiles)))
            door = ((x0 + x1) // 2, y1)
            for x in range(x0, x1 + 1):
                blocked.add((x, y0))
                blocked.add((x, y1))
            for y in range(y0, y1 + 1):
                blocked.add((x0, y))
                blocked.add((x1, y))
            blocked.discard(door)
            mid = (y0 + y1) // 2
            for x in range(x0 + 1, x1):
                if x != x0 + 2:
                    blocked.add((x, mid))
            back = {(x, y) for x in range(x0 + 1, x1) for y in range(y0 + 1, mid)}
            front = {(x, y) for x in range(x0 + 1, x1) for y in range(mid + 1, y1)}
            areas.append(Area("arena", "back", f"{sname}:back", frozenset(back)))
            areas.append(Area("arena", "front", f"{sname}:front", frozenset(front)))
            bed = frozenset({(x1 - 2, y0 + 1), (x1 - 2, y0 + 2)})
            table = frozenset({(x0 + 2, y1 - 2), (x0 + 3, y1 - 2)})
            areas.append(Area("object", "bed", f"{sname}:back:bed", bed))
            areas.append(Area("object", "table", f"{sname}:front:table", table))
            defaults[f"{sname}:back:bed"] = "idle"
            defaults[f"{sname}:front:table"] = "idle"
            blocked.difference_update(bed | table)
    return MapView(name, width, height, frozenset(blocked), areas, defaults)
