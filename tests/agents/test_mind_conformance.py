"""Every mind that ships passes the Mind conformance check (agents/minds/conformance.py)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from agents.llm.gateway import make_llm
from agents.minds import generative, routine
from agents.minds.conformance import ConformanceError, check_mind
from memory.embeddings import get_embedder


def test_the_generative_mind_passes_the_conformance_check(tmp_path: Path) -> None:
    factory = partial(generative.make_mind, embedder=get_embedder("hashing"))
    decisions = check_mind(factory, make_llm("scripted", use_cache=False), tmp_path)
    assert len({name for _, name, _ in decisions}) == 2


def test_the_routine_mind_passes_the_conformance_check(tmp_path: Path) -> None:
    decisions = check_mind(routine.make_mind, None, tmp_path)
    assert any('"go"' in intent for _, _, intent in decisions)


def test_a_mind_that_forgets_its_state_on_restore_fails_the_check(tmp_path: Path) -> None:
    """The check can fail: a routine mind whose restore drops the snapshot is caught."""

    def forgetful(persona, llm, run_db, options):
        mind = routine.make_mind(persona, llm, run_db, options)
        mind.restore = lambda state: None
        return mind

    with pytest.raises(ConformanceError, match="after restore|snapshot"):
        check_mind(forgetful, None, tmp_path, snapshot_after=0.5)
