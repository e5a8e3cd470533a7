"""Headless drawing: markers where the record says, replay draws what live drew, exports work."""

from __future__ import annotations

import argparse
import hashlib
from datetime import datetime, timedelta
from pathlib import Path

import pygame
import pytest

from world.cli import replay as replay_command
from replays.export import HeadlessViewer, init_headless, write_gif
from replays.feeds import LiveFeed, ReplayFeed
from replays.frames import FrameState
from replays.mapview import grid_map
from replays.reader import RunReader
from maps.contracts import Record, TickRecords
from replays.render import resident_colours
from memory.runfile import RunStore
from replays.viewer import Viewer

T0 = datetime(2024, 2, 13, 9, 0)
# Two residents walking along open street rows of the default town, far apart.
PATHS = {"Ada": [(10 + k, 2) for k in range(12)], "Bob": [(60 + k, 2) for k in range(12)]}


def ticks() -> list[TickRecords]:
    out = []
    for k in range(12):
        recs = [Record(kind="move", resident=n, data={"tile": list(p[k]), "address": ""}) for n, p in PATHS.items()]
        if k == 3:
            recs.append(Record(kind="action", resident="Ada", data={"description": "going to the cafe", "emoji": "☕"}))
            recs.append(Record(kind="chat", resident="Ada", data={"speaker": "Ada", "listener": "Bob", "text": "Morning!"}))
        if k == 6:
            recs.append(Record(kind="encounter", resident="Bob", data={"encounter_id": "e1", "step": "score",
                                                                       "data": {"scores": {"safety": 1}}}))
        out.append(TickRecords(tick=k, time=T0 + timedelta(seconds=10 * k), records=recs))
    return out


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    store = RunStore.create(tmp_path / "run", {"town": "default", "town_name": "Willowbrook",
                                               "resident_names": list(PATHS)})
    for tr in ticks():
        store.commit_tick(tr)
    store.close()
    return tmp_path / "run"


def _replay(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    replay_command.add_arguments(parser)
    return replay_command.main(parser.parse_args(list(argv)))


def test_png_frame_shows_marker_at_recorded_tile(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "png"
    assert _replay(str(run_dir), "--png-dir", str(out), "--at", "tick:5", "--at", "09:01:40") == 0
    files = sorted(out.glob("*.png"))
    assert [f.name[:12] for f in files] == ["frame_000005", "frame_000010"]
    # Where does tile (x, y) land? The same camera the exporter used.
    hv = HeadlessViewer(run_dir)
    cam, origin = hv.viewer.camera, hv.viewer.map_rect.topleft
    hv.close()
    init_headless()
    for path, k in zip(files, (5, 10)):
        img = pygame.image.load(str(path))
        for name, p in PATHS.items():
            px = cam.tile_to_screen((p[k][0] + 0.5, p[k][1] + 0.5), origin)
            assert tuple(img.get_at(px))[:3] == resident_colours(PATHS)[name], (name, k)
            # ...and not where the resident was five ticks before.
            old = cam.tile_to_screen((p[k - 5][0] + 0.5, p[k - 5][1] + 0.5), origin)
            assert tuple(img.get_at(old))[:3] != resident_colours(PATHS)[name]


def _digest(surface: pygame.Surface, viewer: Viewer) -> str:
    """The town as drawn: map and side panel (the time bar differs by design: LIVE/REPLAY)."""
    h = hashlib.sha1()
    for rect in (viewer.map_rect, viewer.panel_rect):
        h.update(pygame.image.tobytes(surface.subsurface(rect), "RGB"))
    return h.hexdigest()


def test_replay_draws_the_same_frames_as_live(run_dir: Path) -> None:
    init_headless()
    hv = HeadlessViewer(run_dir)  # for the map and title the replay uses
    mapview = hv.run.map
    hv.close()
    size = (1280, 720)
    # Live: ticks arrive through the engine listener, one at a time.
    live = LiveFeed(pace=60.0)
    lv = Viewer(mapview, live, size=size, frame=FrameState(), title="t")
    lv.select("Ada")
    surf = pygame.Surface(size)
    live_digests = []
    for tr in ticks():
        live.listener(tr)
        lv.update(0.0)
        lv.draw(surf)
        live_digests.append(_digest(surf, lv))
    # Replay: the same folder played back; and seeking to each tick.
    reader = RunReader.open(run_dir)
    rv = Viewer(mapview, ReplayFeed(reader, run_dir), size=size, frame=FrameState(), title="t")
    rv.select("Ada")
    rv.paused = True
    replay_digests = []
    for k in range(12):
        rv.step(+1)
        rv.draw(surf)
        replay_digests.append(_digest(surf, rv))
    assert replay_digests == live_digests
    for k in (11, 0, 7):
        rv.seek(k)
        rv.draw(surf)
        assert _digest(surf, rv) == live_digests[k]
    reader.close()


def test_gif_export(run_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    from PIL import Image

    info = write_gif(run_dir, tmp_path / "day.gif", start="09:00", end="09:01:30", size=(480, 270))
    assert info["frames"] >= 5 and info["from_tick"] == 0 and info["to_tick"] == 9
    with Image.open(tmp_path / "day.gif") as img:
        assert img.size == (480, 270) and img.n_frames == info["frames"]


def test_bad_times_are_refused(run_dir: Path, tmp_path: Path, capsys) -> None:
    assert _replay(str(run_dir), "--png-dir", str(tmp_path / "x"), "--at", "18:00") == 2
    assert "outside the run" in capsys.readouterr().err
    assert _replay(str(run_dir), "--png-dir", str(tmp_path / "x"), "--at", "teatime") == 2
    assert "cannot read the time" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_viewer_input_and_controls() -> None:
    init_headless()
    mapview = grid_map(2, 1)
    sent: list[dict] = []

    def submit(cmd: dict) -> dict:
        sent.append(cmd)
        return {"accepted": cmd["resident"] == "Ada", "message": "queued" if cmd["resident"] == "Ada" else "no such resident"}

    feed = LiveFeed(submit=submit, pace=60.0)
    v = Viewer(mapview, feed, size=(1280, 720), frame=FrameState())
    feed.listener(TickRecords(tick=0, time=T0, records=[
        Record(kind="move", resident="Ada", data={"tile": [6, 6]}),
        Record(kind="move", resident="Bob", data={"tile": [20, 6]})]))
    v.update(0.0)
    # Click on Ada's marker selects her; a click on empty street clears the selection.
    ada_px = v.camera.tile_to_screen((6.5, 6.5), v.map_rect.topleft)
    v.handle_event(pygame.event.Event(pygame.MOUSEBUTTONDOWN, button=1, pos=ada_px))
    v.handle_event(pygame.event.Event(pygame.MOUSEBUTTONUP, button=1, pos=ada_px))
    assert v.selected == "Ada"
    # Space pauses, + speeds up the live pace.
    v.handle_event(pygame.event.Event(pygame.KEYDOWN, key=pygame.K_SPACE, mod=0, unicode=" "))
    assert v.paused and feed.paused
    v.handle_event(pygame.event.Event(pygame.KEYDOWN, key=pygame.K_PLUS, mod=0, unicode="+"))
    assert feed.pace == 120.0
    # Enter, type, Enter: a whisper to the selected resident.
    v.handle_event(pygame.event.Event(pygame.KEYDOWN, key=pygame.K_RETURN, mod=0, unicode="\r"))
    v.handle_event(pygame.event.Event(pygame.TEXTINPUT, text="you love jazz"))
    v.handle_event(pygame.event.Event(pygame.KEYDOWN, key=pygame.K_RETURN, mod=0, unicode="\r"))
    assert sent == [{"kind": "whisper", "resident": "Ada", "text": "you love jazz"}]
    assert v.text == "" and v.notices[-1].good
    # A refused command keeps the text and says why.
    v.select("Bob")
    v.text = "hello"
    v.submit_text()
    assert v.text == "hello" and not v.notices[-1].good and "no such resident" in v.notices[-1].text
    # Wheel zoom over the map changes the scale; empty text is not sent.
    before = v.camera.tile_px
    v.camera.zoom(2, (100, 100))
    assert v.camera.tile_px > before
    v.text = "   "
    v.submit_text()
    assert len(sent) == 2


def test_no_screen_is_refused_with_a_way_out(monkeypatch, capsys, run_dir: Path) -> None:
    from replays.viewer import NoDisplayError, check_display

    init_headless()
    check_display()  # dummy driver asked for explicitly: fine (tests, exports)
    monkeypatch.delenv("SDL_VIDEODRIVER")
    with pytest.raises(NoDisplayError, match="--png-dir"):
        check_display()
    assert _replay(str(run_dir)) == 2
    assert "no screen" in capsys.readouterr().err


def test_replay_viewer_pokes_a_live_folder_through_its_socket(run_dir: Path) -> None:
    from replays.control import ControlServer

    init_headless()
    got: list[dict] = []
    reader = RunReader.open(run_dir)
    v = Viewer(grid_map(2, 1), ReplayFeed(reader, run_dir), size=(1280, 720), run_dir=run_dir)
    v.seek(3)
    v.select("Ada")
    v.text = "take an umbrella"
    v.submit_text()  # the run is over: nothing to poke, and the box keeps the text
    assert not v.notices[-1].good and "not live" in v.notices[-1].text and v.text
    with ControlServer(run_dir, lambda c: got.append(c) or {"accepted": True, "message": "queued"}):
        v.submit_text()
        v.mode = "announce"
        v.text = "Fire drill at noon"
        v.submit_text()
    assert got == [{"kind": "whisper", "resident": "Ada", "text": "take an umbrella"},
                   {"kind": "announce", "text": "Fire drill at noon"}]
    reader.close()
