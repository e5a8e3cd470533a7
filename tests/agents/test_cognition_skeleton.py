"""The day's skeleton comes from the persona; the model only words the open parts (issue 11 §1)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agents.minds.cognition.planning import waking_hours
from agents.roles.planning import (
    DAY_PLAN_INSTRUCTION,
    day_plan_schema,
    day_skeleton,
    plan_from_skeleton,
    schedule_schema,
    skeleton_work_hours,
)


def test_skeleton_has_work_hours_at_the_workplace_and_sleep_after_midnight() -> None:
    sk = day_skeleton(9, 0, "Rose Terrace:apartment 1", "The Crooked Pub:kitchen")
    assert [p.kind for p in sk] == ["wake", "breakfast", "work", "lunch", "work", "dinner", "evening", "bed"]
    assert all(0 <= p.hour <= 23 for p in sk) and sk[-1].hour == 0
    assert [p.text for p in sk if p.kind == "work"] == ["work at The Crooked Pub kitchen"] * 2
    assert {p.kind for p in sk if p.fixed} == {"wake", "work", "bed"}
    work = skeleton_work_hours(sk, waking_hours(9, 0))
    assert work and all(11 <= h <= 17 for h in work)


def test_the_model_words_open_parts_but_never_sets_times_or_work() -> None:
    sk = day_skeleton(7, 23, "Oak House", "Willow Cafe")
    schema = day_plan_schema(sum(not p.fixed for p in sk))
    answer = schema(currently="Ada is getting ready for the party.",
                    parts=["coffee and toast", "lunch with Tom", "cook pasta", "go to the party at the cafe"])
    plan = plan_from_skeleton(sk, answer.parts)
    assert plan[0].startswith("7:00 wake up") and "9:00 work at Willow Cafe" in plan
    assert "19:00 go to the party at the cafe" in plan and plan[-1] == "23:00 go to bed at Oak House"
    bad = ["1. 2. 3.", "7:00", DAY_PLAN_INSTRUCTION.format(name="Ada")[:78], "Mercury", "Bike, bike, bike"]
    for part in bad:  # one bad part of four is patched: the skeleton's words stand for it, and it is counted
        answer = schema(currently="Ada is fine.", parts=[part, "lunch", "cook pasta", "relax"])
        assert answer.parts[0] == "" and len(answer.patches()) == 1 and answer.patches()[0].startswith("parts.0")
        assert plan_from_skeleton(sk, answer.parts)[1] == f"{sk[1].hour}:00 {sk[1].text}"
    for parts in ([bad[0], bad[3], bad[4], "relax"], ["lunch", "dinner"]):  # mostly bad, or too few
        with pytest.raises(ValidationError):
            schema(currently="Ada is fine.", parts=parts)


def test_a_time_copied_before_a_part_is_dropped_and_the_skeleton_time_stands() -> None:
    # Qwen wrote every part as '7:00 have breakfast ...' (the skeleton's layout): all four plans
    # of a quickstart fell back to the bare skeleton while the words were fine
    sk = day_skeleton(7, 23, "Oak House", "Willow Cafe")
    schema = day_plan_schema(sum(not p.fixed for p in sk))
    answer = schema(currently="Ada is fine.", parts=["8:00 coffee and toast", "12:00 - lunch with Tom",
                                                     "cook pasta", "7 pm go to the party"])
    assert answer.parts == ["coffee and toast", "lunch with Tom", "cook pasta", "go to the party"]
    plan = plan_from_skeleton(sk, answer.parts)
    assert "19:00 go to the party" in plan and not any("7 pm" in line for line in plan)


def test_a_part_that_copies_the_prompts_usually_layout_is_patched() -> None:
    # SmolLM2 (quickstart 2026-11-25) wrote the prompt's open-part lines back as parts, and one
    # became Tom's action at 07:00: 'morning breakfast (usually: have breakfast at Oak House),'
    sk = day_skeleton(7, 23, "Oak House", "Willow Cafe")
    schema = day_plan_schema(sum(not p.fixed for p in sk))
    answer = schema(currently="Tom is fine.", parts=["Morning breakfast (usually: have breakfast at Oak House)",
                                                     "lunch with Maria", "cook pasta", "a jog in Willow Park"])
    assert answer.parts[0] == "" and "layout" in answer.patches()[0]
    with pytest.raises(ValidationError, match="most parts"):
        schema(currently="Tom is fine.", parts=["Morning breakfast (usually: have breakfast at Oak House)",
                                                "Lunch (usually: have lunch)", "Dinner (usually: have dinner)", "read"])
    from agents.believability import degenerate_reason
    assert degenerate_reason("morning breakfast (usually: have breakfast at Oak House),", ["Tom Alvarez"], True)


def test_a_part_that_names_another_meal_is_patched_with_the_skeleton_words() -> None:
    # SmolLM2 (quickstart 2026-11-24) planned '12:00 dinner' and '17:00 lunch'
    sk = day_skeleton(7, 23, "Oak House", "Willow Cafe")
    open_parts = [p for p in sk if not p.fixed]
    kinds = tuple(p.kind for p in open_parts)
    assert kinds == ("breakfast", "lunch", "dinner", "evening")
    schema = day_plan_schema(len(open_parts), kinds)
    answer = schema(currently="Ada is fine.", parts=["coffee and toast", "dinner", "lunch with Tom", "read"])
    assert answer.parts == ["coffee and toast", "", "", "read"]
    assert [p.split(":")[0] for p in answer.patches()] == ["parts.1", "parts.2"]
    assert "dinner in the lunch part" in answer.patches()[0]
    plan = plan_from_skeleton(sk, answer.parts)
    assert f"{open_parts[1].hour}:00 have lunch" in plan and f"{open_parts[2].hour}:00 {open_parts[2].text}" in plan
    # three of four plans of a SmolLM2 quickstart fell back whole for a status that was no sentence
    status = schema(currently="Today: Friday 13 February 2026", parts=["coffee and toast", "lunch", "cook", "read"])
    assert status.currently == "" and status.parts == ["coffee and toast", "lunch", "cook", "read"]
    assert [p.split(":")[0] for p in status.patches()] == ["currently"]
    late = schema(currently="Ada is fine.", parts=["coffee and toast", "late to bed", "cook pasta", "read in bed"])
    assert late.parts == ["coffee and toast", "", "cook pasta", "read in bed"]  # the evening may end in bed
    assert "bed in the lunch part" in late.patches()[0]
    kept = schema(currently="Ada is fine.", parts=["brunch with Tom", "a quick lunch", "supper with Maria", "dinner party"])
    assert kept.patches() == []  # brunch may be breakfast or lunch; the evening may hold a dinner
    with pytest.raises(ValueError, match="3 kinds for 4 open parts"):
        day_plan_schema(4, kinds[:3])


def test_the_embedded_model_chooses_each_open_part_among_words_that_pass_its_checks() -> None:
    """Each open part's options start with the skeleton's usual words, and every option passes
    the part's own checks for its kind (a choice the grammar allows is never refused); the
    choices are grammar-only, so a remote model still words a part freely."""
    from agents.llm.grammar import grammar_for
    from agents.llm.schemas import json_schema_of
    from agents.roles.planning import day_plan_fallback, part_options

    for wake, sleep, home, kitchen in [(6, 23, "Oak House", "Oak House:kitchen"),
                                       (9, 0, "Rose Terrace:apartment 1", "")]:
        sk = day_skeleton(wake, sleep, home, "Riverside Clinic:exam room", kitchen=kitchen)
        fallback = day_plan_fallback("Tom Alvarez", "nurse", "Works day shifts", wake, sleep, home,
                                     "Riverside Clinic:exam room", kitchen=kitchen)
        schema = type(fallback)
        open_parts = [p for p in sk if not p.fixed]
        options = [part_options(p, home, kitchen) for p in open_parts]
        assert [o[0] for o in options] == [p.text for p in open_parts]
        assert all(len(o) >= 3 for o in options)
        for pick in range(3):  # the same option index in every part: all accepted, none patched
            chosen = [o[min(pick, len(o) - 1)] for o in options]
            answer = schema.model_validate({"currently": "Tom is busy.", "parts": chosen})
            assert list(answer.parts) == chosen and answer.patches() == [], (chosen, answer.patches())
        grammar = grammar_for(schema)
        assert all(f'"\\"{o[1]}\\""' in grammar for o in options)
        assert "x-one-of" not in str(json_schema_of(schema))
        assert schema.model_validate({"currently": "Tom is busy.",
                                      "parts": ["meeting Lucy at the pub"] * len(open_parts)})
    with pytest.raises(ValueError, match="option lists"):
        day_plan_schema(4, options=(("have lunch",),))


def test_an_hour_is_work_only_in_the_skeleton_work_hours() -> None:
    from agents.roles.planning import hour_activity

    assert hour_activity("drinking at the pub", "work at Willow Cafe", "work") == "work at Willow Cafe"
    # SmolLM2 (2026-11-24) scheduled 'working at Oak House classroom' in the hour of getting up
    assert hour_activity("working at Oak House classroom", "wake up and get ready", "wake") == "wake up and get ready"
    assert hour_activity("8:00 coffee on the porch", "have breakfast", "breakfast") == "coffee on the porch"
    # the hour of getting up is the skeleton's, and the prompt's example copied is no answer:
    # SmolLM2 (2026-11-28) began 23 of 25 days 'reading at home' and read there again at 20:00
    assert hour_activity("coffee on the porch", "wake up and get ready at Oak House", "wake") == \
        "wake up and get ready at Oak House"
    assert hour_activity("Reading at home", "relax and read at Oak House", "evening") == "relax and read at Oak House"
    assert hour_activity("", "relax and read", "evening") == "relax and read"
    # a meal's hour keeps a meal: SmolLM2 (2026-11-28) scheduled 'reading at Green Grocer shop floor'
    # for Noah Price's breakfast, and he had breakfast at the grocer's
    assert hour_activity("reading at Green Grocer shop floor", "make coffee and toast at Maple House kitchen",
                         "breakfast") == "make coffee and toast at Maple House kitchen"
    assert hour_activity("lunch with Tom at Willow Cafe", "have lunch", "lunch") == "lunch with Tom at Willow Cafe"
    assert hour_activity("reading at Green Grocer shop floor", "relax and read", "evening") == \
        "reading at Green Grocer shop floor"  # outside meals and work the model's words stand
    # ... but not at one's own workplace: Noah Price (SmolLM2, 2026-11-28) went back to the grocer's
    # every evening 'reading at Green Grocer shop'
    noah = "Green Grocer:shop floor"
    assert hour_activity("reading at Green Grocer shop", "relax and read", "evening", noah) == "relax and read"
    assert hour_activity("reading a novel at home", "relax and read", "evening", noah) == "reading a novel at home"
    assert hour_activity("a drink at The Crooked Pub", "relax and read", "evening", noah) == "a drink at The Crooked Pub"
    # the plan itself may put the hour there (a packed lunch at work): then the model's words may too
    assert hour_activity("lunch at Green Grocer break room", "eat a packed lunch at Green Grocer", "lunch", noah) \
        == "lunch at Green Grocer break room"


def test_the_schedule_asks_only_about_hours_the_model_may_word() -> None:
    from agents.roles.planning import open_hours, schedule_prompt, skeleton_kinds

    hours = waking_hours(7, 23)
    skeleton = day_skeleton(7, 23, "Oak House:bedroom", "Willow Cafe:kitchen")
    kinds = skeleton_kinds(skeleton, hours)
    asked = open_hours(hours, kinds)
    assert kinds[7] == "wake" and 7 not in asked and not any(kinds[h] == "work" for h in asked)
    assert asked and all(h in hours for h in asked) and 8 in asked  # breakfast is the model's to word
    text = str(list(schedule_prompt("summary", "Tom", asked, ["7:00 wake up"])))
    assert '{"hour": 19, "activity": "reading at home"}' in text
    # the scripted answer reads the plan against the whole day, not from the first hour asked
    # (from 8:00, the plan's getting up at 7:00 came last: 'wake up' at 21:00, lunch at breakfast)
    import random

    plan = ["7:00 wake up and get ready", "8:00 have breakfast", "9:00 work at the cafe", "12:00 have lunch",
            "13:00 work at the cafe", "17:00 have dinner", "19:00 relax and read", "22:00 go to bed"]
    task = schedule_prompt("summary", "Tom", asked, plan, hours).task
    answer = {e["hour"]: e["activity"] for e in task.scripted(task.fields, None, random.Random(0))["hours"]}
    assert list(answer) == asked and answer[8] == "have breakfast" and answer[12] == "have lunch"
    assert answer[20] == "relax and read"


def test_schedule_hours_are_an_enumeration_of_waking_hours() -> None:
    schema = schedule_schema(tuple(waking_hours(7, 23)))
    schema.model_validate({"hours": [{"hour": 9, "activity": "work at the cafe"}]})
    with pytest.raises(ValidationError):
        schema.model_validate({"hours": [{"hour": 3, "activity": "raid the fridge"}]})
    assert schema.model_json_schema()["$defs"]["HourEntry"]["properties"]["hour"]["enum"][0] == 7


class PubModel:
    """A model that wants to spend every hour at the pub; everything else is scripted."""

    asked: list[int] = []  # the hours the last schedule call asked about

    def __init__(self) -> None:
        from agents.llm.gateway import make_llm

        self.inner = make_llm("scripted")

    async def acomplete(self, purpose, messages, schema, fallback, **kw):
        if purpose == "schedule":
            hours = schema.model_json_schema()["$defs"]["HourEntry"]["properties"]["hour"]["enum"]
            PubModel.asked = list(hours)
            return schema.model_validate({"hours": [{"hour": h, "activity": "drinking at the pub"} for h in hours]})
        if purpose == "plan_day":
            return schema.model_validate({"currently": "Klaus loves the pub.",
                                          "parts": ["drinking at the pub"] * len(fallback.parts)})
        return await self.inner.acomplete(purpose, messages, schema, fallback, **kw)


def test_work_hours_stay_at_the_workplace_whatever_the_model_says(tmp_path) -> None:
    import asyncio
    from datetime import datetime

    from maps.contracts import MindOptions
    from agents.minds.generative import make_mind
    from agents.minds.conformance import DEMO_PLACES, demo_home, demo_persona
    from memory.embeddings import get_embedder

    persona = demo_persona("Klaus Mueller", "Hobbs Cafe:counter", "barista")
    start = datetime(2023, 2, 13, 9, 0)
    mind = make_mind(persona, PubModel(), tmp_path / "run.db",
                     MindOptions(places=DEMO_PLACES + demo_home(persona.name), start_time=start),
                     embedder=get_embedder("hashing"))
    from agents.minds.cognition.planning import plan_day

    asyncio.run(plan_day(mind, start))
    by_hour = {b.start.hour: b.activity for b in mind.state.blocks}
    work = [a for h, a in by_hour.items() if a.startswith("work at Hobbs Cafe")]
    assert work, by_hour  # the workplace kept its hours
    assert any("pub" in a for a in by_hour.values())  # the open parts are the model's words
    assert all(item[0].isdigit() for item in mind.state.day_plan)
    # the schedule was asked only about the hours it may word: not the hour of getting up, no work hour
    skeleton = day_skeleton(persona.wake_hour, persona.sleep_hour, mind.home_arena(), mind.work_arena())
    work_hours = skeleton_work_hours(skeleton, waking_hours(persona.wake_hour, persona.sleep_hour))
    fixed = work_hours | {persona.wake_hour}
    assert PubModel.asked and work_hours and not set(PubModel.asked) & fixed
    assert set(PubModel.asked) | fixed == set(waking_hours(persona.wake_hour, persona.sleep_hour))
    assert by_hour[persona.wake_hour].startswith("wake up")


def test_steps_of_a_work_block_are_at_the_workplace_meals_at_home_and_other_blocks_anywhere() -> None:
    from agents.roles.planning import block_places

    places = ["Oak House:kitchen", "Oak House:bedroom", "Riverside Clinic:exam room",
              "Riverside Clinic:waiting room", "The Crooked Pub:cellar"]
    home, work = "Oak House:bedroom", "Riverside Clinic:exam room"
    clinic, house = ["Riverside Clinic:exam room", "Riverside Clinic:waiting room"], ["Oak House:kitchen", "Oak House:bedroom"]
    assert block_places("work", "work at Riverside Clinic exam room", places, home, work) == clinic
    assert block_places("wake", "wake up and get ready at Oak House", places, home, work) == house
    assert block_places("breakfast", "workday shift at the clinic", places, home, work) == house  # seen: at the bank
    assert block_places("dinner", "dinner at The Crooked Pub with Lucy", places, home, work) == [
        "The Crooked Pub:cellar"]  # a place the words name wins
    assert block_places("breakfast", "working at Riverside Clinic exam room", places, home, work) == clinic
    assert block_places("evening", "meet Lucy", places, home, work) == places  # an open part: anywhere
    # ... unless its words say home: SmolLM2 (2026-11-28) had Ben Okafor 'eating at home' at the pub
    assert block_places("evening", "eating at home", places, home, work) == house
    assert block_places("evening", "reading a book at Lucy's home", places, home, work) == places
    assert block_places("", "what Tom would usually do at 9:00", places, home, work) == places  # no planning
    assert block_places("work", "work", ["Oak House:kitchen"], home, work) == ["Oak House:kitchen"]  # never empty


def test_a_resident_of_a_flat_stays_out_of_the_neighbours_flats() -> None:
    """Ben Okafor lives in Elm Apartments:apartment 2; his home blocks were offered all four flats
    of the building, and he woke, ate and read in Priya Shah's flat (apartment 1) all day."""
    from agents.roles.planning import block_places, pick_place

    places = ["Elm Apartments:apartment 1", "Elm Apartments:apartment 2", "Elm Apartments:apartment 3",
              "The Crooked Pub:bar room"]
    own, work = "Elm Apartments:apartment 2", "The Crooked Pub:bar room"
    assert block_places("wake", "wake up and get ready at Elm Apartments apartment 2", places, own, work, own) == [own]
    assert block_places("dinner", "have dinner at Elm Apartments", places, own, work, own) == [own]
    assert block_places("evening", "visit Priya at Elm Apartments apartment 1", places, own, work, own) == [
        "Elm Apartments:apartment 1", own]  # a flat the activity names is allowed
    assert block_places("work", "work at The Crooked Pub bar room", places, own, work, own) == [work]
    # a house is one home: its rooms are all offered, as before
    house = ["Oak House:kitchen", "Oak House:bedroom"]
    assert block_places("wake", "wake up at Oak House", house, "Oak House:bedroom", work, "Oak House") == house
    assert pick_place("relax and read at Elm Apartments apartment 2", places, own, work) == own
    assert pick_place("have lunch at 1", places, own, work) == own  # a bare number names no flat


def test_a_reaction_goes_here_home_work_or_somewhere_it_heard_of() -> None:
    from agents.roles.reacting import reaction_places

    places = ["Oak House:kitchen", "Riverside Clinic:exam room", "The Crooked Pub:cellar", "Willow Cafe:counter",
              "First Town Bank:lobby"]
    here, home, work = "Willow Cafe:counter", "Oak House:bedroom", "Riverside Clinic:exam room"
    assert reaction_places(places, here, home, work, ["Maria is making coffee"]) == [
        "Oak House:kitchen", "Riverside Clinic:exam room", "Willow Cafe:counter"]
    assert "The Crooked Pub:cellar" in reaction_places(places, here, home, work,
                                                       ["Lucy: party at The Crooked Pub tonight!"])


def test_only_a_flat_of_a_shared_building_counts_as_ones_own_flat() -> None:
    """Lucy Alvarez's home is a room of the family house: she eats in its kitchen, so her home
    blocks keep the whole house; Ben Okafor's flat has everything in it, so it is his own."""
    from datetime import datetime

    from agents.llm.gateway import make_llm
    from agents.minds.generative import make_mind
    from maps.contracts import MindOptions
    from maps.town import load_town
    from memory.embeddings import get_embedder

    town = load_town("default")
    options = MindOptions(places=town.addresses(), start_time=datetime(2026, 2, 13, 7))
    homes = {p.name: p for p in town.residents}
    lucy = make_mind(homes["Lucy Alvarez"], make_llm("scripted"), None, options, embedder=get_embedder("hashing"))
    ben = make_mind(homes["Ben Okafor"], make_llm("scripted"), None, options, embedder=get_embedder("hashing"))
    assert homes["Lucy Alvarez"].home == "Oak House:second bedroom" and lucy.own_flat() == ""
    assert ben.own_flat() == "Elm Apartments:apartment 2"


def test_a_step_that_names_a_room_of_its_building_is_taken_there() -> None:
    """SmolLM2 chose the place 'Oak House' for 'make coffee and toast at Oak House kitchen', and
    Lucy made her coffee in the living room; the room the words name wins within the building."""
    from agents.roles.planning import room_named

    places = ["Oak House", "Oak House:kitchen", "Oak House:living room", "Oak House:bedroom",
              "Oak House:second bedroom", "Riverside Clinic:exam room", "Riverside Clinic:waiting room"]
    assert room_named("make coffee and toast at Oak House kitchen", "Oak House", places) == "Oak House:kitchen"
    assert room_named("make coffee and toast at Oak House kitchen", "Oak House:living room", places) == "Oak House:kitchen"
    assert room_named("read in the living room", "Oak House", places) == "Oak House:living room"
    assert room_named("tidy up Oak House second bedroom", "Oak House", places) == "Oak House:second bedroom"
    assert room_named("see patients in the exam room", "Riverside Clinic", places) == "Riverside Clinic:exam room"
    # words that name no room, a bedroom without saying whose, or a room of another building: unchanged
    assert room_named("write a letter", "Oak House", places) == "Oak House"
    assert room_named("make the bed in the bedroom", "Oak House", places) == "Oak House"
    assert room_named("wait in a room", "Riverside Clinic", places) == "Riverside Clinic"
    assert room_named("make coffee at Oak House kitchen", "Riverside Clinic:exam room", places) == "Riverside Clinic:exam room"


class KitchenWordsModel:
    """Decomposes every block into one step whose words name the kitchen but whose place is the
    house (as SmolLM2 did in the quickstart); everything else is scripted."""

    def __init__(self) -> None:
        from agents.llm.gateway import make_llm

        self.inner = make_llm("scripted")

    async def acomplete(self, purpose, messages, schema, fallback, **kw):
        if purpose == "decompose":
            return schema.model_validate({"steps": [{
                "action": "make coffee and toast at Oak House kitchen", "minutes": 15, "place": "Oak House",
                "emoji": "☕", "object_state": "brewing coffee"}]})
        return await self.inner.acomplete(purpose, messages, schema, fallback, **kw)


def test_a_resident_whose_step_names_the_kitchen_walks_to_the_kitchen() -> None:
    import asyncio
    from datetime import datetime

    from agents.minds.cognition.planning import decompose
    from agents.minds.generative import make_mind
    from maps.contracts import MindOptions
    from maps.town import load_town
    from memory.embeddings import get_embedder

    town = load_town("default")
    start = datetime(2026, 2, 13, 7)
    options = MindOptions(places=town.addresses(), start_time=start)
    lucy_persona = next(p for p in town.residents if p.name == "Lucy Alvarez")
    lucy = make_mind(lucy_persona, KitchenWordsModel(), None, options, embedder=get_embedder("hashing"))
    steps = asyncio.run(decompose(lucy, "make coffee and toast at Oak House kitchen", start,
                                  start.replace(hour=8)))
    assert steps and all(s.arena == "Oak House:kitchen" for s in steps), [(s.description, s.arena) for s in steps]
    assert all(s.object is None or s.object.startswith("Oak House:kitchen") for s in steps)


class MarkerStateModel(KitchenWordsModel):
    """Decomposes as the embedded model does under its grammar: the object state is the engine's marker."""

    async def acomplete(self, purpose, messages, schema, fallback, **kw):
        if purpose == "decompose":
            return schema.model_validate({"steps": [
                {"action": "making coffee on the stove", "minutes": 15, "place": "Oak House:kitchen", "emoji": "☕",
                 "object_state": "in use"},
                {"action": "wiping the kitchen table", "minutes": 15, "place": "Oak House:kitchen", "emoji": "🚿",
                 "object_state": "wiped clean"}]})
        return await self.inner.acomplete(purpose, messages, schema, fallback, **kw)


def test_the_embedded_models_state_marker_is_worded_by_the_engine_and_a_models_own_state_is_kept() -> None:
    import asyncio
    from datetime import datetime

    from agents.minds.cognition.planning import decompose
    from agents.minds.generative import make_mind
    from agents.roles.planning import STATE_BY_ENGINE
    from maps.contracts import MindOptions
    from maps.town import load_town
    from memory.embeddings import get_embedder

    assert STATE_BY_ENGINE == "in use"
    town = load_town("default")
    start = datetime(2026, 2, 13, 7)
    options = MindOptions(places=town.addresses(), start_time=start)
    lucy = make_mind(next(p for p in town.residents if p.name == "Lucy Alvarez"), MarkerStateModel(), None, options,
                     embedder=get_embedder("hashing"))
    lucy.spatial.learn([a for a in town.addresses() if a.startswith("Oak House:kitchen:")])  # seen at breakfast
    steps = asyncio.run(decompose(lucy, "make coffee and toast at Oak House kitchen", start, start.replace(hour=8)))
    states = [s.object_state for s in steps if s.object]
    assert states and states[0].startswith("being used for making coffee"), states
    assert states[1] == "wiped clean"  # a model that words the state keeps its words
