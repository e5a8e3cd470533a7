"""Interviews from the viewer: asked on a worker thread, answered from memory, nothing written."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from agents.minds.interview import interview
from replays.export import init_headless
from replays.feeds import ReplayFeed
from replays.runview import open_run
from replays.viewer import Viewer


def test_viewer_interviews_the_selected_resident(tmp_path: Path, monkeypatch) -> None:
    runner = pytest.importorskip("world.runner")
    pytest.importorskip("agents.minds.interview")
    monkeypatch.setenv("TOWNSFOLK_EMBEDDER", "hashing")
    run_dir = tmp_path / "run"
    engine = runner.build_engine(runner.RunOptions(town="default", agents=2, mind="generative", model="scripted",
                                                   duration="10m", out=run_dir))
    for _ in range(3):
        asyncio.run(engine.step())
    name = engine.resident_names[0]
    engine.store.close()
    before = (run_dir / "run.db").read_bytes()

    init_headless()
    run = open_run(run_dir)
    viewer = Viewer(run.map, ReplayFeed(run.reader, run_dir), size=(1024, 700), run_dir=run_dir, model="scripted",
                    interviewer=interview)
    viewer.seek(2)
    viewer.select(name)
    viewer.mode = "ask"
    viewer.text = "What are you doing today?"
    viewer.submit_text()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and viewer.interviews[name][-1][1] is None:
        time.sleep(0.05)
    question, answer = viewer.interviews[name][-1]
    assert question == "What are you doing today?"
    assert answer and not answer.startswith("(no answer")
    run.reader.close()
    assert (run_dir / "run.db").read_bytes() == before  # interviews write no memory
