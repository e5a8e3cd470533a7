"""What a new user reads in a resident's day (issue 11): nobody is told their own news, plans read
as activities, meals are eaten in the home's kitchen even by a resident whose home is a bedroom."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import datetime, timedelta
from pathlib import Path

from agents.llm.gateway import make_llm
from agents.llm.scripted import scripted_answer
from agents.minds.cognition.conversation import pick_topic
from agents.roles.wording import about_partner
from agents.roles.wording import activity_phrase
from agents.minds.conformance import DEMO_PLACES, Sandbox, demo_home, demo_persona
from agents.minds.generative import make_mind
from agents.roles.conversation import converse_prompt, line_schema
from agents.roles.planning import day_skeleton, decompose_prompt, decomposition_schema
from maps.contracts import MindOptions
from memory.embeddings import get_embedder
from memory.store import MemoryRecord

NEWS_ABOUT_LUCY = "Lucy wants to study medicine like her father's colleague Dr. Price"


def _memory(text: str, importance: int = 7) -> MemoryRecord:
    return MemoryRecord(id=1, resident="Maria Alvarez", kind="observation", text=text, importance=importance, tick=0,
                        created=datetime(2026, 2, 13, 7), last_access=datetime(2026, 2, 13, 7))


def test_a_resident_is_never_told_their_own_news_by_first_or_full_name() -> None:
    assert about_partner(NEWS_ABOUT_LUCY, "Lucy Alvarez")
    assert about_partner("I saw lucy alvarez at the park", "Lucy Alvarez")
    assert not about_partner("Lucyna opened a bakery", "Lucy Alvarez")
    assert not about_partner("Dr. Hannah Price and I have worked together", "Lucy Alvarez")
    memories = [_memory(NEWS_ABOUT_LUCY, 8), _memory("The cafe kitchen caught fire this morning", 6)]
    assert pick_topic(memories, "Lucy Alvarez", []) == "The cafe kitchen caught fire this morning"
    assert pick_topic(memories[:1], "Lucy Alvarez", []) == ""


def test_an_object_in_use_is_no_news_and_reads_as_what_is_done_with_it() -> None:
    from agents.roles.wording import in_use_for

    seen = in_use_for("have breakfast at Oak House kitchen")
    assert seen == "being used for having breakfast"
    # SmolLM2's town, 2026-11-26: 'By the way, kitchen table is being used for have breakfast at ...'
    memories = [_memory(f"kitchen table is {seen}", 8), _memory("stove is off", 8),
                _memory("The cafe kitchen caught fire this morning", 6)]
    assert pick_topic(memories, "Lucy Alvarez", []) == "The cafe kitchen caught fire this morning"


def test_the_scripted_conversation_does_not_tell_the_partner_about_themselves() -> None:
    messages = converse_prompt("Maria Alvarez (44) owns the Willow Cafe.", "Maria Alvarez", "Lucy Alvarez",
                               "daughter", "07:00", "having breakfast", "Oak House:kitchen",
                               [NEWS_ABOUT_LUCY, "tv is off"], [], 8, "")
    line = json.loads(scripted_answer("converse", messages, line_schema("Maria Alvarez", "Lucy Alvarez", "")))
    assert "medicine" not in line["utterance"] and "tv is off" not in line["utterance"]


def test_plan_items_read_as_activities() -> None:
    assert activity_phrase("have breakfast at Maple House kitchen") == "having breakfast at Maple House kitchen"
    assert activity_phrase("wake up and get ready at Oak House") == "waking up and getting ready at Oak House"
    assert activity_phrase("go to bed") == "going to bed"
    assert activity_phrase("working at the cafe") == "working at the cafe"
    places = ["Maple House:kitchen", "Maple House:bedroom"]
    for block in ("have breakfast at Maple House kitchen", "wake up and get ready at Maple House"):
        messages = decompose_prompt("Hannah Price (52), doctor.", "Hannah Price", block, datetime(2026, 2, 13, 7),
                                    60, places, "Maple House:bedroom", "Riverside Clinic", [])
        steps = json.loads(scripted_answer("decompose", messages, decomposition_schema(tuple(places))))["steps"]
        for step in steps:
            action = step["action"]
            assert not re.search(r"\b(for|up) (have|wake|work|go)\b", action), action  # 'getting ready for have ...'
            assert action.split()[0].endswith("ing") or action.startswith("almost done "), action


def test_a_resident_living_in_a_bedroom_eats_in_the_house_kitchen(tmp_path: Path) -> None:
    skeleton = day_skeleton(7, 22, "Oak House:second bedroom", "Willowbrook College:classroom",
                            kitchen="Oak House:kitchen")
    meals = [p.text for p in skeleton if p.kind in ("breakfast", "dinner")]
    assert meals and all(t.endswith("at Oak House kitchen") for t in meals)
    start = datetime(2023, 2, 13, 6, 30)
    persona = demo_persona("Ayesha Khan", "Hobbs Cafe:counter", "barista").model_copy(
        update={"home": "Ayesha's House:bedroom"})
    options = MindOptions(places=DEMO_PLACES + demo_home("Ayesha Khan"), start_time=start)
    mind = make_mind(persona, make_llm("scripted", use_cache=False), tmp_path / "a.db", options,
                     embedder=get_embedder("hashing"))
    world = Sandbox({mind.name: mind}, options.places, start, spawn={mind.name: "Ayesha's House:bedroom"})
    asyncio.run(world.run(start + timedelta(hours=2)))
    breakfast = [b for b in mind.state.blocks if "breakfast" in b.activity]
    assert breakfast and "kitchen" in breakfast[0].activity
    eating = [s for s in mind.state.steps if "breakfast" in s.description]
    assert eating and all(s.arena == "Ayesha's House:kitchen" for s in eating)


def test_lines_said_at_once_are_answered_by_one_side_only() -> None:
    """Two residents who open a conversation with each other in the same tick would otherwise
    talk past each other, saying the same things in parallel."""
    from agents.minds.cognition.conversation import crossed_lines
    from agents.minds.state import Conversation

    convo = Conversation(partner="Ben Lee", conversation_id="x", lines=["Ada Jones: Hi Ben!"], last_tick=10,
                         started=datetime(2026, 2, 13, 7))
    assert crossed_lines(convo, "Ada Jones", 11)  # Ben spoke before he could hear me
    assert not crossed_lines(convo, "Ada Jones", 12)  # an answer to my line
    convo.lines.append("Ben Lee: Hi Ada!")
    assert not crossed_lines(convo, "Ada Jones", 11)


def test_the_scripted_partner_answers_a_greeting() -> None:
    messages = converse_prompt("Maria Alvarez (44) owns the Willow Cafe.", "Maria Alvarez", "Tom Alvarez",
                               "husband", "07:55", "having breakfast", "Oak House:kitchen", ["sink is clean"],
                               ["Tom Alvarez: Hi Maria! How are you today?"], 8, "")
    line = json.loads(scripted_answer("converse", messages, line_schema("Maria Alvarez", "Tom Alvarez", "")))
    assert line["utterance"].startswith("I'm well") and "sink" not in line["utterance"] and not line["end"]


def test_the_scripted_partner_keeps_a_name_a_name_when_it_repeats_the_news() -> None:
    for news, heard in (("Priya Shah is the most careful teller in town", "that Priya Shah is"),
                        ("Rosalind is married to Owen Harbor", "that Rosalind is married"),
                        ("Business at the cafe has been slow", "that business at the cafe"),
                        # George's 'I' is not Hannah's: his news about himself is not retold as hers
                        ("Priya Shah is the most careful teller I have ever hired", "")):
        messages = converse_prompt("Hannah Price (41) is a doctor.", "Hannah Price", "George Price", "husband",
                                   "07:00", "having breakfast", "Maple House:kitchen", ["sink is clean"],
                                   [f"George Price: I see. Also, {news}."], 8, "")
        line = json.loads(scripted_answer("converse", messages, line_schema("Hannah Price", "George Price", "")))
        assert line["utterance"].startswith(f"Really? I had not heard {heard}" if heard else "Really? That's news to me.")


def test_an_activity_emoji_comes_from_the_activity_not_its_place() -> None:
    from agents.roles.planning import emoji_for

    assert emoji_for("having breakfast at Oak House bedroom") == "🍳"
    assert emoji_for("going to bed") == "😴"
    assert emoji_for("tidying the bedroom") != "😴"
    assert emoji_for("a haircut at the barber") != "🍺"
