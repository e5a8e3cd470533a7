"""The pygame viewer: the town map, a side panel, a time bar and a command box.

One :class:`Viewer` serves live watching and replay. It holds a :class:`FrameState` and
folds every incoming :class:`TickRecords` into it with :func:`replays.frames.apply`, from
a :class:`~replays.feeds.LiveFeed` (engine listener) or a :class:`~replays.feeds.ReplayFeed`
(run folder). Drawing is a pure function of the frame and the view state, so headless
exports (PNG, GIF) call :meth:`Viewer.draw` on an off-screen surface.

Controls: click a resident to select (click empty ground to clear), click an object to
pick it; drag or arrow keys to pan; wheel or PageUp/PageDown to zoom; space to pause;
+/- to change speed (pace when live); Home/End and the time bar to seek (replay);
',' and '.' step one tick back/forward while paused; Tab cycles residents; F follows the
selection; 0 fits the map; Enter focuses the command box; Esc leaves it or clears the
selection; Q quits.
"""

from __future__ import annotations

import textwrap
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pygame

from maps.contracts import Command, either
from replays import commands, control
from replays.control import _result_to_reply
from replays.feeds import LiveFeed, ReplayFeed
from replays.frames import FrameState, apply, gatherings
from replays.mapview import MapView
from replays.render import RISK_COLOURS, Camera, Fonts, MapRenderer, clip_words, fan_out

PANEL_W = 400
BAR_H = 56
INPUT_H = 34
PANEL_BG = (36, 38, 46)
PANEL_FG = (226, 228, 234)
PANEL_DIM = (150, 154, 168)
PANEL_HEAD = (255, 214, 102)
BAR_BG = (28, 30, 36)
BUTTON = (62, 66, 80)
BUTTON_ON = (96, 140, 220)
ACCENT = (255, 196, 0)
SPEEDS = (1, 2, 5, 10, 30, 60, 120, 300, 600, 1200, 3600, 7200)
# The box's own modes (not commands): an interview, and a joined person's line. A command's mode
# is declared with the command (maps.contracts.Command.input_mode; replays.commands.input_modes).
OWN_MODES = {"ask": ("Interview", ("i", "interview")), "say": ("Say", ())}
TARGET_HINT = {"resident": "(click a resident)", "object": "(click an object, or type ADDRESS = state)"}
MOVE_S = 0.15  # real seconds a step between two tiles is animated over (live and replay playback)


def input_modes() -> tuple[str, ...]:
    """The input box's modes when watching: each declared command's, then the interview."""
    return (*commands.input_modes(), "ask")


def mode_label(mode: str) -> str:
    """A mode's button: the command's declared label, or the box's own mode's."""
    model = Command.kinds.get(mode)
    return model.input_mode.label if model is not None and model.input_mode is not None else OWN_MODES[mode][0]


def mode_target(mode: str) -> str:
    """What a mode's command is about: 'resident', 'object' or '' (none, or not a command)."""
    model = Command.kinds.get(mode)
    return model.input_mode.target if model is not None and model.input_mode is not None else ""


def slash_aliases() -> dict[str, str]:
    """'/w', '/whisper', '/ask', ...: what the box takes after a slash, and the mode each means."""
    aliases = {}
    for kind, model in commands.input_modes().items():
        aliases.update({a: kind for a in (*(model.input_mode.aliases if model.input_mode else ()), kind)})
    for mode, (_, short) in OWN_MODES.items():
        if mode != "say":
            aliases.update({a: mode for a in (*short, mode)})
    return aliases


class NoDisplayError(RuntimeError):
    """There is no screen to open a window on; the message says what to do instead."""


def check_display() -> None:
    """Make sure a window can be shown, before anything slow (a run) starts.

    SDL quietly falls back to an invisible 'offscreen' driver when there is no screen; a
    viewer would then run unseen. That is refused unless asked for (SDL_VIDEODRIVER set).
    """
    import os

    try:
        pygame.display.init()
    except pygame.error as exc:
        raise NoDisplayError(f"cannot open a window: {exc}; headless pictures work with "
                             "`townsfolk replay DIR --png-dir D --at TIME` or `--export day.gif`") from None
    driver = pygame.display.get_driver()
    if driver in ("offscreen", "dummy") and os.environ.get("SDL_VIDEODRIVER", "") != driver:
        raise NoDisplayError(
            "no screen to show the viewer on (SDL fell back to its invisible "
            f"'{driver}' driver); run it where there is a display, or make pictures headless "
            "with `townsfolk replay DIR --png-dir D --at TIME` or `--export day.gif`")


@dataclass
class Notice:
    text: str
    good: bool
    until: float  # real time (time.monotonic)


class _PanelWriter:
    """Writes the side panel top to bottom: headings, wrapped lines, a big title; stops at the bottom."""

    def __init__(self, surf: pygame.Surface, fonts: Any) -> None:
        self.surf, self.fonts, self.y = surf, fonts, 12
        self.wrap = max(24, surf.get_width() // 8)

    def head(self, text: str) -> None:
        self.y += 6
        s = self.fonts.render(text, self.fonts.bold, PANEL_HEAD)
        self.surf.blit(s, (14, self.y))
        self.y += s.get_height() + 2

    def title(self, text: str, x: int = 14) -> None:
        s = self.fonts.render(text, self.fonts.big, (255, 255, 255))
        self.surf.blit(s, (x, self.y))
        self.y += s.get_height() + 2

    def line(self, text: str, colour: Any = PANEL_FG, indent: int = 14, font: Any = None) -> None:
        for part in textwrap.wrap(text, self.wrap - indent // 8) or [""]:
            if self.y > self.surf.get_height() - 20:
                return
            s = self.fonts.render(part, font or self.fonts.small, colour)
            self.surf.blit(s, (indent, self.y))
            self.y += s.get_height() + 1


def _relationship_lines(rels: list[dict], talks: dict[str, int]) -> list[tuple[str, Any]]:
    """The persona's relationships (with lines exchanged), then others they talked with."""
    out: list[tuple[str, Any]] = []
    shown = set()
    for rel in rels[:8]:
        other = rel.get("name", "")
        n = talks.get(other, 0)
        extra = f", {n} lines exchanged" if n else ""
        out.append((f"• {other}: {rel.get('relation', '')} (closeness {rel.get('closeness', 0.5):.1f}{extra})", PANEL_FG))
        shown.add(other)
    for other, n in sorted(talks.items(), key=lambda kv: -kv[1])[:8]:
        if other not in shown:
            out.append((f"• {other}: talked ({n} lines)", PANEL_FG))
    if not rels and not talks:
        out.append(("(no one yet)", PANEL_DIM))
    return out


class Viewer:
    """Window-independent viewer state, event handling and drawing."""

    def __init__(self, mapview: MapView, feed: ReplayFeed | LiveFeed, *, size: tuple[int, int] = (1600, 900),
                 frame: FrameState | None = None, speed: float = 60.0, run_dir: str | Path | None = None,
                 model: str = "local", title: str = "townsfolk",
                 interviewer: Callable[..., str] | None = None, player: str | None = None) -> None:
        self.map = mapview
        # the resident a person plays (watch --join): the input box says their lines, a click walks them
        self.player = player
        self.feed = feed
        self.size = size
        self.fonts = Fonts()
        self.renderer = MapRenderer(mapview, self.fonts)
        self.renderer.players = {player} if player else set()
        self.frame = frame or FrameState()
        self.camera = Camera()
        self.run_dir = Path(run_dir) if run_dir is not None else getattr(feed, "run_dir", None)
        self.model = model
        self.title = title
        self.speed = float(speed)
        self.paused = False
        self.selected: str | None = None
        self.selected_object: str | None = None
        self.follow = False
        self.running = True
        self.mode = "say" if player else "whisper"
        self.text = ""
        self.typing = False
        self.notices: deque[Notice] = deque(maxlen=6)
        self.interviews: dict[str, list[tuple[str, str | None]]] = {}
        self._interview_lock = threading.Lock()
        self._interview_version = 0
        self._interviewer = interviewer
        self.play_time: datetime = self.frame.time
        self._drag_from: tuple[int, int] | None = None
        self._drag_moved = False
        self._drag_cam: tuple[float, float] = (0.0, 0.0)
        self._seeking = False
        self._panel_cache: tuple[tuple, pygame.Surface, list[tuple[pygame.Rect, str]]] | None = None
        self._buttons: list[tuple[pygame.Rect, Callable[[], None]]] = []
        self._fps = 0.0
        self._last_refresh = 0.0
        # a picture (PNG, GIF) has no controls to press: no play button, speed or command box
        self.picture = False
        # walking animated between tiles: in the window (run() turns it on), not in a frame drawn
        # straight after a tick (tests compare live and replay pixels) nor in pictures
        self.animate = False
        # residents walking between two tiles: (from tile, to tile, real time the step began)
        self._motion: dict[str, tuple[tuple[float, float], tuple[int, int], float]] = {}
        self.camera.fit(mapview, self.map_rect.size)

    # -- layout ----------------------------------------------------------------

    @property
    def panel_w(self) -> int:
        """The side panel's width: full on big windows, narrower on small ones, none on tiny
        exports (a 960-wide GIF is better spent on the map)."""
        w = self.size[0]
        return PANEL_W if w >= 1400 else 300 if w >= 1000 else 0

    @property
    def input_h(self) -> int:
        return INPUT_H if self.size[0] >= 1000 and not self.picture else 0

    @property
    def map_rect(self) -> pygame.Rect:
        w, h = self.size
        return pygame.Rect(0, 0, max(100, w - self.panel_w), max(100, h - BAR_H - self.input_h))

    @property
    def panel_rect(self) -> pygame.Rect:
        w, h = self.size
        return pygame.Rect(w - self.panel_w, 0, self.panel_w, h - BAR_H)

    @property
    def bar_rect(self) -> pygame.Rect:
        w, h = self.size
        return pygame.Rect(0, h - BAR_H, w, BAR_H)

    @property
    def input_rect(self) -> pygame.Rect:
        m = self.map_rect
        return pygame.Rect(0, m.bottom, m.width, self.input_h)

    def resize(self, size: tuple[int, int]) -> None:
        self.size = size
        self._panel_cache = None

    # -- time ------------------------------------------------------------------

    def set_frame(self, frame: FrameState) -> None:
        self.frame = frame
        self.play_time = frame.time
        self._motion.clear()  # a seek jumps; only playback walks

    def _note_moves(self, before: FrameState) -> None:
        """Residents who stepped to a neighbouring tile since ``before`` walk there over MOVE_S."""
        now = time.monotonic()
        current = self.positions(now)
        for name, res in self.frame.residents.items():
            old = before.residents.get(name)
            if old is None or old.tile == res.tile:
                continue
            if max(abs(old.tile[0] - res.tile[0]), abs(old.tile[1] - res.tile[1])) <= 3:
                self._motion[name] = (current.get(name, (float(old.tile[0]), float(old.tile[1]))), res.tile, now)
            else:
                self._motion.pop(name, None)

    def positions(self, now: float | None = None) -> dict[str, tuple[float, float]]:
        """Where walking residents are drawn now, between their last two tiles (none in pictures)."""
        now = time.monotonic() if now is None else now
        out = {}
        for name, (src, dst, began) in list(self._motion.items()):
            f = (now - began) / MOVE_S
            if f >= 1.0 or self.picture or not self.animate:
                del self._motion[name]
                continue
            out[name] = (src[0] + (dst[0] - src[0]) * f, src[1] + (dst[1] - src[1]) * f)
        return out

    def seek(self, tick: int) -> None:
        if isinstance(self.feed, ReplayFeed):
            bounds = self.feed.bounds()
            if bounds is not None:
                tick = max(bounds[0], min(bounds[1], tick))
            self.set_frame(self.feed.seek(tick))

    def seek_time(self, when: datetime) -> None:
        if isinstance(self.feed, ReplayFeed):
            self.set_frame(self.feed.seek(self.feed.reader.tick_at_time(when)))

    def update(self, dt: float) -> None:
        """Advance by ``dt`` real seconds: take due ticks from the feed and apply them."""
        before = self.frame
        self._take_ticks(dt)
        if self.frame is not before and self.animate:
            self._note_moves(before)
        if self.follow and self.selected in self.frame.residents:
            self.camera.centre_on(self.frame.residents[self.selected].tile, self.map_rect.size)

    def _take_ticks(self, dt: float) -> None:
        """Apply the ticks now due: all a live feed has, or a replay's up to its play time."""
        if isinstance(self.feed, LiveFeed):
            for tr in self.feed.drain():
                self.frame = apply(self.frame, tr)
            self.play_time = self.frame.time
        else:
            now = time.monotonic()
            if now - self._last_refresh > 1.0:
                self.feed.refresh()
                self._last_refresh = now
            if not self.paused and not self._seeking:
                if self.frame.tick < 0:
                    bounds = self.feed.bounds()
                    if bounds is not None:
                        first = self.feed.next_tick(-1)
                        if first is not None:
                            self.play_time = first.time
                self.play_time += timedelta(seconds=dt * self.speed)
                ticks, self.play_time = self.feed.advance(self.frame.tick, self.play_time)
                for tr in ticks:
                    self.frame = apply(self.frame, tr)
                bounds = self.feed.bounds()
                if not ticks and bounds is not None and self.frame.tick >= bounds[1]:
                    self.play_time = self.frame.time  # at the end: wait for more (live folder)

    def step(self, n: int) -> None:
        if isinstance(self.feed, ReplayFeed):
            if n > 0:
                nxt = self.feed.next_tick(self.frame.tick)
                if nxt is not None:
                    self.feed.take()
                    self.set_frame(apply(self.frame, nxt))
            elif self.frame.tick >= 0:
                bounds = self.feed.bounds()
                if bounds is not None and self.frame.tick > bounds[0]:
                    self.seek(self.frame.tick - 1)

    def toggle_pause(self) -> None:
        self.paused = not self.paused
        if isinstance(self.feed, LiveFeed):
            self.feed.set_paused(self.paused)

    def change_speed(self, direction: int) -> None:
        if isinstance(self.feed, LiveFeed):
            pace = self.feed.pace or 60.0
            i = min(range(len(SPEEDS)), key=lambda k: abs(SPEEDS[k] - pace))
            self.feed.set_pace(float(SPEEDS[max(0, min(len(SPEEDS) - 1, i + direction))]))
            self.notify(f"pace {self.feed.pace:g} game s per s", True)
        else:
            i = min(range(len(SPEEDS)), key=lambda k: abs(SPEEDS[k] - self.speed))
            self.speed = float(SPEEDS[max(0, min(len(SPEEDS) - 1, i + direction))])

    # -- commands ----------------------------------------------------------------

    def notify(self, text: str, good: bool = True, seconds: float = 5.0) -> None:
        self.notices.append(Notice(text, good, time.monotonic() + seconds))

    def inject(self, command: dict[str, Any]) -> bool:
        """Send a command to the live run (engine or control socket); report the outcome."""
        try:
            command = commands.validate(command)
        except commands.CommandError as exc:
            self.notify(str(exc), False, 8)
            return False
        try:
            if isinstance(self.feed, LiveFeed):
                reply = _result_to_reply(self.feed.submit(command))
            else:
                if self.run_dir is None or not control.is_live(self.run_dir):
                    self.notify("this run is not live: commands go to a live run "
                                "(townsfolk watch, or replay a folder whose run is still going)", False, 8)
                    return False
                reply = control.inject(self.run_dir, command)
        except Exception as exc:
            self.notify(f"refused {commands.describe(command)}: {exc}", False, 8)
            return False
        if reply.get("ok"):
            self.notify(f"sent {commands.describe(command)}", True)
            return True
        self.notify(f"refused {commands.describe(command)}: {reply.get('error') or reply.get('message')}", False, 8)
        return False

    def ask(self, name: str, question: str) -> None:
        """Interview ``name`` about ``question`` on a worker thread (writes no memory)."""
        if self.run_dir is None:
            self.notify("interviews need a run folder", False)
            return
        interviewer = self._interviewer
        if interviewer is None:  # world/cli passes agents.minds.interview.interview
            self.notify("interviews are not available in this viewer", False)
            return
        with self._interview_lock:
            self.interviews.setdefault(name, []).append((question, None))
            idx = len(self.interviews[name]) - 1
            self._interview_version += 1
        at = None if isinstance(self.feed, LiveFeed) else self.frame.time
        run_dir, model = self.run_dir, self.model

        def work() -> None:
            try:
                answer = str(interviewer(run_dir, name, question, at=at, model=model))
            except Exception as exc:
                answer = f"(no answer: {exc})"
            with self._interview_lock:
                self.interviews[name][idx] = (question, answer)
                self._interview_version += 1

        threading.Thread(target=work, name="townsfolk-interview", daemon=True).start()

    def submit_text(self) -> None:
        text = self.text.strip()
        mode = self.mode
        if text.startswith("/"):
            head, _, rest = text[1:].partition(" ")
            aliases = slash_aliases()
            if head not in aliases:
                self.notify(f"unknown command /{head}: use {either(['/' + m for m in input_modes()])}", False)
                return
            mode, text = aliases[head], rest.strip()
        if not text:
            self.notify("type something first", False)
            return
        if mode == "say":
            ok = self.say(text)
        elif mode == "ask":
            if not self.selected:
                self.notify("select a resident to interview (click one)", False)
                return
            self.ask(self.selected, text)
            ok = True
        else:
            command = self.command_of(mode, text)
            if command is None:
                return
            ok = self.inject(command)
        if ok:
            self.text = ""

    def command_of(self, mode: str, text: str) -> dict[str, Any] | None:
        """The command a declared mode makes of the typed text and the selection (Command.input_mode);
        None, having said what is missing, when it needs a selection and there is none."""
        spec = Command.kinds[mode].input_mode
        assert spec is not None, f"{mode} has no input mode"
        command: dict[str, Any] = {"kind": mode}
        if spec.target:
            target = self.selected if spec.target == "resident" else self.selected_object
            if spec.target == "object" and "=" in text:
                target, _, text = (p.strip() for p in text.partition("="))
            if not target:
                self.notify(spec.missing, False)
                return None
            command[spec.target_field] = target
        command[spec.text_field] = text
        return command

    # -- playing a resident (watch --join) -----------------------------------------

    def talk_partner(self) -> str | None:
        """Whom the player's line goes to: the selected resident, else the nearest awake one in the
        player's room."""
        me = self.frame.residents.get(self.player or "")
        if me is None:
            return None
        if self.selected and self.selected != self.player:
            return self.selected
        here = [r for r in self.frame.residents.values()
                if r.name != me.name and r.address and r.address.split(":")[:2] == me.address.split(":")[:2]
                and not r.asleep]
        near = min(here, key=lambda r: (abs(r.tile[0] - me.tile[0]) + abs(r.tile[1] - me.tile[1]), r.name), default=None)
        return near.name if near else None

    def say(self, text: str) -> bool:
        """The player says ``text`` to :meth:`talk_partner` (a ``play`` command)."""
        to = self.talk_partner()
        if to is None:
            self.notify("nobody here to talk to: click the map to walk up to someone, or select them", False)
            return False
        return self.inject({"kind": "play", "resident": self.player, "to": to, "text": text})

    def walk_to(self, pos: tuple[int, int]) -> bool:
        """The player walks to the room (or building) under ``pos`` (a ``play`` command)."""
        tile = self.camera.screen_to_tile(pos, self.map_rect.topleft)
        place = next((a.address for a in self.map.areas_at(tile) if a.kind != "object"), None)
        if place is None:
            self.notify("click a building or a room to walk there", False)
            return False
        return self.inject({"kind": "play", "resident": self.player, "go": place})

    # -- input -------------------------------------------------------------------

    def handle_event(self, ev: pygame.event.Event) -> None:
        if ev.type == pygame.QUIT:
            self.running = False
        elif ev.type == pygame.VIDEORESIZE:
            self.resize((ev.w, ev.h))
        elif ev.type == pygame.TEXTINPUT and self.typing:
            self.text += ev.text
        elif ev.type == pygame.KEYDOWN:
            self._key(ev)
        elif ev.type == pygame.MOUSEBUTTONDOWN:
            self._mouse_down(ev)
        elif ev.type == pygame.MOUSEMOTION:
            self._mouse_move(ev)
        elif ev.type == pygame.MOUSEBUTTONUP:
            self._mouse_up(ev)
        elif ev.type == pygame.MOUSEWHEEL:
            pos = pygame.mouse.get_pos()
            if self.map_rect.collidepoint(pos):
                self.camera.zoom(1 if ev.y > 0 else -1, (pos[0] - self.map_rect.x, pos[1] - self.map_rect.y))

    def _key(self, ev: pygame.event.Event) -> None:
        k = ev.key
        if self.typing:
            self._key_typing(k)
        elif not (self._key_camera(k) or self._key_playback(k)):
            self._key_selection(k)

    def _key_typing(self, k: int) -> None:
        """Keys while the command box is open: submit, cancel, edit, switch mode."""
        if k == pygame.K_RETURN or k == pygame.K_KP_ENTER:
            self.submit_text()
        elif k == pygame.K_ESCAPE:
            self.typing = False
        elif k == pygame.K_BACKSPACE:
            self.text = self.text[:-1]
        elif k == pygame.K_TAB:
            self.mode = self.modes[(self.modes.index(self.mode) + 1) % len(self.modes)]

    def _key_camera(self, k: int) -> bool:
        """Arrows pan (and stop following), PageUp/PageDown zoom, 0 fits the map. True if handled."""
        pan = 0.25 * min(self.map_rect.size)
        moves = {pygame.K_LEFT: (-pan, 0), pygame.K_RIGHT: (pan, 0), pygame.K_UP: (0, -pan), pygame.K_DOWN: (0, pan)}
        centre = (self.map_rect.w // 2, self.map_rect.h // 2)
        if k in moves:
            self.camera.x += moves[k][0]
            self.camera.y += moves[k][1]
            self.follow = False
        elif k == pygame.K_PAGEUP:
            self.camera.zoom(1, centre)
        elif k == pygame.K_PAGEDOWN:
            self.camera.zoom(-1, centre)
        elif k == pygame.K_0:
            self.camera.fit(self.map, self.map_rect.size)
        else:
            return False
        return True

    def _key_playback(self, k: int) -> bool:
        """Space pauses, +/- change speed, Home/End jump (replays), . and , step. True if handled."""
        if k == pygame.K_SPACE:
            self.toggle_pause()
        elif k in (pygame.K_PLUS, pygame.K_EQUALS, pygame.K_KP_PLUS):
            self.change_speed(+1)
        elif k in (pygame.K_MINUS, pygame.K_KP_MINUS):
            self.change_speed(-1)
        elif k in (pygame.K_HOME, pygame.K_END):
            b = self.feed.bounds() if isinstance(self.feed, ReplayFeed) else None
            if b:
                self.seek(b[0] if k == pygame.K_HOME else b[1])
        elif k == pygame.K_PERIOD:
            self.step(+1)
        elif k == pygame.K_COMMA:
            self.step(-1)
        else:
            return False
        return True

    def _key_selection(self, k: int) -> None:
        """Tab cycles residents, f follows, Enter or / opens the command box, Esc clears, q quits."""
        if k == pygame.K_TAB:
            names = sorted(self.frame.residents)
            if names:
                i = names.index(self.selected) + 1 if self.selected in names else 0
                self.select(names[i % len(names)])
        elif k == pygame.K_f:
            self.follow = not self.follow and self.selected is not None
        elif k in (pygame.K_RETURN, pygame.K_KP_ENTER, pygame.K_SLASH):
            self.typing = True
            if k == pygame.K_SLASH:
                self.text = "/"
        elif k == pygame.K_ESCAPE:
            self.select(None)
            self.selected_object = None
        elif k == pygame.K_q:
            self.running = False

    def select(self, name: str | None) -> None:
        self.selected = name
        if name is None:
            self.follow = False
        elif mode_target(self.mode) == "object":
            self.mode = "say" if self.player else "whisper"

    def _mouse_down(self, ev: pygame.event.Event) -> None:
        pos = ev.pos
        if ev.button in (4, 5):
            return
        for rect, action in self._buttons:
            if rect.collidepoint(pos):
                action()
                return
        if self._slider_rect().collidepoint(pos) and isinstance(self.feed, ReplayFeed) and ev.button == 1:
            self._seeking = True
            self._seek_to_x(pos[0])
            return
        if self.input_rect.collidepoint(pos):
            self.typing = True
            return
        if self.panel_rect.collidepoint(pos) and self._panel_cache is not None:
            origin = self.panel_rect.topleft
            for rect, name in self._panel_cache[2]:
                if rect.move(origin).collidepoint(pos):
                    self.select(name)
                    return
            return
        if self.map_rect.collidepoint(pos) and ev.button in (1, 2, 3):
            self.typing = False
            self._drag_from = pos
            self._drag_moved = False
            self._drag_cam = (self.camera.x, self.camera.y)

    def _mouse_move(self, ev: pygame.event.Event) -> None:
        if self._seeking:
            self._seek_to_x(ev.pos[0])
        elif self._drag_from is not None:
            dx, dy = ev.pos[0] - self._drag_from[0], ev.pos[1] - self._drag_from[1]
            if abs(dx) + abs(dy) > 4:
                self._drag_moved = True
                self.follow = False
            if self._drag_moved:
                self.camera.x = self._drag_cam[0] - dx
                self.camera.y = self._drag_cam[1] - dy

    def _mouse_up(self, ev: pygame.event.Event) -> None:
        if self._seeking:
            self._seeking = False
            return
        if self._drag_from is not None and not self._drag_moved and ev.button == 1:
            self.click_map(ev.pos)
        self._drag_from = None

    def click_map(self, pos: tuple[int, int]) -> None:
        """Select the resident under ``pos`` (screen), else the object there, else nothing."""
        origin = self.map_rect.topleft
        t = self.camera.tile_px
        full = max(3, int(t * 0.42))
        best, best_d = None, float("inf")
        # The nearest dot within reach: a lone dot is easy to hit; a fanned one (smaller,
        # beside others) only when the pointer is on it.
        shown = self.renderer.markers or fan_out(list(self.frame.residents.values()), self.camera, origin)
        for name, (cx, cy, r) in sorted(shown.items()):
            reach = max(t * 0.8, 10.0) if r >= full else r + 3.0
            d = (cx - pos[0]) ** 2 + (cy - pos[1]) ** 2
            if d <= reach ** 2 and d < best_d:
                best, best_d = name, d
        if best is not None:
            self.select(best)
            return
        if self.player and self.mode == "say":  # a person playing walks where they click
            self.walk_to(pos)
            return
        obj = self.map.object_at(self.camera.screen_to_tile(pos, origin))
        if obj is not None:
            self.selected_object = obj.address
            if mode_target(self.mode) != "object":
                self.mode = "object"
            return
        self.select(None)
        self.selected_object = None

    # -- drawing -------------------------------------------------------------------

    def draw(self, surface: pygame.Surface) -> None:
        """Draw the whole window (map, panel, input box, time bar, notices) for this frame."""
        self._buttons = []
        self.renderer.draw(surface, self.map_rect, self.frame, self.camera, self.selected, self.selected_object,
                           None if self.picture else self.positions())
        self._draw_loading(surface)
        self._draw_toasts(surface)
        self._draw_panel(surface)
        self._draw_input(surface)
        self._draw_bar(surface)

    def loading_lines(self) -> list[str]:
        """What to say while a live run has not committed its first tick (building minds,
        planning the day can take most of a minute with a real model); [] once it has."""
        if not isinstance(self.feed, LiveFeed) or self.frame.tick >= 0 or self.feed.finished.is_set():
            return []
        status = getattr(self.feed, "loading_status", None)
        lines = list(status()) if callable(status) else []
        return lines or ["loading: waiting for the first tick"]

    def _draw_loading(self, surface: pygame.Surface) -> None:
        lines = self.loading_lines()
        if not lines:
            return
        f = self.fonts
        dots = "." * (1 + int(time.monotonic() * 2) % 3)
        surfs = [f.render(lines[0] + dots, f.big, (255, 255, 255))]
        surfs += [f.render(_clip(text, 90), f.normal, (220, 224, 232)) for text in lines[1:]]
        w = max(s.get_width() for s in surfs) + 40
        h = sum(s.get_height() + 6 for s in surfs) + 28
        m = self.map_rect
        box = pygame.Rect(m.centerx - w // 2, m.centery - h // 2, w, h)
        shade = pygame.Surface(m.size, pygame.SRCALPHA)
        shade.fill((20, 22, 28, 110))
        surface.blit(shade, m.topleft)
        pygame.draw.rect(surface, (36, 38, 46), box, border_radius=10)
        pygame.draw.rect(surface, ACCENT, box, 2, border_radius=10)
        y = box.y + 14
        for s in surfs:
            surface.blit(s, (box.x + 20, y))
            y += s.get_height() + 6

    def _draw_toasts(self, surface: pygame.Surface) -> None:
        f = self.fonts
        y = 8
        now = time.monotonic()
        lines: list[tuple[str, tuple[int, int, int]]] = []
        for toast in self.frame.toasts[-4:]:
            lines.append((toast.text, (40, 120, 60) if toast.accepted else (170, 50, 40)))
        for n in list(self.notices):
            if n.until >= now:
                lines.append((n.text, (40, 90, 150) if n.good else (170, 50, 40)))
        for text, colour in lines:
            s = f.render(_clip(text, 110), f.normal, (255, 255, 255))
            r = pygame.Rect(10, y, s.get_width() + 16, s.get_height() + 8)
            pygame.draw.rect(surface, colour, r, border_radius=6)
            surface.blit(s, (r.x + 8, r.y + 4))
            y += r.height + 4

    def _draw_input(self, surface: pygame.Surface) -> None:
        f = self.fonts
        r = self.input_rect
        if r.height <= 0:
            return
        surface.fill((48, 50, 60), r)
        x = r.x + 6
        for mode in self.modes:
            label = f.render(mode_label(mode), f.small, (255, 255, 255))
            b = pygame.Rect(x, r.y + 5, label.get_width() + 14, r.height - 10)
            pygame.draw.rect(surface, BUTTON_ON if mode == self.mode else BUTTON, b, border_radius=5)
            surface.blit(label, (b.x + 7, b.y + (b.height - label.get_height()) // 2))
            self._buttons.append((b, lambda m=mode: self._set_mode(m)))
            x = b.right + 4
        box = pygame.Rect(x + 6, r.y + 4, r.right - x - 12, r.height - 8)
        pygame.draw.rect(surface, (250, 250, 250) if self.typing else (220, 222, 228), box, border_radius=4)
        if self.text:
            shown = self.text + ("|" if self.typing and int(time.monotonic() * 2) % 2 == 0 else "")
            s = f.render(_tail(shown, 140), f.normal, (20, 20, 24))
        else:
            s = f.render(self._placeholder(), f.normal, (120, 120, 130))
        surface.blit(s, (box.x + 6, box.y + (box.height - s.get_height()) // 2), pygame.Rect(0, 0, box.width - 10, box.height))

    def _set_mode(self, mode: str) -> None:
        self.mode = mode
        self.typing = True

    @property
    def modes(self) -> tuple[str, ...]:
        """The input box's modes: a person who joined says their lines first."""
        return ("say", *input_modes()) if self.player else input_modes()

    def _placeholder(self) -> str:
        if self.mode == "say":
            return f"Enter: {self.player} says to {self.talk_partner() or '(walk up to someone: click the map)'}"
        who = self.selected or TARGET_HINT["resident"]
        model = Command.kinds.get(self.mode)
        if model is not None and model.input_mode is not None:
            selected = {"resident": who, "object": self.selected_object or TARGET_HINT["object"]}
            return "Enter: " + model.input_mode.prompt.replace("{target}", selected.get(model.input_mode.target, ""))
        return f"Enter: ask {who} a question (interviews write no memory)"

    def _slider_rect(self) -> pygame.Rect:
        b = self.bar_rect
        return pygame.Rect(b.x + 470, b.y + 20, max(50, b.width - 470 - 140), 16)

    def _seek_to_x(self, x: int) -> None:
        if not isinstance(self.feed, ReplayFeed):
            return
        bounds = self.feed.bounds()
        if bounds is None:
            return
        r = self._slider_rect()
        frac = min(1.0, max(0.0, (x - r.x) / max(1, r.width)))
        self.seek(int(round(bounds[0] + frac * (bounds[1] - bounds[0]))))

    def _draw_bar(self, surface: pygame.Surface) -> None:
        b = self.bar_rect
        surface.fill(BAR_BG, b)
        live = isinstance(self.feed, LiveFeed)
        if self.picture:  # the clock and where in the run, without buttons nobody can press
            self._draw_clock(surface, pygame.Rect(b.x - 4, b.y, 0, 0))
            self._draw_slider(surface, live)
            return
        pb = self._draw_play_button(surface)
        plus = self._draw_speed(surface, pb, live)
        self._draw_clock(surface, plus)
        self._draw_slider(surface, live)
        self._draw_badge(surface, live)

    def _draw_play_button(self, surface: pygame.Surface) -> pygame.Rect:
        b = self.bar_rect
        pb = pygame.Rect(b.x + 10, b.y + 8, 40, 40)
        pygame.draw.rect(surface, BUTTON, pb, border_radius=8)
        if self.paused:
            pygame.draw.polygon(surface, (255, 255, 255), [(pb.x + 14, pb.y + 10), (pb.x + 14, pb.y + 30), (pb.x + 30, pb.y + 20)])
        else:
            surface.fill((255, 255, 255), (pb.x + 12, pb.y + 10, 5, 20))
            surface.fill((255, 255, 255), (pb.x + 23, pb.y + 10, 5, 20))
        self._buttons.append((pb, self.toggle_pause))
        return pb

    def _draw_speed(self, surface: pygame.Surface, pb: pygame.Rect, live: bool) -> pygame.Rect:
        """The - and + buttons with the pace (live) or speed (replay) between them; returns +'s rect."""
        f, b = self.fonts, self.bar_rect
        minus = pygame.Rect(pb.right + 10, b.y + 14, 28, 28)
        plus = pygame.Rect(minus.right + 84, b.y + 14, 28, 28)
        for r, sign, d in ((minus, "-", -1), (plus, "+", 1)):
            pygame.draw.rect(surface, BUTTON, r, border_radius=6)
            s = f.render(sign, f.big, (255, 255, 255))
            surface.blit(s, (r.centerx - s.get_width() // 2, r.centery - s.get_height() // 2))
            self._buttons.append((r, lambda d=d: self.change_speed(d)))
        rate = (self.feed.pace if live else self.speed)
        mid = (minus.right + plus.x) // 2
        s = f.render("max" if rate is None else f"{rate:g}x", f.bold, (255, 255, 255))
        surface.blit(s, (mid - s.get_width() // 2, b.y + 14))
        s = f.render("pace" if live else "speed", f.small, PANEL_DIM)
        surface.blit(s, (mid - s.get_width() // 2, b.y + 32))
        return plus

    def _draw_clock(self, surface: pygame.Surface, plus: pygame.Rect) -> None:
        f, b = self.fonts, self.bar_rect
        when = self.frame.time.strftime("%a %d %b %Y  %H:%M:%S") if self.frame.tick >= 0 else "--:--"
        surface.blit(f.render(when, f.big, (255, 255, 255)), (plus.right + 14, b.y + 8))
        s = f.render(f"tick {self.frame.tick}" + ("  paused" if self.paused and not self.picture else ""), f.small, PANEL_DIM)
        surface.blit(s, (plus.right + 14, b.y + 32))

    def _draw_slider(self, surface: pygame.Surface, live: bool) -> None:
        """A replay's position between its first and last tick; a full bar when live."""
        r = self._slider_rect()
        pygame.draw.rect(surface, (70, 74, 88), r, border_radius=8)
        bounds = self.feed.bounds() if isinstance(self.feed, ReplayFeed) else None
        if bounds is not None and bounds[1] > bounds[0]:
            frac = min(1.0, max(0.0, (self.frame.tick - bounds[0]) / (bounds[1] - bounds[0])))
            filled = r.copy()
            filled.width = int(r.width * frac)
            pygame.draw.rect(surface, (120, 150, 220), filled, border_radius=8)
            pygame.draw.circle(surface, (255, 255, 255), (r.x + int(r.width * frac), r.centery), 10)
        elif live:
            pygame.draw.rect(surface, (120, 150, 220), r, border_radius=8)

    def _draw_badge(self, surface: pygame.Surface, live: bool) -> None:
        """LIVE or REPLAY, and the frame rate under it."""
        f, b = self.fonts, self.bar_rect
        s = f.render("LIVE" if live else "REPLAY", f.bold, (255, 255, 255))
        tr = pygame.Rect(b.right - 126, b.y + 12, s.get_width() + 16, 24)
        pygame.draw.rect(surface, (200, 50, 50) if live else (70, 110, 170), tr, border_radius=6)
        surface.blit(s, (tr.x + 8, tr.y + 3))
        if self._fps:
            surface.blit(f.render(f"{self._fps:.0f} fps", f.small, PANEL_DIM), (b.right - 126, b.y + 38))

    # -- side panel ---------------------------------------------------------------

    def _panel_key(self) -> tuple:
        res = self.frame.residents.get(self.selected) if self.selected else None
        return (self.size, self.frame.tick, self.selected, res, self.selected_object,
                self.frame.objects.get(self.selected_object or ""), self._interview_version,
                tuple(sorted(self.frame.encounters.items())) if not self.selected else ())

    def _draw_panel(self, surface: pygame.Surface) -> None:
        if self.panel_w <= 0:
            return
        key = self._panel_key()
        if self._panel_cache is None or self._panel_cache[0] != key:
            surf = pygame.Surface(self.panel_rect.size)
            links: list[tuple[pygame.Rect, str]] = []
            self._paint_panel(surf, links)
            self._panel_cache = (key, surf, links)
        surface.blit(self._panel_cache[1], self.panel_rect.topleft)

    def _paint_panel(self, surf: pygame.Surface, links: list[tuple[pygame.Rect, str]]) -> None:
        surf.fill(PANEL_BG)
        p = _PanelWriter(surf, self.fonts)
        res = self.frame.residents.get(self.selected) if self.selected else None
        if res is not None:
            self._paint_resident(p, res)
            return
        if self.selected_object:
            self._paint_object(p)
        self._paint_overview(p, links)

    def _paint_resident(self, p: "_PanelWriter", res: Any) -> None:
        """The followed resident: now, plan, memories, relationships, interview answers."""
        f = self.fonts
        pygame.draw.circle(p.surf, self.renderer.colour(res.name), (24, p.y + 11), 9)
        p.title(res.name, x=40)
        persona = self.map.personas.get(res.name, {})
        if persona:
            p.line(f"{persona.get('age', '')} · {persona.get('occupation', '')} at {persona.get('workplace', '')}", PANEL_DIM)
        p.head("Now")
        p.line(" ".join(x for x in (f.emoji_text(res.emoji, words=True), res.action) if x) or "(nothing yet)")
        p.line(f"at {res.address or 'outdoors'}  {res.tile}", PANEL_DIM)
        if res.bubble is not None:
            p.line(f"says to {res.bubble.listener}: “{res.bubble.text}”", (190, 220, 255))
        p.head(f"Plan ({res.plan_level})" if res.plan_level else "Plan")
        for item in (res.plan or ("(no plan recorded yet)",))[:8]:
            p.line(f"• {item}")
        if res.day_plan and res.day_plan != res.plan:
            p.head("Day plan")
            for item in res.day_plan[:6]:
                p.line(f"• {item}", PANEL_DIM)
        p.head("Recent memories")
        for mem in reversed(res.memories[-6:] or ("(none recorded yet)",)):
            p.line(f"• {mem}")
        p.head("Relationships")
        for text, colour in _relationship_lines(persona.get("relationships") or [], res.talk_counts()):
            p.line(text, colour)
        with self._interview_lock:
            qa = list(self.interviews.get(res.name, []))
        if qa:
            p.head("Interview")
            for q, a in qa[-3:]:
                p.line(f"Q: {q}", (190, 220, 255))
                p.line(f"A: {a if a is not None else '…thinking'}")

    def _paint_object(self, p: "_PanelWriter") -> None:
        """The selected object and its state, above the overview."""
        p.title(self.selected_object.split(":")[-1])
        p.line(self.selected_object, PANEL_DIM)
        p.head("State")
        p.line(self.frame.objects.get(self.selected_object, self.map.default_states.get(self.selected_object, "?")))
        p.line("Type a new state below and press Enter (live runs).", PANEL_DIM)
        p.y += 8

    def _paint_overview(self, p: "_PanelWriter", links: list[tuple[pygame.Rect, str]]) -> None:
        """The town: encounters, every resident (clickable rows added to ``links``), notes."""
        f, surf, w = self.fonts, p.surf, p.surf.get_width()
        p.title(self.title or self.map.name)
        p.line(f"{len(self.frame.residents)} residents · click one to follow their day", PANEL_DIM)
        if self.player:
            p.line(f"You are {self.player} (white ring): click a room to walk there, type to talk to "
                   "whoever is near", PANEL_HEAD)
        encs = list(self.frame.encounters.values())
        if encs:
            p.head("Encounters")
            for e in sorted(encs, key=lambda e: e.encounter_id):
                pygame.draw.circle(surf, RISK_COLOURS.get(e.risk, RISK_COLOURS["unknown"]), (20, p.y + 8), 6)
                p.line(f"{e.title or e.encounter_id} — {e.resident or '?'} at {e.place or '?'}: "
                       f"{e.status}, risk {e.risk}{' ' + e.risk_label if e.risk_label else ''}", indent=32)
        for g in gatherings(self.frame):
            p.head(f"Gathering: {clip_words(g.title, 40)}")
            p.line(f"at {g.place} · {len(g.names)} here: {', '.join(g.names)}")
        p.head("Residents")
        for res in sorted(self.frame.residents.values(), key=lambda r: r.name):
            if p.y > surf.get_height() - 40:
                break
            pygame.draw.circle(surf, self.renderer.colour(res.name), (20, p.y + 8), 6)
            top = p.y
            name = f.render(res.name, f.small, (255, 255, 255))
            surf.blit(name, (32, p.y))
            ax = 32 + max(120, name.get_width() + 8)
            chip = f.emoji_icon(res.emoji, name.get_height())
            if chip is not None:  # the emoji as a word on a chip, not a tiny grey glyph
                surf.blit(chip, (ax, p.y))
                ax += chip.get_width() + 4
            surf.blit(f.render(_fit(f.small, res.action, w - ax - 8), f.small, PANEL_DIM), (ax, p.y))
            p.y += name.get_height() + 3
            links.append((pygame.Rect(0, top, w, p.y - top), res.name))
        if self.frame.notes:
            p.head("Town")
            for note in self.frame.notes[-4:]:
                p.line(note, PANEL_DIM)

    # -- the interactive loop -----------------------------------------------------

    def run(self, fps: int = 30, close_after: float | None = None) -> None:
        """Open a window and run until the user quits (or ``close_after`` real seconds)."""
        check_display()
        pygame.font.init()
        self.animate = True
        screen = pygame.display.set_mode(self.size, pygame.RESIZABLE)
        pygame.display.set_caption(f"townsfolk — {self.title}")
        pygame.key.set_repeat(300, 40)
        pygame.key.start_text_input()
        clock = pygame.time.Clock()
        opened = time.monotonic()
        end_noted = False
        try:
            while self.running:
                dt = clock.tick(fps) / 1000.0
                if close_after is not None and time.monotonic() - opened >= close_after:
                    break
                for ev in pygame.event.get():
                    self.handle_event(ev)
                    if ev.type == pygame.VIDEORESIZE:
                        screen = pygame.display.set_mode(self.size, pygame.RESIZABLE)
                self.update(dt)
                self.draw(screen)
                pygame.display.flip()
                self._fps = clock.get_fps()
                if isinstance(self.feed, LiveFeed) and self.feed.finished.is_set() and not end_noted:
                    end_noted = True
                    if self.feed.error:
                        self.notify(f"the run stopped: {self.feed.error}", False, 3600)
                    else:
                        self.notify(f"the run reached its end at {self.frame.time:%H:%M}; "
                                    "close the window when done", True, 3600)
        finally:
            pygame.display.quit()


def _clip(text: str, n: int) -> str:
    return clip_words(text, n)


def _fit(font: Any, text: str, width: int) -> str:
    """``text`` cut at a word (with an ellipsis) to fit ``width`` pixels in ``font``."""
    n = len(text)
    while n > 4 and font.size(clip_words(text, n))[0] > width:
        n -= 2
    return clip_words(text, n)


def _tail(text: str, n: int) -> str:
    return text if len(text) <= n else "…" + text[-(n - 1):]
