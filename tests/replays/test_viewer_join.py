"""Joining the town (issue 30 §7, `watch --join NAME`): a person walks by clicking, says a line
through the input box to whoever is near, the resident answers and remembers the talk; a taken
name and a 'play' command for someone who did not join are refused."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from agents.minds.conformance import check_mind
from agents.minds.player import PlayerMind
from memory.embeddings import ENV_VAR as EMBEDDER_ENV
from memory.runfile import RunStore
from replays import control
from replays.control import ControlServer
from replays.export import init_headless
from replays.feeds import LiveFeed
from replays.frames import frame_from_snapshot
from replays.mapview import from_town
from replays.viewer import Viewer
from world.runner import RunError, RunOptions, build_engine, submit_durably

START = datetime(2026, 2, 13, 7, 0)
ANA = "Ana Lee"


def _engine(tmp_path: Path, join: list[str]):
    return build_engine(RunOptions(town="default", agents=2, start=START, duration=timedelta(hours=1), seed=0,
                                   mind="generative", model="scripted", out=tmp_path / "run", join=join))


def test_a_joined_person_walks_by_clicking_says_a_line_and_is_answered_and_remembered(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    monkeypatch.setenv(EMBEDDER_ENV, "hashing")
    init_headless()
    engine = _engine(tmp_path, [ANA])
    feed = LiveFeed(submit=engine.submit, pace=None)
    viewer = Viewer(from_town(engine.town), feed, size=(1280, 720), frame=frame_from_snapshot(engine.state()),
                    player=ANA)
    engine.add_listener(feed.listener)
    assert viewer.mode == "say" and ANA in viewer.frame.residents
    kitchen = next(a for a in viewer.map.areas if a.address == "Oak House:kitchen")
    tile = sorted(t for t in kitchen.tiles if t not in viewer.map.blocked)[0]
    viewer.click_map(viewer.camera.tile_to_screen((tile[0] + 0.5, tile[1] + 0.5), viewer.map_rect.topleft))
    assert viewer.notices[-1].good, viewer.notices[-1].text  # 'sent Ana Lee walks to Oak House:kitchen'
    asyncio.run(engine.run(START + timedelta(minutes=25)))
    viewer.update(0.0)
    assert viewer.frame.residents[ANA].address.startswith("Oak House:kitchen")
    partner = viewer.talk_partner()
    assert partner in ("Maria Alvarez", "Tom Alvarez")
    viewer.text = "Good morning! I just moved to town. Is the cafe open today?"
    viewer.submit_text()
    assert viewer.text == "" and viewer.notices[-1].good, viewer.notices[-1].text
    asyncio.run(engine.run(START + timedelta(hours=1)))
    engine.store.close()
    conn = sqlite3.connect(RunStore.db_path(tmp_path / "run"))
    chats = [json.loads(d) for (d,) in conn.execute("SELECT data FROM records WHERE kind = 'chat' ORDER BY tick, seq")]
    said = [c for c in chats if c["speaker"] == ANA]
    assert said and said[0]["listener"] == partner and "moved to town" in said[0]["text"]
    assert any(c["speaker"] == partner and c["listener"] == ANA for c in chats)  # answered, as a record
    kept = [json.loads(d) for (r, d) in conn.execute("SELECT resident, data FROM records WHERE kind = 'memory'")
            if r == partner]
    assert any(m["kind"] == "chat" and ANA in m["text"] for m in kept), kept  # remembered, like any talk


def test_a_taken_name_and_a_play_command_for_someone_who_did_not_join_are_refused(tmp_path: Path,
                                                                                 monkeypatch) -> None:
    monkeypatch.setenv(EMBEDDER_ENV, "hashing")
    with pytest.raises(RunError, match="is called that"):
        _engine(tmp_path / "a", ["Maria Alvarez"])
    engine = _engine(tmp_path / "b", [ANA])
    try:
        refused = engine.submit({"kind": "play", "resident": "Maria Alvarez", "go": "Willow Park"})
        assert not refused.accepted and "did not join" not in refused.message and "not a person who joined" in refused.message
        nowhere = engine.submit({"kind": "play", "resident": ANA, "go": "Atlantis"})
        assert not nowhere.accepted and "no place 'Atlantis'" in nowhere.message
        both = engine.submit({"kind": "play", "resident": ANA, "go": "Willow Park", "text": "hi"})
        assert not both.accepted and "either 'go'" in both.message
        # the control socket's verb, for other front ends: the same command as JSON
        with ControlServer(engine.context.run_dir, submit_durably(engine)):
            reply = control.inject(engine.context.run_dir, {"kind": "play", "resident": ANA, "go": "Willow Cafe"})
        assert reply.get("ok"), reply
    finally:
        engine.store.close()


def test_the_player_mind_passes_the_checks_any_mind_must(tmp_path: Path) -> None:
    """Snapshot and restore mid-run give the same decisions (agents.minds.conformance)."""
    assert check_mind(PlayerMind, None, tmp_path)
