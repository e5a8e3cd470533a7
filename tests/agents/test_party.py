"""Social planning: a host's notion becomes an invitation, the news travels as the fact with who
told it, invitees decide, the day makes room for the gathering at its time and place, the host
prepares the venue first; lines heard in another talk are not lost; who-knows-whom grows from
what is learned; interviews about strangers say so. Scripted backend, hashing embedder."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from agents.llm.gateway import make_llm
from agents.minds.cognition.conversation import _say, on_heard
from agents.minds.cognition.events import describe
from agents.minds.state import Conversation
from agents.minds.cognition.gatherings import event_steps, goal_topic, learn
from agents.minds.cognition.planning import block_at, plan_day
from agents.minds.conformance import DEMO_PLACES, Sandbox, demo_home, demo_persona
from agents.minds.generative import make_mind
from agents.minds.interview import strangers
from agents.roles.interview import never_met
from maps.contracts import ChatLine, MindOptions, Perception
from memory.embeddings import get_embedder

SEED = ("I am planning a Valentine's Day party at the Hobbs Cafe on February 14 from 5pm to 7pm, and I want to "
        "invite everyone I know.")
START = datetime(2026, 2, 13, 9, 0)


def town(names: list[str], seeds: dict[str, list[str]] | None = None, traits: dict[str, list[str]] | None = None,
         llm=None):
    personas = [demo_persona(n, "Town Library:reading room", "student", seed_memories=(seeds or {}).get(n, []),
                             **({"traits": traits[n]} if traits and n in traits else {})) for n in names]
    places = DEMO_PLACES + [a for n in names for a in demo_home(n)]
    options = MindOptions(places=places, start_time=START)
    llm = llm or make_llm("scripted")
    minds = {p.name: make_mind(p, llm, None, options, embedder=get_embedder("hashing")) for p in personas}
    world = Sandbox(minds, places, START, spawn={n: "Town Library:reading room" for n in names})
    return minds, world


def run_until(world: Sandbox, done, hours: float = 3) -> None:
    async def go() -> None:
        while world.time < START + timedelta(hours=hours) and not done():
            await world.step()
        for _ in range(12):
            await world.step()
    asyncio.run(go())


def jump_to(world: Sandbox, minds, when: datetime) -> None:
    """Move the sandbox's clock to ``when`` and have each of ``minds`` plan that day from there."""
    world.time = when
    for mind in minds:
        mind.state.now = when
        asyncio.run(plan_day(mind, when))


def step_until(world: Sandbox, until: datetime, each=lambda: None) -> None:
    """Step the sandbox to ``until``, calling ``each`` after every step."""
    async def go() -> None:
        while world.time < until:
            await world.step()
            each()
    asyncio.run(go())


def records(mind, kind: str) -> list[dict]:
    return [r.data for r in mind._records if r.kind == kind]


def test_the_host_invites_and_the_guest_knows_when_where_and_from_whom():
    minds, world = town(["Maria Lopez", "Klaus Mueller"], {"Maria Lopez": [SEED]})
    host, guest = minds["Maria Lopez"], minds["Klaus Mueller"]
    run_until(world, lambda: any(k.going is not None for k in guest.state.events.values()))
    kept = [r.data | {"who": r.resident} for r in world.records if r.kind == "event"]
    (key, known), = guest.state.events.items()
    assert known.source == "Maria Lopez" and known.event.host == "Maria Lopez" and known.invited
    assert known.event.place == "Hobbs Cafe:counter" and f"{known.event.start:%d %H:%M}" == "14 17:00"
    assert known.going is True  # friendly and invited: the scripted rule goes
    told = [m.text for m in guest.memory.all() if m.text.startswith("Maria Lopez told me that")]
    assert told and "Hobbs Cafe" in told[0] and "from 5pm to 7pm" in told[0], [m.text for m in guest.memory.all()]
    assert "Klaus Mueller" in host.state.events[key].told  # the host will not invite him twice
    assert any(r["status"] == "learned" and r["source"] == "Maria Lopez" and r["who"] == "Klaus Mueller" for r in kept)
    assert any(r["status"] == "decided" and r["going"] for r in kept)
    tie = guest.social.tie("Maria Lopez")
    assert tie is not None and tie.interactions >= 1


def test_the_next_days_plan_gives_the_gathering_its_slot_and_the_host_prepares_first():
    minds, world = town(["Maria Lopez", "Klaus Mueller"], {"Maria Lopez": [SEED]})
    host, guest = minds["Maria Lopez"], minds["Klaus Mueller"]
    run_until(world, lambda: any(k.going is not None for k in guest.state.events.values()))
    saturday = datetime(2026, 2, 14, 7, 0)
    for mind in (host, guest):
        mind.state.now = saturday
        asyncio.run(plan_day(mind, saturday))
    host_block = block_at(host, datetime(2026, 2, 14, 16, 30))
    guest_block = block_at(guest, datetime(2026, 2, 14, 17, 30))
    assert host_block.event and host_block.start == datetime(2026, 2, 14, 16, 0) and host_block.end.hour == 19
    assert guest_block.event == host_block.event and guest_block.start < datetime(2026, 2, 14, 17, 0)
    assert block_at(guest, datetime(2026, 2, 14, 19, 30)).event == ""  # the day goes on after it
    steps = event_steps(host, host_block, host_block.start)
    assert steps[0].arena == "Hobbs Cafe:counter" and steps[0].end == datetime(2026, 2, 14, 17, 0)
    assert steps[0].object_state and "set up for" in steps[0].object_state
    assert all(s.arena == "Hobbs Cafe:counter" for s in event_steps(guest, guest_block, guest_block.start))
    assert any("Hobbs Cafe" in line for line in guest.state.day_plan)
    # at the party itself it is no news to tell: the talk there is about other things
    guest.state.now = datetime(2026, 2, 14, 17, 30)
    assert goal_topic(guest, "Ayesha Khan") == ("", "")
    guest.state.now = datetime(2026, 2, 14, 15, 0)
    assert "Hobbs Cafe" in goal_topic(guest, "Ayesha Khan")[0] and "go together?" in goal_topic(guest, "Ayesha Khan")[0]


def test_news_is_passed_on_as_the_fact_attributed_and_a_candidacy_travels_too():
    minds, world = town(["Ayesha Khan", "Klaus Mueller"])
    ayesha = minds["Ayesha Khan"]
    ayesha.state.now = START
    learn(ayesha, "Maria Lopez told me: I'm hosting a concert at the Johnson Park on February 14 at 6pm.",
          "Maria Lopez", "Maria Lopez")
    learn(ayesha, "Sam Moore is running for mayor.", "Maria Lopez", "Maria Lopez")
    topic, key = goal_topic(ayesha, "Klaus Mueller")
    assert topic.startswith("Maria Lopez is hosting a concert at Johnson Park garden on Saturday February 14 from 6pm to 8pm.")
    assert "Maria Lopez told me." in topic and "said" not in topic
    assert goal_topic(ayesha, "Maria Lopez") == ("", "")  # she told it: never told back to her
    run_until(world, lambda: len(minds["Klaus Mueller"].state.events) == 2, hours=4)
    learned = {k.event.kind: k for k in minds["Klaus Mueller"].state.events.values()}
    assert set(learned) == {"concert", "candidacy"} and all(k.source == "Ayesha Khan" for k in learned.values())
    assert minds["Klaus Mueller"].social.tie("Sam Moore").relation == "heard of"  # knows of him now


def test_a_gathering_that_cannot_be_resolved_is_refused_and_recorded_not_guessed():
    minds, _world = town(["Ayesha Khan"])
    mind = minds["Ayesha Khan"]
    mind.state.now = START
    assert learn(mind, "There is a party at the Grand Hotel tomorrow at 8pm.", "whisper", mind.name) is None
    assert learn(mind, "The concert at Johnson Park was on February 10 at 5pm.", "whisper", mind.name) is None
    assert mind.state.events == {}
    refused = records(mind, "event")
    assert [r["problem"][:15] for r in refused] == ["unknown place '", "the time is pas"]


def test_a_line_from_someone_else_heard_mid_talk_is_remembered_with_who_said_it():
    minds, _world = town(["Ayesha Khan", "Klaus Mueller", "Maria Lopez"])
    tom = minds["Klaus Mueller"]
    tom.state.now, tom.state.tick = START, 5
    tom.state.convo = Conversation(partner="Ayesha Khan", conversation_id="x", last_tick=5, started=START)
    p = Perception(resident=tom.name, tick=6, time=START, tile=(0, 0), address="Town Library:reading room",
                   nearby=["Ayesha Khan", "Maria Lopez"])
    line = "I'm hosting a party at the Hobbs Cafe on February 14 from 5pm to 7pm. Would you like to come?"
    answer = asyncio.run(on_heard(tom, [ChatLine(speaker="Maria Lopez", listener=tom.name, text=line)], p))
    assert answer is None and tom.state.convo.partner == "Ayesha Khan"  # still in his own talk
    assert any(m.text.startswith("Maria Lopez said to me") and "Hobbs Cafe" in m.text for m in tom.state.pending)
    (known,) = tom.state.events.values()
    assert known.source == "Maria Lopez" and known.invited


def test_interviews_about_someone_never_met_or_heard_of_say_so():
    persona = demo_persona("Ayesha Khan", "Town Library:reading room", "student")
    memories = ["Klaus Mueller told me that Maria Lopez is hosting a party.", "I read a book."]
    residents = ["Ayesha Khan", "Klaus Mueller", "Maria Lopez", "Sam Moore"]
    assert strangers("Do you know Sam Moore?", persona.name, persona, memories, residents) == ["Sam Moore"]
    assert strangers("Do you know Maria Lopez?", persona.name, persona, memories, residents) == []
    assert "never met or heard of" in never_met(["Sam Moore"]).answer


def test_an_announced_town_meeting_and_a_whispered_funeral_go_through_the_same_path():
    minds, _world = town(["Ayesha Khan"])
    mind = minds["Ayesha Khan"]
    mind.state.now = START
    meeting = learn(mind, "There is a town meeting at the Town Library tomorrow evening. I am hosting it.",
                    "announcement")
    funeral = learn(mind, "Old Tom's funeral is on Saturday at 10am at Johnson Park.", "whisper", mind.name)
    assert meeting.event.kind == "meeting" and meeting.event.host == "" and meeting.source == "announcement"
    assert (meeting.event.place, f"{meeting.event.start:%a %H:%M}") == ("Town Library:reading room", "Sat 18:00")
    assert funeral.event.kind == "funeral" and f"{funeral.event.start:%a %H:%M}-{funeral.event.end:%H:%M}" == \
        "Sat 10:00-12:00"
    learned = [r for r in records(mind, "event") if r["status"] == "learned"]
    assert [r["source"] for r in learned] == ["announcement", "whisper"]
    assert not any(m.text.startswith(("announcement told me", "whisper told me")) for m in mind.memory.all())


def test_news_a_model_words_its_own_way_reaches_the_listener_as_the_teller_knows_it():
    """SmolLM2's Tom, told of Maria's party, passed it on as 'I am planning a Valentine's Day
    party ...' and 'I'll have a Valentine's Day party tonight at Willow Cafe': his listeners learned
    Tom as its host, or a second party at 7pm (society bench, 2026-11-27). A line that speaks of the
    talk's goal carries the fact as the teller knows it; the listener learns that, told by the teller."""
    minds, world = town(["Maria Lopez", "Tom Moreno", "Ben Okafor"], {"Maria Lopez": [SEED]})
    tom, ben = minds["Tom Moreno"], minds["Ben Okafor"]
    tom.state.now = START
    learn(tom, "Maria Lopez is hosting a Valentine's Day party at Hobbs Cafe counter on Saturday February 14 "
               "from 5pm to 7pm", "Maria Lopez", "Maria Lopez")
    (key, told), = tom.state.events.items()
    tom.state.convo = Conversation(partner="Ben Okafor", conversation_id="t", last_tick=0, started=START, goal=key)
    p = Perception(resident="Tom Moreno", tick=1, time=START, tile=(0, 0), address="Town Library:reading room",
                   nearby=["Ben Okafor"])
    intent = _say(tom, tom.state.convo, "I'll have a Valentine's Day party tonight at Hobbs Cafe. I'm going home.", p)
    assert intent.news == describe(told.event) and "Ben Okafor" in told.told
    heard = ChatLine(speaker="Tom Moreno", listener="Ben Okafor", text=intent.utterance, news=intent.news)
    ben.state.now = START
    asyncio.run(on_heard(ben, [heard], p.model_copy(update={"resident": "Ben Okafor", "nearby": ["Tom Moreno"]})))
    (learned,) = ben.state.events.values()
    assert learned.event.host == "Maria Lopez" and f"{learned.event.start:%d %H:%M}" == "14 17:00"
    assert learned.source == "Tom Moreno"
    # a line that does not speak of it passes nothing on
    tom.state.convo = Conversation(partner="Ben Okafor", conversation_id="u", last_tick=0, started=START, goal=key)
    told.told.remove("Ben Okafor")
    assert _say(tom, tom.state.convo, "Lovely weather today, isn't it?", p).news is None and "Ben Okafor" not in told.told


def test_no_one_is_told_of_a_gathering_or_news_of_their_own_they_never_had():
    """SmolLM2's residents told Maria of 'her' party in words that made it another one, and Ben that
    he is running for mayor; Maria then answered 'Tom told me that Maria Alvarez is hosting ...'
    (society bench, 2026-11-28). Hearsay gives no one a party to host: it is refused and recorded.
    The same words to anyone else are news; a whisper may still give one a notion."""
    minds, _world = town(["Maria Lopez", "Tom Moreno", "Ben Okafor"])
    maria, ben, tom = minds["Maria Lopez"], minds["Ben Okafor"], minds["Tom Moreno"]
    told = "Maria Lopez is hosting a dinner party at Hobbs Cafe counter on Saturday February 14 from 6pm to 8pm."
    news = "Ben Okafor is running for mayor in the autumn election."
    for mind in (maria, ben, tom):
        mind.state.now = START
    assert learn(maria, told, "Tom Moreno", "Tom Moreno") is None and not maria.state.events
    assert learn(ben, news, "Tom Moreno", "Tom Moreno") is None and not ben.state.events
    refused = [r for m in (maria, ben) for r in records(m, "event") if r["status"] == "refused"]
    assert len(refused) == 2 and all("hearer as its host" in r["problem"] and r["source"] == "Tom Moreno"
                                     for r in refused)
    assert not any("told me" in m.text for mind in (maria, ben) for m in mind.memory.all())
    assert learn(tom, told, "Ben Okafor", "Ben Okafor").event.host == "Maria Lopez"
    assert learn(tom, news, "Maria Lopez", "Maria Lopez").event.host == "Ben Okafor"
    whispered = learn(maria, "I am hosting a dinner party at Hobbs Cafe tomorrow at 6pm.", "whisper", maria.name)
    assert whispered is not None and whispered.going


def test_a_host_who_words_her_own_party_wrong_still_passes_on_its_time():
    """SmolLM2's Maria told Tom, who already knew, of her party as '7pm to 9pm': Tom learned a
    second party (society bench, 2026-11-27). A line that speaks of an event its speaker knows
    carries the fact as the speaker knows it, goal or not."""
    minds, world = town(["Maria Lopez", "Tom Moreno"], {"Maria Lopez": [SEED]})
    maria, tom = minds["Maria Lopez"], minds["Tom Moreno"]
    for mind in (maria, tom):
        mind.state.now = START
        learn(mind, SEED, "", "Maria Lopez")
    (key, mine), = maria.state.events.items()
    maria.state.convo = Conversation(partner="Tom Moreno", conversation_id="v", last_tick=0, started=START)
    p = Perception(resident="Maria Lopez", tick=1, time=START, tile=(0, 0), address="Town Library:reading room",
                   nearby=["Tom Moreno"])
    intent = _say(maria, maria.state.convo, "My Valentine's Day party is from 7pm to 9pm at Hobbs Cafe!", p)
    assert intent.news == describe(mine.event)
    heard = ChatLine(speaker="Maria Lopez", listener="Tom Moreno", text=intent.utterance, news=intent.news)
    asyncio.run(on_heard(tom, [heard], p.model_copy(update={"resident": "Tom Moreno", "nearby": ["Maria Lopez"]})))
    assert list(tom.state.events) == [key]  # no second party at 7pm


class OrderBound:
    """A model whose go-or-skip is the option its question names last (SmolLM2's habit, measured
    on 48 prompts), or always ``fixed``; every other call goes to the scripted model."""

    def __init__(self, fixed: str = ""):
        self.inner, self.fixed, self.asked = make_llm("scripted"), fixed, []

    async def acomplete(self, purpose, messages, schema, fallback, **kw):
        if purpose != "attend":
            return await self.inner.acomplete(purpose, messages, schema, fallback, **kw)
        options = messages[-1]["content"].rsplit("Answer ", 1)[1].rstrip(".").split(" or ")
        self.asked.append(tuple(options))
        return schema(decision=self.fixed or options[-1])

    def complete(self, purpose, messages, schema, fallback, **kw):
        return asyncio.run(self.acomplete(purpose, messages, schema, fallback, **kw))


def decided(world) -> list[dict]:
    return [r.data | {"who": r.resident} for r in world.records if r.kind == "event" and r.data["status"] == "decided"]


def test_a_choice_that_follows_the_order_of_the_options_is_left_to_the_rule():
    # Klaus is 'shy' and not close to the host: the rule skips; the model would say whatever it heard last
    llm = OrderBound()
    minds, world = town(["Maria Lopez", "Klaus Mueller"], {"Maria Lopez": [SEED]},
                        traits={"Klaus Mueller": ["shy", "reserved"]}, llm=llm)
    guest = minds["Klaus Mueller"]
    run_until(world, lambda: any(k.going is not None for k in guest.state.events.values()))
    (mine,) = [d for d in decided(world) if d["who"] == "Klaus Mueller"]
    assert ("go", "skip") in llm.asked and ("skip", "go") in llm.asked  # asked both ways
    assert mine["chosen_by"] == "rule"
    known = next(iter(guest.state.events.values()))
    from agents.roles.attend import attend_rule
    assert mine["going"] is known.going is (attend_rule("shy, reserved", 0.0, known.invited) == "go")


def test_a_choice_that_holds_both_ways_is_the_models_even_against_the_rule():
    llm = OrderBound(fixed="skip")  # a friendly, invited guest: the rule would go; the model skips, both ways
    minds, world = town(["Maria Lopez", "Klaus Mueller"], {"Maria Lopez": [SEED]}, llm=llm)
    guest = minds["Klaus Mueller"]
    run_until(world, lambda: any(k.going is not None for k in guest.state.events.values()))
    (mine,) = [d for d in decided(world) if d["who"] == "Klaus Mueller"]
    assert mine["chosen_by"] == "model" and mine["going"] is False
    assert not any(b.event for b in guest.state.blocks)  # nothing planned for it


class AttendBroken(OrderBound):
    """Every attend answer is garbage (the gateway retries, then falls back); the rest is scripted."""

    def __init__(self):
        super().__init__()
        self.broken = make_llm("scripted", chaos=1.0)

    def add_listener(self, fn) -> None:  # the caller learns of fallbacks from the gateways' reports
        self.inner.add_listener(fn)
        self.broken.add_listener(fn)

    async def acomplete(self, purpose, messages, schema, fallback, **kw):
        llm = self.broken if purpose == "attend" else self.inner
        return await llm.acomplete(purpose, messages, schema, fallback, **kw)


def test_a_choice_whose_first_answer_fell_back_is_the_rules_and_asked_once():
    minds, world = town(["Maria Lopez", "Klaus Mueller"], {"Maria Lopez": [SEED]}, llm=AttendBroken())
    guest = minds["Klaus Mueller"]
    run_until(world, lambda: any(k.going is not None for k in guest.state.events.values()))
    (mine,) = [d for d in decided(world) if d["who"] == "Klaus Mueller"]
    attend_calls = [r.data for r in world.records if r.kind == "llm" and r.resident == "Klaus Mueller"
                    and r.data["purpose"] == "attend"]
    assert mine["chosen_by"] == "rule" and len(attend_calls) == 1 and attend_calls[0]["fallback"]


def test_a_gatherings_words_are_off_limits_to_setting_off_except_around_its_time():
    from agents.minds.cognition.gatherings import not_now_words
    minds, world = town(["Maria Lopez", "Klaus Mueller"], {"Maria Lopez": [SEED]})
    guest, host = minds["Klaus Mueller"], minds["Maria Lopez"]
    run_until(world, lambda: any(k.going is not None for k in guest.state.events.values()))
    saturday = datetime(2026, 2, 14)
    assert not_now_words(guest, saturday.replace(hour=11)) == (("Hobbs Cafe", ("party", "valentine's")),)  # morning
    assert not_now_words(guest, saturday.replace(hour=16, minute=35)) == ()  # 25 minutes before: on its way
    assert not_now_words(guest, saturday.replace(hour=18, minute=59)) == ()
    assert not_now_words(guest, saturday.replace(hour=19))  # over
    assert not_now_words(host, saturday.replace(hour=16, minute=5)) == ()  # the host prepares an hour ahead
    # a block's steps: off limits only when the gathering is on at no moment of the block
    assert not_now_words(guest, saturday.replace(hour=8), saturday.replace(hour=12))
    assert not_now_words(guest, saturday.replace(hour=15), saturday.replace(hour=18)) == ()
    assert not_now_words(guest, saturday.replace(hour=19), saturday.replace(hour=22))


def test_a_step_going_to_or_joining_a_gathering_not_on_in_its_block_is_dropped():
    """SmolLM2's Ana was 'going to a Valentine's Day party at Willow Cafe dining' at 08:26 in her
    classroom, and Lucy 'attending a Valentine's Day party' in the college library at 22:04 (society
    bench, 2026-11-28): the bench's wrong-time guests. Those steps are dropped; the same steps while
    it is on stand, and the fallback never says them out of time."""
    from agents.roles.planning import decomposition_fallback, decomposition_schema

    places = ("Town Library:reading room", "Hobbs Cafe:counter")
    words = (("Hobbs Cafe", ("party", "valentine's")),)
    step = {"minutes": 15, "place": "Town Library:reading room", "emoji": "📖", "object_state": "in use"}
    steps = [{**step, "action": "reading a novel"}, {**step, "action": "attending a Valentine's Day party"},
             {**step, "action": "shelving books"}]
    late = decomposition_schema(places, "evening", (), words).model_validate({"steps": steps})
    assert [s.action for s in late.steps] == ["reading a novel", "shelving books"]
    assert any("not on now" in p for p in late.patches())
    on = decomposition_schema(places, "evening").model_validate({"steps": steps})
    assert len(on.steps) == 3
    fallback = decomposition_fallback(places, "joining the Valentine's party", places[0], 60, "evening", (), words)
    assert {s.action for s in fallback.steps} == {"keeping busy"} and isinstance(
        fallback, decomposition_schema(places, "evening", (), words))


def test_a_gathering_at_the_same_place_and_time_told_in_other_words_is_the_same_one():
    minds, world = town(["Maria Lopez", "Klaus Mueller"], {"Maria Lopez": [SEED]})
    host = minds["Maria Lopez"]
    run_until(world, lambda: bool(host.state.events))
    assert len(host.state.events) == 1
    # SmolLM2's guest, asked to come, 'celebrated' a wedding at the host's own party
    again = learn(host, "I would be delighted to celebrate my friend's wedding at Hobbs Cafe on Saturday "
                        "February 14 from 5pm to 7pm.", "Klaus Mueller", speaker="Klaus Mueller")
    assert again is None and len(host.state.events) == 1
    (known,) = host.state.events.values()
    assert known.event.kind == "party" and "Klaus Mueller" in known.told
    other_day = learn(host, "There is a wedding at Hobbs Cafe on February 15 from 5pm to 7pm.", "Klaus Mueller",
                      speaker="Klaus Mueller")
    assert other_day is not None and len(host.state.events) == 2  # another day is another event


def test_a_talk_at_the_gathering_that_runs_past_its_end_does_not_take_the_guest_back_to_it():
    """SmolLM2's Rosa Diaz was 'attending the party' at the venue at 19:01 and 20:02, after talks
    there ran past its 19:00 end (society bench seed 1, 2026-11-28). The gathering's step ends
    with its window whatever a talk did: afterwards the guest goes on with the evening elsewhere."""
    minds, world = town(["Maria Lopez", "Klaus Mueller"], {"Maria Lopez": [SEED]})
    host, guest = minds["Maria Lopez"], minds["Klaus Mueller"]
    run_until(world, lambda: any(k.going is not None for k in guest.state.events.values()))
    jump_to(world, (host, guest), datetime(2026, 2, 14, 18, 59, 35))  # a talk opened now runs past 19:00
    for body in world.bodies.values():
        body.arena = "Hobbs Cafe:counter"
    seen: list[tuple[datetime, str, str]] = []
    klaus = world.bodies["Klaus Mueller"]
    step_until(world, datetime(2026, 2, 14, 20, 30), lambda: seen.append((world.time, klaus.description, klaus.arena)))
    talked = [t for t, doing, _ in seen if doing.startswith("talking with")]
    assert talked and max(talked) >= datetime(2026, 2, 14, 19, 0), "the talk ran past the end"
    after = [(t, doing, arena) for t, doing, arena in seen if t > max(talked)]
    assert after and not any("party" in doing.lower() for _, doing, _ in after), after
    assert after[-1][2] != "Hobbs Cafe:counter"  # gone on elsewhere


def test_news_of_a_gathering_that_has_begun_is_not_brought_up_at_it_or_after():
    """The scripted host told a guest at her own party, and after it, 'I am planning a Valentine's
    Day party at the Hobbs Cafe' from her seed memory (2026-12-07). Memories made before it began
    that speak of it are no news once it has; what was seen or said there still is."""
    from agents.minds.cognition.gatherings import no_longer_news
    from memory.store import MemoryRecord

    minds, world = town(["Maria Lopez", "Klaus Mueller"], {"Maria Lopez": [SEED]})
    host, guest = minds["Maria Lopez"], minds["Klaus Mueller"]
    run_until(world, lambda: any(k.going is not None for k in guest.state.events.values()))
    seed = next(m for m in host.memory.all() if "planning a Valentine's Day party" in m.text)
    seen = MemoryRecord(id=0, resident="Maria Lopez", kind="observation", text="Klaus Mueller is attending the party",
                        tick=1, created=datetime(2026, 2, 14, 17, 30), last_access=START, importance=5)
    host.state.now = datetime(2026, 2, 14, 16, 0)
    assert not no_longer_news(host, seed)  # before it: news to tell
    host.state.now = datetime(2026, 2, 14, 18, 0)
    assert no_longer_news(host, seed) and not no_longer_news(host, seen)
    jump_to(world, (host, guest), datetime(2026, 2, 14, 18, 20))
    before = len(world.chat)
    step_until(world, datetime(2026, 2, 14, 19, 30))
    said = [line.text for line in world.chat[before:] if line.speaker == "Maria Lopez"]
    assert said and not any("planning" in text for text in said), said


class GoesHome(OrderBound):
    """Every reaction walks home for a quarter of an hour when home is a place it may name
    (SmolLM2's host at her party at 16:59: 'setting up the corner table' at Oak House)."""

    def __init__(self):
        super().__init__()
        self.offered: list[list[str]] = []

    async def acomplete(self, purpose, messages, schema, fallback, **kw):
        if purpose != "react":
            return await super().acomplete(purpose, messages, schema, fallback, **kw)
        places = schema.model_json_schema()["properties"]["place"]["enum"]
        self.offered.append(places)
        home = next((p for p in places if "House" in p), places[0])
        return schema(decision="react", talk_to=fallback.talk_to, action="setting up the corner table for the party",
                      place=home, minutes=15, emoji="🎈")


def test_a_reaction_in_a_gatherings_slot_keeps_the_resident_at_its_venue():
    llm = GoesHome()
    minds, world = town(["Maria Lopez"], {"Maria Lopez": [SEED]}, llm=llm)
    host = minds["Maria Lopez"]
    run_until(world, lambda: bool(host.state.events), hours=0.1)  # she knows her own party from the start
    jump_to(world, (host,), datetime(2026, 2, 14, 16, 50))
    llm.offered.clear()
    where: set[str] = set()
    body = world.bodies["Maria Lopez"]

    def watch() -> None:
        if world.time == datetime(2026, 2, 14, 17, 5):  # something to react to, at the party
            body.whispers.append("The cake is still at home on the kitchen table.")
        if world.time >= datetime(2026, 2, 14, 17, 10):
            where.add(body.arena)
    step_until(world, datetime(2026, 2, 14, 18, 30), watch)
    assert llm.offered and all(p.startswith("Hobbs Cafe") for places in llm.offered for p in places), llm.offered
    assert where == {"Hobbs Cafe:counter"}, where
