"""What a person reads off the map: every resident visible with their own name and a colour
of their own, labels that never cover each other, activity in pictures, a loading screen."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from pathlib import Path

import pygame
import pytest

from replays.export import HeadlessViewer, init_headless
from replays.feeds import LiveFeed
from replays.frames import FrameState, ResidentFrame, apply
from replays.mapview import grid_map, load_mapview
from maps.contracts import Record, TickRecords
from replays.render import (
    PALETTE,
    PALETTE_AVOIDS,
    spread_palette,
    Camera,
    Fonts,
    MapRenderer,
    colour_distance,
    place_static_labels,
    resident_colours,
)
from memory.runfile import RunStore
from replays.viewer import Viewer

T0 = datetime(2024, 2, 13, 7, 30)


@pytest.fixture(autouse=True)
def _pygame() -> None:
    init_headless()


def _frame(people: dict[str, tuple[int, int]], actions: dict[str, str] | None = None) -> FrameState:
    actions = actions or {}
    return FrameState(tick=0, time=T0, residents={
        n: ResidentFrame(name=n, tile=t, action=actions.get(n, "")) for n, t in people.items()})


def _draw(frame: FrameState, tile_px: int = 24, size: tuple[int, int] = (900, 700)):
    mapview = grid_map(3, 2, 12, 3)
    renderer = MapRenderer(mapview, Fonts())
    surface = pygame.Surface(size)
    camera = Camera(0, 0, tile_px)
    renderer.draw(surface, surface.get_rect(), frame, camera)
    return renderer, surface


def _intersecting(rects: list[pygame.Rect]) -> list[tuple[pygame.Rect, pygame.Rect]]:
    return [(a, b) for a, b in itertools.combinations(rects, 2) if a.colliderect(b)]


def test_residents_on_one_tile_are_each_drawn_with_their_own_name() -> None:
    frame = _frame({"Maria Alvarez": (8, 8), "Tom Alvarez": (8, 8), "Lucy Alvarez": (8, 8)})
    renderer, surface = _draw(frame)
    spots = {n: renderer.markers[n][:2] for n in frame.residents}
    assert len(set(spots.values())) == 3, spots  # three dots, not one
    for name, (x, y) in spots.items():
        # each dot shows its own resident's colour (none is hidden under another)...
        assert tuple(surface.get_at((x, y)))[:3] == renderer.colour(name), name
        # ...and each name is drawn, its label carrying a swatch of that same colour
        box = renderer.labels[name]
        swatch = (box.x + 3 + 5, box.y + 1 + renderer.fonts.small.get_height() // 2)
        assert tuple(surface.get_at(swatch))[:3] == renderer.colour(name), name
    assert renderer.badges, "a tile with three residents gets a '3 here' badge"
    # a click on a fanned dot selects that resident, not a neighbour
    viewer = Viewer(grid_map(3, 2, 12, 3), LiveFeed(), size=(900, 700), frame=frame)
    viewer.camera = Camera(0, 0, 24)
    viewer.draw(pygame.Surface((900, 700)))
    for name in frame.residents:
        x, y, _ = viewer.renderer.markers[name]
        viewer.click_map((x, y))
        assert viewer.selected == name


def test_a_resident_alone_stays_at_the_centre_of_its_tile() -> None:
    renderer, _ = _draw(_frame({"Ada": (5, 5), "Bob": (9, 5)}))
    t = 24
    assert renderer.markers["Ada"][:2] == (5 * t + t // 2, 5 * t + t // 2)


def test_palette_colours_are_far_apart() -> None:
    # CIE76 delta E: 2 is barely noticeable; markers must differ at a glance.
    worst = min(colour_distance(a, b) for a, b in itertools.combinations(PALETTE[:25], 2))
    assert worst >= 20, worst
    greens = [c for c in PALETTE[:8] if c[1] > c[0] + 40 and c[1] > c[2] + 40]
    assert len(greens) <= 2, greens
    names = [f"Resident {i}" for i in range(25)]
    assert len(set(resident_colours(names).values())) == 25
    assert resident_colours(names) == resident_colours(list(reversed(names)))  # order of arrival does not matter


def test_the_written_out_palette_is_the_spread_one() -> None:
    # PALETTE is a literal (start-up time); it must stay what the farthest-point spread gives.
    assert PALETTE == spread_palette(len(PALETTE), PALETTE_AVOIDS)


@pytest.mark.parametrize("tile_px", [10, 12, 16, 20, 24])
def test_room_and_building_labels_never_overlap(tile_px: int) -> None:
    mapview = load_mapview("default")
    labels = place_static_labels(mapview, tile_px, Fonts())
    assert not _intersecting([lab.rect for lab in labels])
    placed = {lab.text for lab in labels if lab.kind == "sector"}
    assert {"Oak House", "The Crooked Pub", "Willow Cafe"} <= placed


def test_resident_labels_never_overlap_each_other_nor_a_dot() -> None:
    people = {f"Resident {i}": (4 + i % 6, 4 + i // 6) for i in range(25)}
    people.update({"Extra A": (5, 5), "Extra B": (5, 5)})
    renderer, _ = _draw(_frame(people, {n: "walking to the cafe" for n in people}), tile_px=20)
    boxes = list(renderer.labels.values()) + renderer.badges
    assert not _intersecting(boxes)
    for name, box in renderer.labels.items():
        for other, (x, y, r) in renderer.markers.items():
            if other != name:
                assert not box.colliderect(pygame.Rect(x - r, y - r, 2 * r, 2 * r)), (name, other)
    assert len(renderer.labels) >= 8  # packed tight, yet a good share of names is readable
    # a few tiles apart, as people stand in a town, every name is shown
    apart = {f"Resident {i}": (2 + 7 * (i % 5), 2 + 4 * (i // 5)) for i in range(15)}
    renderer, _ = _draw(_frame(apart, {n: "walking to the cafe" for n in apart}), tile_px=20, size=(900, 700))
    assert set(renderer.labels) == set(apart)


def test_exported_frames_show_what_everyone_is_doing(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path / "run", {"town": "default", "town_name": "Willowbrook",
                                               "resident_names": ["Ada", "Bob"]})
    recs = [Record(kind="move", resident="Ada", data={"tile": [10, 2], "address": ""}),
            Record(kind="move", resident="Bob", data={"tile": [40, 2], "address": ""}),
            Record(kind="action", resident="Ada", data={"description": "walking to the cafe", "emoji": ""})]
    store.commit_tick(TickRecords(tick=0, time=T0, records=recs))
    store.close()
    hv = HeadlessViewer(tmp_path / "run")
    try:
        hv.draw_tick(0)
        line = hv.viewer.fonts.small.get_height()
        labels = hv.viewer.renderer.labels
        assert labels["Ada"].height >= 2 * line  # name and activity
        assert labels["Bob"].height < 2 * line  # nothing to say: the name alone
    finally:
        hv.close()


def test_live_viewer_says_it_is_loading_until_the_first_tick() -> None:
    feed = LiveFeed()
    feed.loading_status = lambda: ["loading: first tick", "8 residents planning their day: 3 calls so far"]
    viewer = Viewer(grid_map(3, 2, 12, 3), feed, size=(1280, 720), frame=FrameState())
    surface = pygame.Surface((1280, 720))
    viewer.draw(surface)
    assert viewer.loading_lines()[0] == "loading: first tick"
    centre = viewer.map_rect.center
    assert tuple(surface.get_at(centre))[:3] == (36, 38, 46)  # the loading box over the map
    feed.listener(TickRecords(tick=0, time=T0, records=[
        Record(kind="move", resident="Ada", data={"tile": [4, 4], "address": ""})]))
    viewer.update(0.1)
    assert viewer.frame.tick == 0 and viewer.loading_lines() == []
    viewer.draw(surface)
    assert tuple(surface.get_at(centre))[:3] != (36, 38, 46)
    # a run that ends before its first tick does not keep saying "loading"
    quiet = Viewer(grid_map(3, 2, 12, 3), LiveFeed(), size=(1280, 720), frame=FrameState())
    quiet.feed.finished.set()
    assert quiet.loading_lines() == []


def test_watch_loading_status_and_summary(tmp_path: Path, capsys) -> None:
    runner = pytest.importorskip("world.runner")
    from world.cli.watch import _loading_status, watch

    opts = runner.RunOptions(town="default", agents=3, mind="routine", duration="5m", out=tmp_path / "w", seed=1)
    engine = runner.build_engine(opts)
    lines = _loading_status(engine, 0.0)()
    assert lines[0].startswith("loading:") and "3 residents" in lines[1]
    assert watch(engine, pace=1e6, size=(800, 600), close_after=1.0) == 0
    out = capsys.readouterr().out
    assert "run summary" in out and "ticks" in out and str(tmp_path / "w") in out
