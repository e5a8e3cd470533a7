"""Drawing the town and its residents with pygame, fast enough for 25 residents at 30 fps.

The static layer (ground, buildings, rooms, walls, objects and their labels) is drawn once
per zoom level into a cached surface; each frame blits the visible part of it and draws
only what moves: residents, bubbles, changed object states and encounter badges. Text is
rendered once and cached. Everything here is our own drawing; no art files are used.
"""

from __future__ import annotations

import math
import textwrap
import unicodedata
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

import pygame

from replays.frames import EncounterFrame, FrameState, Gathering, ResidentFrame, gatherings, stale_use
from replays.mapview import Area, MapView
from maps.contracts import stable_hash

# ---------------------------------------------------------------------------
# Colours
# ---------------------------------------------------------------------------

GROUND = (196, 214, 170)
STREET_DOT = (184, 203, 158)
WALL = (74, 70, 82)
ARENA_EDGE = (120, 112, 100)
OBJECT_FILL = (160, 128, 96)
OBJECT_EDGE = (96, 72, 52)
OBJECT_CHANGED = (236, 120, 40)
TEXT = (30, 30, 36)
TEXT_LIGHT = (250, 250, 250)
LABEL_BG = (255, 255, 255, 200)
BUBBLE_BG = (255, 255, 250)
BUBBLE_EDGE = (60, 60, 70)
SELECT = (255, 210, 0)
GATHERING_BG = (150, 40, 110)
PILL_BG = (170, 80, 20)  # an object's changed state
RISK_COLOURS = {
    "unknown": (130, 130, 150),
    "none": (60, 170, 90),
    "low": (230, 200, 40),
    "moderate": (240, 140, 30),
    "high": (220, 50, 50),
}
TERRAIN_COLOURS = {
    "water": (120, 170, 220),
    "road": (172, 172, 168),
    "street": (172, 172, 168),
    "path": (218, 200, 156),
    "sidewalk": (200, 196, 186),
    "sand": (230, 214, 160),
    "tree": (96, 146, 84),
    "trees": (96, 146, 84),
    "bush": (110, 160, 96),
    "flowers": (214, 170, 200),
    "door": (196, 160, 112),
}
IDLE_STATES = {"", "idle", "off", "closed", "empty", "clean", "unused"}


def _srgb_to_lab(rgb: tuple[int, int, int]) -> tuple[float, float, float]:
    """CIELAB (D65) of an sRGB colour: distances here match how different colours look."""
    def lin(c: float) -> float:
        c /= 255.0
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(v) for v in rgb)
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    fx, fy, fz = f(x), f(y), f(z)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def colour_distance(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """Perceptual distance (CIE76 delta E): about 2 is just noticeable, 25+ is clearly different."""
    la, lb = _srgb_to_lab(a), _srgb_to_lab(b)
    return sum((p - q) ** 2 for p, q in zip(la, lb)) ** 0.5


def spread_palette(n: int, avoid: tuple[tuple[int, int, int], ...]) -> tuple[tuple[int, int, int], ...]:
    """``n`` marker colours, each as far as possible (in CIELAB) from the others and from the
    map's own colours: greedy farthest-point picks over a grid of saturated colours."""
    candidates: list[tuple[int, int, int]] = []
    c = pygame.Color(0)
    for h in range(0, 360, 6):
        for s, v in ((90, 95), (75, 70), (95, 55), (55, 100), (100, 40)):
            c.hsva = (float(h), float(s), float(v), 100.0)
            candidates.append((c.r, c.g, c.b))
    labs = {col: _srgb_to_lab(col) for col in candidates}

    def d(a: tuple[float, ...], b: tuple[float, ...]) -> float:
        return sum((p - q) ** 2 for p, q in zip(a, b)) ** 0.5

    nearest = {col: min(d(labs[col], _srgb_to_lab(x)) for x in avoid) for col in candidates}
    picked: list[tuple[int, int, int]] = [max(candidates, key=lambda col: (nearest[col], col))]
    while len(picked) < n:
        last = labs[picked[-1]]
        for col in candidates:
            nearest[col] = min(nearest[col], d(labs[col], last))
        picked.append(max(candidates, key=lambda col: (nearest[col], col)))
    return tuple(picked)


# Colours a GIF keeps exactly (with every marker colour): dots' rims, text, labels, selection.
FIXED_COLOURS: tuple[tuple[int, int, int], ...] = (
    (20, 20, 24), TEXT, TEXT_LIGHT, (255, 255, 255), (60, 60, 70), SELECT, GATHERING_BG, OBJECT_CHANGED, WALL, GROUND,
    PILL_BG, (40, 40, 52), *RISK_COLOURS.values(),
)

# 32 marker colours, spread apart and away from the ground, walls and label backgrounds: what
# spread_palette(32, PALETTE_AVOIDS) gives (tests/replays/test_viewer_layout.py checks they
# agree), written out because computing it took ~40 ms of every command's start-up.
PALETTE_AVOIDS: tuple[tuple[int, int, int], ...] = (GROUND, WALL, (255, 255, 255), (20, 20, 24))
PALETTE: tuple[tuple[int, int, int], ...] = (
    (24, 24, 242), (242, 24, 24), (24, 242, 24), (242, 24, 176), (242, 220, 24), (114, 142, 255), (0, 102, 0),
    (140, 86, 7), (0, 0, 102), (24, 242, 155), (140, 7, 60), (24, 198, 242), (255, 128, 114), (7, 140, 113),
    (220, 24, 242), (184, 255, 114), (242, 155, 24), (114, 255, 240), (7, 73, 140), (140, 140, 7), (138, 44, 178),
    (255, 114, 170), (242, 24, 89), (102, 0, 91), (44, 178, 44), (24, 89, 242), (140, 20, 7), (255, 212, 114),
    (240, 114, 255), (7, 113, 140), (198, 242, 24), (44, 71, 178),
)


def resident_colours(names: "list[str] | tuple[str, ...] | set[str]") -> dict[str, tuple[int, int, int]]:
    """One palette colour per resident, by name order: up to len(PALETTE) residents never
    share a colour, and the same set of residents always gets the same colours."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(sorted(names))}


def resident_colour(name: str) -> tuple[int, int, int]:
    """A stable palette colour for a resident seen alone (no town to share colours with)."""
    return PALETTE[stable_hash(name) % len(PALETTE)]


def sector_colour(name: str) -> tuple[int, int, int]:
    """A soft pastel per building, stable across runs."""
    h = stable_hash(name)
    c = pygame.Color(0)
    c.hsva = ((h % 360), 18.0 + (h >> 9) % 10, 92.0, 100.0)
    return c.r, c.g, c.b


def _lighter(rgb: tuple[int, int, int], k: float = 0.35) -> tuple[int, int, int]:
    return tuple(int(v + (255 - v) * k) for v in rgb)  # type: ignore[return-value]


# ---------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------


# The engine's emoji as a word on a coloured chip, where no colour emoji font is installed: a
# monochrome font draws them as tiny grey glyphs (issue 30), or not at all.
EMOJI_WORDS: dict[str, tuple[str, tuple[int, int, int]]] = {
    "😴": ("asleep", (88, 96, 168)), "🍳": ("cooking", (214, 120, 40)), "🥪": ("lunch", (196, 132, 52)),
    "🍲": ("dinner", (180, 96, 48)), "🥐": ("baking", (200, 140, 60)), "☕": ("coffee", (130, 84, 52)),
    "🍺": ("pub", (196, 150, 30)), "💼": ("work", (84, 96, 120)), "📖": ("reading", (60, 120, 160)),
    "📚": ("study", (60, 110, 170)), "🧑\u200d🏫": ("teaching", (70, 130, 110)), "🚶": ("walking", (96, 140, 80)),
    "🎉": ("event", (210, 60, 140)), "🩺": ("clinic", (40, 150, 150)), "🏦": ("bank", (110, 110, 60)),
    "🛋": ("resting", (140, 100, 150)), "🚿": ("washing", (60, 150, 200)), "🪥": ("washing", (60, 150, 200)),
    "💬": ("talking", (70, 110, 200)), "🛒": ("shopping", (160, 110, 60)),
}
NEUTRAL_EMOJI = frozenset({"🙂", "😊", "🙂\ufe0f"})  # a smile says nothing of what one does


def emoji_word(emoji: str) -> tuple[str, tuple[int, int, int]] | None:
    """The word and chip colour of an emoji: the engine's own from :data:`EMOJI_WORDS`, any other
    from its Unicode name ('hot beverage' -> 'beverage'); None for a smile or no emoji."""
    bare = emoji.replace("\ufe0f", "").strip()
    if not bare or bare in NEUTRAL_EMOJI:
        return None
    if bare in EMOJI_WORDS:
        return EMOJI_WORDS[bare]
    names = [unicodedata.name(ch, "") for ch in bare if unicodedata.category(ch) not in ("Mn", "Cf")]
    word = next((n.split()[-1].lower() for n in names if n), "")
    return (word, (110, 110, 124)) if word else None


class Fonts:
    """The fonts used everywhere, plus a text-surface cache and an emoji fallback."""

    def __init__(self) -> None:
        if not pygame.font.get_init():
            pygame.font.init()
        path = pygame.font.match_font("dejavusans") or None
        bold = pygame.font.match_font("dejavusans", bold=True) or path
        self.small = pygame.font.Font(path, 12)
        self.normal = pygame.font.Font(path, 14)
        self.bold = pygame.font.Font(bold, 14)
        self.big = pygame.font.Font(bold, 18)
        emoji_path = pygame.font.match_font("notocoloremoji,notoemoji,symbola,dejavusans")
        self.emoji = pygame.font.Font(emoji_path, 14) if emoji_path else self.normal
        self._cache: OrderedDict[tuple, pygame.Surface] = OrderedDict()
        self._emoji_ok: dict[str, bool] = {}
        self._icons: dict[tuple[str, int], pygame.Surface | None] = {}
        self._colour_emoji = _colour_emoji_font()

    def render(self, text: str, font: pygame.font.Font, colour=TEXT, bg=None) -> pygame.Surface:
        key = (text, id(font), colour, bg)
        surf = self._cache.get(key)
        if surf is not None:
            self._cache.move_to_end(key)
            return surf
        surf = font.render(text, True, colour, bg) if bg else font.render(text, True, colour)
        self._cache[key] = surf
        if len(self._cache) > 4000:
            self._cache.popitem(last=False)
        return surf

    def emoji_icon(self, emoji: str, height: int) -> pygame.Surface | None:
        """The emoji drawn legibly at ``height`` px: in colour from a colour emoji font when one is
        installed (scaled from its fixed bitmap size), else as its word on a coloured chip; None
        for a smile or no emoji (nothing to tell)."""
        key = (emoji, height)
        if key not in self._icons:
            meaning = emoji_word(emoji)
            icon = _colour_glyph(self._colour_emoji, emoji, height) if meaning else None
            if icon is None and meaning:
                word, colour = meaning
                text = self.render(word, self.small, TEXT_LIGHT)
                icon = pygame.Surface((text.get_width() + 8, height), pygame.SRCALPHA)
                pygame.draw.rect(icon, colour, icon.get_rect(), border_radius=height // 2)
                icon.blit(text, (4, (height - text.get_height()) // 2))
            self._icons[key] = icon
        return self._icons[key]

    def emoji_text(self, emoji: str, words: bool = False) -> str:
        """The emoji itself when a font here can draw it; else its Unicode name in words
        (``words``, for roomy places such as the side panel) or nothing (compact labels)."""
        if not emoji:
            return ""
        ok = self._emoji_ok.get(emoji)
        if ok is None:
            metrics = self.emoji.metrics(emoji) or []
            ok = bool(metrics) and all(m is not None for m in metrics)
            self._emoji_ok[emoji] = ok
        if ok:
            return emoji
        if not words:
            return ""
        names = []
        for ch in emoji:
            if unicodedata.category(ch) in ("Mn", "Cf") or ch in "\ufe0f\u200d":
                continue
            names.append(unicodedata.name(ch, "").lower())
        words = " ".join(n for n in names if n)
        return f"({words})" if words else ""


def _colour_emoji_font() -> object | None:
    """A colour emoji font (Noto Color Emoji's bitmaps, drawn by pygame.freetype), if installed."""
    path = pygame.font.match_font("notocoloremoji")
    if not path:
        return None
    try:
        import pygame.freetype as freetype  # an optional pygame module: a build may lack it

        freetype.init()
        return freetype.Font(path, 109)  # the font's one bitmap size
    except (ImportError, OSError, pygame.error):
        return None


def _colour_glyph(font: object | None, emoji: str, height: int) -> pygame.Surface | None:
    """``emoji`` from the colour font scaled to ``height``; None when there is none or it fails."""
    if font is None:
        return None
    try:
        glyph, _ = font.render(emoji)  # type: ignore[attr-defined]
    except (pygame.error, OSError, ValueError):
        return None
    if glyph.get_height() <= 0:
        return None
    width = max(1, glyph.get_width() * height // glyph.get_height())
    return pygame.transform.smoothscale(glyph.convert_alpha() if pygame.display.get_surface() else glyph,
                                        (width, height))


# ---------------------------------------------------------------------------
# Camera
# ---------------------------------------------------------------------------

SOFT_COST = 6  # spots farther out a label goes to keep off a room's name or another building
LABEL_CHARS = 26  # characters of an activity line under a resident's name (two lines at most)

ZOOMS = (4, 5, 6, 7, 8, 10, 12, 14, 16, 18, 20, 24, 28, 32, 40, 48)


@dataclass
class Camera:
    """What part of the map is on screen: top-left in map pixels at ``tile_px`` per tile."""

    x: float = 0.0
    y: float = 0.0
    tile_px: int = 16

    def tile_to_screen(self, tile: tuple[float, float], origin: tuple[int, int] = (0, 0)) -> tuple[int, int]:
        return (int(tile[0] * self.tile_px - self.x) + origin[0],
                int(tile[1] * self.tile_px - self.y) + origin[1])

    def screen_to_tile(self, pos: tuple[int, int], origin: tuple[int, int] = (0, 0)) -> tuple[int, int]:
        return (int((pos[0] - origin[0] + self.x) // self.tile_px),
                int((pos[1] - origin[1] + self.y) // self.tile_px))

    def zoom(self, steps: int, anchor: tuple[int, int]) -> None:
        """Zoom by ``steps`` levels keeping the map point under ``anchor`` (view coords) still."""
        i = min(range(len(ZOOMS)), key=lambda k: abs(ZOOMS[k] - self.tile_px))
        j = max(0, min(len(ZOOMS) - 1, i + steps))
        new = ZOOMS[j]
        if new == self.tile_px:
            return
        mx = (anchor[0] + self.x) / self.tile_px
        my = (anchor[1] + self.y) / self.tile_px
        self.tile_px = new
        self.x = mx * new - anchor[0]
        self.y = my * new - anchor[1]

    def fit(self, mapview: MapView, view: tuple[int, int]) -> None:
        """Choose the largest zoom that shows the whole map, and centre it."""
        best = ZOOMS[0]
        for z in ZOOMS:
            if mapview.width * z <= view[0] and mapview.height * z <= view[1]:
                best = z
        self.tile_px = best
        self.x = (mapview.width * best - view[0]) / 2
        self.y = (mapview.height * best - view[1]) / 2

    def centre_on(self, tile: tuple[float, float], view: tuple[int, int]) -> None:
        self.x = (tile[0] + 0.5) * self.tile_px - view[0] / 2
        self.y = (tile[1] + 0.5) * self.tile_px - view[1] / 2


# ---------------------------------------------------------------------------
# The static layer
# ---------------------------------------------------------------------------


def draw_static(mapview: MapView, tile_px: int, fonts: Fonts,
                labels_out: list[PlacedLabel] | None = None) -> pygame.Surface:
    """The map without residents at ``tile_px`` pixels per tile: drawn once, then cached.
    The labels it placed are appended to ``labels_out`` (what moves is kept off them)."""
    t = tile_px
    size = (mapview.width * t, mapview.height * t)
    surf = pygame.Surface(size).convert() if pygame.display.get_init() \
        and pygame.display.get_surface() is not None else pygame.Surface(size)
    _draw_ground(surf, mapview, t)
    _draw_places(surf, mapview, t)
    # Labels last so that nothing covers them, placed so that none covers another.
    placed = place_static_labels(mapview, t, fonts)
    if labels_out is not None:
        labels_out.extend(placed)
    for label in placed:
        _draw_label(surf, label)
    return surf


def _fill_tiles(surf: pygame.Surface, tiles: Iterable[tuple[int, int]], col: tuple[int, int, int], t: int) -> None:
    for (x, y) in tiles:
        surf.fill(col, (x * t, y * t, t, t))


def _draw_ground(surf: pygame.Surface, mapview: MapView, t: int) -> None:
    """Ground, the street dot pattern (when tiles are big enough) and terrain other than floor and water."""
    surf.fill(GROUND)
    if t >= 8:
        for y in range(0, mapview.height, 2):
            for x in range((y // 2) % 2, mapview.width, 2):
                surf.fill(STREET_DOT, (x * t + t // 2, y * t + t // 2, 1, 1))
    for kind, tiles in sorted(mapview.terrain.items()):
        if kind not in ("floor", "water"):
            _fill_tiles(surf, tiles, TERRAIN_COLOURS.get(kind) or _lighter(sector_colour(kind), 0.1), t)


def _draw_places(surf: pygame.Surface, mapview: MapView, t: int) -> None:
    """Sectors, rooms (a lighter shade of their sector), water, walls, then objects on top."""
    sector_fill: dict[str, tuple[int, int, int]] = {}
    for s in mapview.of_kind("sector"):
        sector_fill[s.address] = sector_colour(s.name)
        _fill_tiles(surf, s.tiles, sector_fill[s.address], t)
    for a in mapview.of_kind("arena"):
        _fill_tiles(surf, a.tiles, _lighter(sector_fill.get(a.address.split(":")[0], (230, 226, 214)), 0.45), t)
        _outline(surf, a, t, ARENA_EDGE, 1)
    _fill_tiles(surf, mapview.terrain.get("water", ()), TERRAIN_COLOURS["water"], t)
    _fill_tiles(surf, mapview.blocked, WALL, t)
    pad = max(1, t // 8)
    for o in mapview.of_kind("object"):
        for (x, y) in o.tiles:
            pygame.draw.rect(surf, OBJECT_FILL, (x * t + pad, y * t + pad, t - 2 * pad, t - 2 * pad),
                             border_radius=max(1, t // 5))
        _outline(surf, o, t, OBJECT_EDGE, 1, inset=max(1, t // 8))


def _draw_label(surf: pygame.Surface, label: PlacedLabel) -> None:
    if label.bg is not None:
        if label.kind == "sector":
            pygame.draw.rect(surf, label.bg, label.rect, border_radius=4)
        else:
            bg = pygame.Surface(label.rect.size, pygame.SRCALPHA)
            bg.fill(label.bg)
            surf.blit(bg, label.rect.topleft)
    surf.blit(label.surface, (label.rect.x + label.pad[0], label.rect.y + label.pad[1]))


@dataclass
class PlacedLabel:
    """A label of the static layer: what it says and where it was put (map pixels)."""

    kind: str  # sector | arena | object
    text: str
    surface: pygame.Surface
    rect: pygame.Rect
    pad: tuple[int, int] = (0, 0)
    bg: tuple[int, ...] | None = None


def place_label(size: tuple[int, int], candidates: list[tuple[int, int]], taken: list[pygame.Rect],
                bounds: pygame.Rect | None = None) -> pygame.Rect | None:
    """The first candidate top-left where a ``size`` box overlaps nothing already taken
    (and stays inside ``bounds``); None when every candidate collides."""
    for x, y in candidates:
        box = pygame.Rect(x, y, size[0], size[1])
        if bounds is not None and not bounds.contains(box):
            continue
        if box.collidelist(taken) < 0:
            taken.append(box)
            return box
    return None


def place_static_labels(mapview: MapView, t: int, fonts: Fonts) -> list[PlacedLabel]:
    """Building, room and object names at ``t`` px per tile, none overlapping another.

    Buildings first (they matter most), then rooms, then objects; each tries a few spots in
    order and is left out when all of them are taken (zoom in to see it).
    """
    taken: list[pygame.Rect] = []
    out: list[PlacedLabel] = []
    bounds = pygame.Rect(0, 0, mapview.width * t, mapview.height * t)
    for s in mapview.of_kind("sector"):
        x0, y0, x1, y1 = s.bbox
        label = fonts.render(s.name, fonts.bold if t >= 12 else fonts.small, TEXT_LIGHT)
        w, h = label.get_width() + 8, label.get_height() + 2
        cx = (x0 + x1 + 1) * t // 2 - w // 2
        above, inside, below = y0 * t - h - 1, y0 * t + 1, (y1 + 1) * t + 1
        spots = [(cx, above), (cx, inside), (cx, below)] if t >= 12 else [(cx, inside), (cx, above)]
        box = place_label((w, h), spots, taken, bounds)
        if box is not None:
            out.append(PlacedLabel("sector", s.name, label, box, (4, 1), (60, 60, 72)))
    if t >= 10:
        for a in mapview.of_kind("arena"):
            x0, y0, x1, y1 = a.bbox
            label = fonts.render(a.name, fonts.small, (90, 84, 76))
            w, h = label.get_width() + 4, label.get_height()
            room = pygame.Rect(x0 * t, y0 * t, (x1 - x0 + 1) * t, (y1 - y0 + 1) * t)
            spots = [(room.x + 1, room.y + 2), (room.right - w - 1, room.y + 2),
                     (room.x + 1, room.bottom - h - 2), (room.right - w - 1, room.bottom - h - 2)]
            box = place_label((w, h), spots, taken, room)
            if box is not None:
                out.append(PlacedLabel("arena", a.name, label, box, (2, 0)))
    if t >= 16:
        for o in mapview.of_kind("object"):
            x0, y0, x1, y1 = o.bbox
            label = fonts.render(o.name, fonts.small, TEXT)
            w, h = label.get_width() + 4, label.get_height()
            cx = (x0 + x1 + 1) * t // 2 - w // 2
            mid = (y0 + y1 + 1) * t // 2 - h // 2
            spots = [(cx, (y1 + 1) * t - h // 2), (cx, mid), (cx, y0 * t - h // 2), (cx, (y1 + 1) * t + 1)]
            if t >= 20:
                spots.insert(0, spots.pop(1))
            box = place_label((w, h), spots, taken, bounds)
            if box is not None:
                out.append(PlacedLabel("object", o.name, label, box, (2, 0), (255, 255, 255, 150)))
    return out


def _outline(surf: pygame.Surface, area: Area, t: int, colour, width: int, inset: int = 0) -> None:
    """Draw the border of an area's tile set (only edges facing outside the area)."""
    tiles = area.tiles
    for (x, y) in tiles:
        px, py = x * t, y * t
        if (x, y - 1) not in tiles:
            pygame.draw.line(surf, colour, (px + inset, py + inset), (px + t - 1 - inset, py + inset), width)
        if (x, y + 1) not in tiles:
            pygame.draw.line(surf, colour, (px + inset, py + t - 1 - inset), (px + t - 1 - inset, py + t - 1 - inset), width)
        if (x - 1, y) not in tiles:
            pygame.draw.line(surf, colour, (px + inset, py + inset), (px + inset, py + t - 1 - inset), width)
        if (x + 1, y) not in tiles:
            pygame.draw.line(surf, colour, (px + t - 1 - inset, py + inset), (px + t - 1 - inset, py + t - 1 - inset), width)


# ---------------------------------------------------------------------------
# The renderer
# ---------------------------------------------------------------------------


class MapRenderer:
    """Draws a :class:`FrameState` over the cached static map into a rectangle of a surface."""

    def __init__(self, mapview: MapView, fonts: Fonts | None = None) -> None:
        self.map = mapview
        self.fonts = fonts or Fonts()
        self._static: OrderedDict[int, pygame.Surface] = OrderedDict()
        self._bubbles: OrderedDict[tuple, pygame.Surface] = OrderedDict()
        self._label_cache: OrderedDict[tuple, pygame.Surface] = OrderedDict()
        self._colours: tuple[tuple[str, ...], dict[str, tuple[int, int, int]]] = ((), {})
        self._static_labels: dict[int, list[pygame.Rect]] = {}
        self._sector_labels: dict[int, list[pygame.Rect]] = {}
        self._room_labels: dict[int, list[pygame.Rect]] = {}
        self._soft: list[pygame.Rect] = []  # room names on screen: covered only when nothing else fits
        self._sectors: dict[str, pygame.Rect] = {}
        self._sector_boxes: dict[str, tuple[int, int, int, int]] = {}  # in tiles, made once
        self.gathered: list[Gathering] = []  # the gatherings the last draw put a banner on
        self.players: set[str] = set()  # people who joined the town (watch --join): a white ring marks them
        self.pills: list[pygame.Rect] = []  # object-state labels of the last draw
        # Activity under every name: None = when zoomed in (12+ px per tile) or selected;
        # True = always (exported pictures); False = names only.
        self.show_activity: bool | None = None
        # What the last draw put on screen, by resident: marker centre and radius, label box.
        self.markers: dict[str, tuple[int, int, int]] = {}
        self.labels: dict[str, pygame.Rect] = {}
        self.badges: list[pygame.Rect] = []
        self._bounds = pygame.Rect(0, 0, 0, 0)

    def colour(self, name: str) -> tuple[int, int, int]:
        """The marker colour of ``name`` among the residents last drawn."""
        return self._colours[1].get(name) or resident_colour(name)

    def _update_colours(self, frame: FrameState) -> None:
        names = tuple(sorted(frame.residents))
        if names != self._colours[0]:
            self._colours = (names, resident_colours(names))

    def static(self, tile_px: int) -> pygame.Surface:
        surf = self._static.get(tile_px)
        if surf is None:
            placed: list[PlacedLabel] = []
            surf = draw_static(self.map, tile_px, self.fonts, placed)
            self._static[tile_px] = surf
            self._static_labels[tile_px] = [lab.rect for lab in placed]
            self._sector_labels[tile_px] = [lab.rect for lab in placed if lab.kind == "sector"]
            self._room_labels[tile_px] = [lab.rect for lab in placed if lab.kind != "sector"]
            if len(self._static) > 3:
                self._static.popitem(last=False)
        else:
            self._static.move_to_end(tile_px)
        return surf

    # -- one frame ---------------------------------------------------------

    def draw(self, surface: pygame.Surface, rect: pygame.Rect, frame: FrameState, camera: Camera,
             selected: str | None = None, selected_object: str | None = None,
             positions: dict[str, tuple[float, float]] | None = None) -> None:
        """Draw the map part of ``frame`` into ``rect`` of ``surface``; ``positions`` are residents
        between two tiles (the live viewer's walking animation)."""
        t = camera.tile_px
        prev_clip = surface.get_clip()
        surface.set_clip(rect)
        surface.fill((150, 170, 140), rect)
        static = self.static(t)
        surface.blit(static, rect.topleft, pygame.Rect(int(camera.x), int(camera.y), rect.width, rect.height))
        origin = rect.topleft
        self._draw_objects(surface, frame, camera, origin, selected_object)
        self._update_colours(frame)
        # Residents sharing a tile are fanned out around it, and dots that would touch pushed apart.
        order = sorted(frame.residents.values(), key=lambda r: (r.name == selected, r.tile[1], r.name))
        visible = [r for r in order if self._on_screen(r.tile, camera, rect)]
        self.markers = fan_out(visible, camera, origin, positions)
        # Labels and bubbles never cover one another nor a marker, nor a building's name; they
        # keep off room names and other buildings where a spot allows (see _draw_label).
        self.labels, self.badges = {}, []
        shift = (origin[0] - int(camera.x), origin[1] - int(camera.y))
        taken: list[pygame.Rect] = list(self.pills) + [r.move(shift) for r in self._sector_labels.get(t, ())]
        self._soft = [r.move(shift) for r in self._room_labels.get(t, ())]
        self._sectors = self._sector_rects(camera, origin)
        self._bounds = rect
        dots = [pygame.Rect(x - r - 1, y - r - 1, 2 * r + 3, 2 * r + 3) for x, y, r in self.markers.values()]
        self.gathered = self._draw_gatherings(surface, frame, camera, origin, taken, dots)
        self._draw_people(surface, visible, camera, origin, selected, taken, dots)
        for enc in sorted(frame.encounters.values(), key=lambda e: e.encounter_id):
            self._draw_badge(surface, enc, frame, camera, origin)
        surface.set_clip(prev_clip)

    def _draw_people(self, surface, visible: list[ResidentFrame], camera: Camera, origin,
                     selected: str | None, taken: list[pygame.Rect], dots: list[pygame.Rect]) -> None:
        """Labels (the selected resident's first), then dots, then speech bubbles lifted clear of
        one another; a label that finds no free spot is left out (a "N here" badge counts a
        crowded tile; zoom in to see it)."""
        first = sorted(visible, key=lambda r: (r.name != selected, r.tile[1], r.tile[0], r.name))
        self._draw_crowd_badges(surface, visible, taken)
        for res in first:
            box = self._draw_label(surface, res, camera, res.name == selected, taken, dots)
            if box is not None:
                self.labels[res.name] = box
        # dots after labels (which keep clear of them), so a leader line never covers a dot
        for res in visible:
            self._draw_marker(surface, res, self.markers[res.name], res.name == selected)
        bubbles: list[pygame.Rect] = []
        for res in first:
            if res.bubble is not None:
                self._draw_bubble(surface, res, camera, origin, bubbles)

    def _sector_rects(self, camera: Camera, origin) -> dict[str, pygame.Rect]:
        """Every building's box on screen, by name (a label keeps off the buildings of others)."""
        t = camera.tile_px
        if not self._sector_boxes:
            self._sector_boxes = {s.address: s.bbox for s in self.map.of_kind("sector")}
        out = {}
        for address, (x0, y0, x1, y1) in self._sector_boxes.items():
            sx, sy = camera.tile_to_screen((x0, y0), origin)
            out[address] = pygame.Rect(sx, sy, (x1 - x0 + 1) * t, (y1 - y0 + 1) * t)
        return out

    def _draw_gatherings(self, surface, frame: FrameState, camera: Camera, origin,
                         taken: list[pygame.Rect], dots: list[pygame.Rect]) -> list[Gathering]:
        """A banner over each gathering's place: what it is and who is there (first names, then
        '+N'), placed clear of the map's names; residents' labels then keep clear of it."""
        shown = []
        for g in gatherings(frame):
            area = self.map.find(g.place) or self.map.find(g.place.split(":")[0])
            if area is None:
                continue
            x0, y0, x1, y1 = area.bbox
            left, top = camera.tile_to_screen((x0, y0), origin)
            right, bottom = camera.tile_to_screen((x1 + 1, y1 + 1), origin)
            firsts = [n.split()[0] for n in g.names]
            who = ", ".join(firsts[:4]) + (f" +{len(firsts) - 4}" if len(firsts) > 4 else "")
            head = self.fonts.render(clip_words(g.title, 40), self.fonts.bold, TEXT_LIGHT)
            names = self.fonts.render(f"{len(g.names)} here: {who}", self.fonts.small, TEXT_LIGHT)
            w, h = max(head.get_width(), names.get_width()) + 14, head.get_height() + names.get_height() + 6
            cx = (left + right) // 2 - w // 2
            spots = [(cx, top - h - 2 - k * (h + 2)) for k in range(4)] + [(cx, bottom + 2)]
            spots += [(x, top + k * (h + 2)) for k in range(-2, 4) for x in (right + 4, left - w - 4)]
            box = place_label((w, h), spots, taken + dots, self._bounds)
            if box is None:
                continue
            taken.append(box)
            place = pygame.Rect(left, top, right - left, bottom - top)
            if not box.inflate(8, 8).colliderect(place):  # set apart from its place: a line to it
                pygame.draw.line(surface, GATHERING_BG, box.center, place.center, 2)
            pygame.draw.rect(surface, GATHERING_BG, box, border_radius=8)
            pygame.draw.rect(surface, (255, 255, 255), box, 1, border_radius=8)
            surface.blit(head, (box.x + 7, box.y + 2))
            surface.blit(names, (box.x + 7, box.y + 3 + head.get_height()))
            shown.append(g)
        return shown

    def _on_screen(self, tile: tuple[int, int], camera: Camera, rect: pygame.Rect) -> bool:
        x, y = camera.tile_to_screen(tile, rect.topleft)
        m = 200
        return rect.left - m <= x <= rect.right + m and rect.top - m <= y <= rect.bottom + m

    def _draw_objects(self, surface, frame: FrameState, camera: Camera, origin, selected_object) -> None:
        """Outline objects whose state changed, with the state beside them where it fits:
        clear of the map's own labels and of one another."""
        t = camera.tile_px
        dx, dy = origin[0] - int(camera.x), origin[1] - int(camera.y)
        taken: list[pygame.Rect] | None = None  # the map's labels on screen, made when first needed
        self.pills = []
        for address, state in frame.objects.items():
            default = self.map.default_states.get(address, "idle")
            unchanged = state == default or state.lower() in IDLE_STATES or stale_use(state, address, frame)
            if unchanged and address != selected_object:
                continue
            area = self.map.find(address)
            if area is None:
                continue
            x0, y0, x1, y1 = area.bbox
            sx, sy = camera.tile_to_screen((x0, y0), origin)
            w, h = (x1 - x0 + 1) * t, (y1 - y0 + 1) * t
            colour = SELECT if address == selected_object else OBJECT_CHANGED
            pygame.draw.rect(surface, colour, (sx - 1, sy - 1, w + 2, h + 2), 2, border_radius=3)
            if t >= 8:
                label = self.fonts.render(_clip(state, 32), self.fonts.small, TEXT_LIGHT, PILL_BG)
                lw, lh = label.get_size()
                cx = sx + w // 2 - lw // 2
                spots = [(cx, sy - lh - 1), (cx, sy + h + 1), (sx + w + 2, sy + h // 2 - lh // 2),
                         (sx - lw - 2, sy + h // 2 - lh // 2)]
                if taken is None:
                    taken = [r.move(dx, dy) for r in self._static_labels.get(t, ())]
                box = place_label((lw, lh), spots, taken)
                if box is None:
                    continue  # the orange outline still marks it; its state is in the panel
                surface.blit(label, box.topleft)
                self.pills.append(box)

    def _draw_marker(self, surface, res: ResidentFrame, marker: tuple[int, int, int], selected: bool) -> None:
        cx, cy, r = marker
        if selected:
            pygame.draw.circle(surface, SELECT, (cx, cy), r + 3)
        elif res.name in self.players:
            pygame.draw.circle(surface, (255, 255, 255), (cx, cy), r + 3)
        pygame.draw.circle(surface, (20, 20, 24), (cx, cy), r + 1)
        pygame.draw.circle(surface, self.colour(res.name), (cx, cy), r)
        if res.asleep and r >= 4:
            z = self.fonts.render("z", self.fonts.small, TEXT)
            surface.blit(z, (cx + r - 2, cy - r - z.get_height() + 4))

    def _draw_crowd_badges(self, surface, visible: list[ResidentFrame], taken: list[pygame.Rect]) -> None:
        """A "N here" pill over every tile with three or more residents on it."""
        by_tile: dict[tuple[int, int], list[str]] = {}
        for res in visible:
            by_tile.setdefault(res.tile, []).append(res.name)
        for tile, names in sorted(by_tile.items()):
            if len(names) < 3:
                continue
            xs = [self.markers[n][0] for n in names]
            ys = [self.markers[n][1] - self.markers[n][2] for n in names]
            label = self.fonts.render(f"{len(names)} here", self.fonts.small, TEXT_LIGHT)
            w, h = label.get_width() + 8, label.get_height() + 2
            cx = (min(xs) + max(xs)) // 2
            box = place_label((w, h), [(cx - w // 2, min(ys) - h - 2), (max(xs) + 8, min(ys) - h)], taken)
            if box is None:
                continue
            pygame.draw.rect(surface, (40, 40, 52), box, border_radius=h // 2)
            surface.blit(label, (box.x + 4, box.y + 1))
            self.badges.append(box)

    def _label_surface(self, res: ResidentFrame, selected: bool, zoomed: bool) -> pygame.Surface:
        """The whole label (swatch, name, emoji chip, activity wrapped at words on up to two lines)
        as one cached surface: one blit a frame."""
        fonts = self.fonts
        show = (self.show_activity if self.show_activity is not None else zoomed) or selected
        colour = self.colour(res.name)
        key = (res.name, res.action if show else "", res.emoji if show else "", res.asleep, zoomed, selected, colour)
        surf = self._label_cache.get(key)
        if surf is not None:
            self._label_cache.move_to_end(key)
            return surf
        acts: list[str] = []
        icon = None
        if show:
            acts = wrap_words(res.action, LABEL_CHARS, 2 if zoomed else 1)  # small pictures: one line
            icon = fonts.emoji_icon(res.emoji, fonts.small.get_height())
            if res.asleep and not acts:
                acts = ["asleep"]
        name = fonts.render(res.name, fonts.bold if selected else fonts.small, TEXT)
        rows = [fonts.render(a, fonts.small, (60, 60, 70)) for a in acts]
        if icon is not None and not rows:
            rows = [pygame.Surface((0, icon.get_height()), pygame.SRCALPHA)]
        lead = icon.get_width() + 3 if icon is not None else 0
        sw = 10  # colour swatch
        w = max([name.get_width()] + [r.get_width() + (lead if i == 0 else 0) for i, r in enumerate(rows)]) + 8 + sw
        h = name.get_height() + sum(r.get_height() for r in rows) + 2
        surf = pygame.Surface((w, h), pygame.SRCALPHA)
        surf.fill(LABEL_BG)
        sy = 1 + name.get_height() // 2
        pygame.draw.circle(surf, (20, 20, 24), (3 + sw // 2, sy), sw // 2)
        pygame.draw.circle(surf, colour, (3 + sw // 2, sy), sw // 2 - 1)
        surf.blit(name, (5 + sw, 1))
        y = 1 + name.get_height()
        for i, row in enumerate(rows):
            if i == 0 and icon is not None:
                surf.blit(icon, (5 + sw, y + (row.get_height() - icon.get_height()) // 2))
            surf.blit(row, (5 + sw + (lead if i == 0 else 0), y))
            y += row.get_height()
        self._label_cache[key] = surf
        if len(self._label_cache) > 600:
            self._label_cache.popitem(last=False)
        return surf

    def _draw_label(self, surface, res: ResidentFrame, camera: Camera, selected: bool,
                    taken: list[pygame.Rect], dots: list[pygame.Rect]) -> pygame.Rect | None:
        """Name (and activity) in a box by the resident's own dot, with a swatch of its colour
        so that the name can never be read as another dot's; None when it did not fit."""
        cx, cy, r = self.markers[res.name]
        label = self._label_surface(res, selected, camera.tile_px >= 12)
        w, h = label.get_size()
        g = r + 3
        own = pygame.Rect(cx - r - 1, cy - r - 1, 2 * r + 3, 2 * r + 3)
        box = self._best_spot(res, self._spots(cx, cy, g, w, h), (w, h), taken, dots, own)
        if box is None:
            if not selected:
                return None
            box = pygame.Rect(cx - w // 2, cy + g, w, h)
        taken.append(box)
        if not box.inflate(2 * g, 2 * g).collidepoint(cx, cy):  # set apart from its dot: a leader line
            end = (min(max(cx, box.left), box.right - 1), min(max(cy, box.top), box.bottom - 1))
            pygame.draw.line(surface, (60, 60, 70), (cx, cy), end, 1)
        surface.blit(label, box.topleft)
        return box

    def _best_spot(self, res: ResidentFrame, spots, size: tuple[int, int], taken: list[pygame.Rect],
                   dots: list[pygame.Rect], own: pygame.Rect) -> pygame.Rect | None:
        """The nearest spot that covers no other label, dot or building name and stays on screen;
        among those, the first that also keeps off room names and other people's buildings
        (names spilled onto neighbouring houses, issue 30), else the one that breaks least."""
        home = self._sectors.get(res.address.split(":")[0]) if res.address else None
        others = [r for a, r in self._sectors.items() if r is not home]
        best, best_cost = None, float("inf")
        for i, (x, y) in enumerate(spots):
            if i >= best_cost:
                break  # every later spot costs more than the best: farther is worse
            cand = pygame.Rect(x, y, size[0], size[1])
            if not self._bounds.contains(cand) or cand.collidelist(taken) >= 0:
                continue
            hits = cand.collidelistall(dots)
            if hits and not all(dots[k] == own for k in hits):
                continue
            soft = (cand.collidelist(self._soft) >= 0) + (cand.collidelist(others) >= 0)
            cost = i + SOFT_COST * soft  # a room name covered is worth a few spots farther out
            if cost < best_cost:
                best, best_cost = cand, cost
        return best

    @staticmethod
    def _spots(cx: int, cy: int, g: int, w: int, h: int):
        """Where a label may go, nearest first: below, beside, above its dot, then farther out,
        stacked, so that a crowded tile's names line up beside it."""
        yield cx - w // 2, cy + g
        yield cx + g, cy - h // 2
        yield cx - g - w, cy - h // 2
        yield cx - w // 2, cy - g - h
        yield cx + g, cy + g - 2
        yield cx - g - w, cy + g - 2
        yield cx + g, cy - g - h + 2
        yield cx - g - w, cy - g - h + 2
        for k in range(1, 9):
            d = k * (h + 1)
            yield cx - w // 2, cy + g + d
            yield cx + g, cy - h // 2 + d
            yield cx - g - w, cy - h // 2 + d
            yield cx - w // 2, cy - g - h - d
            yield cx + g, cy - h // 2 - d
            yield cx - g - w, cy - h // 2 - d
        # more columns on each side, for a crowd whose first columns are full (leader lines join them)
        for col in (1, 2, 3):
            for k in range(0, 13):
                for d in ((k * (h + 1),) if k == 0 else (k * (h + 1), -k * (h + 1))):
                    yield cx + g + col * (w // 2 + 60), cy - h // 2 + d
                    yield cx - g - w - col * (w // 2 + 60), cy - h // 2 + d

    def _draw_bubble(self, surface, res: ResidentFrame, camera: Camera, origin,
                     taken: list[pygame.Rect]) -> None:
        assert res.bubble is not None
        t = camera.tile_px
        mx, my, mr = self.markers.get(res.name) or (*camera.tile_to_screen((res.tile[0] + 0.5, res.tile[1] + 0.5), origin), t // 2)
        cx, cy = mx, my - mr
        key = (res.bubble.text, res.bubble.listener)
        surf = self._bubbles.get(key)
        if surf is None:
            surf = self._make_bubble(res.bubble.text, res.bubble.listener)
            self._bubbles[key] = surf
            if len(self._bubbles) > 300:
                self._bubbles.popitem(last=False)
        x = cx - surf.get_width() // 2
        y = cy - surf.get_height() - max(4, t // 3) - 6
        box = pygame.Rect(x, y, surf.get_width(), surf.get_height())
        for _ in range(len(taken)):
            hit = box.collidelist(taken)
            if hit < 0:
                break
            box.bottom = taken[hit].top - 2
        taken.append(box)
        tail_top = box.bottom - 1
        pygame.draw.line(surface, BUBBLE_EDGE, (cx, tail_top), (cx, cy - max(4, t // 3)), 1)
        surface.blit(surf, box.topleft)
        pygame.draw.polygon(surface, BUBBLE_BG, [(cx - 5, tail_top), (cx + 5, tail_top), (cx, tail_top + 7)])

    def _make_bubble(self, text: str, listener: str) -> pygame.Surface:
        fonts = self.fonts
        wrapped = textwrap.wrap(text, 34)[:3] or [""]
        if len(textwrap.wrap(text, 34)) > 3:
            wrapped[-1] = _clip(wrapped[-1] + " ...", 34)
        lines = [fonts.render(line, fonts.small, TEXT) for line in wrapped]
        if listener:
            lines.insert(0, fonts.render(f"to {listener}:", fonts.small, (110, 110, 130)))
        w = max(s.get_width() for s in lines) + 12
        h = sum(s.get_height() for s in lines) + 8
        surf = pygame.Surface((w, h), pygame.SRCALPHA)
        pygame.draw.rect(surf, BUBBLE_BG, (0, 0, w, h), border_radius=8)
        pygame.draw.rect(surf, BUBBLE_EDGE, (0, 0, w, h), 1, border_radius=8)
        y = 4
        for s in lines:
            surf.blit(s, (6, y))
            y += s.get_height()
        return surf

    def _draw_badge(self, surface, enc: EncounterFrame, frame: FrameState, camera: Camera, origin) -> None:
        anchor: tuple[float, float] | None = None
        if enc.resident and enc.resident in frame.residents:
            rt = frame.residents[enc.resident].tile
            anchor = (rt[0] + 1.0, rt[1] - 0.2)
        elif enc.place:
            area = self.map.find(enc.place) or self.map.find(enc.place.split(":")[0])
            if area is not None:
                anchor = area.centre
        if anchor is None:
            return
        x, y = camera.tile_to_screen(anchor, origin)
        colour = RISK_COLOURS.get(enc.risk, RISK_COLOURS["unknown"])
        word = {"unknown": "AI ...", "none": "AI safe"}.get(enc.risk, f"AI {enc.risk}")
        if enc.risk_label and enc.risk not in ("unknown",):
            word = f"{word} ({enc.risk_label})"
        label = self.fonts.render(word, self.fonts.small, TEXT_LIGHT)
        w, h = label.get_width() + 10, label.get_height() + 4
        pygame.draw.rect(surface, colour, (x, y - h, w, h), border_radius=h // 2)
        pygame.draw.rect(surface, (30, 30, 30), (x, y - h, w, h), 1, border_radius=h // 2)
        surface.blit(label, (x + 5, y - h + 2))


def fan_out(residents: list[ResidentFrame], camera: Camera, origin: tuple[int, int],
            positions: dict[str, tuple[float, float]] | None = None) -> dict[str, tuple[int, int, int]]:
    """Screen centre and radius of every resident's dot: alone on a tile at its centre;
    several on one tile spread on a small ring around it (by name), smaller, so that every
    one of them can be seen and clicked; then pushed apart wherever dots of neighbouring tiles
    would still touch (:func:`separate`). ``positions`` (tile coordinates, fractional while a
    resident walks between two tiles in the live viewer) override a resident's tile."""
    t = camera.tile_px
    r_one = max(3, int(t * 0.42))
    positions = positions or {}
    by_tile: dict[tuple[int, int], list[str]] = {}
    out: dict[str, tuple[int, int, int]] = {}
    for res in residents:
        if res.name in positions:
            x, y = camera.tile_to_screen((positions[res.name][0] + 0.5, positions[res.name][1] + 0.5), origin)
            out[res.name] = (x, y, r_one)
        else:
            by_tile.setdefault(res.tile, []).append(res.name)
    for tile, names in by_tile.items():
        cx, cy = camera.tile_to_screen((tile[0] + 0.5, tile[1] + 0.5), origin)
        n = len(names)
        if n == 1:
            out[names[0]] = (cx, cy, r_one)
            continue
        r = max(3, min(r_one, int(t * 0.32)))
        ring = max(r + 2, (r + 1.5) / math.sin(math.pi / n))
        for k, name in enumerate(sorted(names)):
            a = -math.pi / 2 + 2 * math.pi * k / n
            out[name] = (int(round(cx + ring * math.cos(a))), int(round(cy + ring * math.sin(a))), r)
    return separate(out)


MARKER_GAP = 1  # pixels between two dots' dark rims


def markers_touch(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    """Whether two drawn dots (centre, radius; each with a 1 px rim) overlap or touch."""
    return math.hypot(a[0] - b[0], a[1] - b[1]) < a[2] + b[2] + 2 + MARKER_GAP


def separate(markers: dict[str, tuple[int, int, int]], rounds: int = 12) -> dict[str, tuple[int, int, int]]:
    """Dots pushed apart, pair by pair in name order, until none touches another: at a small zoom
    the dots of neighbours on adjacent tiles of a shared home overlapped (issue 30)."""
    names = sorted(markers)
    pos = {n: [float(markers[n][0]), float(markers[n][1])] for n in names}
    for _ in range(rounds):
        moved = False
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                need = markers[a][2] + markers[b][2] + 2 + MARKER_GAP + 1.5  # rounding takes up to 1.42
                dx, dy = pos[b][0] - pos[a][0], pos[b][1] - pos[a][1]
                d = math.hypot(dx, dy)
                if d >= need:
                    continue
                ux, uy = (dx / d, dy / d) if d > 1e-6 else (1.0, 0.0)
                push = (need - d) / 2 + 0.5
                pos[a][0] -= ux * push
                pos[a][1] -= uy * push
                pos[b][0] += ux * push
                pos[b][1] += uy * push
                moved = True
        if not moved:
            break
    return {n: (int(round(pos[n][0])), int(round(pos[n][1])), markers[n][2]) for n in names}


def _clip(text: str, n: int) -> str:
    return clip_words(text, n)


def clip_words(text: str, n: int) -> str:
    """``text`` in at most ``n`` characters, cut after a whole word with an ellipsis ('making
    coffee and toast at…', never 'at Oa…'); a single word longer than ``n`` is cut in it."""
    text = " ".join(text.split())
    if len(text) <= n:
        return text
    cut = text[: n - 1]
    space = cut.rfind(" ")
    if space >= n // 3:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


def wrap_words(text: str, width: int, lines: int) -> list[str]:
    """``text`` wrapped at words into at most ``lines`` lines of ``width`` characters, the last
    one ending in an ellipsis after a whole word when the text is longer."""
    wrapped = textwrap.wrap(" ".join(text.split()), width) or []
    if len(wrapped) > lines:
        wrapped = wrapped[: lines - 1] + [clip_words(" ".join(wrapped[lines - 1:]), width)]
    return wrapped
