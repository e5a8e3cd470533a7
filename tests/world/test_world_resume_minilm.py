"""Exact resume with the real MiniLM embedder: a run killed mid-way and resumed in a fresh process
(cold embedding cache, other batches) writes exactly what the uninterrupted run wrote."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memory import embeddings
from memory.runfile import RunStore
from tests.world.test_world_resume import KILLER, REPO, digest, first_difference, run_to_end
from world.runner import RunOptions, build_engine

OPTIONS = {"town": "default", "agents": 3, "model": "scripted", "mind": "generative", "duration": "2h",
           "start": "2026-02-13 06:30", "seed": 11, "snapshot_every": 40}


def minilm_installed() -> bool:
    try:
        embeddings.minilm_path()
    except RuntimeError:
        return False
    return True


@pytest.mark.skipif(not minilm_installed(), reason="the packaged MiniLM model is not installed")
def test_minilm_run_killed_mid_way_resumes_to_the_same_records(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TOWNSFOLK_EMBEDDER", "minilm")
    whole = tmp_path / "whole"
    run_to_end(build_engine(RunOptions(**OPTIONS, out=whole)))
    with RunStore.open(whole) as s:
        last = s.last_tick()
        assert s.count("memory") > 0
    killed = tmp_path / "killed"
    env = {**os.environ, "TOWNSFOLK_EMBEDDER": "minilm"}
    proc = subprocess.run([sys.executable, "-c", KILLER, json.dumps({**OPTIONS, "out": str(killed)}), str(last // 2)],
                          cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    embeddings._SHARED.pop("minilm", None)  # the resume starts cold, as a new process would
    engine = build_engine(RunOptions(resume=killed))
    run_to_end(engine)
    assert engine.diverged == 0
    assert digest(killed) == digest(whole), first_difference(killed, whole)
