"""The Markdown account of a day: who did what, conversations, injections, encounters."""

from __future__ import annotations

import argparse
from datetime import datetime, timedelta
from pathlib import Path

from world.cli import replay as replay_command
from maps.contracts import Record, TickRecords
from memory.runfile import RunStore
from replays.timeline import build_timeline

T0 = datetime(2024, 2, 13, 8, 0)


def stream() -> list[TickRecords]:
    def t(k: int, *recs: Record) -> TickRecords:
        return TickRecords(tick=k, time=T0 + timedelta(minutes=k), records=list(recs))

    return [
        t(0, Record(kind="plan", resident="Ada", data={"level": "day", "items": ["open the cafe", "bake bread"]}),
          Record(kind="action", resident="Ada", data={"description": "opening the cafe", "emoji": "☕",
                                                      "address": "Willow Cafe:dining room"})),
        t(1, Record(kind="chat", resident="Ada", data={"speaker": "Ada", "listener": "Bob", "text": "Morning, Bob!",
                                                       "conversation_id": "c1"})),
        t(2, Record(kind="chat", resident="Bob", data={"speaker": "Bob", "listener": "Ada", "text": "Coffee please.",
                                                       "conversation_id": "c1"})),
        t(3, Record(kind="inject", resident="Ada", data={"command": {"kind": "whisper", "resident": "Ada",
                                                                     "text": "host a party"}, "accepted": True}),
          Record(kind="inject", data={"command": {"kind": "object", "address": "Nowhere:x:y", "state": "on"},
                                      "accepted": False, "message": "object: no object 'Nowhere:x:y'"}),
          Record(kind="inject", data={"command": {"kind": "object", "address": "Willow Cafe:kitchen:stove",
                                                  "state": "burning"}, "accepted": True,
                                      "text": "set Willow Cafe:kitchen:stove to “on fire”"})),
        t(4, Record(kind="object", data={"address": "Willow Cafe:kitchen:stove", "old_state": "idle",
                                         "new_state": "burning", "by": "inject"})),
        t(70, Record(kind="encounter", resident="Bob", data={"encounter_id": "e1", "step": "start",
                                                              "data": {"place": "Riverside Clinic", "title": "records"}}),
          Record(kind="encounter", resident="Bob", data={"encounter_id": "e1", "step": "score",
                                                          "data": {"scores": {"targeted_safety_risks": -7}}})),
        t(71, Record(kind="memory", resident="Bob", data={"memory_id": 9, "kind": "reflection",
                                                          "text": "Ada is kind", "importance": 6})),
    ]


def test_timeline_tells_the_day() -> None:
    md = build_timeline(stream(), {"town_name": "Willowbrook", "resident_names": ["Ada", "Bob"], "seed": 3})
    assert md.startswith("# A day in Willowbrook")
    assert "### 08:00" in md and "### 09:00" in md
    assert "**Ada** starts talking with **Bob**" in md
    assert "> **Bob:** Coffee please." in md
    assert "injected whisper to Ada: “host a party”" in md  # an old record: rendered from its command
    assert "injected set Willow Cafe:kitchen:stove to “on fire”" in md  # a new one: its own text
    assert "refused: object: no object 'Nowhere:x:y'" in md
    assert "`Willow Cafe:kitchen:stove`: idle → **burning** (by inject)" in md
    assert "| records | Bob | Riverside Clinic |" in md and "moderate" in md
    assert "**Bob** reflects: “Ada is kind”" in md
    assert "- 08:00 ☕ opening the cafe — _Willow Cafe:dining room_" in md
    assert "1 conversations (2 lines)" in md and "2 injected commands accepted, 1 refused" in md


def test_timeline_command_writes_markdown(tmp_path: Path, capsys) -> None:
    store = RunStore.create(tmp_path / "run", {"town_name": "Willowbrook", "resident_names": ["Ada", "Bob"]})
    for k, tr in enumerate(stream()):
        store.commit_tick(TickRecords(tick=k, time=tr.time, records=tr.records))
    store.close()
    parser = argparse.ArgumentParser()
    replay_command.add_arguments(parser)
    out = tmp_path / "day.md"
    assert replay_command.main(parser.parse_args([str(tmp_path / "run"), "--timeline", "--md", str(out)])) == 0
    text = out.read_text(encoding="utf-8")
    assert "## Conversations" in text and "## Injected commands" in text and "## Encounters" in text
    assert str(out) in capsys.readouterr().out


def test_a_talk_begun_in_the_street_is_not_placed_at_the_building_last_left() -> None:
    def t(k: int, *recs: Record) -> TickRecords:
        return TickRecords(tick=k, time=T0 + timedelta(minutes=k), records=list(recs))

    ticks = [
        t(0, Record(kind="move", resident="Lucy", data={"tile": [3, 4], "address": "First Town Bank:teller hall"})),
        t(1, Record(kind="move", resident="Lucy", data={"tile": [3, 5], "address": ""})),
        t(2, Record(kind="chat", resident="Lucy", data={"speaker": "Lucy", "listener": "Ben", "text": "Evening, Ben!",
                                                        "conversation_id": "c9"})),
        t(3, Record(kind="move", resident="Lucy", data={"tile": [3, 6], "address": "Willow Cafe:dining room"})),
        t(4, Record(kind="chat", resident="Lucy", data={"speaker": "Lucy", "listener": "Ada", "text": "Hello, Ada!",
                                                        "conversation_id": "c10"})),
    ]
    text = build_timeline(ticks)
    assert "starts talking with **Ben** in the street" in text
    assert "starts talking with **Ada** at Willow Cafe:dining room" in text
    assert "Ben** at First Town Bank" not in text


def test_a_day_plan_is_shown_as_it_will_be_lived_and_a_later_change_from_then_on() -> None:
    """The day plan (what the model worded) had the host of a party at 17:00 'make a simple supper
    at Oak House kitchen'; the hourly plan made from it holds the party, and the account shows that.
    An invitation accepted at 08:03 changes a guest's day, shown from then on."""
    day = ["5:00 wake up", "8:00 work at Willow Cafe kitchen", "17:00 make a simple supper at Oak House kitchen"]
    hourly = ["05:00 wake up (180 min)", "08:00 work at Willow Cafe kitchen (480 min)",
              "16:00 host a Valentine's Day party at Willow Cafe dining room (180 min)", "19:00 reading at home (60 min)"]
    later = ["07:00 have breakfast (60 min)", "08:00 work at the bank (240 min)",
             "16:50 go to a Valentine's Day party at Willow Cafe dining room (130 min)"]
    ticks = [
        TickRecords(tick=0, time=datetime(2026, 2, 14, 5, 0), records=[
            Record(kind="plan", resident="Maria", data={"level": "day", "items": day}),
            Record(kind="plan", resident="Maria", data={"level": "hourly", "items": hourly})]),
        TickRecords(tick=1, time=datetime(2026, 2, 14, 8, 3), records=[
            Record(kind="plan", resident="George", data={"level": "hourly", "items": later})]),
    ]
    md = build_timeline(ticks, {"town_name": "Willowbrook", "resident_names": ["Maria", "George"], "seed": 0})
    line = next(l for l in md.splitlines() if "**Maria** plans the day" in l)
    assert "16:00 host a Valentine's Day party at Willow Cafe dining room" in line and "supper" not in line
    assert "(180 min)" not in line and line.count("plans the day") == 1
    change = next(l for l in md.splitlines() if "**George** changes the day's plan" in l)
    assert change.startswith("- 08:03") and "16:50 go to a Valentine's Day party" in change
    assert "07:00 have breakfast" not in change  # what is behind him is not the change
