"""The believability bench measures the model (issue 11 §2): importance is probed on pairs the
keyword prior was never tuned on, interview answers the engine made are not the model's, and a
check that judged nothing is shown as such, never as a perfect score."""

from __future__ import annotations

import asyncio
import json

from agents.believability import (
    HELD_OUT_PAIRS,
    TUNING_PAIRS,
    content_words,
    importance_probe,
    model_answers,
    reply_probe,
)
from agents.llm.gateway import Completion, Gateway


def test_the_held_out_probe_pairs_share_nothing_with_the_tuning_pairs() -> None:
    tuning = {t for pair in TUNING_PAIRS for t in pair}
    held = {t for pair in HELD_OUT_PAIRS for t in pair}
    assert len(HELD_OUT_PAIRS) >= 10 and not tuning & held
    tuned_words = set().union(*(content_words(t) for t in tuning))
    for text in held:
        assert not content_words(text) & tuned_words, text


class Recording:
    """A backend that rates every memory 5 and keeps the prompts it was shown."""

    name = "recording"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def generate(self, request) -> Completion:
        self.prompts.append(request.messages[-1]["content"])
        count = _listed(request.messages[-1]["content"])
        return Completion(text=json.dumps({"ratings": [5] * count}), prompt_tokens=1, completion_tokens=1, cost=0.0)


def test_the_probe_scores_held_out_pairs_only() -> None:
    backend = Recording()
    check = asyncio.run(importance_probe(Gateway(backend, max_attempts=1), stored=False))
    shown = "\n".join(backend.prompts)
    assert len(backend.prompts) == 2 * len(HELD_OUT_PAIRS)  # one memory per call
    assert all(text in shown for pair in HELD_OUT_PAIRS for text in pair)
    assert not any(text in shown for pair in TUNING_PAIRS for text in pair)
    assert check.judged == len(HELD_OUT_PAIRS) and check.score == 0.0  # a flat 5 ranks nothing


def _listed(prompt: str) -> int:
    """How many memories a prompt asks about (a list, or one unnumbered)."""
    return prompt.split("Memories:", 1)[1].strip().count("\n") + 1 if "Memories:" in prompt else 1


class Counting(Recording):
    """A tiny model's habit: rate a numbered list 1, 2, 3, ... by position, whatever it says."""

    async def generate(self, request) -> Completion:
        count = _listed(request.messages[-1]["content"])
        return Completion(text=json.dumps({"ratings": list(range(1, count + 1))}), prompt_tokens=1,
                          completion_tokens=1, cost=0.0)


def test_the_probe_does_not_reward_or_punish_rating_by_position() -> None:
    # batched and interleaved (salient, mundane, ...) this scored every pair wrong (issue 11)
    check = asyncio.run(importance_probe(Gateway(Counting(), max_attempts=1), stored=False))
    assert check.judged == len(HELD_OUT_PAIRS) and check.score == 0.0
    assert all("=1 vs" in failure for failure in check.failures)  # a tie, not an inversion


def test_fallback_interview_answers_are_counted_not_scored() -> None:
    own, share = model_answers([("Ada", "I saw Ben at the cafe.", False), ("Ben", "I remember: ...", True),
                                ("Cy", "I remember: ...", True), ("Di", "I read.", False)])
    assert own == [("Ada", "I saw Ben at the cafe."), ("Di", "I read.")] and share == 0.5
    assert model_answers([("Ada", "x", True)]) == ([], 1.0)
    assert model_answers([]) == ([], None)


def test_the_default_bench_town_has_a_conversation_and_shows_what_it_judged(monkeypatch) -> None:
    import argparse

    from world.cli import bench_believability

    monkeypatch.setenv("TOWNSFOLK_EMBEDDER", "hashing")
    parser = argparse.ArgumentParser()
    bench_believability.add_arguments(parser)
    out = bench_believability.run(parser.parse_args(["--duration", "15m"]))  # default residents and start
    assert out["conversations"] >= 1 and out["judged"]["conversation_answers"] >= 1
    assert out["judged"]["importance_order"] == len(HELD_OUT_PAIRS)
    assert out["interviews"] == 3 and out["interview_fallback_share"] == 0.0  # scripted answers itself
    for name in out["unjudged"]:
        assert out["scores"][name] is None and out[name].startswith("n/a of 0")
    assert "at_work_in_work_hours" in out["unjudged"]  # a breakfast has no work hours: shown, not perfect


def test_several_models_are_scored_side_by_side_and_bad_lists_fail_before_any_run(monkeypatch) -> None:
    import argparse

    import pytest

    from world.cli import bench_believability

    monkeypatch.setenv("TOWNSFOLK_EMBEDDER", "hashing")
    for bad, says in (("scripted,,local", "found an empty one"), ("scripted,scripted", "named twice"),
                      ("scripted,local:nope", "unknown embedded model 'local:nope'")):
        with pytest.raises(ValueError, match=says):
            bench_believability.model_list(bad)
    parser = argparse.ArgumentParser()
    bench_believability.add_arguments(parser)
    one = bench_believability.run(parser.parse_args(["--duration", "15m"]))
    other = {**one, "model": "other", "overall": None, "scores": {**one["scores"], "plans_at_work": 0.5}}
    table = bench_believability.side_by_side([one, other])
    assert table["models"] == "scripted, other"
    assert table["overall"] == f"scripted {one['overall']:.3f} | other n/a"
    judged = one["judged"]["plans_at_work"]
    assert table["plans_at_work"] == f"scripted {one['scores']['plans_at_work']:.2f} ({judged}) | other 0.50 ({judged})"
    assert table["runs"] == [one, other] and "at_work_in_work_hours" in table  # every check has a line


class Replying:
    """Answers every ``converse`` prompt with ``text`` (an empty one is invalid: the fallback)."""

    name = "replying"

    def __init__(self, text: str) -> None:
        self.text, self.prompts = text, []

    async def generate(self, request) -> Completion:
        self.prompts.append(request.messages[-1]["content"])
        return Completion(text=json.dumps({"utterance": self.text, "end": False}), prompt_tokens=1,
                          completion_tokens=1, cost=0.0)


def _personas() -> dict:
    people = {}
    for name, job in (("Ana Alvarez", "doctor"), ("Ben Alvarez", "student"), ("Cy Alvarez", "nurse")):
        people[name] = {"name": name, "age": 40, "traits": ["kind"], "occupation": job,
                        "workplace": "Clinic:desk", "home": "Oak House:kitchen", "lifestyle": ""}
    return people


def test_the_reply_probe_gives_the_conversation_check_replies_to_judge() -> None:
    from datetime import datetime

    backend = Replying("Morning! I am off to the clinic soon, busy day today.")
    exchanges, share = asyncio.run(reply_probe(Gateway(backend, max_attempts=1), _personas(),
                                               [("Ben Alvarez", "Ben Alvarez is eating breakfast", 2)],
                                               datetime(2026, 2, 13, 8)))
    assert share == 0.0 and len(exchanges) == 3
    assert exchanges[0] == [("Ana Alvarez", "Good morning, Ben! What are you up to today?"),
                            ("Ben Alvarez", "Morning! I am off to the clinic soon, busy day today.")]
    assert "Ben Alvarez is eating breakfast" in backend.prompts[0]  # the listener's own memories


def test_fallback_replies_are_counted_not_judged() -> None:
    from datetime import datetime

    # an empty line is refused by the schema; after the one attempt the engine's line is used
    exchanges, share = asyncio.run(reply_probe(Gateway(Replying(""), max_attempts=1), _personas(), [],
                                               datetime(2026, 2, 13, 8)))
    assert exchanges == [] and share == 1.0
    assert asyncio.run(reply_probe(Gateway(Replying("x"), max_attempts=1), {}, [], datetime(2026, 2, 13))) == ([], None)
