"""Plan times: after-midnight bedtimes, 12-hour clocks, and the persona's default plan."""

from __future__ import annotations

import pytest

from agents.roles.plan_times import normalise_plan, place_hour, plan_problems, read_time, strip_time, waking_span
from agents.roles.planning import default_day_plan, schedule_from_plan
from agents.minds.cognition.planning import waking_hours


def test_read_time_understands_24_and_12_hour_clocks() -> None:
    assert read_time("7:30 breakfast") == (7, False)
    assert read_time("2 pm lunch") == (14, True)
    assert read_time("12am sleep") == (0, True)
    assert read_time("12:15 p.m. lunch") == (12, True)
    assert read_time("read 2 chapters") is None  # a number inside the text is not a time
    assert read_time("-6:00 work") is None
    assert read_time("25:00 work") is None and read_time("9:75 work") is None


def test_strip_time() -> None:
    assert strip_time("7:30 - breakfast at home") == "breakfast at home"
    assert strip_time("2 pm: lunch") == "lunch"


def test_a_12_hour_clock_is_read_as_afternoon_when_morning_would_go_backwards() -> None:
    plan = ["8:00 wake up", "9:00 work at the cafe", "1:00 prepare for the party", "6:00 dinner", "11:00 go to bed"]
    assert normalise_plan(plan, 8, 23) == [
        (8, "wake up"), (9, "work at the cafe"), (13, "prepare for the party"), (18, "dinner"), (23, "go to bed"),
    ]


def test_after_midnight_hours_come_last_in_the_day() -> None:
    plan = ["9:00 wake up", "0:00 go to bed", "22:00 close the pub", "11:00 work at The Crooked Pub"]
    assert [h for h, _ in normalise_plan(plan, 9, 0)] == [9, 11, 22, 0]
    assert place_hour(1, False, 9, 2) == 13  # alone, the earliest reading in the day
    assert place_hour(1, False, 9, 2, after=14) == 1  # after 23:00: 1:00 at night, before bed at 2:00
    assert place_hour(5, True, 9, 0) is None  # 5 am explicitly: while asleep


def test_items_outside_the_waking_day_are_dropped_and_reported() -> None:
    plan = ["7:00 wake up", "3 am raid the fridge", "lunch sometime"]
    assert normalise_plan(plan, 7, 23) == [(7, "wake up")]
    problems = plan_problems(plan, 7, 23)
    assert any("raid the fridge" in p and "outside" in p for p in problems)
    assert any("no time" in p for p in problems)


@pytest.mark.parametrize("wake", range(24))
def test_default_plan_is_in_order_with_clock_hours_for_every_wake_and_sleep(wake: int) -> None:
    for sleep in range(24):
        plan = default_day_plan("Leo Martins", wake, sleep, "Rose Terrace:apartment 1", "The Crooked Pub:kitchen")
        assert plan_problems(plan, wake, sleep) == [], (wake, sleep, plan)
        bed = (wake + waking_span(wake, sleep)) % 24  # sleep == wake means a 16-hour day
        assert all(not item.startswith("-") for item in plan)
        assert plan[0].startswith(f"{wake}:00 wake up") and plan[-1].startswith(f"{bed}:00 go to bed")


def test_schedule_of_a_resident_who_sleeps_after_midnight() -> None:
    plan = default_day_plan("Leo Martins", 9, 0, "Rose Terrace", "The Crooked Pub")
    schedule = dict(schedule_from_plan(plan, waking_hours(9, 0)))
    assert set(schedule) == set(range(9, 24))
    assert schedule[9].startswith("wake up") and schedule[23].startswith("relax")
    assert any(a.startswith("work at The Crooked Pub") for a in schedule.values())
