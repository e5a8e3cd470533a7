"""What residents say about the news reads as people speak (issue 26, a scripted 2-day timeline):
one's own news in the first person, not 'Did you hear? <me> is ...'; no reflection about one's
own life told as news; a reflection names only people and places the resident knows; a teller's
'my' is theirs in the listener's memory; someone's breakfast is no news. Scripted backend."""

from __future__ import annotations

import asyncio
from datetime import timedelta
import json
import random

import pytest

from agents.llm.gateway import Completion, Gateway, Request, ScriptedBackend
from agents.llm.scripted import scripted_answer
from agents.minds.cognition.conversation import on_heard, pick_topic
from agents.minds.state import Conversation
from agents.roles.wording import in_third_person
from agents.minds.cognition.gatherings import goal_topic, learn
from agents.minds.cognition.reflection import known_names
from agents.roles.conversation import (_reply_to, converse_prompt, line_fallback, line_schema, scripted_line, scripted_summary, summary_prompt,
                                       summary_schema)
from agents.roles.interview import answer_schema, interview_prompt
from agents.roles.reflection import Insights, insights_prompt
from maps.contracts import ChatLine, Perception
from memory.store import MemoryRecord
from tests.agents.test_party import SEED, START, run_until, town


def _memory(kind: str, text: str, importance: int, id_: int = 1) -> MemoryRecord:
    return MemoryRecord(id=id_, resident="Clara Novak", kind=kind, text=text, importance=importance, created=START,
                        last_access=START, tick=0)


def test_a_candidate_tells_their_own_candidacy_in_the_first_person():
    minds, world = town(["Sam Moore", "Klaus Mueller"], {"Sam Moore": ["I am running for mayor."]})
    sam = minds["Sam Moore"]
    sam.state.now = START
    learn(sam, "I am running for mayor.", "", "Sam Moore")
    topic, key = goal_topic(sam, "Klaus Mueller")
    assert topic == "I'm running for mayor." and key.startswith("candidacy|sam moore")
    run_until(world, lambda: len(minds["Klaus Mueller"].state.events) == 1, hours=2)
    said = [c.text for c in world.chat if c.speaker == "Sam Moore"]
    assert said and not any("Did you hear" in s and "Sam Moore" in s for s in said), said
    assert any("I'm running for mayor" in s for s in said)
    (known,) = minds["Klaus Mueller"].state.events.values()  # the first person still carries the news
    assert known.event.candidacy and known.event.host == "Sam Moore" and known.source == "Sam Moore"


def test_a_first_person_memory_opens_without_did_you_hear():
    prompt = converse_prompt("Sam is a baker.", "Sam Moore", "Klaus Mueller", "friend", "09:00", "baking", "home",
                             ["I am running for re-election this autumn."], [], 8)
    line = scripted_line(prompt.task.fields, line_schema("Sam Moore", "Klaus Mueller", ""), random.Random(0))
    assert line["utterance"] == "Hi Klaus! I am running for re-election this autumn."


def test_reflections_and_thoughts_about_my_life_are_no_news_to_tell():
    memories = [_memory("reflection", "Viktor Novak plays a real part in Clara Novak's life lately", 9, 1),
                _memory("thought", "I should keep in mind what Viktor Novak told me.", 8, 2),
                _memory("observation", "The bakery on Main Street closes for good next week", 6, 3)]
    assert pick_topic(memories, "Mia Novak", [], speaker="Clara Novak") == \
        "The bakery on Main Street closes for good next week"
    assert pick_topic(memories[:2], "Mia Novak", [], speaker="Clara Novak") == ""


def test_someone_almost_done_with_breakfast_is_no_news():
    prompt = converse_prompt("Kenji is a nurse.", "Kenji Mori", "Hannah Price", "friend", "08:00", "walking", "home",
                             ["Grace Kim is almost done having breakfast", "Grace Kim is still sleeping"], [], 8)
    line = scripted_line(prompt.task.fields, line_schema("Kenji Mori", "Hannah Price", ""), random.Random(0))
    assert line["utterance"] == "Hi Hannah! How are you today?"


def test_an_insight_names_only_people_and_places_the_resident_knows():
    statements = ["Tom Alvarez: Really? That's news to me. Thanks", "Really That was said by Tom Alvarez",
                  "Really That and Lucy Alvarez at Willow Cafe", "I talked with Lucy Alvarez at Willow Cafe"]
    prompt = insights_prompt("Tom is a nurse.", "Tom Alvarez", statements, ["Lucy Alvarez", "Willow Cafe"])
    answer = Insights.model_validate_json(scripted_answer("reflect_insights", prompt, Insights))
    texts = [i.insight for i in answer.insights]
    assert "Lucy Alvarez plays a real part in Tom Alvarez's life lately" in texts
    assert not any("Really That" in t for t in texts), texts


def test_a_resident_knows_its_ties_and_places_for_reflection():
    minds, _world = town(["Ayesha Khan", "Klaus Mueller"])
    names = known_names(minds["Ayesha Khan"])
    assert "Ayesha Khan" not in names and "Hobbs Cafe" in names


def test_a_tellers_first_person_becomes_theirs_or_is_not_retold():
    assert in_third_person("Lucy Alvarez is the brightest student in my class", "Grace Kim") == \
        "Lucy Alvarez is the brightest student in Grace's class"
    assert in_third_person("I trained Tom Alvarez when he was a young nurse", "Hannah Price") == \
        "Hannah trained Tom Alvarez when he was a young nurse"
    assert in_third_person("I'm running for mayor", "Sam Moore") == "Sam is running for mayor"
    assert in_third_person("I love Tom Alvarez", "Lucy Alvarez") is None  # 'I love': not turned, not retold
    assert in_third_person("Our Tom Alvarez is home", "Lucy Alvarez") is None


def test_the_listener_remembers_the_tellers_class_as_theirs():
    minds, _world = town(["Grace Kim", "Tom Alvarez"])
    tom = minds["Tom Alvarez"]
    lines = ["Grace Kim: Hi Tom! Did you hear? My sister Lucy Alvarez is getting married next month.",
             "Tom Alvarez: Really? I had not heard that. Thanks for telling me, Grace."]
    prompt = summary_prompt(tom.summary, "Tom Alvarez", "Grace Kim", lines, [])
    summary = scripted_summary(prompt.task.fields, summary_schema("Tom Alvarez", "Grace Kim"), random.Random(0))["summary"]
    assert summary == "I talked with Grace Kim, who told me that Grace's sister Lucy Alvarez is getting married next month."


def test_a_summary_the_checks_refuse_falls_to_a_plainer_one_not_to_prompt_words():
    party = ("Maria Alvarez is hosting a Valentine's Day party at Willow Cafe dining room on Saturday February 14 "
             "from 5pm to 7pm")
    learned = [party, party.replace("Maria Alvarez", "Lucy Alvarez").replace("Valentine's Day party", "party")]
    prompt = summary_prompt("Tom is a nurse.", "Tom Alvarez", "Lucy Alvarez", ["Lucy Alvarez: Hi Tom!"], learned)
    answer = json.loads(scripted_answer("chat_summary", prompt, summary_schema("Tom Alvarez", "Lucy Alvarez")))
    assert answer["summary"].startswith("I talked with Lucy Alvarez, who told me that Maria Alvarez is hosting")
    assert "point of view" not in answer["thought"] + answer["summary"]


def test_hearing_of_someone_keeps_the_tellers_words_theirs():
    minds, _world = town(["Grace Kim", "Tom Alvarez"])
    tom = minds["Tom Alvarez"]
    tom.state.now, tom.state.tick = START, 5
    tom.state.convo = Conversation(partner="Grace Kim", conversation_id="x", last_tick=5, started=START)
    p = Perception(resident=tom.name, tick=6, time=START, tile=(0, 0), address="Town Library:reading room",
                   nearby=["Grace Kim"])
    line = "Hi Tom! Did you hear? Lucy Alvarez is the brightest student in my class."
    asyncio.run(on_heard(tom, [ChatLine(speaker="Grace Kim", listener=tom.name, text=line)], p))
    assert tom.state.convo.learned == ["Lucy Alvarez is the brightest student in Grace's class"]
    assert tom.social.tie("Lucy Alvarez").relation == "heard of"


def test_a_candidate_remembers_having_told_their_news():
    minds, world = town(["Sam Moore", "Klaus Mueller"], {"Sam Moore": ["I am running for mayor."]})
    sam = minds["Sam Moore"]
    sam.state.now = START
    learn(sam, "I am running for mayor.", "", "Sam Moore")
    run_until(world, lambda: "Klaus Mueller" in next(iter(sam.state.events.values())).told
              and sam.state.convo is None, hours=2)
    told = [m.text for m in sam.memory.all() if m.kind == "chat" and "I told Klaus that I am running for mayor" in m.text]
    assert told, [m.text for m in sam.memory.all()]


def test_asked_how_i_am_i_tell_my_own_news_as_mine():
    reply = _reply_to("Hi Tom! How are you today?", "Maria", ["Maria Alvarez sells me her pies for the pub menu"])
    assert reply == "I'm well, thank you, Maria. Maria Alvarez sells me her pies for the pub menu."
    assert _reply_to("Hi Tom! How are you today?", "Maria", ["Ben Okafor is running for mayor. Leo Martins told me."]) \
        == "I'm well, thank you, Maria. Did you hear? Ben Okafor is running for mayor. Leo Martins told me."
    assert _reply_to("Hi Tom! How are you today?", "Maria", ["Mr. Bell tutored me in chemistry last year"]) == \
        "I'm well, thank you, Maria. Mr. Bell tutored me in chemistry last year."
    assert _reply_to("Hi Tom! How are you today?", "Maria", ["The ducks in the pond have had ducklings"]) == \
        "I'm well, thank you, Maria. Did you hear? The ducks in the pond have had ducklings."


def test_an_interview_answer_the_checks_refuse_falls_to_the_best_memory_alone():
    memories = ["Clara Novak told me that Ben Okafor is running for mayor, and I told Kenji that he is.",
                "Lucy Alvarez said to me: Hi Hannah! Did you hear? Ben Okafor is running for mayor."]
    question = "Do you know who is running for mayor?"
    prompt = interview_prompt("Hannah is a doctor.", "Hannah Price", "Sunday 07:00", "at home", memories, question)
    schema = answer_schema("Hannah Price", question, tuple(memories))
    answer = json.loads(scripted_answer("interview", prompt, schema))["answer"]
    assert answer == f"From what I remember: {memories[0]}"  # with the line naming Hannah: refused


OFF_TOPIC = ["I am going to Italy with my family.", "The weather has been lovely for walks.",
             "My garden needs a lot of water these days.", "I finished reading a long novel last night.",
             "Work at the library keeps me busy.", "Someone painted the fence near the river green.",
             "I want to learn to play the violin.", "The bus was late again this morning."]


class OffTopicModel(ScriptedBackend):
    """SmolLM2's Lucy: asked to bring a party up, says she is going to Italy, then something
    else each time (no line repeats, so none is refused for that); every other purpose
    answered as ``scripted``."""

    def __init__(self) -> None:
        super().__init__()
        self.lines = 0

    async def generate(self, request: Request) -> Completion:
        if request.purpose == "converse":
            self.lines += 1
            text = OFF_TOPIC[(self.lines - 1) % len(OFF_TOPIC)]
            return Completion(text=json.dumps({"utterance": text, "end": False}))
        return await super().generate(request)


def test_a_line_that_leaves_out_the_talks_news_is_refused_and_the_news_said_plainly():
    schema = line_schema("Lucy Alvarez", "Mia Novak", "", bring_up=("party", "valentine's"))
    with pytest.raises(ValueError, match="does not bring up"):
        schema(utterance="I am going to Italy with my family.")
    assert schema(utterance="Mom is throwing a party at the cafe tomorrow!").utterance
    topic = "Maria Alvarez is hosting a Valentine's Day party at Willow Cafe. Maria Alvarez told me."
    fallback = line_fallback("Mia Novak", 1, "Lucy Alvarez", "What are you up to today?", topic, doing="reading",
                             bring_up=("party", "valentine's"))
    asked = line_schema("Lucy Alvarez", "Mia Novak", "What are you up to today?", bring_up=("party", "valentine's"))
    assert isinstance(fallback, asked) and "Valentine's Day party" in fallback.utterance  # not 'Right now I'm reading'
    plain = line_fallback("Mia Novak", 1, "Lucy Alvarez", "", topic, said=(f"By the way, {topic}",),
                          bring_up=("party", "valentine's"))  # the news was said already: a plain line, same schema
    said = line_schema("Lucy Alvarez", "Mia Novak", "", (f"By the way, {topic}",), bring_up=("party", "valentine's"))
    assert isinstance(plain, said) and "party" not in plain.utterance.lower()


def test_a_line_may_not_pass_someone_elses_event_off_as_the_speakers_own():
    """Told of Maria's party, SmolLM2's Sophie said 'I am planning a Valentine's Eve party at
    Willow Cafe, kitchen ... I will invite you' (society bench seed 0, 2026-11-28): refused, as is
    'I'm running for mayor' from one who knows it is Ben. Saying whose it is, or going to it,
    passes; so does the host speaking of her own; a resident who holds an event of the same words
    is not held to the others' words."""
    from agents.minds.cognition.conversation import others_event_words

    minds, _world = town(["Maria Lopez", "Klaus Mueller"], {"Maria Lopez": [SEED]})
    maria, klaus = minds["Maria Lopez"], minds["Klaus Mueller"]
    for mind in (maria, klaus):
        mind.state.now = START
    learn(maria, SEED, "", "Maria Lopez")
    learn(klaus, SEED, "Maria Lopez", "Maria Lopez")
    learn(klaus, "I am running for mayor.", "Sam Moore", "Sam Moore")
    assert others_event_words(maria) == ()  # her own party
    not_mine = others_event_words(klaus)
    assert set(not_mine) == {"party", "valentine's", "mayor"}
    schema = line_schema("Klaus Mueller", "Wolfgang Schulz", "", not_mine=not_mine)
    for claim in ("I am planning a Valentine's Eve party at Willow Cafe, kitchen. I will invite you.",
                  "Oh, I'm hosting a party at the cafe tomorrow!", "I'm running for mayor, you know."):
        with pytest.raises(ValueError, match="holds an event someone else holds"):
            schema(utterance=claim)
    for fine in ("Maria Lopez is hosting a Valentine's Day party at Hobbs Cafe tomorrow.",
                 "I'm planning to go to Maria's party. Would you like to come with me?",
                 "I'm running late for work, sorry.", "Sam is running for mayor."):
        assert schema(utterance=fine).utterance
    assert line_schema("Maria Lopez", "Klaus Mueller", "", not_mine=others_event_words(maria))(
        utterance="I am planning a Valentine's Day party at Hobbs Cafe. Would you like to come?").utterance
    topic = "Maria Lopez is hosting a Valentine's Day party at Hobbs Cafe."
    fallback = line_fallback("Wolfgang Schulz", 1, "Klaus Mueller", "", topic, not_mine=not_mine)
    assert isinstance(fallback, schema) and "Maria Lopez is hosting" in fallback.utterance


def test_news_reaches_the_listener_when_the_model_talks_of_something_else():
    minds, world = town(["Maria Lopez", "Klaus Mueller"], {"Maria Lopez": [SEED]}, llm=Gateway(OffTopicModel()))
    run_until(world, lambda: bool(minds["Klaus Mueller"].state.events))
    (known,) = minds["Klaus Mueller"].state.events.values()
    assert known.source == "Maria Lopez" and known.event.host == "Maria Lopez" and known.invited
    said = [c.text for c in world.chat if c.speaker == "Maria Lopez"]
    assert "Valentine's Day party" in said[0], said  # her first line, the model's refused, fell back to the news
    assert any(c.text in OFF_TOPIC for c in world.chat)  # the other lines stay the model's
    stats = minds["Maria Lopez"].caller.llm.stats()["by_purpose"]["converse"]
    assert stats["fallbacks"] >= 1


def test_the_words_a_talk_for_news_must_use_come_from_the_event_and_none_means_no_check():
    """Four letters or more; three when the event has no longer word; none, no check."""
    from agents.minds.cognition.events import event_words
    from agents.minds.state import Gathering

    assert event_words(Gathering(kind="party", what="a Valentine's Day party")) == {"party", "valentine's"}
    assert event_words(Gathering(kind="candidacy", what="running for mayor")) == {"mayor"}  # not 'running late'
    assert event_words(Gathering(kind="news", what="running for re-election this autumn", host="Eleanor Ross")) \
        == {"election"}
    assert event_words(Gathering(kind="news", what="opening a bakery on Main Street next month", host="Pip Harbor")) \
        == {"bakery", "main", "street"}
    assert event_words(Gathering(kind="gig", what="a gig")) == {"gig"}  # no longer word: three letters do
    assert event_words(Gathering(kind="do", what="a do")) == frozenset()  # nothing to look for: no check
    assert line_schema("Ada Jones", "Bo Smith", "", bring_up=())(utterance="Lovely weather today.").utterance


def test_two_who_open_at_once_take_turns_and_both_news_travel():
    """Both have news and see each other at 09:00: the first in name order speaks, the other's
    opener is not said (world rule, Perception.unsaid): it answers and brings its own news up
    in that line, so the talk reads as one, and nobody is marked told by a line never said."""
    minds, world = town(["Maria Lopez", "Sam Moore"], {"Maria Lopez": [SEED], "Sam Moore": ["I am running for mayor."]})
    maria, sam = minds["Maria Lopez"], minds["Sam Moore"]
    run_until(world, lambda: len(maria.state.events) == 2 and len(sam.state.events) == 2, hours=1)
    first, second = world.chat[0], world.chat[1]
    assert (first.speaker, first.listener) == ("Maria Lopez", "Sam Moore"), world.chat[:3]
    assert second.speaker == "Sam Moore" and not second.text.startswith("Hi Maria"), second.text
    assert "mayor" in second.text  # his news, in his first line said
    heard_by_sam = {k.event.host: k.source for k in sam.state.events.values()}
    heard_by_maria = {k.event.host: k.source for k in maria.state.events.values()}
    assert heard_by_sam.get("Maria Lopez") == "Maria Lopez" and heard_by_maria.get("Sam Moore") == "Sam Moore"
    told = {k.event.host: list(k.told) for k in sam.state.events.values()}
    assert told["Sam Moore"] == ["Maria Lopez"]


def test_news_of_ones_life_is_told_in_the_first_person_and_heard_as_the_fact():
    minds, world = town(["Sam Moore", "Klaus Mueller"], {"Sam Moore": ["I am opening a bakery on Main Street next month."]})
    run_until(world, lambda: len(minds["Klaus Mueller"].state.events) == 1, hours=2)
    said = [c.text for c in world.chat if c.speaker == "Sam Moore"]
    assert any("I'm opening a bakery on Main Street next month" in s for s in said), said
    (known,) = minds["Klaus Mueller"].state.events.values()
    assert (known.event.kind, known.event.host, known.source) == ("news", "Sam Moore", "Sam Moore")
    told = [m.text for m in minds["Klaus Mueller"].memory.all() if m.text.startswith("Sam Moore told me that")]
    assert told == ["Sam Moore told me that Sam Moore is opening a bakery on Main Street next month."], told


def test_an_answer_held_back_while_the_partner_was_greeted_is_said_again_once():
    """Paul answered Viktor's greeting in the tick Eleanor greeted Viktor; the world held Paul's
    answer back (one speaks to someone at a time), and Paul, Viktor and Eleanor all waited out
    the talk: two talks of one line (scripted bench, 2026-11-27). It is still Paul's turn."""
    minds, _world = town(["Bo Smith", "Cy Young"])
    bo = minds["Bo Smith"]

    def seen(tick: int, **kw) -> Perception:
        return Perception(resident=bo.name, tick=tick, time=START + timedelta(seconds=10 * tick), tile=(0, 0),
                          address="Town Library:reading room", nearby=["Cy Young"], **kw)

    hello = ChatLine(speaker="Cy Young", listener=bo.name, text="Hi Bo! How are you today?")
    first = asyncio.run(bo.decide(seen(1, heard=[hello])))
    assert (first.kind, first.to) == ("say", "Cy Young"), first
    held = seen(2, unsaid=[ChatLine(speaker=bo.name, listener="Cy Young", text=first.utterance)])
    assert bo.decide_fast(held) is None  # not a wait: a decision
    again = asyncio.run(bo.decide(held))
    assert (again.kind, again.to, again.utterance) == ("say", "Cy Young", first.utterance)
    assert bo.state.convo.lines == [f"Cy Young: {hello.text}", f"{bo.name}: {first.utterance}"]
    # held back again (Cy still taken by someone else): left to them, no third try
    held_again = seen(3, unsaid=[ChatLine(speaker=bo.name, listener="Cy Young", text=again.utterance)])
    assert bo.decide_fast(held_again).kind == "wait"
