"""A frame a person can read (issue 30 §3): in a crowded home no two dots touch, no two name cards
overlap or leave the map, every resident's card is drawn, actions are cut at a word, emoji are
chips that say what they mean, a stale 'being used for' tag is left out, a GIF keeps each
resident's colour exactly and shows no play controls, walking is animated, and a gathering is
shown with its name and who is there (issue 26)."""

from __future__ import annotations

from datetime import datetime, timedelta
from itertools import combinations
from pathlib import Path

import pygame
import pytest

from maps.contracts import EventPayload, Record, TickRecords
from maps.town import load_town
from memory.runfile import RunStore
from replays.export import HeadlessViewer, init_headless, write_gif
from replays.feeds import LiveFeed
from replays.frames import EventNote, FrameState, ResidentFrame, apply, gatherings, stale_use
from replays.mapview import from_town
from replays.render import Fonts, clip_words, markers_touch, resident_colours, wrap_words
from replays.viewer import MOVE_S, Viewer

T0 = datetime(2026, 2, 13, 7, 30)
HOUSE = "Oak House"
CROWD = ["Maria Alvarez", "Tom Alvarez", "Lucy Alvarez", "Hannah Price", "Arthur Bell", "Ben Okafor",
         "Priya Shah", "George Price"]
ACTIONS = ["making coffee and toast at Oak House kitchen", "having a bowl of cereal", "reading the newspaper",
           "making toast", "drinking tea with the neighbours", "talking to Maria Alvarez",
           "writing a long letter to her grandmother about the garden", "washing the dishes"]
EMOJI = ["☕", "🍳", "📖", "🍳", "☕", "💬", "🙂", "🚿"]
PARTY = ["Sophie Martin", "Grace Kim", "Omar Haddad", "Elena Rossi", "Jack Turner"]


def _house_tiles(mapview) -> list[tuple[int, int]]:
    """Walkable tiles of Oak House, its kitchen first (where a family's morning crowds)."""
    rooms = [a for a in mapview.areas if a.kind == "arena" and a.address.startswith(HOUSE + ":")]
    rooms.sort(key=lambda a: a.name != "kitchen")
    return [t for room in rooms for t in sorted(room.tiles) if t not in mapview.blocked]


def _ticks(mapview) -> list[TickRecords]:
    """Eight people packed into the kitchen (two pairs on one tile, the rest side by side) who then
    step along; five more at the cafe for a party."""
    tiles = _house_tiles(mapview)
    spots = [tiles[0], tiles[0], tiles[1], tiles[1], tiles[2], tiles[3], tiles[4], tiles[5]]
    cafe = sorted(t for a in mapview.areas if a.address.startswith("Willow Cafe:") and a.kind == "arena"
                  for t in a.tiles if t not in mapview.blocked)
    out = []
    for k in range(6):
        recs = []
        for i, (name, tile) in enumerate(zip(CROWD, spots)):
            step = tiles[(tiles.index(tile) + k) % len(tiles)] if i % 3 == 0 else tile
            recs.append(Record(kind="move", resident=name, data={"tile": list(step), "address": f"{HOUSE}:kitchen"}))
            if k == 0:
                recs.append(Record(kind="action", resident=name, data={
                    "description": ACTIONS[i], "emoji": EMOJI[i], "address": f"{HOUSE}:kitchen"}))
        for j, name in enumerate(PARTY):
            recs.append(Record(kind="move", resident=name, data={"tile": list(cafe[2 * j]), "address": "Willow Cafe:dining room"}))
            if k == 0:
                recs.append(Record(kind="action", resident=name, data={
                    "description": "attending the Valentine's Day party" if j != 2 else "dancing at the Valentine's Day party",
                    "emoji": "🎉", "address": "Willow Cafe:dining room"}))
        out.append(TickRecords(tick=k, time=T0 + timedelta(seconds=10 * k), records=recs))
    return out


@pytest.fixture(scope="module")
def crowded_run(tmp_path_factory) -> Path:
    init_headless()
    run_dir = tmp_path_factory.mktemp("crowd") / "run"
    store = RunStore.create(run_dir, {"town": "default", "town_name": "Willowbrook", "resident_names": CROWD + PARTY})
    hv_map = _map()
    for tr in _ticks(hv_map):
        store.commit_tick(tr)
    store.close()
    return run_dir


def _map():
    return from_town(load_town("default"))


@pytest.mark.parametrize("size", [(1920, 1080), (960, 540)])
def test_a_crowded_home_draws_every_name_apart_and_every_dot_apart(crowded_run: Path, size) -> None:
    hv = HeadlessViewer(crowded_run, size=size)
    try:
        hv.draw_tick(0)
        renderer, bounds = hv.viewer.renderer, hv.viewer.map_rect
        everyone = CROWD + PARTY
        assert sorted(renderer.markers) == sorted(everyone)
        for a, b in combinations(everyone, 2):
            assert not markers_touch(renderer.markers[a], renderer.markers[b]), (a, b)
        labels = renderer.labels
        assert sorted(labels) == sorted(everyone)  # none left out, in the full picture and the GIF's size
        for a, b in combinations(labels, 2):
            assert not labels[a].colliderect(labels[b]), (a, b)
        assert all(bounds.contains(box) for box in labels.values())
        colours = resident_colours(everyone)
        assert len(set(colours.values())) == len(everyone)
        assert hv.viewer._buttons == []  # a picture shows no play, speed or command buttons
    finally:
        hv.close()


def test_a_gathering_is_shown_with_its_name_and_who_is_there(crowded_run: Path) -> None:
    hv = HeadlessViewer(crowded_run, size=(1920, 1080))
    try:
        hv.draw_tick(0)
        found = gatherings(hv.viewer.frame)
        party = [g for g in found if g.place.startswith("Willow Cafe")]
        assert party and party[0].title == "Valentine's Day party" and party[0].names == tuple(sorted(PARTY))
        assert [g.place for g in hv.viewer.renderer.gathered] == [g.place for g in found]
        assert not any(g.place.startswith(HOUSE) for g in found)  # a kitchen of people doing different things
    finally:
        hv.close()


def test_an_event_record_names_the_gathering_when_a_run_keeps_events() -> None:
    doing = ["drinking a latte", "reading the paper", "waiting for a table", "serving coffee", "writing emails"]
    frame = FrameState(time=T0, residents={n: ResidentFrame(n, address="Willow Cafe:dining room", action=a)
                                           for n, a in zip(PARTY, doing)})
    frame.events = ()
    assert gatherings(frame) == []  # unrelated activities and no event: no banner
    frame.events = (EventNote("v", "Maria's Valentine's Day party", "Willow Cafe", T0, T0 + timedelta(hours=2)),)
    assert gatherings(frame)[0].title == "Maria's Valentine's Day party"


def test_a_gif_keeps_each_residents_colour_in_every_frame(crowded_run: Path, tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    from PIL import Image

    hv = HeadlessViewer(crowded_run, size=(960, 540))
    markers = {}
    for tick in range(6):
        hv.draw_tick(tick)
        markers[tick] = dict(hv.viewer.renderer.markers)
    hv.close()
    write_gif(crowded_run, tmp_path / "day.gif", size=(960, 540), step_s=10)
    colours = resident_colours(CROWD + PARTY)
    with Image.open(tmp_path / "day.gif") as gif:
        assert gif.n_frames == 6
        for tick in range(6):
            gif.seek(tick)
            rgb = gif.convert("RGB")
            for name, (x, y, _) in markers[tick].items():
                assert rgb.getpixel((x, y)) == colours[name], (tick, name)


def test_actions_are_cut_at_a_word_and_emoji_are_chips_that_say_what_they_mean() -> None:
    assert clip_words("making coffee and toast at Oak House kitchen", 30) == "making coffee and toast at…"
    assert wrap_words("writing a long letter to her grandmother about the garden", 26, 2) == [
        "writing a long letter to", "her grandmother about…"]
    init_headless()
    fonts = Fonts()
    chip = fonts.emoji_icon("🏦", 16)
    assert chip is not None and chip.get_height() == 16 and chip.get_width() > 20  # the word 'bank', not a glyph
    assert fonts.emoji_icon("🙂", 16) is None  # a smile tells nothing


def test_an_object_tag_of_someone_who_moved_on_is_left_out() -> None:
    lucy = ResidentFrame("Lucy Alvarez", address="Oak House:kitchen", action="having a bowl of cereal")
    frame = FrameState(residents={"Lucy Alvarez": lucy})
    table = "Oak House:kitchen:kitchen table"
    assert stale_use("being used for reading at Oak House", table, frame)
    assert not stale_use("being used for having a bowl of cereal", table, frame)
    assert not stale_use("off", table, frame)


def test_walking_is_animated_between_ticks_in_the_live_viewer() -> None:
    init_headless()
    v = Viewer(_map(), LiveFeed(pace=60.0), size=(1280, 720), frame=FrameState())
    v.animate = True  # as in the window (run() turns it on)
    before = FrameState(residents={"Ada": ResidentFrame("Ada", tile=(10, 2))})
    v.frame = FrameState(residents={"Ada": ResidentFrame("Ada", tile=(11, 2))})
    v._note_moves(before)
    began = v._motion["Ada"][2]
    x, y = v.positions(began + MOVE_S / 2)["Ada"]
    assert 10.3 < x < 10.7 and y == 2
    assert v.positions(began + MOVE_S * 2) == {}  # arrived
    surf = pygame.Surface((1280, 720))
    v.draw(surf)  # draws with and without walkers


def test_the_engines_event_records_name_the_gathering() -> None:
    """An ``event`` record (maps.contracts.EventPayload, party-engine's) is folded into the frame."""
    party = EventPayload(status="learned", key="valentine", kind="party", what="Valentine's Day party",
                         host="Maria Alvarez", place="Willow Cafe:dining room", start=T0, end=T0 + timedelta(hours=2))
    doing = ["drinking a latte", "reading the paper", "waiting for a table", "serving coffee", "writing emails"]
    recs = [Record(kind="event", resident="Grace Kim", data=party.model_dump(mode="json"))]
    recs += [Record(kind="action", resident=n, data={"description": a, "address": "Willow Cafe:dining room"})
             for n, a in zip(PARTY, doing)]
    frame = apply(FrameState(), TickRecords(tick=0, time=T0 + timedelta(minutes=10), records=recs))
    assert [e.title for e in frame.events] == ["Valentine's Day party"]
    assert [(g.title, g.names) for g in gatherings(frame)] == [("Valentine's Day party", tuple(sorted(PARTY)))]
    late = apply(frame, TickRecords(tick=1, time=T0 + timedelta(hours=3), records=[]))
    assert gatherings(late) == []  # over: no banner
