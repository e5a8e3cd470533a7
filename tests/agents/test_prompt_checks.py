"""Answers that parse but mean nothing are refused, retried, then replaced by the fallback.

Issue 11: a small model copies the instruction, says a name as its chat line, repeats the
partner's line, puts an action where it cannot happen, or rates every memory the same.
"""

from __future__ import annotations

import json
import random

import pytest
from pydantic import ValidationError

from agents.llm.gateway import Completion, Gateway, Request
from agents.roles.checks import copied_from, fits_place, flat_ratings, just_a_name, names_another_place, repeats
from agents.roles.common import clip, require_action
from agents.roles.conversation import CONVERSE_INSTRUCTION, line_fallback, line_schema
from agents.roles.importance import ratings_fallback, ratings_schema_for
from agents.roles.planning import DECOMPOSE_INSTRUCTION, decomposition_fallback, decomposition_schema
from agents.roles.reacting import reaction_schema

PLACES = ("Oak House:bedroom", "Willow Cafe:kitchen", "Town Bank:counter")


def test_pure_checks() -> None:
    assert copied_from("Keep it short and in character; share what Ada would share.",
                       CONVERSE_INSTRUCTION.format(name="Ada", other="Bo"))
    assert copied_from("Nice weather for the market today, is it not?", CONVERSE_INSTRUCTION) is None
    assert just_a_name("Bo Smith:", ("Ada Jones", "Bo Smith")) and just_a_name("bo", ("Bo Smith",))
    assert just_a_name("Bo, did you hear about the party?", ("Bo Smith",)) is None
    assert repeats("Good to know!", "good to know") and repeats("Good to know, Bo.", "Good to know") is None
    assert fits_place("sleeping", "Town Bank:counter") and fits_place("sleeping", "Oak House:bedroom") is None
    assert fits_place("serving coffee", "Willow Cafe:kitchen") is None
    assert names_another_place("working at Willowbrook College", "Oak House:second bedroom")
    assert names_another_place("working at Willow Cafe kitchen", "Willow Cafe:kitchen") is None
    # a name that begins another's is not it (SmolLM2's step in a classroom, society bench 2026-11-28)
    assert names_another_place("going to a Valentine's Day party at Willow Cafe dining", "Willowbrook College:classroom")
    assert names_another_place("working at Willowbrook College classroom", "Willowbrook College:classroom") is None
    assert names_another_place("talking to Maria Alvarez", "Oak House:kitchen") is None  # 'at' a place only
    assert flat_ratings([5, 5, 5], spread=7) and flat_ratings([5, 5, 5], spread=2) is None
    assert flat_ratings([5, 5], spread=9) is None  # two memories may well rate the same


def test_schemas_refuse_the_useless_answers() -> None:
    line = line_schema("Ada Jones", "Bo Smith", "Lovely day, Ada!")
    with pytest.raises(ValidationError, match="name"):
        line(utterance="Bo Smith")
    with pytest.raises(ValidationError, match="repeats"):
        line(utterance="Lovely day, Ada!")
    line(utterance="Lovely day indeed, Bo. Coming to the party?")
    said = line_schema("Lucy Alvarez", "Maria Alvarez", "Hi, Lucy! I am applying to medical school next year.")
    with pytest.raises(ValidationError, match="line again"):  # only the name swapped
        said(utterance="Hi, Maria! I am applying to medical school next year.")
    said(utterance="Medical school? That is wonderful news, Maria. Which one?")
    steps = decomposition_schema(PLACES)
    with pytest.raises(ValidationError, match="does not fit"):  # the only step is bad: refused whole
        steps.model_validate({"steps": [{"action": "sleeping", "minutes": 10, "place": "Town Bank:counter",
                                         "emoji": "😴", "object_state": "used"}]})
    with pytest.raises(ValidationError, match="copies the instruction"):
        steps.model_validate({"steps": [{"action": DECOMPOSE_INSTRUCTION[:80], "minutes": 10,
                                         "place": "Willow Cafe:kitchen", "emoji": "☕", "object_state": "used"}]})
    texts = ["the chair is idle", "Bo told me about the fire at the bakery", "brushing teeth"]
    with pytest.raises(ValidationError, match="same rating"):
        ratings_schema_for(texts)(ratings=[5, 5, 5])
    ratings_schema_for(texts)(ratings=[1, 9, 1])


def test_fallbacks_pass_their_own_checks() -> None:
    fb = decomposition_fallback(PLACES, "sleep in", "Town Bank:counter", 30)
    assert all(s.place == "Oak House:bedroom" for s in fb.steps)  # moved where it fits
    assert line_fallback("Bo Smith", 3, "Ada Jones", "Nice to see you, Bo.").utterance != "Nice to see you, Bo."
    # never the speaker's own earlier line again (Maria answered 'Nice to see you, Tom.' twice, 2026-11-25)
    again = line_fallback("Tom Alvarez", 3, "Maria Alvarez", "I am glad.", said=("Nice to see you, Tom.",))
    assert again.utterance == "Good to see you. Take care!" and again.end
    every = ("Nice to see you, Tom.", "Good to see you. Take care!", "Well, I should get going.")
    assert line_fallback("Tom Alvarez", 3, "Maria Alvarez", "I am glad.", said=every).utterance == "Bye for now."


def test_a_line_that_takes_up_the_partners_line_is_no_answer() -> None:
    """SmolLM2 under the speech openings took its partner's line up word for word and carried on;
    eight opening words in common (or a whole shorter line) make it a repeat (for the line check and the believability check)."""
    previous = "I am happy to share with you that the roof of the shed is leaking again after the storm."
    schema = line_schema("Maria Alvarez", "Tom Alvarez", previous)
    with pytest.raises(ValidationError, match="opens with the previous speaker's words"):
        schema(utterance=previous[:-1] + ". I would like to fix it with you tomorrow morning.")
    assert schema(utterance="I am happy to hear it is not the house roof this time.").utterance
    texts = ["the chair is idle", "Bo died in a fire", "walking"]
    assert ratings_fallback(texts).ratings == [1, 10, 1]


def test_an_opener_said_back_with_the_speakers_own_name_and_a_name_told_to_family_are_refused() -> None:
    """SmolLM2's quickstart (2026-11-26): Tom opened 'I am Tom Alvarez and I would love to discuss my
    plans ...' to his wife, and Maria answered with the same line under her own name."""
    tom = "I am Tom Alvarez and I would love to discuss my plans for Friday 13 February, but I am stuck."
    maria = line_schema("Maria Alvarez", "Tom Alvarez", tom, (tom,), acquainted=True)
    with pytest.raises(ValidationError, match="opens with the previous speaker's words"):
        maria(utterance=tom.replace("Tom", "Maria") + " How about the festival?")
    with pytest.raises(ValidationError, match="its own name"):
        maria(utterance="I'm Maria, and the festival needs volunteers this weekend.")
    assert maria(utterance="Stuck? You should rest today, love.").utterance
    # a stranger may say who they are; an acquaintance's name for the partner is no introduction
    stranger = line_schema("Maria Alvarez", "Ben Okafor", "Hello there!", acquainted=False)
    assert stranger(utterance="Hello! I'm Maria, I run the cafe on the corner.").utterance
    assert maria(utterance="I am so glad, Tom, that you are home early.").utterance
    fallback = line_fallback("Tom Alvarez", 1, "Maria Alvarez", tom, said=(tom,), acquainted=True)
    assert isinstance(fallback, line_schema("Maria Alvarez", "Tom Alvarez", tom, (tom,), acquainted=True))


class Canned:
    """A backend that always gives the same (useless) answer."""

    name = "canned"

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls = 0

    async def generate(self, request: Request) -> Completion:
        self.calls += 1
        return Completion(text=self.text, prompt_tokens=1, completion_tokens=1, cost=0.0)


def test_a_name_as_chat_line_is_retried_then_falls_back() -> None:
    backend = Canned(json.dumps({"utterance": "Bo Smith", "end": False}))
    llm = Gateway(backend, max_attempts=3)
    schema = line_schema("Ada Jones", "Bo Smith", "")
    fallback = line_fallback("Bo Smith", 0, "Ada Jones", "")
    answer = llm.complete("converse", [{"role": "user", "content": "say"}], schema, fallback)
    assert backend.calls == 3 and answer == fallback
    assert llm.stats()["total"]["fallbacks"] == 1


def test_a_model_that_ranks_backwards_cannot_put_a_latte_above_a_death() -> None:
    """Importance is the model's rating on an enumerated scale pulled 2:1 towards the keyword
    prior: SmolLM2 rated a father's death 1 and a latte 2; what is stored still ranks them."""
    import asyncio

    from agents.believability import TUNING_PAIRS, importance_probe
    from agents.roles.importance import combined_importance, heuristic_importance, ratings_schema

    backwards = [1, 10] * len(TUNING_PAIRS)  # every salient memory 1, every mundane one 10
    llm = Gateway(Canned(json.dumps({"ratings": backwards})), max_attempts=1)
    # the prior's own pairs (it was tuned on them): what a resident would store still ranks them
    assert asyncio.run(importance_probe(llm, pairs=TUNING_PAIRS)).score == 1.0
    assert asyncio.run(importance_probe(llm, stored=False, pairs=TUNING_PAIRS)).score == 0.0  # the model alone
    for text in ("My father died this morning", "Tom is idle", "I bought a latte at the cafe"):
        assert combined_importance(heuristic_importance(text), text) == heuristic_importance(text)
    assert combined_importance(10, "I read the morning newspaper") > combined_importance(1, "I read the morning newspaper")
    with pytest.raises(ValidationError):  # the scale is an enumeration: the grammar allows 1..10 only
        ratings_schema(1)(ratings=[11])


def test_an_interview_echo_is_refused_and_the_engine_answers_from_memories() -> None:
    from agents.believability import interview_check
    from agents.roles.interview import INSTRUCTION, answer_from_memories, answer_schema

    name, question = "Maria Alvarez", "What have you been doing today, and who have you seen?"
    memories = ["Currently: Maria is seeing patients at Willow Clinic:office", "desk is idle",
                "Klaus Mueller is talking with Ayesha Khan", "Maria Alvarez is eating breakfast at Oak House:kitchen"]
    echo = "Maria Alvarez, in the first person, using only the first person plural of the original sentence,"
    backend = Canned(json.dumps({"answer": echo}))
    llm = Gateway(backend, max_attempts=2)
    schema = answer_schema(name, question, tuple(memories))
    fallback = answer_from_memories(memories, name, question)
    answer = llm.complete("interview", [{"role": "user", "content": INSTRUCTION.format(name=name)}], schema, fallback)
    assert backend.calls == 2 and answer == fallback
    text = answer.answer
    assert text.startswith("I was seeing patients at Willow Clinic office.") and "idle" not in text
    assert "I saw that Klaus Mueller is talking with Ayesha Khan." in text
    assert interview_check([(name, text, memories)], [name]).score == 1.0
    assert interview_check([(name, echo, memories)], [name]).score == 0.0
    for bad in ("Maria Alvarez", "I went to the beach and swam all day long.",
                f"What have you been doing today, and who have you seen, {name}?",
                # SmolLM2 in the believability bench, 2026-11-25: the resident about itself, in the third person
                "Maria Alvarez is talking with Maria Alvarez, eating breakfast at Oak House kitchen",
                # the host of a party, asked about it (SmolLM2, society bench 2026-11-28)
                "I was seeing patients, and Tom told me that Maria Alvarez is hosting a party at the clinic"):
        with pytest.raises(ValidationError):
            schema(answer=bad)
    schema(answer="I saw patients at the clinic this morning.")


def test_the_engine_picks_the_topic_and_the_fallback_says_it() -> None:
    from datetime import datetime

    from agents.minds.cognition.conversation import pick_topic
    from memory.store import MemoryRecord

    def memory(i: int, kind: str, text: str, importance: int) -> MemoryRecord:
        when = datetime(2023, 2, 13, 9)
        return MemoryRecord(id=i, resident="Klaus Mueller", kind=kind, text=text, tick=i, created=when,
                            last_access=when, importance=importance, embedding_key=str(i))

    party = "Isabella is throwing a Valentine's Day party at Hobbs Cafe on Friday at 5pm"
    records = [memory(1, "observation", "Maria Lopez is taking a short break", 3),
               memory(2, "thought", "I should keep in mind what Ayesha Khan told me.", 8),
               memory(3, "plan", "My plan for Monday: 9:00 work", 5),
               memory(4, "whisper", party, 8),
               memory(5, "observation", "Maria Lopez is idle", 1)]
    assert pick_topic(records, "Maria Lopez", []) == party
    # a talk's summary is another's words: news travels as the fact (gatherings.goal_topic), never
    # as their line retold with their names in it (issue 26: 'I'm well, thank you, Lucy. Did you hear? ...')
    quoted = memory(8, "chat", "Conversation with Ayesha Khan: I'm well, thank you, Lucy. The bank is closing", 9)
    assert pick_topic([quoted, *records], "Maria Lopez", []) == party
    assert pick_topic(records, "Maria Lopez", [f"Klaus Mueller: Did you hear? {party}."]) == ""
    opener = line_fallback("Maria Lopez", 0, "Klaus Mueller", "", party)
    assert opener.utterance == f"Hi Maria! Have you heard? {party}." and not opener.end
    later = line_fallback("Maria Lopez", 3, "Klaus Mueller", "Oh, hello.", party)
    assert later.utterance == f"By the way, {party}."
    assert line_fallback("Maria Lopez", 3, "Klaus Mueller", "", "").utterance == "Nice to see you, Maria."
    # not the speaker's own description of themselves (Maria's fallback told Lucy 'Maria Alvarez is warm, organised')
    myself = memory(6, "reflection", "Klaus Mueller is curious and kind, and works on his research paper", 9)
    assert pick_topic([myself, *records], "Maria Lopez", [], speaker="Klaus Mueller") == party
    # not an object's state, however highly a model rated it ('By the way, stove is off.', quickstart 2026-11-26)
    assert pick_topic([memory(7, "observation", "stove is off", 9), *records], "Maria Lopez", []) == party
    news = line_fallback("Maria Lopez", 3, "Klaus Mueller", "Oh, hello.", "The bakery on Elm Street closed")
    assert news.utterance == "By the way, the bakery on Elm Street closed."
    opener = line_fallback("Maria Lopez", 0, "Klaus Mueller", "", "The bakery on Elm Street closed")
    assert opener.utterance == "Hi Maria! Have you heard? The bakery on Elm Street closed."


def test_a_chat_line_loses_the_speaker_label_a_small_model_puts_first_and_needs_words() -> None:
    """SmolLM2 on 2026-11-24: 'Tom Alvarez, 46, Nurse at Riverside Clinic: I am looking forward ...',
    "Tom Alvarez says: '...'" and a line that was only '19:14, 5/2/2020'."""
    schema = line_schema("Tom Alvarez", "Lucy Alvarez", "Morning, Tom.")
    line = schema(utterance="Tom Alvarez, 46, Nurse at Riverside Clinic: I am looking forward to the exam.")
    assert line.utterance == "I am looking forward to the exam."
    assert schema(utterance="Tom Alvarez says: 'You will enjoy lunch.'").utterance == "You will enjoy lunch."
    assert schema(utterance="Tomorrow: we go to the market.").utterance == "Tomorrow: we go to the market."
    with pytest.raises(ValidationError, match="no words"):
        schema(utterance="19:14, 5/2/2020")


def test_a_bad_step_or_reaction_is_patched_and_counted_not_kept() -> None:
    """One step of three that is a name is dropped (the others fill the window); a reaction whose
    action is a stray word carries on instead. Both say what they threw away (patches)."""
    from agents.minds.cognition.calls import patches_of
    from agents.roles.reacting import reaction_schema

    step = {"minutes": 10, "place": "Oak House:bedroom", "emoji": "📖", "object_state": "used"}
    answer = decomposition_schema(PLACES).model_validate(
        {"steps": [{**step, "action": "reading a book"}, {**step, "action": "Lucy Alvarez"},
                   {**step, "action": "making the bed"}]})
    assert [s.action for s in answer.steps] == ["reading a book", "making the bed"]
    assert patches_of(answer) == (1, "steps.1.action expected words describing an activity, not a name")
    # SmolLM2 (2026-11-24): the steps of getting up, in the bedroom, said 'working at Willowbrook College'
    answer = decomposition_schema(PLACES).model_validate(
        {"steps": [{**step, "action": "getting dressed"}, {**step, "action": "working at Willowbrook College"},
                   {**step, "action": "making the bed"}]})
    assert [s.action for s in answer.steps] == ["getting dressed", "making the bed"]
    assert "names Willowbrook College but is at Oak House:bedroom" in patches_of(answer)[1]
    # SmolLM2 (quickstart 2026-11-25), breakfast block: 'taking lunch' at 07:19, 'going to bed' at 07:39
    breakfast = decomposition_schema(PLACES, "breakfast").model_validate(
        {"steps": [{**step, "action": "taking breakfast"}, {**step, "action": "taking lunch at the kitchen table"},
                   {**step, "action": "going to bed"}, {**step, "action": "making the bed"},
                   {**step, "action": "washing up"}]})
    assert [s.action for s in breakfast.steps] == ["taking breakfast", "making the bed", "washing up"]
    assert "lunch in the breakfast part" in patches_of(breakfast)[1]
    # SmolLM2 (quickstart 2026-11-25, after the grammar's words-only actions), Lucy's wake-up block at 07:00
    wake = decomposition_schema(PLACES, "wake").model_validate(
        {"steps": [{**step, "action": "getting out of bed"}, {**step, "action": "going to bed"},
                   {**step, "action": "going to lunch"}, {**step, "action": "getting up at lunch"},
                   {**step, "action": "having breakfast"}, {**step, "action": "making the bed"}]})
    assert [s.action for s in wake.steps] == ["getting out of bed", "having breakfast", "making the bed"]
    assert "bed in the wake part" in patches_of(wake)[1]
    # SmolLM2 (quickstart 2026-11-26): 'sleeps at Oak House' at 07:31, the prompt's request as a step
    morning = decomposition_schema(PLACES, "breakfast").model_validate(
        {"steps": [{**step, "action": "sleeps at Oak House"}, {**step, "action": "break into steps of ipsc"},
                   {**step, "action": "having breakfast"}, {**step, "action": "washing up"}, {**step, "action": "nothing"},
                   {**step, "action": "drying the dishes"}]})
    assert [s.action for s in morning.steps] == ["having breakfast", "washing up", "drying the dishes"]
    assert [p.split(" ", 1)[1] for p in morning.patches()] == [
        "bed in the breakfast part of the day", "words of the instructions",
        "expected words describing an activity, not one word that is no activity"]
    # a lunch block's fallback eats lunch (it was 'keeping busy' before a meal's block needed a meal step)
    assert [s.action for s in decomposition_fallback(PLACES, "late to bed", "Oak House:bedroom", 30, "lunch").steps] \
        == ["eat lunch", "eat lunch"]
    reaction = reaction_schema(("Bo Smith",), PLACES).model_validate(
        {"decision": "react", "talk_to": "nobody", "action": "nope", "place": "Oak House:bedroom", "minutes": 15,
         "emoji": "🙂"})
    assert (reaction.decision, reaction.action) == ("continue", "")
    assert patches_of(reaction)[0] == 1
    kept = reaction_schema(("Bo Smith",), PLACES).model_validate(
        {"decision": "react", "talk_to": "nobody", "action": "making tea", "place": "Oak House:bedroom",
         "minutes": 15, "emoji": "🍵"})
    assert kept.decision == "react" and patches_of(kept) == (0, "")
    # SmolLM2 (quickstart 2026-11-25) said the prompt back as Lucy's action at breakfast
    said_back = reaction_schema(("Bo Smith",), PLACES).model_validate(
        {"decision": "react", "talk_to": "nobody", "action": "picking one of the people here (and last talk: never)",
         "place": "Oak House:bedroom", "minutes": 15, "emoji": "🤯"})
    assert (said_back.decision, said_back.action) == ("continue", "") and "copies the instruction" in patches_of(said_back)[1]


def test_a_named_partner_is_talked_to_when_the_model_talks_or_carries_on_not_when_it_does_something_else() -> None:
    """SmolLM2 at breakfast named Lucy in 8 of 8 answers but chose 'react' with the action 'not
    today' (copied from 'last talk: not today'): refused, so carrying on; naming her is the choice."""
    from agents.roles.reacting import reaction_schema, talk_partner

    people = ["Lucy Alvarez"]
    schema = reaction_schema(tuple(people), PLACES)
    base = {"place": "Oak House:bedroom", "minutes": 15, "emoji": "🙂"}
    copied = schema.model_validate({**base, "decision": "react", "talk_to": "Lucy Alvarez", "action": "not today"})
    assert copied.decision == "continue" and talk_partner(copied, people) == "Lucy Alvarez"
    talk = schema.model_validate({**base, "decision": "talk", "talk_to": "Lucy Alvarez", "action": ""})
    assert talk_partner(talk, people) == "Lucy Alvarez"
    busy = schema.model_validate({**base, "decision": "react", "talk_to": "Lucy Alvarez", "action": "making tea"})
    assert busy.decision == "react" and talk_partner(busy, people) is None  # its own action stands
    alone = schema.model_validate({**base, "decision": "talk", "talk_to": "nobody", "action": ""})
    assert talk_partner(alone, people) is None and talk_partner(talk, []) is None  # nobody, or not offered
    # 'talk' to 'nobody' right after seeing one of the people here: that one (SmolLM2, 2026-11-26)
    assert talk_partner(alone, people, ["Lucy Alvarez is having breakfast"]) == "Lucy Alvarez"
    two = ["Lucy Alvarez", "Tom Alvarez"]
    assert talk_partner(alone, two, ["Tom Alvarez is idle", "Lucy Alvarez is reading"]) == "Tom Alvarez"  # first seen
    assert talk_partner(alone, two, ["the stove is off"]) is None


def test_a_chat_line_that_copies_a_persona_loops_or_is_only_a_label_is_refused() -> None:
    """SmolLM2's first conversations (quickstart, 2026-11-24): the persona line said aloud, a
    line that loops, and a bare 'Maria Alvarez says,'. Each is refused (retry, then the engine's
    line); ordinary speech passes, and the believability check reads the loop as degenerate."""
    from agents.believability import degenerate_reason

    line = line_schema("Maria Alvarez", "Lucy Alvarez", "Hi, Mum!")
    for said, problem in (("Lucy Alvarez (17) is curious, restless, kind.", "person's name and tag"),
                          ("Maria Alvarez says,", "speaker's label"), ("Maria:", "name"),
                          ("I love you. I love you. I am a kind person.", "same sentence twice"),
                          ("I will have a cup of tea tomorrow. I will have a cup of tea tomorrow.", "same sentence twice")):
        with pytest.raises(ValidationError, match=problem):
            line(utterance=said)
    for said in ("Morning, Lucy! Coffee?", "Good. Good. Now eat your breakfast.", "Maria says the pie is great."):
        assert line(utterance=said).utterance == said
    # the scripted stand-in's long lines say a short phrase twice: not a loop (said to Maria)
    said = ("Hi Sophie! Did you hear? I'm well, thank you, Maria. Did you hear? I moved in with Grandpa "
            "Arthur after Grandma Ellen died. You're welcome, Maria, thanks for listening.")
    assert line_schema("Lucy Alvarez", "Maria Alvarez", "Hi!")(utterance=said).utterance == said
    assert degenerate_reason("I love you. I love you. I am a kind person.", ["Maria Alvarez"]) == "the same sentence twice"


def test_a_chat_line_of_a_word_or_two_that_say_nothing_is_refused() -> None:
    """SmolLM2's replies in the quickstart of 2026-11-25: 'Mari-El', 'Lemonade', 'Santa Yarra'.
    Refused (retry, then the engine's line) and counted as degenerate by the believability check;
    short speech that greets or answers passes."""
    from agents.believability import degenerate_reason

    line = line_schema("Maria Alvarez", "Lucy Alvarez", "Hi Maria! Have you heard? I want to apply to medical school.")
    for said in ("Mari-El", "Lemonade", "Santa Yarra", "Lemonade."):
        with pytest.raises(ValidationError, match="say nothing"):
            line(utterance=said)
        assert degenerate_reason(said, ["Maria Alvarez", "Lucy Alvarez"], chat=True) == "a word or two that say nothing"
    for said in ("Yes!", "Me too.", "Morning, Lucy!", "Absolutely.", "Thanks, love.", "Medical school? Wonderful!"):
        assert line(utterance=said).utterance == said
        assert degenerate_reason(said, ["Maria Alvarez", "Lucy Alvarez"], chat=True) is None



def test_a_label_said_to_someone_a_self_address_a_schedule_or_talk_about_the_talk_is_refused() -> None:
    """SmolLM2's second conversation in the quickstart of 2026-11-25, line by line: each is refused
    (retry, then the engine's line) and read as degenerate by the believability check."""
    from agents.believability import degenerate_reason

    names = ("Lucy Alvarez", "Tom Alvarez")
    line = line_schema("Tom Alvarez", "Lucy Alvarez", "Mate: You're going to have to pick a side!")
    for said, problem in (
        ("Lucy Alvarez says to Tom Alvarez,", "speaker's label"),
        ("Tom Alvarez says to Lucy Alvarez,", "speaker's label"),
        ("What do you think, Tom Alvarez?", "its own name"),
        ("Tom, are you coming?", "its own name"),
        ("Hi Tom! How are you today?", "its own name"),  # Maria to Lucy, SmolLM2 bench seed 1, 2026-11-26
        ("Good morning, Tom Alvarez, lovely day.", "its own name"),
        ("Tom Alvarez is idle", "third person"),
        # mid-line (SmolLM2's Clara Novak, society bench 2026-11-28)
        ("That is what I have been told, so I will say it: Tom Alvarez is running for mayor.", "third person"),
        ("Come along to Tom Alvarez's party tonight!", "third person"),
        # to the one spoken to, of them (SmolLM2's Omar to Tom, society bench 2026-11-28)
        ("I'm making that plan to celebrate Lucy Alvarez's 25th birthday, and I'd love to know more.",
         "one spoken to in the third person"),
        ("Lucy Alvarez is going to love this cake.", "one spoken to in the third person"),
        ("Dinner at Oak House kitchen, late to bed, 19:00, Tom Alvarez is working, 20:00, Lucy is eating",
         "like a schedule"),
        ("The last sentence is the only one that has a room with a name. The conversation is over.",
         "about the conversation"),
        ("I will never be happy, I will never be happy, I will never be happy, I will never be", "same sentence"),
        # SmolLM2's Hannah Price opening two talks (society bench, 2026-11-28)
        ("Hint: What is the answer to this question? 1. The answer is:", "exercise sheet"),
        ("Hint: You can share your thoughts and ideas with me by telling me what you want.", "exercise sheet"),
    ):
        with pytest.raises(ValidationError, match=problem):
            line(utterance=said)
        if "own name" not in problem and "third person" not in problem:  # the bench does not know who spoke
            assert degenerate_reason(said, list(names), chat=True), said
    for said in ("What do you think, Lucy?", "Lucy, it is half past seven: see you at 8:00!", "Hi Lucy! How are you?",
                 "Let's talk it over at dinner.", "Well, well, well. Good morning!",
                 "Did Grace Kim tell you? She is coming.", "Grace Kim is hosting a party tonight.",
                 "I have a question for you: are you coming tonight?", "My answer is yes, I'll be there."):
        assert line(utterance=said).utterance == said
        assert degenerate_reason(said, list(names), chat=True) is None
    # an interview answer may read out the day's plan: the chat-line checks are not applied to it
    plan = "From what I remember: My plan for Friday: 7:00 wake up at Oak House; 8:00 have breakfast."
    assert degenerate_reason(plan, list(names)) is None and degenerate_reason(plan, list(names), chat=True)


def test_a_line_written_as_the_partner_or_echoing_the_partners_words_is_refused() -> None:
    """The first conversation of the 2026-11-25 quickstart: Maria carried on the transcript as Lucy
    ('Lucy Alvarez: Hi Maria! ...') and Lucy answered with the first half of Maria's line."""
    previous = ("Have you heard about the medical school application? How about the medical school application? "
                "I have heard about it. I would like to go to medical school.")
    maria = line_schema("Maria Alvarez", "Lucy Alvarez", "Hi Maria! Have you heard? I want to apply to medical school.")
    with pytest.raises(ValidationError, match="partner's line"):
        maria(utterance="Lucy Alvarez: Hi Maria! Have you heard about the medical school application?")
    lucy = line_schema("Lucy Alvarez", "Maria Alvarez", previous)
    with pytest.raises(ValidationError, match="echoes"):
        lucy(utterance="Hi Maria! Have you heard about the medical school application? How about the medical "
                       "school application? I have heard about it.")
    for said in ("Medical school? That is wonderful news, Lucy. When do applications close?",
                 "Maria: not now, I'm busy.",  # her own label is dropped, not refused
                 "I heard about it too, and I think you should go for it."):
        maria(utterance=said)
    assert lucy(utterance="Yes, I would like to go to medical school more than anything.").utterance


def test_a_checked_line_or_answer_shares_its_parents_json_schema():
    """A conversation line's class is made per line (its checks know the previous line); its JSON
    schema is the plain Line's, looked up instead of generated again for every line."""
    from agents.llm.schemas import json_schema_of
    from agents.roles.conversation import Line
    from agents.roles.interview import Answer, answer_schema

    line = line_schema("Ann Lee", "Bo Kim", "Did you hear about the party?")
    assert line.model_json_schema() == Line.model_json_schema()
    assert json_schema_of(line) is json_schema_of(Line)
    with pytest.raises(ValidationError):  # the checks are still the per-line class's own
        line.model_validate({"utterance": "Did you hear about the party?", "end": False})
    answer = answer_schema("Ann Lee", "What did you do today?", ("I baked bread at the bakery",))
    assert answer.model_json_schema() == Answer.model_json_schema()
    assert json_schema_of(answer, for_grammar=True) is json_schema_of(Answer, for_grammar=True)


def test_an_interview_answer_names_two_things_the_resident_remembers() -> None:
    from agents.roles.interview import answer_schema

    memories = ["Maria Alvarez is seeing patients at Riverside Clinic", "Lucy invited me to a party on Friday"]
    schema = answer_schema("Maria Alvarez", "What have you been doing today?", tuple(memories))
    with pytest.raises(ValidationError, match="less than two things"):
        # SmolLM2 in the believability bench, 2026-11-26: one remembered word ("patients") is not an answer
        schema(answer="I have been doing a lot of work with patients, and thinking about the past.")
    schema(answer="I saw patients at the clinic, and Lucy invited me to her party.")


def test_an_answer_may_say_what_it_remembers_in_the_questions_words() -> None:
    """Asked 'Do you know who is opening a bakery on Main Street next month?', the news as
    remembered repeats nine of the question's words: that is the answer, not an echo (the
    scripted bench answered 'I only remember something about almost, around, bakery')."""
    from agents.roles.interview import answer_schema

    question = "Do you know who is opening a bakery on Main Street next month?"
    memories = ("Pip Harbor told me that Pip Harbor is opening a bakery on Main Street next month.",)
    schema = answer_schema("Owen Harbor", question, memories, ("bakery", "street"))
    schema(answer="Yes, Pip Harbor told me that Pip Harbor is opening a bakery on Main Street next month.")
    with pytest.raises(ValidationError, match="copies"):  # what nobody remembers is still the question said back
        answer_schema("Owen Harbor", question, ("Pip Harbor told me about a new bakery.",), ("bakery",))(
            answer="Yes, someone is opening a bakery on Main Street next month, Pip Harbor told me about it.")


def test_a_fallback_counts_as_a_failure_in_the_bench() -> None:
    from agents.believability import Check, with_fallbacks

    judged = with_fallbacks(Check(score=1.0, judged=2), 1, "interview answer(s)")
    assert judged.judged == 3 and judged.score == pytest.approx(2 / 3)
    assert judged.failures == ["1 interview answer(s) the engine's fallback, not the model's"]
    assert with_fallbacks(Check(), 2, "probe reply(ies)").score == 0.0
    unchanged = Check(score=0.5, judged=4, failures=["x"])
    assert with_fallbacks(unchanged, 0, "x") is unchanged


def test_a_help_desks_phrases_are_not_a_residents() -> None:
    from agents.believability import degenerate_reason
    from agents.roles.checks import help_desk
    from agents.roles.interview import answer_schema

    # SmolLM2 at breakfast in the believability bench, 2026-11-26
    lines = ["I am really sorry for the inconvenience you've experienced.",
             "I'm here to support you in any way I can.",
             "I'll be happy to help you resolve the situation as soon as possible."]
    for line in lines:
        assert help_desk(line), line
        assert degenerate_reason(line, chat=True) == "sounds like a help desk, not a resident"
        with pytest.raises(ValidationError, match="help desk"):
            line_schema("Maria Alvarez", "Lucy Alvarez", "")(utterance=line)
    with pytest.raises(ValidationError, match="help desk"):
        answer_schema("Maria Alvarez", "How are you?", ())(answer="I'm here to support you in any way I can.")
    for said in ["Sorry I'm late!", "Let me know if you want to come to the party.", "I'm happy to help you move.",
                 "How can I help you today? A latte?"]:  # a barista may ask it
        assert help_desk(said) is None, said


def test_the_engine_answers_a_question_with_what_the_speaker_is_doing() -> None:
    opener = "Good morning, Tom! What are you up to today?"
    line = line_fallback("Maria Alvarez", 1, "Tom Alvarez", opener, doing="Having breakfast at Oak House kitchen")
    assert line.utterance == "Right now I'm having breakfast at Oak House kitchen."
    # not the talk itself, not the engine's placeholder, and never said twice
    for doing in ("talking with Maria Alvarez", "nothing in particular", ""):
        assert line_fallback("Maria Alvarez", 1, "Tom Alvarez", opener, doing=doing).utterance == "Nice to see you, Maria."
    again = line_fallback("Maria Alvarez", 3, "Tom Alvarez", opener, said=(line.utterance,),
                          doing="having breakfast at Oak House kitchen")
    assert again.utterance != line.utterance
    # a statement is not a question: the engine does not volunteer what it is doing
    assert line_fallback("Maria Alvarez", 1, "Tom Alvarez", "Lovely weather.", doing="reading").utterance \
        == "Nice to see you, Maria."


def test_an_interview_answer_that_loops_is_refused() -> None:
    from agents.roles.interview import answer_schema

    memories = ["Lucy Alvarez is having breakfast at Oak House kitchen"]
    loop = ("I'm going to have breakfast at Oak House kitchen. I'm going to have breakfast at Oak House kitchen. "
            "I'm going to have breakfast at Oak House kitchen")  # SmolLM2, believability bench 2026-11-26
    with pytest.raises(ValidationError, match="same sentence twice"):
        answer_schema("Lucy Alvarez", "What have you been doing today?", tuple(memories))(answer=loop)


def test_a_line_that_says_nearly_the_same_sentence_again_loops() -> None:
    from agents.roles.checks import repeats_itself

    # SmolLM2 in the believability bench, 2026-11-26: no sentence word for word twice, yet a loop
    rambling = ["I'm so glad you're enjoying the work at Oak House kitchen. I'm so glad you're enjoying the work "
                "there, too. I'm just glad you're enjoying the work there, too. I just love working here.",
                "I've been working, and I've seen some things. I've seen a lot of things. I'm glad to have a caring "
                "and empathetic family. I've seen a lot of things. I'm happy to have a caring and empathetic family."]
    for line in rambling:
        assert repeats_itself(line) == "says the same sentence twice", line
    for line in ["I went to the cafe, then I went to the pub.", "I saw patients at the clinic. Then I saw Lucy at the cafe.",
                 "Yes, I'm working at the cafe today. Are you working at the clinic today?"]:
        assert repeats_itself(line) is None, line


def test_a_hyphenated_identifier_is_no_activity() -> None:
    from agents.roles.common import not_an_action

    assert not_an_action("last-talk-to") == "an identifier"  # SmolLM2, quickstart 2026-11-26
    assert not_an_action("catching up face-to-face with Tom") is None
    for made_up in ("notice-react", "react-todos", "step-continue"):  # SmolLM2's reactions, bench of 2026-11-27
        assert not_an_action(made_up) == "an identifier", made_up
    for real in ("follow-up", "check-in at the clinic", "stock-taking"):
        assert not_an_action(real) is None, real


HOUSE = ("Oak House", "Oak House:bedroom", "Oak House:kitchen", "Oak House:living room", "Oak House:second bedroom")


def test_a_meals_block_needs_a_step_of_the_meal() -> None:
    """SmolLM2's breakfast steps in the quickstart of 2026-11-26: Hannah Price 'write' and 'read',
    Tom Alvarez 'write'. A meal's block with no eating, cooking, table or dishes is refused."""
    step = {"minutes": 10, "place": "Oak House:kitchen", "emoji": "📖", "object_state": "used"}
    breakfast = decomposition_schema(HOUSE, "breakfast")
    with pytest.raises(ValidationError, match="no step of the breakfast"):
        breakfast.model_validate({"steps": [{**step, "action": "write"}, {**step, "action": "read"}]})
    kept = breakfast.model_validate({"steps": [{**step, "action": "read the paper"}, {**step, "action": "pour cereal"}]})
    assert [s.action for s in kept.steps] == ["read the paper", "pour cereal"]
    # other blocks are the model's to fill
    assert decomposition_schema(HOUSE, "evening").model_validate({"steps": [{**step, "action": "write"},
                                                                             {**step, "action": "read"}]})


def test_the_embedded_model_chooses_a_meals_steps_among_steps_that_pass_its_checks() -> None:
    """A meal is a preparation, the meal and what comes after: the grammar offers one slot of each
    (SmolLM2, choosing one step among all, spent breakfast on 'read the news over coffee')."""
    from agents.llm.grammar import grammar_for
    from agents.llm.schemas import SLOTS, json_schema_of
    from agents.roles.planning import MEAL_STEPS, step_options

    home = HOUSE
    for kind in MEAL_STEPS:
        slots = step_options(kind, f"have {kind} at Oak House kitchen")
        assert len(slots) == 3 and slots[1][0] == f"have {kind} at Oak House kitchen"  # the block's own words
        schema = decomposition_schema(home, kind, slots)
        for i, slot in enumerate(slots):
            for option in slot:
                for place in home:  # every option, at every place of the block, is a step that stands
                    actions = [option if j == i else other[0] for j, other in enumerate(slots)]
                    answer = schema.model_validate({"steps": [
                        {"action": a, "minutes": 10, "place": place, "emoji": "🍳", "object_state": "in use"}
                        for a in actions]})
                    assert [s.action for s in answer.steps] == actions, (option, place)
        steps = json_schema_of(schema, for_grammar=True)["properties"]["steps"]
        assert steps[SLOTS] == [{"action": list(slot)} for slot in slots]
        assert SLOTS not in json_schema_of(schema)["properties"]["steps"]  # a remote model words them
        gbnf = grammar_for(schema)
        assert all(f'\\"{slot[0]}\\"' in gbnf or slot[0] in gbnf for slot in slots)
        fallback = decomposition_fallback(home, "write a letter", "Oak House:kitchen", 30, kind, slots)
        assert isinstance(fallback, schema) and fallback.steps[0].action == MEAL_STEPS[kind][1][0]
    assert step_options("breakfast", "write a letter")[1][0] == "eat breakfast at the kitchen table"  # no meal
    assert step_options("work", "work at Riverside Clinic") == () and step_options("evening", "read") == ()


def test_a_slotted_array_is_one_item_per_slot_in_the_grammar() -> None:
    from agents.llm.grammar import GrammarError, schema_to_gbnf

    item = {"type": "object", "properties": {"action": {"type": "string", "maxLength": 20}, "n": {"type": "integer"}}}
    gbnf = schema_to_gbnf({"type": "array", "items": item, "minItems": 1, "maxItems": 8,
                           "x-slots": [{"action": ["cook", "set the table"]}, {"action": ["eat"]}]})
    rules = dict(line.split(" ::= ", 1) for line in gbnf.strip().splitlines())
    assert rules["root"] == '"[" root-slot0 "," root-slot1 "]"'
    assert '"\\"cook\\"" | "\\"set the table\\""' in rules["root-slot0-action"] and rules["root-slot1-action"] == '"\\"eat\\""'
    with pytest.raises(GrammarError, match="x-slots"):
        schema_to_gbnf({"type": "array", "items": item, "x-slots": [{"colour": ["red"]}]})


def test_a_step_chosen_twice_in_a_row_is_one_longer_step() -> None:
    from agents.minds.cognition.planning import merge_repeats

    schema = decomposition_schema(HOUSE, "breakfast")  # a remote model may say one step twice
    step = {"place": "Oak House:kitchen", "emoji": "☕", "object_state": "in use"}
    answer = schema.model_validate({"steps": [{**step, "action": "make toast", "minutes": 10},
                                              {**step, "action": "make toast", "minutes": 5},
                                              {**step, "action": "eat breakfast", "minutes": 15},
                                              {**step, "action": "make toast", "minutes": 5}]})
    merged = merge_repeats(list(answer.steps))
    assert [(s.action, s.minutes) for s in merged] == [("make toast", 15), ("eat breakfast", 15), ("make toast", 5)]


def test_going_home_at_home_is_no_step_and_a_status_that_says_nothing_is_patched() -> None:
    """SmolLM2's quickstarts of 2026-11-26: Lucy was 'going home' at 07:29 in her own living room,
    and the day's statuses were 'Tom Alvarez', 'Hannah Price's status is currently:', 'Lucy Alvarez
    is idle' and ''."""
    from agents.minds.cognition.calls import patches_of
    from agents.roles.planning import status_problem

    step = {"minutes": 10, "place": "Oak House:living room", "emoji": "📖", "object_state": "used"}
    wake = decomposition_schema(HOUSE, "wake").model_validate(
        {"steps": [{**step, "action": "reading"}, {**step, "action": "going home"}, {**step, "action": "getting dressed"}]})
    assert [s.action for s in wake.steps] == ["reading", "getting dressed"]
    assert "going home in the wake part" in patches_of(wake)[1]
    evening = decomposition_schema(HOUSE, "evening").model_validate({"steps": [{**step, "action": "walking home"}]})
    assert [s.action for s in evening.steps] == ["walking home"]  # the evening may be spent out
    assert decomposition_fallback(HOUSE, "go back home", "Oak House:living room", 30, "wake").steps[0].action \
        == "keeping busy"
    for junk in ("Tom Alvarez", "Hannah Price's status is currently:", "Lucy Alvarez is idle", "", "Busy"):
        assert status_problem(junk, "Tom Alvarez" if junk.startswith("Tom") else "Lucy Alvarez"), junk
    assert status_problem("Tom is tired after a long week at the clinic.", "Tom Alvarez") is None
    from agents.roles.planning import day_plan_fallback

    fallback = day_plan_fallback("Tom Alvarez", "doctor", "Works day shifts at the clinic.", 6, 23,
                                 "Oak House", "Riverside Clinic:exam room")
    answer = type(fallback).model_validate({"currently": "Tom Alvarez", "parts": list(fallback.parts)})
    assert answer.currently == "" and any("currently" in p for p in answer.patches())


def test_a_talks_summary_that_is_json_debris_or_a_residents_description_is_refused() -> None:
    """SmolLM2's summary of a talk on the believability bench (seed 1, 2026-11-26)."""
    from agents.roles.conversation import summary_schema

    schema = summary_schema("Tom Alvarez", "Maria Alvarez")
    with pytest.raises(ValidationError, match="JSON debris"):
        schema(summary="{{<#1}} We talked about the festival and the cafe.", importance=3)
    with pytest.raises(ValidationError, match="description"):
        schema(summary="We talked. Tom Alvarez (46) is patient, tired. Occupation: nurse at Riverside Clinic.",
               importance=3)
    assert schema(summary="Maria told me the cafe is slow since the grocer sells coffee.", importance=4).summary


@pytest.mark.parametrize("action", ["going to Willow Cafe dining room to tell people about",
                                    "going to Elm Apartments bar room to work at the", "making coffee for the"])
def test_a_phrase_cut_before_its_end_is_no_activity(action: str) -> None:
    # SmolLM2's steps in the society bench (2026-11-27)
    with pytest.raises(ValueError, match="cut off before its end"):
        require_action(action)


@pytest.mark.parametrize("action", ["stopping by the bakery", "checking in", "carrying on", "having breakfast"])
def test_whole_phrases_still_read_as_activities(action: str) -> None:
    assert require_action(action) == action


def test_clipping_ends_on_a_whole_phrase() -> None:
    clipped = clip("going to Willow Cafe dining room to tell people about running for mayor and the town", 60)
    assert clipped == "going to Willow Cafe dining room to tell people"
    assert require_action(clipped) == clipped


def test_a_reaction_that_goes_somewhere_but_stays_put_carries_on() -> None:
    places = ("Elm Apartments:apartment 2", "Willow Cafe:dining room")
    schema = reaction_schema(("nobody",), places)
    stays = schema.model_validate({"decision": "react", "talk_to": "nobody", "action": "going to Willow Cafe to tell people",
                                   "place": "Elm Apartments:apartment 2", "minutes": 15, "emoji": "🙂"})
    assert stays.decision == "continue" and stays.patches() == ["action names Willow Cafe but is at Elm Apartments:apartment 2"]
    goes = schema.model_validate({"decision": "react", "talk_to": "nobody", "action": "going to Willow Cafe to tell people",
                                  "place": "Willow Cafe:dining room", "minutes": 15, "emoji": "🙂"})
    assert goes.decision == "react" and goes.place == "Willow Cafe:dining room"


def test_a_knowledge_question_is_answered_about_what_it_asks() -> None:
    """'Did you know there is a Valentine's Day party?' asked of a resident who remembers the
    party: an answer that speaks of something else is refused (SmolLM2: 'I do not know, I am a
    patient of the hospital at Willow Cafe'), a yes about the party passes, and the engine's
    fallback puts the memory of the party first. Other questions are not held to it."""
    from agents.roles.interview import answer_from_memories, answer_schema, question_subject

    name = "Hannah Price"
    party = "Did you know there is a Valentine's Day party?"
    assert question_subject(party) == ("party", "valentine")
    assert question_subject("Do you know Tom Alvarez?", ("Tom Alvarez", "Maria Alvarez")) == ("tom alvarez", "tom")
    assert question_subject("Have you heard who is running for mayor?") == ("mayor", "running")
    assert question_subject("What did you do today?") == ()
    memories = ("I worked at the hospital at Willow Cafe all morning and saw patients",
                "Tom Alvarez told me that Maria Alvarez is hosting a Valentine's Day party at Willow Cafe at 5pm")
    schema = answer_schema(name, party, memories, question_subject(party))
    with pytest.raises(ValidationError, match="does not speak of what was asked"):
        schema(answer="I do not know, I am a patient of the hospital at Willow Cafe.")
    schema(answer="Yes, Tom told me Maria is hosting a party at Willow Cafe.")
    fallback = answer_from_memories(list(memories), name, party, question_subject(party))
    assert fallback.answer.startswith("Tom Alvarez told me that Maria Alvarez is hosting a Valentine's Day party")
    # nothing remembered of it: no subject to name; another question: not held to it
    answer_schema(name, party, memories[:1], question_subject(party))(answer="I worked at the hospital this morning.")
    answer_schema(name, "What did you do today?", memories, ())(answer="I worked at the hospital and saw patients.")


def test_an_answer_may_not_deny_what_memory_holds_and_the_bench_reads_denials_the_same_way() -> None:
    """A resident who remembers the party, or Tom, and answers 'No, I didn't know there was a
    party' or 'I have never met Tom' is refused and asked again: the bench would score that answer
    as not knowing by the same rule (memory.denials), and the SmolLM2 answers that passed this
    check used to count against a resident whose memory held the news. The society judge's
    scripted verdict reads it the same way. Nothing remembered of it: a denial is the truth."""
    from agents.roles.interview import answer_from_memories, answer_schema, question_subject
    from agents.roles.society import Verdict, scripted_verdict
    from replays.society import denies as bench_denies

    name = "Hannah Price"
    residents = ("Tom Alvarez", "Maria Alvarez", "Hannah Price")
    party = "Did you know there is a Valentine's Day party?"
    memories = ("I worked at the hospital at Willow Cafe all morning and saw patients",
                "Tom Alvarez told me that Maria Alvarez is hosting a Valentine's Day party at Willow Cafe at 5pm")
    schema = answer_schema(name, party, memories, question_subject(party, residents))
    for denial in ("No, I didn't know there was a Valentine's party at Willow Cafe.",
                   "I was not aware of the party Maria Alvarez is hosting at Willow Cafe.",
                   "I have never heard of a Valentine's Day party at Willow Cafe, Tom."):
        with pytest.raises(ValidationError, match="denies what the resident remembers"):
            schema(answer=denial)
        assert bench_denies(denial), denial
        assert scripted_verdict({"answer": denial, "question": party}, Verdict, random.Random(0)) == {"says": "no"}
    # someone else's denial, retold, is no denial of one's own
    schema(answer="Tom told me he had not heard of it at first, but Maria is hosting a party at Willow Cafe.")
    person = "Do you know Tom Alvarez?"
    with pytest.raises(ValidationError, match="denies what the resident remembers"):
        answer_schema(name, person, memories, question_subject(person, residents))(
            answer="I have never met Tom Alvarez; Maria Alvarez is hosting a party.")
    # the engine's own answer from memory passes its checks
    fallback = answer_from_memories(list(memories), name, party, question_subject(party, residents))
    assert not bench_denies(fallback.answer) and "party" in fallback.answer
    # nothing remembered of it: saying so is the truth, not refused
    answer_schema(name, party, memories[:1], question_subject(party, residents))(
        answer="No, I didn't know there was a party; I worked at the hospital all morning.")


def test_a_who_question_is_answered_with_who_memory_says_it_is() -> None:
    """'Do you know who is running for mayor?' asked of a resident who was told Ben Okafor is:
    an answer naming someone else (SmolLM2 on a bench's memories: 'the person that is running
    for mayor is Kenji Mori'; 'Eleanor Ross was running for mayor') is refused, one naming Ben
    passes, and the engine's fallback says the memory that names him. Who does it is read per
    clause: Eleanor's re-election in the same memory does not make her a mayoral candidate."""
    from agents.roles.interview import answer_from_memories, answer_schema, question_subject, who_did

    residents = ("Ben Okafor", "Eleanor Ross", "Kenji Mori", "Arthur Bell", "Ivan Petrov")
    question = "Do you know who is running for mayor?"
    subject = question_subject(question, residents)
    memories = ("I talked with Arthur Bell, who told me that Eleanor Ross is running for re-election this autumn; "
                "and that Ben Okafor is running for mayor, and I told Arthur about the party",
                "Kenji Mori is restocking shelves at Green Grocer")
    doers = who_did(question, subject, memories, residents, "Ivan Petrov")
    assert doers == ("Ben Okafor",)
    schema = answer_schema("Ivan Petrov", question, memories, subject, doers)
    with pytest.raises(ValidationError, match="does not say who"):
        schema(answer="I am not sure, but the person that is running for mayor is Kenji Mori, I think.")
    with pytest.raises(ValidationError, match="does not say who"):
        schema(answer="I heard that Eleanor Ross was running for mayor this autumn.")
    schema(answer="Yes, Arthur told me that Ben Okafor is running for mayor.")
    fallback = answer_from_memories(list(memories[::-1]), "Ivan Petrov", question, subject, doers)
    assert "Ben Okafor is running for mayor" in fallback.answer
    # the candidate himself says 'I am'; a memory that names no one who does it asks for no one
    assert who_did(question, subject, ("Ben Okafor: I am running for mayor!",) + memories, residents, "Ben Okafor") == ()
    assert who_did(question, subject, ("Arthur Bell told me that someone is running for mayor",), residents,
                   "Ivan Petrov") == ()
    # asked who someone is: about them, not a name to find ('Arthur introduced Ben Okafor' names Arthur)
    assert who_did("Do you know who Ben Okafor is?", ("ben okafor", "ben"), ("Arthur Bell introduced Ben Okafor to me",),
                   residents, "Ivan Petrov") == ()
    # not a 'who' question: nothing asked of it
    assert who_did("Did you know there is a race for mayor?", ("mayor", "race"), memories, residents, "Ivan Petrov") == ()


def test_the_attend_question_names_its_options_in_the_order_asked_and_nothing_else():
    from agents.roles.attend import ORDERS, agreed, attend_prompt
    ask = lambda options: attend_prompt("Ann is kind.", "Ann", "a party", "Bo", "Bo is a friend", 0.5,  # noqa: E731
                                        "kind", [], False, options)[-1]["content"]
    assert [ask(o).splitlines()[-1] for o in ORDERS] == ["Will Ann go to it? Answer go or skip.",
                                                          "Will Ann go to it? Answer skip or go."]
    with pytest.raises(ValueError, match="go and skip"):
        ask(("go", "maybe"))
    assert agreed(["go", "go"]) == "go" and agreed(["skip", "skip"]) == "skip"
    assert agreed(["go", "skip"]) is None and agreed(["go", None]) is None and agreed([None]) is None
    assert agreed([]) is None


def test_a_reaction_setting_off_to_a_gathering_whose_time_it_is_not_is_refused():
    from agents.minds.cognition.calls import patches_of
    from agents.roles.checks import goes_out_of_time
    from agents.roles.reacting import reaction_fallback, reaction_schema

    words = (("Oak House", ("party", "valentine's")),)
    assert goes_out_of_time("heading to the Valentine's Day party", "Oak House:living room", words)
    assert goes_out_of_time("off to the party", "oak house:kitchen", words)
    assert goes_out_of_time("heading to the party", "Oak House:kitchen", ()) is None  # nothing known is off-time
    assert goes_out_of_time("thinking about the party", "Oak House:kitchen", words) is None  # no setting off
    assert goes_out_of_time("going to the bakery", "Oak House:kitchen", words) is None  # not the gathering
    # not at its venue: telling someone of it elsewhere, or getting ready for it, is no setting off to it
    assert goes_out_of_time("going to tell Tom about the party", "Willow Cafe:counter", words) is None
    assert goes_out_of_time("going to prepare for the party", "Willow Cafe:counter", words) is None
    # setting off to it from anywhere says so in its words
    for action in ("heading over to Maria's party", "going to the Valentine's Day party", "joining the party",
                   "off to Willow Cafe for the Valentine's Day party"):
        assert goes_out_of_time(action, "Willow Cafe:counter", words), action
    # attending it, wherever said (SmolLM2's Lucy in the college library at 22:04, 2026-11-28)
    assert goes_out_of_time("attending a Valentine's Day party", "Willowbrook College:library", words)
    assert goes_out_of_time("attending a lecture", "Willowbrook College:library", words) is None
    base = {"talk_to": "nobody", "place": "Oak House:bedroom", "minutes": 15, "emoji": "🙂", "decision": "react"}
    early = reaction_schema(("Bo Smith",), PLACES, words).model_validate({**base, "action": "going to the party"})
    assert (early.decision, early.action) == ("continue", "") and "not on now" in patches_of(early)[1]
    on_time = reaction_schema(("Bo Smith",), PLACES).model_validate({**base, "action": "going to the party"})
    assert on_time.decision == "react"  # the same words while it is on
    assert isinstance(reaction_fallback(("Bo Smith",), PLACES, PLACES[0], words), reaction_schema(("Bo Smith",), PLACES, words))


def test_a_reaction_of_being_somewhere_on_another_day_is_a_plan_and_refused():
    """SmolLM2's Mia Novak, in a classroom at 13:27 on the Friday, 'reacted' with 'visiting Lucy
    Alvarez at Willowbrook Cafe dining room on Saturday' (society bench, 2026-11-28)."""
    from agents.minds.cognition.calls import patches_of
    from agents.roles.checks import names_another_day
    from agents.roles.reacting import reaction_schema

    for plan in ("visiting Lucy Alvarez at Willowbrook Cafe dining room on Saturday",
                 "To meet Lucy Alvarez at Willowbrook on Saturday", "going to the market tomorrow",
                 "meeting Tom next week", "I'm attending the concert on February 14", "joining Ana this weekend"):
        assert names_another_day(plan), plan
    for now in ("thinking about the party on Saturday", "baking a cake for tomorrow's party",
                "telling Tom about meeting Lucy on Saturday", "visiting Lucy Alvarez", "going to the market",
                "reading the Saturday paper", "writing next week's lesson plan"):
        assert names_another_day(now) is None, now
    base = {"talk_to": "nobody", "place": "Oak House:bedroom", "minutes": 15, "emoji": "🙂", "decision": "react"}
    answer = reaction_schema(("Bo Smith",), PLACES).model_validate({**base, "action": "visiting Bo Smith on Saturday"})
    assert (answer.decision, answer.action) == ("continue", "") and "another day" in patches_of(answer)[1]


def test_an_interview_answer_gives_only_days_memory_gives_and_the_fallback_says_when():
    """Interviews are scored on memory: an answer that puts the party on a day the resident was
    never told would read as knowing it. The fallback, asked of the party after it, said the newest
    sight ('I saw that Omar Haddad is attending a Valentine's Day party') and not when it was."""
    from agents.roles.interview import answer_from_memories, answer_schema, days_named, question_subject

    assert days_named("on Saturday February 14 from 5pm") == {"saturday", "february 14"}
    assert days_named("I am planning a party on February 14th", 2026) == {"february 14", "saturday"}
    assert days_named("the 14th of February", 2026) == {"february 14", "saturday"}
    assert days_named("February 30", 2026) == {"february 30"}  # no such day: no weekday, no error
    name, party = "Maria Alvarez", "Did you know there is a Valentine's Day party?"
    subject = question_subject(party)
    memories = ("I saw that Omar Haddad is attending a Valentine's Day party",
                "I am planning a Valentine's Day party at the Willow Cafe on February 14 from 5pm to 7pm")
    schema = answer_schema(name, party, memories, subject, (), 2026)
    with pytest.raises(ValidationError, match=r"names a day the resident does not remember \(friday\)"):
        schema(answer="Yes, I am planning a Valentine's Day party at the Willow Cafe on Friday.")
    with pytest.raises(ValidationError, match="february 13"):
        schema(answer="Yes, I am planning a Valentine's Day party at the Willow Cafe on February 13.")
    schema(answer="Yes, I am planning a Valentine's Day party at the Willow Cafe on Saturday.")  # February 14, 2026
    # without the year, a weekday no memory writes out is not known to be right
    with pytest.raises(ValidationError, match="saturday"):
        answer_schema(name, party, memories, subject)(answer="Yes, my Valentine's Day party at the Willow Cafe is on Saturday.")
    fallback = answer_from_memories(list(memories), name, party, subject, (), 2026)
    assert fallback.answer.startswith("I am planning a Valentine's Day party at the Willow Cafe on February 14")


def test_an_answer_links_no_one_to_what_was_asked_whom_memory_does_not() -> None:
    """SmolLM2's Ben Okafor, asked of the party, named a host his memories of it never gave
    (society bench, 2026-11-28); its teller or its host, or the one answering, may be named."""
    from agents.roles.interview import answer_from_memories, answer_schema, links_unremembered

    residents = ("Ben Okafor", "Maria Alvarez", "Grace Kim", "Tom Alvarez")
    question, subject = "Did you know there is a Valentine's Day party?", ("party", "valentine")
    memories = ("Grace Kim told me that Maria Alvarez is hosting a Valentine's Day party at Willow Cafe.",
                "I served drinks to Tom Alvarez at the pub.")
    schema = answer_schema("Ben Okafor", question, memories, subject, (), 2026, residents)
    with pytest.raises(ValidationError, match="links Tom Alvarez to the party valentine"):
        schema(answer="Yes, Tom Alvarez is hosting a Valentine's Day party at Willow Cafe.")
    for said in ("Yes, Maria Alvarez is hosting a Valentine's Day party at Willow Cafe.",
                 "Yes, Grace told me about the Valentine's Day party at Willow Cafe.",
                 "Yes, I'm going to the Valentine's Day party, and I saw Tom Alvarez at the pub."):
        assert schema(answer=said).answer == said
    assert links_unremembered("Tom Alvarez is hosting a Valentine's Day party", subject, memories, (), "Ben Okafor") is None
    # asked of a person, naming others beside them is no link to check
    assert links_unremembered("Ben Okafor and Tom Alvarez", ("ben okafor", "ben"), (), residents, "Grace Kim") is None
    fallback = answer_from_memories(list(memories), "Ben Okafor", question, subject, (), 2026, residents)
    assert "Maria Alvarez is hosting" in fallback.answer and isinstance(fallback, schema)


def test_a_line_of_talk_is_no_activity() -> None:
    """SmolLM2's steps and reactions 'nice to hear from you' and 'nice to talk to me and tell me what
    is going on' (society bench, 2026-11-28): words said to someone. An activity naming people
    by name, or the resident's own things, is still one."""
    from agents.roles.common import not_an_action

    for said in ("nice to hear from you", "nice to talk to me and tell me what is going on", "Thank you so much"):
        assert not_an_action(said) == "words said to someone, not an activity", said
    for done in ("go to First Town Bank to check my balance", "telling Tom about the party at Willow Cafe",
                 "meeting Lucy for coffee"):
        assert not_an_action(done) is None, done


def test_a_comparison_with_what_others_do_is_no_activity() -> None:
    """SmolLM2's step 'Same as everyone else' (society bench seed 1, 2026-11-28) says nothing the
    resident does; an activity that ends in 'as usual' or names the same place twice still does."""
    from agents.roles.common import not_an_action

    for said in ("Same as everyone else", "the same as yesterday", "same thing", "Just like everyone else.",
                 "as usual", "exactly the same"):
        assert not_an_action(said) == "a comparison with what others do, not an activity", said
    for done in ("opening the bakery as usual", "sitting in the same seat at Willow Cafe",
                 "reading the same book as Lucy", "samba class at the community hall",
                 "As usual, opening the bakery", "the same walk as yesterday along the river to the market"):
        assert not_an_action(done) is None, done


def test_a_span_of_years_is_a_fact_of_a_life_not_an_activity() -> None:
    """SmolLM2's Maria was 'running the Willow Cafe for twelve years' at 08:28 (the quickstart,
    2026-12-07): her persona's words. An activity for minutes or hours is still one."""
    from agents.roles.common import not_an_action

    for said in ("running the Willow Cafe for twelve years", "teaching at the college for 20 years",
                 "living in Willowbrook since 1998", "working here for the past few years"):
        assert not_an_action(said) == "a fact of a life (a span of years), not an activity", said
    for done in ("reading for an hour", "baking bread for the party", "waiting for two minutes at the counter"):
        assert not_an_action(done) is None, done


def test_an_answer_about_someone_never_met_or_heard_of_does_not_claim_to_know_them() -> None:
    """SmolLM2's Lucy Alvarez, with no tie to and no memory of Noah Price, answered "I'm not sure,
    but I've heard of Noah Price. He's a guy who does weird things." (25 such answers in 650,
    society bench seed 0, 2026-11-28): refused, so the model retries and then says it never met them."""
    from agents.roles.interview import answer_schema, never_met

    question = "Do you know Noah Price?"
    schema = answer_schema("Lucy Alvarez", question, (), ("noah price", "noah"), (), 2026, ("Noah Price",),
                           ("Noah Price",))
    with pytest.raises(ValidationError, match="claims to know Noah Price"):
        schema(answer="I'm not sure, but I've heard of Noah Price. He's a guy who does weird things.")
    for said in ("No, I have never met him.", never_met(["Noah Price"]).answer):
        assert schema(answer=said).answer == said
    # someone the resident knows may be claimed
    assert answer_schema("Lucy Alvarez", question, (), ("noah price", "noah"))(
        answer="Yes, I've heard of Noah Price.").answer
