"""The believability score is honest: issue 11's degenerate morning scores low, a sensible one high,
and every run summary carries the score."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from agents.believability import (
    RunTexts,
    degenerate_reason,
    importance_pairs_check,
    interview_check,
    read_run,
    score_texts,
)
from memory.embeddings import get_embedder
from world.summary import run_summary

EMBED = get_embedder("hashing").encode
FRIDAY_10 = datetime(2026, 2, 13, 10, 0)
PERSONAS = {
    "Maria Alvarez": {"name": "Maria Alvarez", "occupation": "doctor", "workplace": "Riverside Clinic:consulting room"},
    "Lucy Alvarez": {"name": "Lucy Alvarez", "occupation": "nurse", "workplace": "Riverside Clinic:ward"},
    "Tom Alvarez": {"name": "Tom Alvarez", "occupation": "student", "workplace": "Willowbrook College:classroom"},
}


def degenerate_morning() -> RunTexts:
    """What issue 11 saw on SmolLM2-135M: digit lists, numbered zones, a doctor, a nurse and a
    17-year-old at the pub at 09:00 on a Friday, a conversation of names, counting importances."""
    pub = "The Crooked Pub:bar room"
    return RunTexts(
        personas=PERSONAS,
        hourly={name: [["07:00 1. 1. 2. 3. 4. (120 min)", "09:00 Zones 1 Zones 2 Zones 7 (600 min)",
                        "19:00 sleeping (240 min)"]] for name in PERSONAS},
        day_plans=["1. 1. 2. 3. 4.", "Zones 1 ... Zones 7", '{"plan": ["wake up"', "Answer in JSON with the plan"],
        actions=[("Maria Alvarez", "examining a patient", pub), ("Lucy Alvarez", "nursing a patient", pub),
                 ("Tom Alvarez", "sleeping", pub)],
        whereabouts=[(name, FRIDAY_10, pub) for name in PERSONAS],
        conversations=[[("Lucy Alvarez", "Lucy Alvarez"), ("Maria Alvarez", "Maria Alvarez"),
                        ("Lucy Alvarez", "Lucy Alvarez"), ("Maria Alvarez", "1. 2. 3.")]],
        memories=[("Maria Alvarez", "My father died this morning", 1), ("Maria Alvarez", "Tom is idle", 2),
                  ("Lucy Alvarez", "The clinic caught fire", 3), ("Lucy Alvarez", "I bought a latte", 4)],
    )


def sensible_morning() -> RunTexts:
    clinic = "Riverside Clinic:consulting room"
    return RunTexts(
        personas=PERSONAS,
        hourly={
            "Maria Alvarez": [["07:00 waking up and having breakfast (60 min)", "08:00 seeing patients at the clinic (540 min)",
                               "17:00 walking home (60 min)"]],
            "Lucy Alvarez": [["07:00 breakfast at home (90 min)", "08:30 nursing shift on the ward (510 min)"]],
            "Tom Alvarez": [["08:00 walking to college (60 min)", "09:00 lecture on chemistry (420 min)"]],
        },
        day_plans=["wake up at seven and have breakfast", "see patients at Riverside Clinic until five",
                   "have dinner with Lucy"],
        actions=[("Maria Alvarez", "examining a patient", clinic), ("Lucy Alvarez", "triage of a patient", "Riverside Clinic:ward"),
                 ("Tom Alvarez", "sleeping", "Oak House:bedroom:bed"), ("Tom Alvarez", "attending a lecture", "Willowbrook College:classroom")],
        whereabouts=[("Maria Alvarez", FRIDAY_10, clinic), ("Lucy Alvarez", FRIDAY_10, "Riverside Clinic:ward"),
                     ("Tom Alvarez", FRIDAY_10, "Willowbrook College:classroom"),
                     ("Tom Alvarez", FRIDAY_10 + timedelta(days=1), "The Crooked Pub:bar room")],  # Saturday: free
        conversations=[[
            ("Lucy Alvarez", "Are you coming to the party at the pub tonight?"),
            ("Maria Alvarez", "Yes, I will come to the party after my shift at the clinic."),
            ("Lucy Alvarez", "Great, the clinic shift ends at five, so the party starts at six."),
        ]],
        memories=[("Maria Alvarez", "My father died this morning", 9), ("Maria Alvarez", "Tom is idle", 1),
                  ("Lucy Alvarez", "The clinic caught fire", 8), ("Lucy Alvarez", "I bought a latte", 2)],
    )


@pytest.mark.parametrize("text, reason", [
    ("1. 1. 2. 3. 4.", "digit list"),
    ("Zones 1 ... Zones 7", "numbered placeholders"),
    ('{"plan": ["wake up"', "JSON debris"),
    ("Respond with JSON in the format below", "JSON debris"),
    ("Lucy Alvarez", "a name as a line"),
    ("Maria", "a name as a line"),
    ("...", "no words"),
    # the default embedded model's interview answer, measured (docs/BENCHMARKS.md)
    ("Maria Alvarez, in the first person, using only the first person plural of the original sentence,",
     "echo of the instruction"),
])
def test_degenerate_text_is_named(text, reason):
    assert degenerate_reason(text, list(PERSONAS)) is not None
    assert degenerate_reason(text, list(PERSONAS)) in (reason, "echo of the instruction")


def test_what_residents_write_down_of_their_talks_is_judged_too():
    run = sensible_morning()
    clean = score_texts(run, EMBED, embedder="hashing").checks["no_degenerate_text"]
    assert clean.score == 1.0
    # SmolLM2's summaries of two talks (bench seed 2, 2026-11-26), and a persona's own thought
    run.prose = ["Maria Alvarez", "Lucy Alvarez: " + "I am curious about the life of my family. " * 5,
                 "I talked with Lucy Alvarez about the party at the pub.", "I want to apply to medical school."]
    check = score_texts(run, EMBED, embedder="hashing").checks["no_degenerate_text"]
    assert check.judged == clean.judged + 4 and check.score == (clean.judged + 2) / check.judged
    assert any("a name as a line: Maria Alvarez" in f for f in check.failures)


def test_ordinary_sentences_are_not_degenerate():
    for text in ["see patients at Riverside Clinic until five", "Yes, I will come to the party after my shift.",
                 "Lucy said the clinic opens at 9 on Monday"]:
        assert degenerate_reason(text, list(PERSONAS)) is None, text


def test_the_degenerate_morning_scores_low_on_every_check():
    score = score_texts(degenerate_morning(), EMBED, embedder="hashing")
    for name in ("plans_at_work", "at_work_in_work_hours", "action_place", "no_degenerate_text",
                 "conversation_answers", "importance_order"):
        check = score.checks[name]
        # its three actions are words at the wrong place (action_place fails them), so the text
        # check, which reads actions too, passes 3 of its 11 texts
        assert check.judged > 0 and check.score is not None and check.score <= 0.3, (name, check)
        assert check.failures, name
    assert score.overall is not None and score.overall < 0.2


def test_what_smollm2_wrote_instead_of_activities_fails_the_text_check():
    """Seen in a real SmolLM2 quickstart: placeholders, identifiers, persona lines and times as
    plan items and actions; each is refused by the activity validator too, so the model retries."""
    from agents.believability import degenerate_reason
    from agents.roles.common import require_words

    seen = ["step1", "mango_mango_mango_mango_mango", "move_to_bedroom", "7:00 Tom Alvarez (doctor)",
            "12:00 Hannah Price (52), Maple House", "6:00 Today: Friday 13 February 2026", "17:00 Morning",
            "Hannah Price is step1"]
    for text in seen:
        assert degenerate_reason(text, ["Hannah Price", "Tom Alvarez"]), text
    for text in seen[:3] + ["Tom Alvarez (doctor)", "Today: Friday 13 February 2026", "Morning"]:
        with pytest.raises(ValueError, match="^expected words"):
            require_words(text)
    # a talk's summary or an insight is words, not an activity: the run summary's reason says so
    # (SmolLM2's insight fell back with 'expected words describing an activity', 2026-12-07)
    from agents.roles.common import require_action
    with pytest.raises(ValueError, match="^expected words$"):
        require_words("16,2022,2021,2020")
    with pytest.raises(ValueError, match="^expected words describing an activity$"):
        require_action("16,2022,2021,2020")
    for text in ["having breakfast at Oak House kitchen", "Good morning, Tom!", "break at lunch"]:
        assert degenerate_reason(text, ["Tom Alvarez"]) is None and require_words(text) == text


def test_what_got_past_the_activity_check_on_2026_11_24_is_refused_as_an_activity():
    """Seen in the SmolLM2 quickstart of 2026-11-24 (replay --timeline) as actions and plan items:
    a name, a web address, stray single words, lists of single words, a numbered item. They fail
    the text check when they are activities, and the activity validator refuses them, so the model
    retries; the same words as a chat line are speech, judged by the chat rules."""
    from agents.believability import degenerate_reason
    from agents.roles.common import require_action

    names = ["Maria Alvarez", "Lucy Alvarez"]
    seen = ["Lucy Alvarez", "Mari Alvarez", "wakeupandgetreadyatoataller123.com", "dance", "marc", "move",
            "add", "nope", "8:00 Classroom", "6:00 Mercury", "12:00 Dance, dance, dance", "17:00 Bike, bike, bike",
            "7:00 Morning, breakfast; lunch; dinner; evening; relaxation…", "12:00 part",
            "1. to work at a clinic at Riverside Clinic", "Willow Cafe", "workday shift at the clinic.23",
            "I want to apply to medical school", "opening the cafe at 7, bakes before anyone else is up",
            # the quickstart of 2026-11-24, after the checks above: a status line, a persona copied, a schema's words
            "17:00 Hannah Price's status: Current: Dead, 2026",
            "7:00 Tom Alvarez's work day shifts at the clinic; works at Elmwood; works at Elmwood;",
            "works at the clinic; works at …", "React, no", "Current: Dead, 2026",
            "8:00 Monday: Breakfast", "12:00 Wednesday: Lunch", "not react", "add action",
            "going to bed at Oak House 22:00", "not today",
            "baking before any other other baking is up, reads in bed.},{",
            # the quickstart of 2026-11-25: an observation of someone as a plan part
            "8:00 Moses Alvarez is idle", "Tom Alvarez is talking with Maria Alvarez", "12:00 Her status is currently",
            "She does everything, she does it with her heart", "7:00 Monday at a time",
            # bench seed 2, 2026-11-26: a person doing something, a memory, the prompt's words
            "Hannah Price works at Riverside Clinic, sees patients", "Current status of today",
            # captured quickstart prompts resampled, 2026-11-26 (evening): words run together in camel case
            "addOneMovieImgReloads xtm", "openpartsByDateSetTxt ituted", "Monday ireamariel, Wednesday ireamariel",
            "Monday ia Monday ia Monday, Friday ia Friday Friday, Wednesday", "nothing", "Something"]
    for text in seen:
        assert degenerate_reason(text, names, activity=True), text
        with pytest.raises(ValueError, match="expected words describing an activity"):
            require_action(text.split(" ", 1)[1] if text[0].isdigit() and ":" in text[:3] else text)
    assert degenerate_reason("nope", names) is None  # a chat line may be one word
    for text in ["working at Willow Cafe kitchen", "relax", "Lunch", "Turn on the stove", "Toast bread",
                 "talking with Maria Alvarez", "thinking about what to do next", "Read Newspaper",
                 "go to Oak House:kitchen", "visit Maria Alvarez's cafe", "no work today, relax at home",
                 "rushing to deal with it: the stove is on fire", "morning walk", "Friday night dinner",
                 "Read Harry Potter books", "Lunch with Tom Alvarez", "visiting MacDonald farm",
                 "Sunday lunch with Lucy"]:
        assert degenerate_reason(text, names, activity=True) is None and require_action(text) == text


def test_an_action_that_names_another_place_than_where_it_happens_fails():
    from agents.believability import action_place_check

    check = action_place_check([("Tom Alvarez", "working at Riverside Clinic exam room", "Oak House"),
                                ("Lucy Alvarez", "getting ready at Oak House second bedroom", "Oak House:second bedroom")])
    assert check.judged == 2 and check.score == 0.5


def test_a_sensible_morning_scores_high():
    score = score_texts(sensible_morning(), EMBED, embedder="hashing")
    assert score.checks["at_work_in_work_hours"].judged == 3  # Saturday at the pub is not judged
    for name in ("plans_at_work", "at_work_in_work_hours", "action_place", "no_degenerate_text",
                 "conversation_answers", "importance_order"):
        assert score.checks[name].score == 1.0, (name, score.checks[name])
    assert score.checks["interview_answers"].score is None  # no interviews in a run: not judged, not counted
    assert score.overall == 1.0


def test_a_reply_that_says_the_line_again_with_the_names_swapped_is_not_an_answer():
    # Qwen's quickstart: Maria said Lucy's line back with only the name changed, and Lucy said it
    # again; on the hashing embedder that is similar enough to count as an answer
    texts = sensible_morning()
    line = "I just wanted to say that I'm planning to apply to medical school next year."
    texts.conversations = [[("Lucy Alvarez", f"Hi, Maria! {line}"), ("Maria Alvarez", f"Hi, Lucy! {line}"),
                            ("Lucy Alvarez", f"Hi, Maria! {line}")]]
    check = score_texts(texts, EMBED, embedder="hashing").checks["conversation_answers"]
    assert (check.judged, check.score) == (2, 0.0)
    assert "repeats the line before" in " ".join(check.failures)


def test_a_reply_that_greets_its_own_speaker_or_says_the_opener_under_its_own_name_is_no_answer():
    # SmolLM2, 2026-11-26: Maria answered Lucy 'Hi Maria! How are you today?'; in the quickstart
    # Maria said Tom's opener back with her own name in it and a question added
    texts = sensible_morning()
    tom = "I am Tom Alvarez and I would love to discuss my plans for Friday 13 February, but I am stuck."
    texts.conversations = [
        [("Lucy Alvarez", "Good morning, Maria! What are you up to today?"),
         ("Maria Alvarez", "Hi Maria! How are you today?")],
        [("Tom Alvarez", tom), ("Maria Alvarez", tom.replace("Tom", "Maria") + " How about the festival?")],
    ]
    check = score_texts(texts, EMBED, embedder="hashing").checks["conversation_answers"]
    assert (check.judged, check.score) == (2, 0.0), check.failures
    assert "own name" in check.failures[0] and "repeats the line before" in check.failures[1]


def test_importance_that_counts_upwards_fails_the_pairs():
    counting = importance_pairs_check([("My father died", 1, "I bought a latte", 2), ("A fire", 3, "Tom is idle", 4)])
    assert counting.score == 0.0
    assert importance_pairs_check([("My father died", 9, "I bought a latte", 2)]).score == 1.0


def test_an_interview_answer_must_mention_what_the_resident_remembers():
    memories = ["I saw patients at Riverside Clinic", "Lucy invited me to the party at the pub"]
    bad = interview_check([("Maria Alvarez", "Maria Alvarez", memories), ("Maria Alvarez", "I like turtles.", memories)],
                          list(PERSONAS))
    assert bad.score == 0.0
    good = interview_check([("Maria Alvarez", "I saw patients at the clinic, and Lucy invited me to a party.", memories)])
    assert good.score == 1.0


def test_every_run_summary_has_a_believability_block(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("TOWNSFOLK_EMBEDDER", "hashing")
    from world.runner import RunOptions, build_engine

    start = datetime(2026, 2, 13, 7, 0)
    engine = build_engine(RunOptions(town="default", agents=2, start=start, duration=timedelta(minutes=30), seed=0,
                                     mind="generative", model="scripted", out=tmp_path / "run"))
    asyncio.run(engine.run(engine.context.until))
    block = run_summary(engine.store)["believability"]
    engine.store.close()
    assert "error" not in block, block
    assert 0.0 <= block["overall"] <= 1.0
    assert block["plans_at_work"]["judged"] >= 1  # both residents planned their day
    assert block["no_degenerate_text"]["judged"] >= 1
    for name in ("plans_at_work", "action_place", "no_degenerate_text", "conversation_answers", "importance_order"):
        assert name in block
    conn = sqlite3.connect(tmp_path / "run" / "run.db")
    try:
        texts = read_run(conn)
        assert set(texts.personas) == set(engine.residents)
        # what the residents wrote down (their seed thoughts at least) is judged as text too
        assert texts.prose and set(texts.prose) <= {t for _, t, _ in texts.memories}
    finally:
        conn.close()


def _bench_args(argv: list[str]):
    import argparse

    from world.cli import bench_believability

    parser = argparse.ArgumentParser()
    bench_believability.add_arguments(parser)
    return parser.parse_args(argv)


def test_the_bench_refuses_bad_options_by_name(capsys):
    with pytest.raises(SystemExit):
        _bench_args(["--agents", "0"])
    assert "--agents" in capsys.readouterr().err
    from world.cli import bench_believability

    with pytest.raises(SystemExit, match="expected a duration"):
        bench_believability.run(_bench_args(["--duration", "soon"]))
