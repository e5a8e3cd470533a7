"""Drawing the town and its residents with pygame, fast enough for 25 residents at 30 fps.

The static layer (ground, buildings, rooms, walls, objects and their labels) is drawn once
per zoom level into a cached surface; each frame blits the visible part of it and draws
only what moves: residents, bubbles, changed object states and encounter badges. Text is
rendered once and cached. Everything here is our own drawing; no art files are used.
"""

from __future__ import annotations

import textwrap
import unicodedata
import zlib
from collections import OrderedDict
from dataclasses import dataclass

import pygame

from replays.frames import EncounterFrame, FrameState, ResidentFrame
from replays.mapview import Area, MapView

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


def _hash(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def resident_colour(name: str) -> tuple[int, int, int]:
    """A stable, saturated marker colour for a resident (distinct from map colours)."""
    h = _hash(name)
    hue = (h % 360) / 360.0
    c = pygame.Color(0)
    c.hsva = (hue * 360.0, 75.0, 85.0, 100.0)
    return c.r, c.g, c.b


def sector_colour(name: str) -> tuple[int, int, int]:
    """A soft pastel per building, stable across runs."""
    h = _hash(name)
    c = pygame.Color(0)
    c.hsva = ((h % 360), 18.0 + (h >> 9) % 10, 92.0, 100.0)
    return c.r, c.g, c.b


def _lighter(rgb: tuple[int, int, int], k: float = 0.35) -> tuple[int, int, int]:
    return tuple(int(v + (255 - v) * k) for v in rgb)  # type: ignore[return-value]


# ---------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# Camera
# ---------------------------------------------------------------------------

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


def draw_static(mapview: MapView, tile_px: int, fonts: Fonts) -> pygame.Surface:
    """The map without residents at ``tile_px`` pixels per tile: drawn once, then cached."""
    t = tile_px
    surf = pygame.Surface((mapview.width * t, mapview.height * t)).convert() if pygame.display.get_init() \
        and pygame.display.get_surface() is not None else pygame.Surface((mapview.width * t, mapview.height * t))
    surf.fill(GROUND)
    if t >= 8:
        for y in range(0, mapview.height, 2):
            for x in range((y // 2) % 2, mapview.width, 2):
                surf.fill(STREET_DOT, (x * t + t // 2, y * t + t // 2, 1, 1))
    for kind, tiles in sorted(mapview.terrain.items()):
        if kind in ("floor", "water"):
            continue
        col = TERRAIN_COLOURS.get(kind) or _lighter(sector_colour(kind), 0.1)
        for (x, y) in tiles:
            surf.fill(col, (x * t, y * t, t, t))
    sectors = mapview.of_kind("sector")
    arenas = mapview.of_kind("arena")
    objects = mapview.of_kind("object")
    sector_fill: dict[str, tuple[int, int, int]] = {}
    for s in sectors:
        col = sector_colour(s.name)
        sector_fill[s.address] = col
        for (x, y) in s.tiles:
            surf.fill(col, (x * t, y * t, t, t))
    for a in arenas:
        base = sector_fill.get(a.address.split(":")[0], (230, 226, 214))
        col = _lighter(base, 0.45)
        for (x, y) in a.tiles:
            surf.fill(col, (x * t, y * t, t, t))
        _outline(surf, a, t, ARENA_EDGE, 1)
    for (x, y) in mapview.terrain.get("water", ()):
        surf.fill(TERRAIN_COLOURS["water"], (x * t, y * t, t, t))
    for (x, y) in mapview.blocked:
        surf.fill(WALL, (x * t, y * t, t, t))
    for o in objects:
        for (x, y) in o.tiles:
            pad = max(1, t // 8)
            pygame.draw.rect(surf, OBJECT_FILL, (x * t + pad, y * t + pad, t - 2 * pad, t - 2 * pad),
                             border_radius=max(1, t // 5))
        _outline(surf, o, t, OBJECT_EDGE, 1, inset=max(1, t // 8))
    # Labels last so that nothing covers them.
    if t >= 10:
        for a in arenas:
            x0, y0, x1, _ = a.bbox
            label = fonts.render(a.name, fonts.small, (90, 84, 76))
            if label.get_width() <= (x1 - x0 + 1) * t:
                surf.blit(label, (x0 * t + 3, y0 * t + 2))
        for o in objects if t >= 16 else ():
            x0, y0, x1, y1 = o.bbox
            label = fonts.render(o.name, fonts.small, TEXT)
            cx = (x0 + x1 + 1) * t // 2 - label.get_width() // 2
            cy = (y1 + 1) * t - label.get_height() // 2 if t < 20 else (y0 + y1 + 1) * t // 2 - label.get_height() // 2
            bg = pygame.Surface((label.get_width() + 4, label.get_height()), pygame.SRCALPHA)
            bg.fill((255, 255, 255, 150))
            surf.blit(bg, (cx - 2, cy))
            surf.blit(label, (cx, cy))
    for s in sectors:
        x0, y0, x1, y1 = s.bbox
        label = fonts.render(s.name, fonts.bold if t >= 12 else fonts.small, TEXT_LIGHT)
        w, h = label.get_width() + 8, label.get_height() + 2
        cx = (x0 + x1 + 1) * t // 2 - w // 2
        cy = max(0, y0 * t - h - 1) if y0 > 0 and t >= 12 else y0 * t + 1
        pygame.draw.rect(surf, (60, 60, 72), (cx, cy, w, h), border_radius=4)
        surf.blit(label, (cx + 4, cy + 1))
    return surf


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
        self._label_bg: dict[tuple[int, int], pygame.Surface] = {}

    def static(self, tile_px: int) -> pygame.Surface:
        surf = self._static.get(tile_px)
        if surf is None:
            surf = draw_static(self.map, tile_px, self.fonts)
            self._static[tile_px] = surf
            if len(self._static) > 3:
                self._static.popitem(last=False)
        else:
            self._static.move_to_end(tile_px)
        return surf

    # -- one frame ---------------------------------------------------------

    def draw(self, surface: pygame.Surface, rect: pygame.Rect, frame: FrameState, camera: Camera,
             selected: str | None = None, selected_object: str | None = None) -> None:
        """Draw the map part of ``frame`` into ``rect`` of ``surface``."""
        t = camera.tile_px
        prev_clip = surface.get_clip()
        surface.set_clip(rect)
        surface.fill((150, 170, 140), rect)
        static = self.static(t)
        surface.blit(static, rect.topleft, pygame.Rect(int(camera.x), int(camera.y), rect.width, rect.height))
        origin = rect.topleft
        self._draw_objects(surface, frame, camera, origin, selected_object)
        # Residents: markers first, then labels, then bubbles, so text is never covered.
        order = sorted(frame.residents.values(), key=lambda r: (r.name == selected, r.tile[1], r.name))
        visible = [r for r in order if self._on_screen(r.tile, camera, rect)]
        for res in visible:
            self._draw_marker(surface, res, camera, origin, res.name == selected)
        # Labels and bubbles never cover one another: the selected resident's go first, then
        # the rest in a fixed order; a label that would overlap is left out (zoom in to see
        # it), a bubble is lifted above the ones already drawn.
        taken: list[pygame.Rect] = []
        first = sorted(visible, key=lambda r: (r.name != selected, r.tile[1], r.tile[0], r.name))
        for res in first:
            self._draw_label(surface, res, camera, origin, res.name == selected, taken)
        bubbles: list[pygame.Rect] = []
        for res in first:
            if res.bubble is not None:
                self._draw_bubble(surface, res, camera, origin, bubbles)
        for enc in sorted(frame.encounters.values(), key=lambda e: e.encounter_id):
            self._draw_badge(surface, enc, frame, camera, origin)
        surface.set_clip(prev_clip)

    def _on_screen(self, tile: tuple[int, int], camera: Camera, rect: pygame.Rect) -> bool:
        x, y = camera.tile_to_screen(tile, rect.topleft)
        m = 200
        return rect.left - m <= x <= rect.right + m and rect.top - m <= y <= rect.bottom + m

    def _draw_objects(self, surface, frame: FrameState, camera: Camera, origin, selected_object) -> None:
        t = camera.tile_px
        for address, state in frame.objects.items():
            default = self.map.default_states.get(address, "idle")
            unchanged = state == default or state.lower() in IDLE_STATES
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
                label = self.fonts.render(_clip(state, 32), self.fonts.small, TEXT_LIGHT, (170, 80, 20))
                surface.blit(label, (sx + w // 2 - label.get_width() // 2, sy - label.get_height() - 1))

    def _draw_marker(self, surface, res: ResidentFrame, camera: Camera, origin, selected: bool) -> None:
        t = camera.tile_px
        cx, cy = camera.tile_to_screen((res.tile[0] + 0.5, res.tile[1] + 0.5), origin)
        r = max(3, int(t * 0.42))
        if selected:
            pygame.draw.circle(surface, SELECT, (cx, cy), r + 3)
        pygame.draw.circle(surface, (20, 20, 24), (cx, cy), r + 1)
        pygame.draw.circle(surface, resident_colour(res.name), (cx, cy), r)
        if res.asleep and t >= 10:
            z = self.fonts.render("z", self.fonts.small, TEXT)
            surface.blit(z, (cx + r - 2, cy - r - z.get_height() + 4))

    def _draw_label(self, surface, res: ResidentFrame, camera: Camera, origin, selected: bool,
                    taken: list[pygame.Rect]) -> None:
        t = camera.tile_px
        cx, cy = camera.tile_to_screen((res.tile[0] + 0.5, res.tile[1] + 1), origin)
        fonts = self.fonts
        name = fonts.render(res.name, fonts.bold if selected else fonts.small, TEXT)
        lines = [name]
        if t >= 12 or selected:
            act = " ".join(x for x in (fonts.emoji_text(res.emoji), _clip(res.action, 30)) if x)
            if act:
                lines.append(fonts.render(act, fonts.small, (60, 60, 70)))
        w = max(s.get_width() for s in lines) + 6
        h = sum(s.get_height() for s in lines) + 2
        bg = self._label_bg.get((w, h))
        if bg is None:
            bg = pygame.Surface((w, h), pygame.SRCALPHA)
            bg.fill(LABEL_BG)
            self._label_bg[(w, h)] = bg
        x = cx - w // 2
        y = cy + 1
        box = pygame.Rect(x, y, w, h)
        if not selected and box.collidelist(taken) >= 0:
            return
        taken.append(box)
        surface.blit(bg, (x, y))
        for s in lines:
            surface.blit(s, (cx - s.get_width() // 2, y + 1))
            y += s.get_height()

    def _draw_bubble(self, surface, res: ResidentFrame, camera: Camera, origin,
                     taken: list[pygame.Rect]) -> None:
        assert res.bubble is not None
        t = camera.tile_px
        cx, cy = camera.tile_to_screen((res.tile[0] + 0.5, res.tile[1]), origin)
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


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"
