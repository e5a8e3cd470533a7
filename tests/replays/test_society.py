"""The society measures on hand-built runs: knowing needs a memory, being there needs the place
inside the window, and the paper's density formula."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest

from maps.contracts import Persona, Record, Relationship, TickRecords
from replays.notions import mentions, names_in, parse_notion
from replays.society import (RunFacts, asked_together, collect, denies, density, events_seen, knowers, memory_edges, pairs_of,
                             presence, refused_events, run_notions, score_notion_answer, score_person_answer,
                             society_summary, went_together, wrong_time)
from replays.timeline import build_timeline

START = datetime(2026, 2, 13, 7, 0)
PLACES = ["Willow Cafe", "Oak House", "Town Hall", "Willow Park", "Green Grocer"]
NAMES = ["Maria Alvarez", "Tom Alvarez", "Grace Kim", "Hugo Lambert"]
PARTY_WORDS = ("I am planning a Valentine's Day party at the Willow Cafe on February 14 from 5pm to 7pm, "
               "and I want to invite everyone I know.")


def party():
    return parse_notion(PARTY_WORDS, "Maria Alvarez", "party", PLACES, START)


def candidacy():
    return parse_notion("I am running for mayor, and I want everyone in town to know.", "Hugo Lambert", "candidacy",
                        PLACES, START)


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 2, day, hour, minute)


# -- notions -------------------------------------------------------------------------------------

def test_four_kinds_of_gathering_resolve_place_and_window() -> None:
    cases = {
        PARTY_WORDS: ("party", "Willow Cafe", at(14, 17), at(14, 19)),
        "I am hosting a town meeting at the Town Hall tomorrow evening": ("meeting", "Town Hall", at(14, 18), at(14, 21)),
        "I am organising a funeral at Oak House on 14 February between 10am and noon": ("funeral", "Oak House",
                                                                                        at(14, 10), at(14, 12)),
        "a chess match at Willow Park on Saturday at 3pm": ("match", "Willow Park", at(14, 15), at(14, 17)),
    }
    for words, (head, place, start, end) in cases.items():
        n = parse_notion(words, "Maria Alvarez", "k", PLACES, START)
        assert (n.kind, n.head, n.place, n.start, n.end, n.problems) == ("gathering", head, place, start, end, [])


def test_unresolved_place_and_time_are_problems_not_guesses() -> None:
    nowhere = parse_notion("I will hold a concert at the Moon Bar on Saturday at 8pm", "Maria Alvarez", "k", PLACES, START)
    assert nowhere.place is None and "no place of the town" in nowhere.problems[0]
    backwards = parse_notion("I am planning a party at Willow Cafe on February 14 from 7pm to 5pm", "M", "k", PLACES,
                             START)
    assert "is not after the start" in backwards.problems[0]
    past = parse_notion("I am planning a party at Willow Cafe on February 12 at 5pm", "M", "k", PLACES, START)
    assert "before the run starts" in past.problems[0]
    undated = parse_notion("I am planning a party at Willow Cafe", "M", "k", PLACES, START)
    assert undated.start is None and "no day" in undated.problems[0]
    with pytest.raises(ValueError, match="cannot tell what the notion is"):
        parse_notion("Hello there", "M", "k", PLACES, START)


def test_news_needs_its_words_and_who() -> None:
    news = candidacy()
    assert news.kind == "news" and news.question == "Do you know who is running for mayor?"
    assert mentions("Hugo Lambert told me he is running for mayor.", news, NAMES)
    assert not mentions("Someone is running for mayor.", news, NAMES)  # who is the information
    assert not mentions("Hugo Lambert was at the bank.", news, NAMES)


# -- interview answers ---------------------------------------------------------------------------

def test_a_yes_without_a_memory_is_a_hallucination() -> None:
    answer = "Yes! Maria is throwing a Valentine's Day party at the Willow Cafe."
    lying = score_notion_answer("Grace Kim", answer, party(), ["I made coffee."], NAMES)
    assert lying.claims and lying.hallucinated and not lying.knows
    told = score_notion_answer("Grace Kim", answer, party(),
                               ["Maria Alvarez told me about the Valentine's party at the cafe."], NAMES)
    assert told.knows and not told.hallucinated


def test_a_denial_claims_nothing_and_a_vague_yes_does_not_know() -> None:
    memory = ["Maria Alvarez told me about the Valentine's party at the cafe."]
    no = score_notion_answer("Grace Kim", "No, I haven't heard of any party.", party(), [], NAMES)
    assert not no.claims and not no.hallucinated and not no.knows
    vague = score_notion_answer("Grace Kim", "Yes, I think so.", party(), memory, NAMES)
    assert not vague.knows  # the information was not shown
    judged_no = score_notion_answer("Grace Kim", "The party at the cafe, yes.", party(), memory, NAMES, verdict=False)
    assert not judged_no.claims and not judged_no.knows


def test_a_denial_is_the_residents_own_not_one_it_retells() -> None:
    """'I had not heard' denies; 'Grace told me that she had not heard that Ben ...' retells
    someone else's surprise while showing the news (a scripted bench counted Tom Alvarez's
    answer as not knowing who runs for mayor on those words, 2026-11-27)."""
    retold = ("From what I remember: I talked with Grace Kim, who told me that grace had not heard that Ana "
              "Martins is attending a Valentine's Day party, and I told Grace that Ben Okafor is running for mayor.")
    assert not denies(retold)
    assert not denies("Tom said he had never met Hugo, but I know him well.")
    for own in ("No, I haven't heard of any party.", "I have never met Hugo.", "I've never heard of it.",
                "I'm not aware of any party.", "I am not sure who that is.", "Never heard of him.",
                "We haven't met.", "I know nothing about that.", "Sorry, I do not know.", "I really don't know.",
                "I have no idea.", "Who's that?", "Oh. Not heard of it, sorry.",
                # SmolLM2 on a bench's memories, counted as knowing the party (2026-11-28)
                "I was not aware of the Valentine's Day party.", "I wasn't aware of any party."):
        assert denies(own), own


def test_knowing_a_person_needs_a_memory_or_the_residents_file() -> None:
    grace = Persona(name="Grace Kim", age=27, occupation="barista", workplace="Willow Cafe", home="Oak House",
                    relationships=[Relationship(name="Maria Alvarez", relation="boss")])
    made_up = score_person_answer("Grace Kim", "Yes, I know Hugo Lambert well.", "Hugo Lambert", [], grace, NAMES)
    assert made_up.hallucinated and not made_up.knows
    met = score_person_answer("Grace Kim", "Yes, I know Hugo.", "Hugo Lambert",
                              ["Conversation with Hugo Lambert: the bank is quiet."], grace, NAMES)
    assert met.knows and not met.hallucinated
    boss = score_person_answer("Grace Kim", "Maria Alvarez is my boss.", "Maria Alvarez", [], grace, NAMES)
    assert boss.knows
    stranger = score_person_answer("Grace Kim", "I don't know who that is.", "Hugo Lambert", [], grace, NAMES)
    assert not stranger.claims and not stranger.hallucinated


# -- knowledge, attendance, density ----------------------------------------------------------------

def facts_of_a_party() -> RunFacts:
    f = RunFacts(first=at(13, 7), last=at(14, 23))
    f.memories += [
        (at(13, 7), "Maria Alvarez", "thought", PARTY_WORDS),
        (at(13, 9, 1), "Tom Alvarez", "chat", "Conversation with Maria Alvarez: a Valentine's party at the cafe!"),
        (at(13, 12), "Grace Kim", "observation", "Tom Alvarez said the Valentine's Day party is on Saturday."),
    ]
    f.chats += [(at(13, 9), "Maria Alvarez", "Tom Alvarez", "I'm hosting a Valentine's party at the cafe on the 14th."),
                (at(13, 11), "Tom Alvarez", "Grace Kim", "Shall we go together to the Valentine's party?")]
    f.moves = {
        "Maria Alvarez": [(at(13, 7), "Oak House"), (at(14, 16, 30), "Willow Cafe:dining room"), (at(14, 19, 30), "Oak House")],
        "Tom Alvarez": [(at(13, 7), "Oak House"), (at(13, 17), "Willow Cafe:dining room"), (at(13, 19), "Oak House"),
                        (at(14, 17, 5), "Willow Cafe:dining room"), (at(14, 18, 30), "Oak House")],
        "Grace Kim": [(at(13, 7), "Oak House"), (at(14, 17, 10), "Willow Cafe:dining room"), (at(14, 18, 30), "Oak House")],
        "Hugo Lambert": [(at(13, 7), "Town Hall"), (at(14, 16), "Willow Cafe:kitchen"), (at(14, 17, 5), "Town Hall")],
    }
    f.actions += [(at(13, 19), "Tom Alvarez", "go to the Valentine's party"),
                  (at(14, 17), "Grace Kim", "go to the party at the cafe")]
    return f


def test_knowers_and_who_told_whom() -> None:
    known = knowers(facts_of_a_party(), party(), NAMES)
    assert list(known) == ["Maria Alvarez", "Tom Alvarez", "Grace Kim"]
    assert (known["Maria Alvarez"].via, known["Tom Alvarez"].via) == ("seed", "conversation")
    assert known["Tom Alvarez"].teller == "Maria Alvarez"
    assert known["Grace Kim"].teller == "Tom Alvarez"  # the memory names a knower (his line was an hour before)
    assert "Hugo Lambert" not in known


def test_only_the_place_inside_the_window_counts() -> None:
    f, n = facts_of_a_party(), party()
    there = presence(f, n.place, n.start, n.end)
    assert sorted(there) == ["Grace Kim", "Maria Alvarez", "Tom Alvarez"]
    assert there["Tom Alvarez"][0] == at(14, 17, 5)  # Friday at the cafe, the wrong day, does not count
    assert "Hugo Lambert" not in there  # five minutes inside the window: passing through
    early = RunFacts(first=at(14, 7), last=at(14, 23), moves={"X": [(at(14, 15), "Willow Cafe"), (at(14, 16, 59), "Oak House")]})
    assert presence(early, n.place, n.start, n.end) == {}  # gone before it began
    # the run ended Saturday 18:00 with X at the cafe: a gathering there on Sunday had nobody
    ended = RunFacts(first=at(14, 7), last=at(14, 18), moves={"X": [(at(14, 17), "Willow Cafe")]})
    assert presence(ended, n.place, at(15, 12), at(15, 14)) == {}
    assert presence(ended, n.place, n.start, n.end)["X"] == (at(14, 17), timedelta(hours=1))  # to the last tick
    assert went_together(f, {k: there[k] for k in ("Tom Alvarez", "Grace Kim")}, n.place) == [("Grace Kim", "Tom Alvarez")]
    assert asked_together(f, n, NAMES) == [("Grace Kim", "Tom Alvarez")]
    assert wrong_time(f, n) == [("Tom Alvarez", "Fri 13 19:00")]


def test_being_at_a_gathering_out_of_its_time_is_a_wrong_time_too() -> None:
    """Not only setting off: 'celebrating', 'chatting at the Valentine's Day party' on Friday, or after
    it ended, is a resident at it out of its time; telling someone of it, or the host, is not."""
    n = party()
    actions = [(at(13, 18), "Tom Alvarez", "chatting at the Valentine's Day party"),
               (at(14, 20), "Grace Kim", "celebrating Maria's party with friends"),
               (at(13, 18), "Hugo Lambert", "telling Tom about the party at the cafe"),
               (at(14, 17, 30), "Grace Kim", "chatting at the Valentine's Day party"),  # in its window
               (at(13, 12), "Maria Alvarez", "celebrating early: the party is tomorrow")]  # the host
    facts = RunFacts(first=at(13, 7), last=at(15, 7), actions=actions)
    assert wrong_time(facts, n) == [("Tom Alvarez", "Fri 13 18:00"), ("Grace Kim", "Sat 14 20:00")]


def test_density_is_the_papers_formula_over_undirected_pairs() -> None:
    pairs = pairs_of([("A", "B"), ("B", "A"), ("C", "D"), ("A", "Z")], ["A", "B", "C", "D"])
    assert len(pairs) == 2
    assert density(pairs, 4) == pytest.approx(2 * 2 / (4 * 3))
    assert density(set(), 1) == 0.0
    assert memory_edges(facts_of_a_party(), NAMES) == [("Grace Kim", "Tom Alvarez"), ("Tom Alvarez", "Maria Alvarez")]


# -- from the record stream: the run's events, the summary block, the timeline ----------------------------

def stream() -> list[TickRecords]:
    def tick(k: int, when: datetime, *recs: Record) -> TickRecords:
        return TickRecords(tick=k, time=when, records=list(recs))

    def mem(who: str, kind: str, text: str) -> Record:
        return Record(kind="memory", resident=who, data={"memory_id": 1, "kind": kind, "text": text, "importance": 5})

    def move(who: str, address: str) -> Record:
        return Record(kind="move", resident=who, data={"tile": [0, 0], "address": address})

    return [
        tick(0, at(13, 7), mem("Maria Alvarez", "thought", "I have run the Willow Cafe for twelve years."),
             mem("Maria Alvarez", "thought", PARTY_WORDS), move("Maria Alvarez", "Oak House"), move("Tom Alvarez", "Oak House")),
        tick(1, at(13, 9), Record(kind="chat", resident="Maria Alvarez", data={
            "speaker": "Maria Alvarez", "listener": "Tom Alvarez", "text": "Come to my Valentine's party at the cafe!"}),
             mem("Tom Alvarez", "chat", "Maria Alvarez invited me to her Valentine's party.")),
        tick(2, at(14, 16, 50), move("Maria Alvarez", "Willow Cafe:dining room")),
        tick(3, at(14, 17, 2), move("Tom Alvarez", "Willow Cafe:dining room")),
        tick(4, at(14, 19, 10), move("Tom Alvarez", "Oak House"), move("Maria Alvarez", "Oak House")),
    ]


def test_the_run_finds_its_gathering_and_the_timeline_shows_it() -> None:
    facts = collect(stream())
    notions = run_notions(facts, PLACES)
    assert [(n.what, n.place) for n in notions] == [("a Valentine's Day party", "Willow Cafe")]
    people = [Persona(name=n, age=40, occupation="x", workplace="Willow Cafe", home="Oak House") for n in NAMES[:2]]
    block = society_summary(facts, people, PLACES)
    assert block["events"][0] | {"problems": []} == {
        "what": "a Valentine's Day party", "host": "Maria Alvarez", "place": "Willow Cafe",
        "window": "2026-02-14 17:00-19:00", "known": 2, "invited": 1, "came": 1, "at_place": 2, "said_going": 0, "decided_by_rule": 0,
        "problems": []}
    assert block["new_acquaintances"] == 1 and block["density_from_memory"] == 1.0
    md = build_timeline(stream(), {"town_name": "Willowbrook"})
    assert "## Events" in md and "### A Valentine's Day party — Maria Alvarez, Willow Cafe, Sat 14 Feb 17:00–19:00" in md
    assert "| Tom Alvarez | Fri 09:00 | conversation | Maria Alvarez |  | Sat 17:02, 118 min |" in md
    assert "known by 2 residents; 1 knew before it ended; 1 of them came; 2 at the place in all" in md


def test_a_run_without_a_gathering_has_no_events_section() -> None:
    plain = [TickRecords(tick=0, time=at(13, 7), records=[Record(kind="memory", resident="A", data={
        "memory_id": 1, "kind": "thought", "text": "I am proud of my daughter.", "importance": 3})])]
    assert run_notions(collect(plain), PLACES) == []
    assert "## Events" not in build_timeline(plain, {})


def test_the_engines_event_records_add_decisions_refusals_and_events_it_alone_found() -> None:
    facts = facts_of_a_party()
    party_record = {"what": "a Valentine's Day party", "host": "Maria Alvarez", "place": "Willow Cafe:dining room",
                    "start": "2026-02-14T17:00:00", "end": "2026-02-14T19:00:00"}
    facts.events += [
        (at(13, 9), "Tom Alvarez", {"status": "decided", "going": True, **party_record}),
        (at(13, 12), "Grace Kim", {"status": "decided", "going": False, **party_record}),
        (at(13, 10), "Hugo Lambert", {"status": "refused", "text": "a concert at the Moon Bar", "problem": "no such place"}),
        (at(13, 10), "Hugo Lambert", {"status": "learned", "what": "a chess match", "host": "Tom Alvarez",
                                      "place": "Willow Park:lawn", "start": "2026-02-14T15:00:00"}),
    ]
    seen = events_seen(facts, PLACES, NAMES)
    assert [(e.notion.what, e.notion.place) for e in seen] == [("a Valentine's Day party", "Willow Cafe"),
                                                               ("a chess match", "Willow Park")]
    assert seen[0].going == {"Tom Alvarez": True, "Grace Kim": False}
    assert seen[1].notion.end == at(14, 17) and seen[1].notion.head == "match"
    assert refused_events(facts) == [(at(13, 10), "Hugo Lambert", "a concert at the Moon Bar", "no such place")]


def test_memory_edges_is_names_in_over_each_residents_memories() -> None:
    """memory_edges tries only the names with a word in a resident's memories; it must find
    exactly the pairs that replays.notions.names_in finds over every name (shared first names,
    one-word names, names with hyphens and apostrophes, any case)."""
    rng = random.Random(3)
    firsts = ["Ann", "Bob", "Eddy", "Mary-Jo", "O'Neil", "Zoë", "Al", "Ann Marie"]
    lasts = ["Lee", "Lin", "Price", "Smith", "", "Doe"]
    for _ in range(200):
        names = sorted({f"{rng.choice(firsts)} {rng.choice(lasts)}".strip() for _ in range(rng.randint(1, 10))})
        vocab = [w for n in names for w in n.lower().split()] + names + ["annex", "bobby", "price's", "-al-"]
        facts = RunFacts()
        for _ in range(rng.randint(0, 30)):
            text = " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 6)))
            facts.memories.append((datetime(2023, 2, 13), rng.choice(names + ["Ghost"]), "observation",
                                   text.upper() if rng.random() < 0.3 else text))
        texts: dict[str, list[str]] = {}
        for _t, who, _k, text in facts.memories:
            texts.setdefault(who, []).append(text.lower())
        expected = sorted((who, other) for who, mine in texts.items() for other in names
                          if other != who and names_in("\n".join(mine), other, names))
        assert memory_edges(facts, names) == expected


def test_a_second_gathering_of_the_same_name_counts_only_those_who_know_it() -> None:
    """SmolLM2 made 'the Valentine's Day party' at the college library on the Friday out of a garbled
    retelling of Maria's; three residents learned it (the engine's records say so). Read by its name
    alone (and with 'the' taken for one of its words), the Events table said 20 knew it, Tom Alvarez
    'from seed' as its host."""
    facts = facts_of_a_party()
    phantom = {"status": "learned", "what": "the Valentine's Day party", "host": "", "place": "Town Hall:lobby",
               "start": "2026-02-13T19:00:00", "end": "2026-02-13T21:00:00", "source": "Hugo Lambert"}
    facts.events += [(at(13, 17), "Tom Alvarez", phantom)]
    facts.memories += [(at(13, 17), "Tom Alvarez", "chat", "Hugo Lambert told me that The Valentine's Day party is at "
                                                         "Town Hall lobby on Friday February 13 from 7pm to 9pm.")]
    seen = {e.notion.place: e for e in events_seen(facts, PLACES, NAMES)}
    assert set(seen) == {"Willow Cafe", "Town Hall"}
    other = seen["Town Hall"]
    assert other.notion.host == "" and "the" not in other.notion.terms
    # who learned it is what the engine's records say (a memory of words alone is not knowing it)
    assert list(other.known) == ["Tom Alvarez"] and other.known["Tom Alvarez"].via == "conversation"
    assert other.known["Tom Alvarez"].teller == "Hugo Lambert"
    facts.memories += [(at(13, 18), "Grace Kim", "observation", "Tom Alvarez is talking about a Valentine's Day party "
                                                                "at Town Hall lobby tonight")]
    assert list({e.notion.place: e for e in events_seen(facts, PLACES, NAMES)}["Town Hall"].known) == ["Tom Alvarez"]
    # Maria's own party is still known by those whose memories carry it
    assert {"Maria Alvarez", "Tom Alvarez", "Grace Kim"} <= set(seen["Willow Cafe"].known)


def test_a_gathering_without_a_host_reads_announced_only_when_an_announcement_told_it() -> None:
    """SmolLM2's '25th wedding', heard in talk with no host, headed 'announced' in the Events view."""
    def learned(when: datetime, who: str, source: str, what: str, place: str) -> TickRecords:
        data = {"status": "learned", "what": what, "host": "", "place": place, "start": "2026-02-14T19:00:00",
                "end": "2026-02-14T21:00:00", "source": source, "text": what}
        return TickRecords(tick=9, time=when, records=[Record(kind="event", resident=who, data=data)])

    records = stream() + [learned(at(14, 15), "Tom Alvarez", "Maria Alvarez", "a wedding", "Willow Cafe:dining room"),
                          learned(at(14, 15), "Maria Alvarez", "announcement", "a town meeting", "Willow Park:lawn")]
    md = build_timeline(records, {"town_name": "Willowbrook"})
    assert "### A wedding — no host named, Willow Cafe, Sat 14 Feb 19:00–21:00" in md
    assert "### A town meeting — announced, Willow Park, Sat 14 Feb 19:00–21:00" in md
