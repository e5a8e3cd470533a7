"""Headless pictures of a run: PNG frames at chosen times, and an animated GIF.

Frames are drawn by the same :class:`~replays.viewer.Viewer` as the window, on an
off-screen surface (SDL's dummy video driver), so an exported frame is what a person
watching would have seen.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from maps.contracts import parse_at
from replays.feeds import ReplayFeed
from replays.frames import apply_in_place
from replays.render import EMOJI_WORDS, FIXED_COLOURS, PALETTE
from replays.runview import open_run
from replays.viewer import Viewer


def init_headless() -> None:
    """Initialise pygame's display and fonts without a screen."""
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    import pygame

    pygame.display.init()
    pygame.font.init()


class ExportError(RuntimeError):
    """An export cannot be made; the message says why and what to do."""


class HeadlessViewer:
    """A viewer on an off-screen surface, for drawing any tick of a run folder."""

    def __init__(self, run_dir: str | Path, size: tuple[int, int] = (1920, 1080), select: str | None = None) -> None:
        init_headless()
        import pygame

        self.run = open_run(run_dir)
        self.feed = ReplayFeed(self.run.reader, run_dir)
        self.viewer = Viewer(self.run.map, self.feed, size=size, run_dir=run_dir, title=self.run.title)
        self.viewer.paused = True
        self.viewer.picture = True  # no play controls, no command box in a picture
        self.viewer.renderer.players = set(self.run.meta.get("players") or [])  # people who joined
        self.viewer.renderer.show_activity = True  # a picture has no hover: say what everyone does
        self.viewer.selected = select
        self.surface = pygame.Surface(size)
        bounds = self.feed.bounds()
        if bounds is None:
            raise ExportError(f"{run_dir}: the run has no committed ticks yet")
        self.first, self.last = bounds
        self.start = self.run.reader.time_of(self.first)
        self.end = self.run.reader.time_of(self.last)

    def resolve(self, at: str) -> int:
        """The tick shown at a typed time ('14:00', '+2h', 'tick:120', an ISO date)."""
        assert self.start is not None and self.end is not None
        when = parse_at(at, self.start)
        if isinstance(when, int):
            tick = when
        else:
            if when < self.start or when > self.end + timedelta(seconds=1):
                raise ExportError(
                    f"--at {at}: {when:%Y-%m-%d %H:%M:%S} is outside the run "
                    f"({self.start:%Y-%m-%d %H:%M:%S} to {self.end:%Y-%m-%d %H:%M:%S})"
                )
            tick = self.run.reader.tick_at_time(when)
        if not self.first <= tick <= self.last:
            raise ExportError(f"--at {at}: tick {tick} is outside the run (ticks {self.first} to {self.last})")
        return tick

    def draw_tick(self, tick: int):
        self.viewer.set_frame(self.run.reader.frame_at(tick))
        self.viewer.draw(self.surface)
        return self.surface

    def draw_frame(self, frame):
        self.viewer.set_frame(frame)
        self.viewer.draw(self.surface)
        return self.surface

    def close(self) -> None:
        self.run.reader.close()


def write_pngs(run_dir: str | Path, ats: list[str], out_dir: str | Path, size: tuple[int, int] = (1920, 1080),
               select: str | None = None) -> list[Path]:
    """Draw the run at each time in ``ats`` and write ``frame_<tick>.png`` files."""
    import pygame

    hv = HeadlessViewer(run_dir, size, select)
    try:
        ticks = [hv.resolve(a) for a in ats]  # check every time before writing anything
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        hv.run.reader.index(max(ticks))
        paths = []
        for tick in ticks:
            surf = hv.draw_tick(tick)
            path = out / f"frame_{tick:06d}_{hv.viewer.frame.time:%H%M%S}.png"
            pygame.image.save(surf, str(path))
            paths.append(path)
        return paths
    finally:
        hv.close()


def write_gif(run_dir: str | Path, path: str | Path, start: str | None = None, end: str | None = None,
              size: tuple[int, int] = (960, 540), max_frames: int = 240, fps: int = 8,
              step_s: float | None = None, select: str | None = None) -> dict[str, Any]:
    """Write an animated GIF of the run from ``start`` to ``end`` (default: all of it).

    Frames are sampled evenly in game time (``step_s`` game seconds apart, by default so
    that at most ``max_frames`` are drawn). Needs Pillow.
    """
    try:
        from PIL import Image  # noqa: F401  (checked here so the error comes before any work)
    except ImportError:
        raise ExportError("GIF export needs Pillow: pip install Pillow (PNG frames with --png-dir work without it)") from None

    hv = HeadlessViewer(run_dir, size, select)
    try:
        t0 = hv.resolve(start) if start else hv.first
        t1 = hv.resolve(end) if end else hv.last
        if t1 < t0:
            raise ExportError(f"--from {start} comes after --to {end}")
        images, step = _gif_frames(hv, t0, t1, max_frames, step_s)
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        images[0].save(out, save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0,
                       optimize=False)
        return {"path": str(out), "frames": len(images), "from_tick": t0, "to_tick": t1,
                "step_game_s": step, "size": f"{size[0]}x{size[1]}"}
    finally:
        hv.close()


def _gif_frames(hv: HeadlessViewer, t0: int, t1: int, max_frames: int, step_s: float | None) -> tuple[list[Any], float]:
    """The frames from tick t0 to t1, one every ``step`` game seconds (at most ``max_frames``)."""
    reader = hv.run.reader
    reader.index(t0)
    frame = reader.frame_at(t0)
    begin: datetime = frame.time
    finish = reader.time_of(t1) or begin
    span = max(1.0, (finish - begin).total_seconds())
    step = step_s or max(10.0, span / max(1, max_frames - 1))
    images: list[Any] = []
    palette: list[Any] = []  # one palette for all frames: Pillow then stores only what changed
    images.append(_gif_image(hv, frame, palette))
    next_time = begin + timedelta(seconds=step)
    frame = frame.copy()
    for tr in reader.ticks(t0 + 1, t1):
        apply_in_place(frame, tr)
        if tr.time >= next_time:
            images.append(_gif_image(hv, frame, palette))
            while next_time <= tr.time:
                next_time += timedelta(seconds=step)
        if len(images) >= max_frames:
            break
    return images, step


def _gif_image(hv: HeadlessViewer, frame: Any, palette: list[Any]) -> Any:
    """One frame as a paletted image on one palette for the whole GIF (made on the first call)."""
    import pygame
    from PIL import Image

    surf = hv.draw_frame(frame)
    img = Image.frombytes("RGB", surf.get_size(), pygame.image.tobytes(surf, "RGB"))
    if not palette:
        palette.append(gif_palette(img))
    return img.quantize(palette=palette[0], dither=Image.Dither.NONE)


def gif_palette(first: Any) -> Any:
    """A palette image for every frame: each resident marker colour exactly (a first frame's
    median cut had none for a resident not yet on screen, and Lucy's red became Tom's magenta,
    issue 30), the chips' and labels' colours, then the first frame's own colours up to 256."""
    from PIL import Image

    fixed = list(dict.fromkeys([*PALETTE, *FIXED_COLOURS, *(c for _, c in EMOJI_WORDS.values())]))
    rest = first.quantize(colors=256 - len(fixed), method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    seen = rest.getpalette()[: 3 * (256 - len(fixed))]
    flat = [v for colour in fixed for v in colour] + seen
    image = Image.new("P", (1, 1))
    image.putpalette(flat + [0] * (768 - len(flat)))
    return image
