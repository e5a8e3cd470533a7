"""Load and validate a town: a Tiled-compatible JSON map plus a residents file.

A town is a folder holding ``town.json`` (a Tiled map, orthogonal, JSON format) and one or
more residents files (``residents.json``: a JSON list of :class:`maps.contracts.Persona`).

The map format, all of it readable and editable in Tiled:

- tile layer ``ground``: terrain for drawing; gids index the ``terrain`` tileset whose tiles
  carry a ``kind`` property (grass, road, floor, wall, water, door, path, tree ...).
- tile layer ``collision``: any non-zero gid blocks the tile.
- object layer ``sectors``: rectangles, each a building or open area (name = sector name,
  optional ``kind`` property: home, cafe, clinic, bank, school, park, pub, shop, civic ...).
- object layer ``arenas``: rectangles, each a room; it belongs to the sector containing it.
- object layer ``objects``: rectangles, each a game object (bed, stove ...) with a ``state``
  property (its default state in words); it belongs to the arena containing it.
- object layer ``spawns``: points (or rectangles) naming where residents may start.

Loading checks everything (layer presence and sizes, rectangles on the tile grid, the place
tree, reachability of every place and spawn, every persona's home/workplace/spawn) and
raises :class:`TownError` naming the file, the field and what was expected. A town is built
only after every check passed, so a broken town never half-loads.
"""

from __future__ import annotations

import reprlib
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from maps.contracts import Persona
from maps.files import FileReadError, read_json
from maps.plaintext import escape_invisible, invisible_problem, strings_in
from maps.contracts import NAME_MAX, SHORT_MAX, control_problem, escape_controls

TOWNS_DIR = Path(__file__).resolve().parent / "towns"
MAP_FILE = "town.json"
REQUIRED_TILE_LAYERS = ("ground", "collision")
REQUIRED_OBJECT_LAYERS = ("sectors", "arenas", "objects", "spawns")
MAX_FILE_BYTES = 64 * 1024 * 1024  # a 25-resident file is ~20 KB and the default map ~1 MB

Tile = tuple[int, int]  # (x, y), x to the right, y down, as in Tiled


class TownError(ValueError):
    """A town file is wrong. The message names the file, the field and what was expected."""

    def __init__(self, file: Path | str, field_path: str, problem: str) -> None:
        self.file = str(file)
        self.field = field_path
        self.problem = problem
        super().__init__(f"{file}: {field_path}: {problem}")


# ---------------------------------------------------------------------------
# The raw Tiled JSON, as pydantic models (only the parts we read; extra keys are allowed
# so that files saved by Tiled load unchanged)
# ---------------------------------------------------------------------------


class TiledProperty(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    type: str = "string"
    value: Any = None


class TiledObject(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: int = 0
    name: str = ""
    x: float
    y: float
    width: float = 0.0
    height: float = 0.0
    point: bool = False
    properties: list[TiledProperty] = []

    def prop(self, name: str, default: Any = None) -> Any:
        for p in self.properties:
            if p.name == name:
                return p.value
        return default


class TiledLayer(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    type: str
    width: int | None = None
    height: int | None = None
    data: list[int] | None = None
    objects: list[TiledObject] | None = None
    properties: list[TiledProperty] = []


class TiledTile(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: int
    properties: list[TiledProperty] = []


class TiledTileset(BaseModel):
    model_config = ConfigDict(extra="allow")

    firstgid: int
    name: str = ""
    tiles: list[TiledTile] = []


class TiledMap(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str = "map"
    orientation: str = "orthogonal"
    width: int
    height: int
    tilewidth: int
    tileheight: int
    infinite: bool = False
    layers: list[TiledLayer]
    tilesets: list[TiledTileset] = []
    properties: list[TiledProperty] = []


# ---------------------------------------------------------------------------
# The loaded town
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Rect:
    """A rectangle in tiles: x, y of the top-left tile, width and height in tiles."""

    x: int
    y: int
    w: int
    h: int

    def centre(self) -> Tile:
        """The middle tile (the upper-left one of the middle four when a side is even)."""
        return (self.x + (self.w - 1) // 2, self.y + (self.h - 1) // 2)

    def contains_tile(self, t: Tile) -> bool:
        return self.x <= t[0] < self.x + self.w and self.y <= t[1] < self.y + self.h

    def contains(self, other: "Rect") -> bool:
        return (
            self.x <= other.x
            and self.y <= other.y
            and other.x + other.w <= self.x + self.w
            and other.y + other.h <= self.y + self.h
        )

    def overlaps(self, other: "Rect") -> bool:
        return not (
            other.x >= self.x + self.w
            or other.x + other.w <= self.x
            or other.y >= self.y + self.h
            or other.y + other.h <= self.y
        )

    def tiles(self) -> Iterable[Tile]:
        for y in range(self.y, self.y + self.h):
            for x in range(self.x, self.x + self.w):
                yield (x, y)


@dataclass
class GameObject:
    """A thing residents use; ``default_state`` is its resting state in words ('idle')."""

    address: str  # "sector:arena:object"
    name: str
    sector: str
    arena: str
    rect: Rect
    default_state: str
    tiles: list[Tile]  # reachable tiles of the object


@dataclass
class Arena:
    name: str
    sector: str
    rect: Rect
    objects: dict[str, GameObject] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"{self.sector}:{self.name}"


@dataclass
class Sector:
    name: str
    kind: str
    rect: Rect
    arenas: dict[str, Arena] = field(default_factory=dict)


@dataclass
class SpawnPoint:
    name: str
    tile: Tile


class Town:
    """A loaded, validated town. Immutable by convention: the engine keeps object *states*.

    Tiles are ``(x, y)``; ``walkable[y, x]`` is True where a resident may stand and reach the
    rest of the town (tiles walled off from the main walkable area are not walkable).
    """

    def __init__(
        self,
        *,
        name: str,
        folder: Path,
        map_path: Path,
        width: int,
        height: int,
        tile_size: int,
        terrain: np.ndarray,
        terrain_kinds: dict[int, str],
        walkable: np.ndarray,
        sectors: dict[str, Sector],
        spawns: dict[str, SpawnPoint],
        residents: list[Persona],
        residents_path: Path | None,
        properties: dict[str, Any],
    ) -> None:
        self.name = name
        self.folder = folder
        self.map_path = map_path
        self.width = width
        self.height = height
        self.tile_size = tile_size
        self.terrain = terrain  # gid per tile, [y, x]
        self.terrain_kinds = terrain_kinds  # gid -> kind ('grass', 'wall' ...)
        self.walkable = walkable  # bool [y, x]
        self.sectors = sectors
        self.spawns = spawns
        self.residents = residents
        self.residents_path = residents_path
        self.properties = properties
        self.objects: dict[str, GameObject] = {}
        for sector in sectors.values():
            for arena in sector.arenas.values():
                for obj in arena.objects.values():
                    self.objects[obj.address] = obj
        self._build_indexes()

    # -- indexes ----------------------------------------------------------------

    def _build_indexes(self) -> None:
        h, w = self.height, self.width
        # area id per tile: 0 = outdoors/street, then one id per sector-without-arena part and
        # one per arena. Perception's same-arena rule compares these ids.
        self.area = np.zeros((h, w), dtype=np.int32)
        self.area_address: list[str] = [""]
        self._object_at = np.full((h, w), -1, dtype=np.int32)
        self._object_list: list[GameObject] = list(self.objects.values())
        self._place_tiles: dict[str, list[Tile]] = {}
        for sector in self.sectors.values():
            sid = len(self.area_address)
            self.area_address.append(sector.name)
            r = sector.rect
            self.area[r.y : r.y + r.h, r.x : r.x + r.w] = sid
            for arena in sector.arenas.values():
                aid = len(self.area_address)
                self.area_address.append(arena.address)
                a = arena.rect
                self.area[a.y : a.y + a.h, a.x : a.x + a.w] = aid
        for i, obj in enumerate(self._object_list):
            o = obj.rect
            self._object_at[o.y : o.y + o.h, o.x : o.x + o.w] = i
        for sector in self.sectors.values():
            self._place_tiles[sector.name] = self._walkable_in(sector.rect)
            for arena in sector.arenas.values():
                self._place_tiles[arena.address] = self._walkable_in(arena.rect)
                for obj in arena.objects.values():
                    self._place_tiles[obj.address] = list(obj.tiles)

    def _walkable_in(self, rect: Rect) -> list[Tile]:
        return [t for t in rect.tiles() if self.walkable[t[1], t[0]]]

    # -- queries ----------------------------------------------------------------

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) in tiles."""
        return (self.width, self.height)

    def is_walkable(self, tile: Tile) -> bool:
        x, y = tile
        return 0 <= x < self.width and 0 <= y < self.height and bool(self.walkable[y, x])

    def has_address(self, address: str) -> bool:
        return address in self._place_tiles

    def resolve(self, address: str) -> list[Tile]:
        """Reachable tiles of a place: 'Sector', 'Sector:arena' or 'Sector:arena:object'.

        Raises KeyError with a helpful message for an unknown address.
        """
        tiles = self._place_tiles.get(address)
        if tiles is None:
            raise KeyError(self.explain_unknown(address))
        return tiles

    def explain_unknown(self, address: str) -> str:
        """Say which part of an address is unknown, and what exists there instead."""
        parts = address.split(":")
        sector = self.sectors.get(parts[0])
        if sector is None:
            return f"unknown place {address!r}: no sector {parts[0]!r} (sectors: {', '.join(self.sectors)})"
        if len(parts) >= 2:
            arena = sector.arenas.get(parts[1])
            if arena is None:
                return (
                    f"unknown place {address!r}: {sector.name} has no room {parts[1]!r} "
                    f"(rooms: {', '.join(sector.arenas) or 'none'})"
                )
            if len(parts) == 3 and parts[2] not in arena.objects:
                return (
                    f"unknown place {address!r}: {arena.address} has no object {parts[2]!r} "
                    f"(objects: {', '.join(arena.objects) or 'none'})"
                )
        return f"unknown place {address!r}: expected 'sector', 'sector:arena' or 'sector:arena:object'"

    def address_at(self, tile: Tile) -> str:
        """'sector:arena' of a tile, 'sector' between rooms (doorways), '' outdoors."""
        x, y = tile
        if not (0 <= x < self.width and 0 <= y < self.height):
            return ""
        return self.area_address[int(self.area[y, x])]

    def area_id(self, tile: Tile) -> int:
        return int(self.area[tile[1], tile[0]])

    def object_at(self, tile: Tile) -> GameObject | None:
        x, y = tile
        if not (0 <= x < self.width and 0 <= y < self.height):
            return None
        i = int(self._object_at[y, x])
        return self._object_list[i] if i >= 0 else None

    def full_address_at(self, tile: Tile) -> str:
        """The most precise address of a tile: the object's if it stands on one."""
        obj = self.object_at(tile)
        return obj.address if obj is not None else self.address_at(tile)

    def sector_of(self, address: str) -> Sector | None:
        return self.sectors.get(address.split(":")[0]) if address else None

    def addresses(self, level: str | None = None) -> list[str]:
        """Every place in tree order (sector, its arenas, their objects).

        ``level`` filters: 'sector', 'arena' or 'object'. This is what MindOptions.places holds.
        """
        out: list[str] = []
        for sector in self.sectors.values():
            if level in (None, "sector"):
                out.append(sector.name)
            for arena in sector.arenas.values():
                if level in (None, "arena"):
                    out.append(arena.address)
                for obj in arena.objects.values():
                    if level in (None, "object"):
                        out.append(obj.address)
        return out

    def tree(self) -> dict[str, dict[str, dict[str, str]]]:
        """The place tree: sector -> arena -> object -> default state."""
        return {
            s.name: {
                a.name: {o.name: o.default_state for o in a.objects.values()}
                for a in s.arenas.values()
            }
            for s in self.sectors.values()
        }

    def default_states(self) -> dict[str, str]:
        return {addr: obj.default_state for addr, obj in self.objects.items()}

    def terrain_kind(self, tile: Tile) -> str:
        return self.terrain_kinds.get(int(self.terrain[tile[1], tile[0]]), "")

    def resident(self, name: str) -> Persona:
        for p in self.residents:
            if p.name == name:
                return p
        raise KeyError(f"no resident named {name!r} in {self.residents_path}")

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return (
            f"Town({self.name!r}, {self.width}x{self.height}, {len(self.sectors)} sectors, "
            f"{len(self.objects)} objects, {len(self.residents)} residents)"
        )


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


def town_folder(name_or_path: str | Path) -> Path:
    """A town name ('default') or a folder / map file path -> the town folder."""
    p = Path(name_or_path)
    if p.suffix == ".json" and p.is_file():
        return p.parent
    if p.is_dir():
        return p
    candidate = TOWNS_DIR / str(name_or_path)
    if candidate.is_dir():
        return candidate
    known = sorted(d.name for d in TOWNS_DIR.iterdir() if d.is_dir()) if TOWNS_DIR.is_dir() else []
    raise TownError(
        str(name_or_path), "town", f"no such town folder or built-in town (built-in: {', '.join(known)})"
    )


def residents_files(name_or_path: str | Path) -> list[Path]:
    """Every residents*.json file of a town folder, smallest first."""
    folder = town_folder(name_or_path)
    files = sorted(folder.glob("residents*.json"))

    def count(p: Path) -> int:
        try:
            data = _read_json(p)
        except TownError:  # reported when the file is loaded
            return 0
        return len(data) if isinstance(data, list) else 0

    return sorted(files, key=lambda p: (count(p), p.name))


def load_town(name_or_path: str | Path = "default", residents: str | Path | None = "residents.json") -> Town:
    """Load and validate a town folder (or its town.json). Raises TownError on any problem.

    ``residents`` is a file name inside the town folder or a path; None loads no residents.
    """
    folder = town_folder(name_or_path)
    p = Path(name_or_path)
    map_path = p if (p.suffix == ".json" and p.is_file()) else folder / MAP_FILE
    raw = _read_json(map_path)
    try:
        tmap = TiledMap.model_validate(raw)
    except ValidationError as exc:
        raise TownError(map_path, _loc(exc), _msg(exc)) from None
    parsed = _parse_map(map_path, tmap)

    personas: list[Persona] = []
    res_path: Path | None = None
    if residents is not None:
        rp = Path(residents)
        # a bare file name is looked up in the town folder; anything else is a path
        res_path = rp if (rp.is_absolute() or len(rp.parts) > 1) else folder / rp
        personas = load_residents(res_path, parsed)

    return Town(residents=personas, residents_path=res_path, **parsed)


def load_residents(path: Path, parsed: dict[str, Any] | Town) -> list[Persona]:
    """Read a residents file and check every persona against the map."""
    raw = _read_json(path)
    if not isinstance(raw, list):
        raise TownError(path, "(top level)", f"expected a JSON list of residents, got {type(raw).__name__}")
    if not raw:
        raise TownError(path, "(top level)", "expected at least one resident, got an empty list")
    if isinstance(parsed, Town):
        sectors, spawns = parsed.sectors, parsed.spawns
        has = parsed.has_address
    else:
        sectors, spawns = parsed["sectors"], parsed["spawns"]
        has = _address_set(sectors).__contains__
    personas: list[Persona] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        persona, label = _read_persona(path, i, item)
        if persona.name in seen:
            raise TownError(path, f"{label}.name", f"duplicate resident name {persona.name!r}; names must be unique")
        seen.add(persona.name)
        for fld in ("home", "workplace"):
            addr = getattr(persona, fld)
            if not has(addr):
                raise TownError(
                    path, f"{label}.{fld}", f"unknown address {addr!r}; expected a place of the map, e.g. {next(iter(sectors))!r}"
                )
        if persona.spawn is not None and persona.spawn not in spawns:
            raise TownError(path, f"{label}.spawn",
                            f"unknown spawn point {persona.spawn!r}; expected one of: {', '.join(sorted(spawns))}")
        personas.append(persona)
    _check_relationships(path, personas)
    return personas


def _read_persona(path: Path, i: int, item: Any) -> tuple[Persona, str]:
    """One entry of a residents file as a Persona, and its label for errors ('[3] (Ada)')."""
    label = f"[{i}]"
    if isinstance(item, dict) and isinstance(item.get("name"), str):
        label = f"[{i}] ({escape_invisible(escape_controls(item['name'][:NAME_MAX]))})"  # no escape in the error
    for where, text in strings_in(item):  # bidi overrides, zero-width spaces: a name that reads as another
        why = invisible_problem(text)
        if why:
            raise TownError(path, f"{label}.{escape_invisible(where)}", why)
    try:
        return Persona.model_validate(item), label
    except ValidationError as exc:
        raise TownError(path, f"{label}.{_loc(exc)}", _msg(exc)) from None


def _check_relationships(path: Path, personas: list[Persona]) -> None:
    """Every relationship names another resident of the same file."""
    names = {p.name for p in personas}
    for i, persona in enumerate(personas):
        for j, rel in enumerate(persona.relationships):
            field_ = f"[{i}] ({persona.name}).relationships[{j}].name"
            if rel.name == persona.name:
                raise TownError(path, field_, "a resident cannot be related to themself")
            if rel.name not in names:
                raise TownError(path, field_, f"unknown resident {rel.name!r}; expected a name from this file")


# ---------------------------------------------------------------------------
# Internals
# ---------------------------------------------------------------------------


def _read_json(path: Path) -> Any:
    """A JSON file as data; TownError for a missing, special (FIFO, device), huge, binary,
    malformed or too deep file (maps.files: only regular files, the size cap before reading)."""
    try:
        return read_json(path, MAX_FILE_BYTES)
    except FileReadError as exc:
        if exc.syntax is not None:  # 'line L column C' is the field of a syntax error
            line, column, message = exc.syntax
            raise TownError(path, f"line {line} column {column}", f"invalid JSON: {message}") from None
        raise TownError(path, "(file)", exc.problem) from None


_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 80
_SHORT.maxlevel = 3


def _short(value: Any) -> str:
    """A value as an error may quote it: cut short (a 10 MB lifestyle must not be echoed)."""
    return _SHORT.repr(value)


def _plain_name(value: str, limit: int = NAME_MAX) -> str | None:
    """Why a map name or state is not plain text, or None."""
    if len(value) > limit:
        return f"is {len(value)} characters long; expected at most {limit}"
    return control_problem(value) or invisible_problem(value)


def _loc(exc: ValidationError) -> str:
    err = exc.errors()[0]
    parts: list[str] = []
    for p in err["loc"]:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        else:
            parts.append(("." if parts else "") + str(p))
    return "".join(parts) or "(top level)"


def _msg(exc: ValidationError) -> str:
    err = exc.errors()[0]
    extra = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    return f"{err['msg']}; got {_short(err.get('input'))}{extra}"


def _address_set(sectors: dict[str, Sector]) -> set[str]:
    out: set[str] = set()
    for s in sectors.values():
        out.add(s.name)
        for a in s.arenas.values():
            out.add(a.address)
            for o in a.objects.values():
                out.add(o.address)
    return out


def _props(props: list[TiledProperty]) -> dict[str, Any]:
    return {p.name: p.value for p in props}


@dataclass
class _MapReader:
    """One map file being checked: its sizes and layers, and the field-naming errors they raise."""

    path: Path
    width: int
    height: int
    tile: int
    layers: dict[str, tuple[int, TiledLayer]]

    def _layer(self, name: str, kind: str) -> tuple[str, TiledLayer]:
        if name not in self.layers:
            expected = ", ".join(REQUIRED_TILE_LAYERS + REQUIRED_OBJECT_LAYERS)
            label = "tile" if kind == "tilelayer" else "object"
            raise TownError(self.path, "layers", f"missing {label} layer {name!r} (expected layers: {expected})")
        i, layer = self.layers[name]
        where = f"layers[{i}] ({name})"
        if layer.type != kind:
            raise TownError(self.path, f"{where}.type", f"expected {kind!r}, got {layer.type!r}")
        return where, layer

    def tile_layer(self, name: str) -> np.ndarray:
        W, H = self.width, self.height
        where, layer = self._layer(name, "tilelayer")
        if layer.data is None:
            raise TownError(self.path, f"{where}.data", "expected a list of tile gids (CSV encoding, uncompressed)")
        if (layer.width, layer.height) != (W, H) or len(layer.data) != W * H:
            raise TownError(
                self.path, f"{where}.data",
                f"expected {W}x{H} = {W * H} gids, got {layer.width}x{layer.height} with {len(layer.data)}",
            )
        return np.asarray(layer.data, dtype=np.int64).reshape(H, W)

    def object_layer(self, name: str) -> tuple[str, list[TiledObject]]:
        where, layer = self._layer(name, "objectgroup")
        return where, list(layer.objects or [])

    def rect_of(self, where: str, j: int, obj: TiledObject) -> Rect:
        fld, ts = f"{where}.objects[{j}] ({obj.name or 'unnamed'})", self.tile
        vals = (obj.x, obj.y, obj.width, obj.height)
        if any(v % ts for v in vals):
            raise TownError(self.path, fld, f"expected x, y, width, height on the {ts}px tile grid, got {vals}")
        r = Rect(int(obj.x) // ts, int(obj.y) // ts, int(obj.width) // ts, int(obj.height) // ts)
        if r.w <= 0 or r.h <= 0:
            raise TownError(self.path, fld, "expected a rectangle at least one tile wide and high")
        if r.x < 0 or r.y < 0 or r.x + r.w > self.width or r.y + r.h > self.height:
            raise TownError(self.path, fld, f"rectangle {r.x},{r.y} {r.w}x{r.h} tiles lies outside the {self.width}x{self.height} map")
        return r

    def name_of(self, where: str, j: int, obj: TiledObject) -> str:
        name = obj.name.strip()
        if not name or ":" in name or name != obj.name:
            raise TownError(self.path, f"{where}.objects[{j}].name", f"expected a non-empty name without ':' or outer spaces, got {_short(obj.name)}")
        why = _plain_name(name)
        if why:
            raise TownError(self.path, f"{where}.objects[{j}].name", f"name {_short(name)} {why}")
        return name


def _map_reader(path: Path, tmap: TiledMap) -> _MapReader:
    """Refuse maps the town cannot use (not orthogonal, infinite, odd tiles, duplicate layer names)."""
    if tmap.orientation != "orthogonal":
        raise TownError(path, "orientation", f"expected 'orthogonal', got {tmap.orientation!r}")
    if tmap.infinite:
        raise TownError(path, "infinite", "expected a fixed-size map (infinite: false)")
    if tmap.width <= 0 or tmap.height <= 0:
        raise TownError(path, "width/height", f"expected positive sizes, got {tmap.width}x{tmap.height}")
    if tmap.tilewidth <= 0 or tmap.tileheight != tmap.tilewidth:
        raise TownError(path, "tilewidth/tileheight", f"expected equal positive tile sizes, got {tmap.tilewidth}x{tmap.tileheight}")
    by_name: dict[str, tuple[int, TiledLayer]] = {}
    for i, layer in enumerate(tmap.layers):
        if layer.name in by_name:
            raise TownError(path, f"layers[{i}].name", f"duplicate layer name {layer.name!r}")
        by_name[layer.name] = (i, layer)
    return _MapReader(path, tmap.width, tmap.height, tmap.tilewidth, by_name)


def _read_sectors(m: _MapReader) -> dict[str, Sector]:
    """The 'sectors' layer: named, non-overlapping rectangles, each with a kind."""
    where, objs = m.object_layer("sectors")
    sectors: dict[str, Sector] = {}
    owner = np.full((m.height, m.width), -1, dtype=np.int32)  # the sector on each tile, by order read
    for j, o in enumerate(objs):
        name = m.name_of(where, j, o)
        if name in sectors:
            raise TownError(m.path, f"{where}.objects[{j}].name", f"duplicate sector {name!r}")
        r = m.rect_of(where, j, o)
        under = owner[r.y : r.y + r.h, r.x : r.x + r.w]
        if (under >= 0).any():  # the first sector read that it overlaps, as a scan in order would name
            other = list(sectors.values())[int(under[under >= 0].min())]
            raise TownError(m.path, f"{where}.objects[{j}] ({name})", f"overlaps sector {other.name!r}; sectors must not overlap")
        under[...] = len(sectors)
        kind = str(o.prop("kind", "public"))
        why = _plain_name(kind)
        if why:
            raise TownError(m.path, f"{where}.objects[{j}] ({name}).properties.kind", f"kind {_short(kind)} {why}")
        sectors[name] = Sector(name=name, kind=kind, rect=r)
    if not sectors:
        raise TownError(m.path, f"{where}.objects", "expected at least one sector")
    return sectors


def _read_arenas(m: _MapReader, sectors: dict[str, Sector]) -> None:
    """The 'arenas' layer: rooms, each inside one sector, added to that sector."""
    where, objs = m.object_layer("arenas")
    at = _sector_grid(m, sectors)
    for j, o in enumerate(objs):
        name = m.name_of(where, j, o)
        r = m.rect_of(where, j, o)
        sector = _sector_holding(at, r)
        if sector is None:
            raise TownError(m.path, f"{where}.objects[{j}] ({name})", "expected the room to lie inside one sector rectangle; it is in none")
        if name in sector.arenas:
            raise TownError(m.path, f"{where}.objects[{j}].name", f"duplicate room {name!r} in sector {sector.name!r}")
        for other in sector.arenas.values():
            if other.rect.overlaps(r):
                raise TownError(m.path, f"{where}.objects[{j}] ({name})", f"overlaps room {other.address!r}")
        sector.arenas[name] = Arena(name=name, sector=sector.name, rect=r)


def _sector_grid(m: _MapReader, sectors: dict[str, Sector]) -> tuple[np.ndarray, list[Sector]]:
    """The sector on each tile (its index in ``sectors``, -1 for none) and the sectors in order:
    sectors do not overlap (checked on reading), so the one holding a rectangle is the one on its
    top-left tile, found in one lookup rather than a scan of every building of a big town."""
    grid = np.full((m.height, m.width), -1, dtype=np.int32)
    ordered = list(sectors.values())
    for i, s in enumerate(ordered):
        grid[s.rect.y : s.rect.y + s.rect.h, s.rect.x : s.rect.x + s.rect.w] = i
    return grid, ordered


def _sector_holding(at: tuple[np.ndarray, list[Sector]], r: Rect) -> Sector | None:
    """The sector whose rectangle holds ``r`` (at most one: sectors do not overlap), if any."""
    grid, ordered = at
    i = int(grid[r.y, r.x])
    return ordered[i] if i >= 0 and ordered[i].rect.contains(r) else None


def _arena_holding(at: tuple[np.ndarray, list[Sector]], r: Rect) -> Arena | None:
    """The (last listed) room whose rectangle holds ``r``, if any."""
    owner: Arena | None = None
    s = _sector_holding(at, r)
    for a in s.arenas.values() if s is not None else ():
        if a.rect.contains(r):
            owner = a
    return owner


def _read_objects(m: _MapReader, sectors: dict[str, Sector]) -> None:
    """The 'objects' layer: things inside a room, each with a default state in words."""
    where, objs = m.object_layer("objects")
    at = _sector_grid(m, sectors)
    for j, o in enumerate(objs):
        name = m.name_of(where, j, o)
        r = m.rect_of(where, j, o)
        owner = _arena_holding(at, r)
        if owner is None:
            raise TownError(m.path, f"{where}.objects[{j}] ({name})", "expected the object to lie inside a room (arena) rectangle; it is in none")
        if name in owner.objects:
            raise TownError(m.path, f"{where}.objects[{j}].name", f"duplicate object {name!r} in {owner.address!r}")
        state = o.prop("state", "idle")
        field_ = f"{where}.objects[{j}] ({name}).properties.state"
        if not isinstance(state, str) or not state.strip():
            raise TownError(m.path, field_, f"expected a default state in words, got {_short(state)}")
        why = _plain_name(state.strip(), SHORT_MAX)
        if why:
            raise TownError(m.path, field_, f"state {_short(state)} {why}")
        owner.objects[name] = GameObject(
            address=f"{owner.address}:{name}", name=name, sector=owner.sector, arena=owner.name,
            rect=r, default_state=state.strip(), tiles=[],
        )


def _read_spawns(m: _MapReader) -> tuple[dict[str, SpawnPoint], dict[str, str]]:
    """The 'spawns' layer: points on the map, and the field name of each for errors."""
    where, objs = m.object_layer("spawns")
    spawns: dict[str, SpawnPoint] = {}
    fields: dict[str, str] = {}
    for j, o in enumerate(objs):
        name = m.name_of(where, j, o)
        if name in spawns:
            raise TownError(m.path, f"{where}.objects[{j}].name", f"duplicate spawn point {name!r}")
        tx, ty = int(o.x) // m.tile, int(o.y) // m.tile
        if not (0 <= tx < m.width and 0 <= ty < m.height):
            raise TownError(m.path, f"{where}.objects[{j}] ({name})", f"spawn at tile ({tx}, {ty}) lies outside the {m.width}x{m.height} map")
        spawns[name] = SpawnPoint(name=name, tile=(tx, ty))
        fields[name] = f"{where}.objects[{j}] ({name})"
    if not spawns:
        raise TownError(m.path, f"{where}.objects", "expected at least one spawn point")
    return spawns, fields


def _walkable_area(path: Path, blocked: np.ndarray, spawns: dict[str, SpawnPoint], fields: dict[str, str]) -> np.ndarray:
    """The main walkable area: the connected free tiles holding the spawns (all of them must be in it)."""
    comp = _components(~blocked)
    for name, sp in spawns.items():
        x, y = sp.tile
        if blocked[y, x]:
            raise TownError(path, fields[name], f"spawn at tile ({x}, {y}) is on a blocked tile (collision layer); expected a walkable tile")
    counts = np.bincount(comp[comp >= 0].ravel()) if (comp >= 0).any() else np.zeros(0)
    spawn_comps = {name: int(comp[sp.tile[1], sp.tile[0]]) for name, sp in spawns.items()}
    main_id = max(set(spawn_comps.values()), key=lambda c: (int(counts[c]), -c))
    for name, c in spawn_comps.items():
        if c != main_id:
            x, y = spawns[name].tile
            raise TownError(
                path, fields[name],
                f"spawn at tile ({x}, {y}) is unreachable: walled off from the rest of the town; expected a tile connected to the streets",
            )
    return comp == main_id


def _place_reachable_tiles(path: Path, sectors: dict[str, Sector], walkable: np.ndarray) -> None:
    """Every sector and room must be reachable; each object gets the walkable tiles it is used from."""
    for s in sectors.values():
        if not any(walkable[t[1], t[0]] for t in s.rect.tiles()):
            raise TownError(path, f"sectors ({s.name})", "no reachable walkable tile: the sector is walled off or fully blocked")
        for a in s.arenas.values():
            if not any(walkable[t[1], t[0]] for t in a.rect.tiles()):
                raise TownError(path, f"arenas ({a.address})", "no reachable walkable tile: the room has no door or is fully blocked")
            for ob in a.objects.values():
                ob.tiles = [t for t in ob.rect.tiles() if walkable[t[1], t[0]]]
                if not ob.tiles:
                    raise TownError(
                        path, f"objects ({ob.address})",
                        "no reachable tile: objects are used by standing on them, so at least one of their tiles must be walkable",
                    )


def _tile_kinds(tmap: TiledMap) -> dict[int, str]:
    """gid -> the 'kind' property its tileset gives it (grass, water, ...)."""
    kinds: dict[int, str] = {}
    for tileset in tmap.tilesets:
        for tile in tileset.tiles:
            kind = _props(tile.properties).get("kind")
            if kind is not None:
                kinds[tileset.firstgid + tile.id] = str(kind)
    return kinds


def _parse_map(path: Path, tmap: TiledMap) -> dict[str, Any]:
    """Check a Tiled map and turn it into Town constructor arguments."""
    m = _map_reader(path, tmap)
    ground = m.tile_layer("ground")
    collision = m.tile_layer("collision")
    sectors = _read_sectors(m)
    _read_arenas(m, sectors)
    blocked = collision != 0
    _read_objects(m, sectors)
    spawns, spawn_fields = _read_spawns(m)
    walkable = _walkable_area(path, blocked, spawns, spawn_fields)
    _place_reachable_tiles(path, sectors, walkable)
    props = _props(tmap.properties)
    town_name = str(props.get("name", path.parent.name))
    why = _plain_name(town_name)
    if why:
        raise TownError(path, "properties.name", f"town name {_short(town_name)} {why}")
    return dict(
        name=town_name, folder=path.parent, map_path=path, width=m.width, height=m.height, tile_size=m.tile,
        terrain=ground.astype(np.int32), terrain_kinds=_tile_kinds(tmap), walkable=walkable,
        sectors=sectors, spawns=spawns, properties=props,
    )


def _components(free: np.ndarray) -> np.ndarray:
    """4-connected components of the free tiles; -1 for blocked tiles."""
    H, W = free.shape
    comp = np.full((H, W), -1, dtype=np.int32)
    cid = 0
    for y0 in range(H):
        for x0 in range(W):
            if not free[y0, x0] or comp[y0, x0] >= 0:
                continue
            comp[y0, x0] = cid
            q = deque([(x0, y0)])
            while q:
                x, y = q.popleft()
                for nx, ny in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
                    if 0 <= nx < W and 0 <= ny < H and free[ny, nx] and comp[ny, nx] < 0:
                        comp[ny, nx] = cid
                        q.append((nx, ny))
            cid += 1
    return comp
