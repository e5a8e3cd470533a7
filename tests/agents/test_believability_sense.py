"""The score sees nonsense (issue 30 §2): the quickstart morning the issue saw on the embedded model
(a breakfast talk about translating Python code, Maria making coffee four times in fifty minutes,
toast made in the living room under a bank's emoji, a kitchen table whose state is 'Cafe', a talk
remembered as a critic's note) scores low on the sense checks; an ordinary morning does not; and
the same checks refuse those answers where the model makes them."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from agents.believability import (SENSE, RunTexts, Talk, combine, line_sense_check, on_topic_check, read_run, score_texts,
                                  sense_checks)
from agents.roles.conversation import summary_schema
from agents.roles.planning import emoji_for, one_emoji
from agents.roles.sense_checks import (activity_key, commentary, emoji_contradicts, food_room, grounded_stems,
                                         meal_away_from_food, no_state, nonsense_line, off_topic)
from maps.contracts import Record, TickRecords
from memory.embeddings import ENV_VAR as EMBEDDER_ENV
from memory.embeddings import get_embedder
from memory.runfile import RunStore, connect_memory, register_resident
from world.cli import bench_believability
from world.runner import RunOptions, build_engine

EMBED = get_embedder("hashing").encode
RESIDENTS = Path(__file__).resolve().parents[2] / "maps" / "towns" / "default" / "residents.json"
PERSONAS = {p["name"]: p for p in json.loads(RESIDENTS.read_text())[:4]}  # Maria, Tom, Lucy, Hannah
SEVEN = datetime(2026, 2, 13, 7, 0)
KITCHEN = "Oak House:kitchen"

# the issue's examples, word for word where it quotes them
CODE_TALK = [
    ("Tom Alvarez", "I have been trying to translate the Python code into another language, but the function fails."),
    ("Lucy Alvarez", "I am a little bit confused by the details of what you've just shared. I have no idea how to "
                     "translate the code."),
    ("Tom Alvarez", "Maybe we should rewrite the function and compile the script again."),
]
COMMENTARY = ("Tom Alvarez's message conveys a genuine concern for the topic, offering guidance on how to implement "
              "a specific functionality")
NO_STATES = ("Existing role in a workday", "Cafe", "Kitchen")


def _at(minutes: int) -> datetime:
    return SEVEN + timedelta(minutes=minutes)


def quickstart_nonsense() -> RunTexts:
    """The embedded model's quickstart morning of issue 30, as records."""
    timed = [("Maria Alvarez", _at(m), "making coffee", emoji, KITCHEN)
             for m, emoji in ((0, "☕"), (15, "🍳"), (35, "☕"), (50, "🍳"))]
    timed += [("Hannah Price", _at(20), "making toast", "🏦", "Maple House:living room"),
              ("Tom Alvarez", _at(0), "having breakfast", "🍳", KITCHEN),
              ("Lucy Alvarez", _at(0), "having a bowl of cereal", "🍳", KITCHEN)]
    timed.sort(key=lambda a: a[1])
    seen = [(name, _at(30), "observation", f"kitchen table is {state}")
            for state in NO_STATES for name in ("Maria Alvarez", "Tom Alvarez", "Lucy Alvarez")]
    talk_memories = [("Lucy Alvarez", COMMENTARY), ("Tom Alvarez", "I talked with Lucy about the code at breakfast.")]
    run = RunTexts(personas=PERSONAS, conversations=[list(CODE_TALK)],
                   talks=[Talk(SEVEN, KITCHEN, ["having breakfast", "having a bowl of cereal"])],
                   timed_actions=timed, talk_memories=talk_memories, places={KITCHEN, "Maple House:living room"})
    run.actions = [(n, d, a) for n, _, d, _, a in timed]
    run.memory_log = seen + [(n, _at(60), "chat", t) for n, t in talk_memories]
    run.object_changes = [(t.split(" is ")[0], t.split(" is ", 1)[1], n) for n, _, _, t in seen]
    return run


def scripted_like_morning() -> RunTexts:
    """An ordinary morning of the same house: small talk at breakfast, one step after another."""
    timed = [("Maria Alvarez", _at(0), "making coffee", "☕", KITCHEN),
             ("Maria Alvarez", _at(10), "talking to Tom Alvarez", "💬", KITCHEN),
             ("Maria Alvarez", _at(15), "making coffee", "☕", KITCHEN),
             ("Maria Alvarez", _at(25), "having breakfast", "🍳", KITCHEN),
             ("Maria Alvarez", _at(45), "walking to Willow Cafe", "🚶", "Oak House:living room"),
             ("Tom Alvarez", _at(0), "having breakfast", "🍳", KITCHEN),
             ("Tom Alvarez", _at(30), "getting ready for work", "🪥", "Oak House:bedroom"),
             ("Hannah Price", _at(20), "making toast", "🍳", "Maple House:kitchen"),
             ("Hannah Price", _at(40), "reading the newspaper", "📖", "Maple House:living room")]
    timed.sort(key=lambda a: a[1])
    talk = [("Maria Alvarez", "Good morning, Tom! Did you sleep well?"),
            ("Tom Alvarez", "Morning, love. Not really, the night shift at the clinic wore me out."),
            ("Maria Alvarez", "Have some coffee before you go, I made a fresh pot."),
            ("Tom Alvarez", "Thanks. Is Lucy still studying for her chemistry exam?")]
    seen = [("Tom Alvarez", _at(5), "observation", "kitchen table is being used for having breakfast"),
            ("Tom Alvarez", _at(5), "observation", "stove is off"),
            ("Maria Alvarez", _at(2), "observation", "coffee machine is brewing coffee")]
    run = RunTexts(personas=PERSONAS, conversations=[talk], talks=[Talk(_at(10), KITCHEN, ["making coffee"])],
                   timed_actions=timed, memory_log=seen,
                   talk_memories=[("Tom Alvarez", "Maria asked whether I slept well and made me coffee before work.")],
                   places={KITCHEN})
    run.actions = [(n, d, a) for n, _, d, _, a in timed]
    run.object_changes = [(t.split(" is ")[0], t.split(" is ", 1)[1], n) for n, _, _, t in seen]
    return run


def _sense_mean(run: RunTexts) -> float:
    checks = sense_checks(run, EMBED, "hashing")
    return combine({k: c for k, c in checks.items() if c.judged}).overall or 0.0


def test_the_quickstart_morning_of_issue_30_scores_below_0_8_and_each_check_names_what_it_caught():
    checks = sense_checks(quickstart_nonsense(), EMBED, "hashing")
    assert set(checks) == set(SENSE)
    assert _sense_mean(quickstart_nonsense()) < 0.8
    for name in (n for n in SENSE if n != "lines_make_sense"):
        assert checks[name].judged and checks[name].score < 1.0 and checks[name].failures, name
    # the code talk is coherent, only off topic: lines_make_sense (no talk about the talk, no
    # ramble) reads its three lines and passes them; this session's SmolLM2 morning is its case
    assert checks["lines_make_sense"].judged == 3 and checks["lines_make_sense"].score == 1.0
    assert "translate" in checks["on_topic_lines"].failures[0]
    assert "making coffee" in checks["no_repeated_activity"].failures[0]
    assert "living room" in checks["meals_at_food"].failures[0]
    assert "🏦" in checks["emoji_fits"].failures[0]
    assert checks["object_states"].judged == 3 and checks["object_states"].score == 0.0
    assert "comments on the talk" in checks["talk_memories"].failures[0]
    repeats = checks["no_repeated_activity"]  # three of Maria's four starts; the others' one each pass
    assert repeats.judged == 7 and repeats.score == pytest.approx(4 / 7)


def test_an_ordinary_morning_passes_the_sense_checks_and_the_whole_score_falls_only_for_nonsense():
    good = sense_checks(scripted_like_morning(), EMBED, "hashing")
    assert all(c.score == 1.0 for c in good.values() if c.judged), {k: c.failures for k, c in good.items()}
    assert _sense_mean(scripted_like_morning()) >= 0.8
    whole_bad = score_texts(quickstart_nonsense(), EMBED, embedder="hashing")
    whole_good = score_texts(scripted_like_morning(), EMBED, embedder="hashing")
    assert whole_bad.overall is not None and whole_good.overall is not None
    assert whole_bad.overall < 0.8 <= whole_good.overall
    assert set(SENSE) <= set(whole_bad.as_summary())


SMALL_TALK = [
    "Good morning! Did you sleep well?",
    "I'm fine, thanks. Are you coming home for dinner tonight?",
    "Yes, I have to finish my homework first.",
    "The weather is lovely, maybe we can go for a walk later.",
    "Shall we go jogging in the park after work?",
    "Did you hear that the clinic computer wants a new password again?",
    "I was thinking about applying to medical school next year.",
]


@pytest.mark.parametrize("line", SMALL_TALK)
def test_ordinary_small_talk_is_on_topic(line):
    grounding = grounded_stems(" ".join(map(str, p.values())) for p in PERSONAS.values())
    assert off_topic(line, grounding, list(PERSONAS)) is None


def test_a_talk_that_drifts_off_carries_none_of_its_lines_along():
    """Lucy's second line takes up Tom's words about code: it is no more grounded for that."""
    grounding = [json.dumps(PERSONAS["Tom Alvarez"]), json.dumps(PERSONAS["Lucy Alvarez"]), KITCHEN]
    check = on_topic_check([CODE_TALK], [grounding], EMBED, list(PERSONAS), min_cosine=1.01)
    assert check.judged == 3 and check.score == 0.0
    on = [("Tom Alvarez", "Did you hear that the records computer wants a new password?"),
          ("Lucy Alvarez", "Again? Maybe the password expires every month.")]
    assert on_topic_check([on], [grounding], EMBED, list(PERSONAS), min_cosine=1.01).score == 1.0


def test_a_code_talk_is_on_topic_for_a_programmer():
    programmer = {"name": "Sam Lee", "occupation": "software developer who writes Python code",
                  "lifestyle": "translates old scripts and functions into new ones"}
    grounding = grounded_stems(programmer.values())
    assert off_topic(CODE_TALK[0][1], grounding) is None


@pytest.mark.parametrize("state", NO_STATES)
def test_an_object_state_that_is_no_state_is_refused(state):
    assert no_state(state, ["Oak House:kitchen", "Willow Cafe:kitchen"]) is not None


@pytest.mark.parametrize("state", ["off", "being used for having breakfast", "brewing coffee", "full of books",
                                   "clear", "stocked", "in use by Tom Alvarez", "covered in flour", "burning"])
def test_real_object_states_pass(state):
    assert no_state(state, ["Oak House:kitchen"]) is None


def test_a_talks_memory_that_comments_on_the_talk_is_refused_and_a_plain_one_is_not():
    assert commentary(COMMENTARY)
    assert commentary("The conversation revolves around the importance of family.")
    assert commentary("Lucy's response reflects her curiosity about the topic.")
    # SmolLM2's quickstart on this tree (2026-11-27), after the checks above were written
    assert commentary("Lucy Alvarez's message to share is not limited to the scope of her conversation")
    assert commentary("Maria Alvarez's point of view is to make love, not a conversation.")
    for plain in ("Tom told me he is tired after his shift, and I made him coffee.",
                  "Lucy and I talked about her medical school application; she is nervous.",
                  "Maria said the cafe has been slow since the grocer started selling coffee."):
        assert commentary(plain) is None, plain


def test_meals_need_a_kitchen_to_be_made_and_somewhere_to_be_eaten():
    assert meal_away_from_food("making toast", "Maple House:living room")
    assert meal_away_from_food("having breakfast", "Oak House:bathroom")
    # where a step is made, the engine takes it to the building's kitchen
    rooms = ["Maple House:bedroom", "Maple House:living room", "Maple House:kitchen", "Oak House:kitchen"]
    assert food_room("making toast", "Maple House:living room", rooms) == "Maple House:kitchen"
    assert food_room("reading", "Maple House:living room", rooms) == "Maple House:living room"
    assert food_room("making toast", "Maple House", rooms) == "Maple House:kitchen"  # a step with no room
    assert food_room("having breakfast", "Maple House", rooms) == "Maple House"
    for action, place in (("making toast", "Maple House:kitchen"), ("having breakfast", "Oak House:living room"),
                          ("serving coffee", "Willow Cafe:dining room"), ("eating lunch", "Riverside Clinic:staff room"),
                          ("making toast", "Maple House")):
        assert meal_away_from_food(action, place) is None, (action, place)


def test_an_emoji_that_stands_for_another_activity_is_named():
    assert emoji_contradicts("🏦", "making toast", "Maple House:living room")
    assert emoji_contradicts("😴", "having breakfast")
    for emoji, action, place in (("🍳", "making toast", ""), ("☕", "having breakfast", ""), ("🙂", "making toast", ""),
                                 ("🏦", "serving customers", "First Town Bank:teller hall"),
                                 ("💼", "answering emails", ""), ("📖", "relaxing on the sofa", "")):
        assert emoji_contradicts(emoji, action, place) is None, (emoji, action)


def test_an_activity_is_the_same_whatever_its_place_words():
    assert activity_key("making coffee at Oak House kitchen") == activity_key("making coffee")
    assert activity_key("making coffee") != activity_key("drinking coffee")


def _records_of(run: RunTexts) -> list[TickRecords]:
    """A hand-written run file of ``run``'s actions, talk and memories, one tick a minute."""
    by_minute: dict[int, list[Record]] = {}
    for name, when, description, emoji, address in run.timed_actions:
        by_minute.setdefault(int((when - SEVEN).total_seconds() // 60), []).append(Record(
            kind="action", resident=name, data={"description": description, "emoji": emoji, "address": address}))
    for k, (speaker, text) in enumerate(run.conversations[0]):
        listener = next(s for s, _ in run.conversations[0] if s != speaker)
        by_minute.setdefault(1 + k, []).append(Record(kind="chat", resident=speaker, data={
            "speaker": speaker, "listener": listener, "text": text, "conversation_id": "c1"}))
    for i, (name, when, kind, text) in enumerate(run.memory_log):
        by_minute.setdefault(int((when - SEVEN).total_seconds() // 60), []).append(Record(
            kind="memory", resident=name, data={"memory_id": i + 1, "kind": kind, "text": text, "importance": 3}))
    return [TickRecords(tick=m, time=_at(m), records=by_minute.get(m, [])) for m in range(max(by_minute) + 1)]


def test_the_bench_scores_a_run_folder_and_lists_what_each_check_caught(tmp_path: Path, capsys) -> None:
    """`bench believability --run DIR` on the quickstart's kind of morning, written as a run file."""
    run_dir = tmp_path / "run"
    store = RunStore.create(run_dir, {"town": "default", "town_name": "Willowbrook", "resident_names": list(PERSONAS)})
    for tr in _records_of(quickstart_nonsense()):
        store.commit_tick(tr)
    store.close()
    conn = connect_memory(RunStore.db_path(run_dir))
    for name, persona in PERSONAS.items():
        register_resident(conn, name, json.dumps(persona), "hashing")
    read = read_run(conn)
    assert read.talks[0].place == KITCHEN and read.talks[0].start == _at(1)
    assert ("kitchen table", "Cafe", "Maria Alvarez") in read.object_changes
    result = bench_believability.score_folder(run_dir)
    assert result["sense_overall"] < 0.8
    for name in (n for n in SENSE if n != "lines_make_sense"):  # the code talk is coherent, only off topic
        assert result["caught"][name], name
    with pytest.raises(SystemExit, match="no run database"):
        bench_believability.score_folder(tmp_path / "nowhere")


def test_a_scripted_morning_of_four_residents_still_scores_at_least_0_8_on_the_sense_checks(tmp_path: Path,
                                                                                           monkeypatch) -> None:
    monkeypatch.setenv(EMBEDDER_ENV, "hashing")  # MiniLM's load is most of the time; the checks are the point
    start = datetime(2026, 2, 13, 7, 0)
    engine = build_engine(RunOptions(town="default", agents=4, start=start, duration=timedelta(hours=1), seed=0,
                                     mind="generative", model="scripted", out=tmp_path / "run"))
    asyncio.run(engine.run(engine.context.until))
    engine.store.close()
    result = bench_believability.score_folder(tmp_path / "run")
    assert result["sense_overall"] is not None and result["sense_overall"] >= 0.8, result["caught"]
    judged = [name for name in SENSE if not result[name].startswith("n/a")]
    assert {"no_repeated_activity", "emoji_fits", "object_states"} <= set(judged)


def test_where_they_are_made_a_contradicting_emoji_and_a_commentary_summary_are_refused() -> None:
    assert one_emoji("🏦", "making toast") != "🏦"  # a bank's emoji for toast gives way
    assert one_emoji("🏦", "depositing the takings") == "🏦"
    assert emoji_for("waking up and getting ready") == "🪥"  # 'read' is no longer found in 'ready'
    assert emoji_for("reading the paper") == "📖"
    schema = summary_schema("Lucy Alvarez", "Tom Alvarez")
    with pytest.raises(ValidationError, match="comments on the talk"):
        schema(summary=COMMENTARY, importance=3)
    assert schema(summary="Tom told me he is tired after his night shift.", importance=3)


@pytest.mark.parametrize("line", [
    "I am not sure if I should continue the conversation. But I can't make it. I am going to leave the conversation.",
    "I am not in the mood for a conversation, I am trying to have one with you, but I am trying, and I am trying "
    "again, and I will continue, and I would like to share what I am going to share",
    "I am worried and I am going ahead, I am going now to make a big decision, I am not going to forget my future",
])
def test_a_line_about_the_talk_itself_or_a_ramble_is_no_line(line: str) -> None:
    """SmolLM2's quickstart breakfast (2026-11-27) passed on_topic_lines: its words are a resident's."""
    assert nonsense_line(line)
    check = line_sense_check([[("Maria Alvarez", line), ("Tom Alvarez", "Good morning! Coffee is ready.")]])
    assert check.score == 0.5 and "Maria Alvarez" in check.failures[0]


@pytest.mark.parametrize("line", [
    "Thanks for the chat, Tom. See you at dinner!", "I am so tired today. Work was long.",
    "Did you hear? Maria Alvarez is hosting a Valentine's Day party at Willow Cafe on Saturday from 5pm to 7pm.",
    "I'm running for mayor, and I'd love your vote.", "Good morning! I am making coffee, do you want some?",
])
def test_ordinary_lines_make_sense(line: str) -> None:
    assert nonsense_line(line, ["Maria Alvarez", "Tom Alvarez"]) is None


def test_a_line_that_is_only_a_name_is_no_line() -> None:
    assert nonsense_line("Lucy Alvarez", ["Lucy Alvarez"]) == "says only a name"
    assert nonsense_line("1, 2, 3") == "says no words"
