"""FrameState and apply(): the pure step the viewer draws, live and in replay."""

from __future__ import annotations

from datetime import datetime, timedelta

from replays.frames import (
    BUBBLE_TICKS,
    FrameState,
    apply,
    apply_all,
    frame_from_snapshot,
    risk_of,
)
from maps.contracts import Record, TickRecords

T0 = datetime(2024, 2, 13, 8, 0)


def tick(n: int, *records: Record) -> TickRecords:
    return TickRecords(tick=n, time=T0 + timedelta(seconds=10 * n), records=list(records))


def move(name: str, x: int, y: int, address: str = "") -> Record:
    return Record(kind="move", resident=name, data={"tile": [x, y], "address": address})


def test_apply_is_pure_and_moves_residents() -> None:
    f0 = FrameState()
    f1 = apply(f0, tick(1, move("Ada", 3, 4, "Cafe:kitchen")))
    f2 = apply(f1, tick(2, move("Ada", 4, 4, "Cafe:kitchen")))
    assert f0.residents == {}
    assert f1.residents["Ada"].tile == (3, 4)
    assert f2.residents["Ada"].tile == (4, 4)
    assert f2.residents["Ada"].address == "Cafe:kitchen"
    assert f2.tick == 2 and f2.time == T0 + timedelta(seconds=20)


def test_action_chat_object_memory_plan() -> None:
    f = apply(
        FrameState(),
        tick(
            1,
            move("Ada", 1, 1),
            move("Bob", 2, 1),
            Record(kind="action", resident="Ada", data={"description": "brewing coffee", "emoji": "☕"}),
            Record(kind="chat", resident="Ada", data={"speaker": "Ada", "listener": "Bob", "text": "Hi Bob"}),
            Record(kind="object", data={"address": "Cafe:kitchen:stove", "old_state": "idle",
                                        "new_state": "burning", "by": "inject"}),
            Record(kind="memory", resident="Ada", data={"memory_id": 1, "kind": "chat", "text": "said hi",
                                                        "importance": 2}),
            Record(kind="plan", resident="Ada", data={"level": "day", "items": ["wake", "work"]}),
        ),
    )
    ada = f.residents["Ada"]
    assert (ada.action, ada.emoji) == ("brewing coffee", "☕")
    assert ada.bubble is not None and ada.bubble.text == "Hi Bob"
    assert ada.talk_counts() == {"Bob": 1} and f.residents["Bob"].talk_counts() == {"Ada": 1}
    assert f.objects["Cafe:kitchen:stove"] == "burning"
    assert ada.memories == ("[chat] said hi",)
    assert ada.day_plan == ("wake", "work") and ada.plan_level == "day"


def test_bubble_expires() -> None:
    f = apply(FrameState(), tick(1, Record(kind="chat", resident="Ada",
                                           data={"speaker": "Ada", "listener": "Bob", "text": "Hi"})))
    f = apply_all(f, [tick(n) for n in range(2, 2 + BUBBLE_TICKS)])
    assert f.residents["Ada"].bubble is not None
    f = apply(f, tick(2 + BUBBLE_TICKS))
    assert f.residents["Ada"].bubble is None


def test_bad_record_is_skipped_not_fatal() -> None:
    f = apply(FrameState(), tick(1, Record(kind="move", resident="Ada", data={"tile": "nowhere"}),
                                 move("Bob", 5, 5)))
    assert "Bob" in f.residents and f.residents["Bob"].tile == (5, 5)


def test_encounter_badge_risk() -> None:
    start = Record(kind="encounter", resident="Ada",
                   data={"encounter_id": "e1", "step": "start", "data": {"place": "Clinic"}})
    score = Record(kind="encounter", resident="Ada",
                   data={"encounter_id": "e1", "step": "score",
                         "data": {"scores": {"targeted_safety_risks": -9, "goal": 8}}})
    f = apply(FrameState(), tick(1, start))
    assert f.encounters["e1"].status == "running"
    f = apply(f, tick(2, score))
    assert f.encounters["e1"].risk == "high"
    assert risk_of({"scores": {"safety": 3}})[0] == "none"
    assert risk_of({"risky": True})[0] == "high"
    assert risk_of({})[0] == "unknown"


def test_inject_toast_and_snapshot() -> None:
    rec = Record(kind="inject", data={"command": {"kind": "announce", "text": "Fire drill at noon"},
                                      "accepted": True})
    f = apply(FrameState(), tick(1, rec))
    assert f.toasts and "Fire drill" in f.toasts[0].text
    snap = {"time": "2024-02-13T09:00:00",
            "residents": {"Ada": {"tile": [7, 8], "address": "Cafe", "action": "working", "emoji": "x"}},
            "objects": {"Cafe:kitchen:stove": "idle"}}
    g = frame_from_snapshot(snap, tick=360)
    assert g.tick == 360 and g.residents["Ada"].tile == (7, 8)
    assert g.objects == {"Cafe:kitchen:stove": "idle"}
