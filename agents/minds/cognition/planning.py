"""Hierarchical planning: day plan on waking -> hourly schedule -> just-in-time steps.

On waking (first decision of a new day) the resident revises its status and writes a broad
plan in 5-8 parts (``plan_day``), then an hourly schedule (``schedule``); consecutive hours
with the same activity form a block. Only the block under way is decomposed, in windows of
at most two hours, into 5-15 minute steps (``decompose``) — each with a known place (an
enumeration), an object picked there without a model call, an emoji, an event triple and
the object's new state. Sleep is never decomposed.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any


from agents.encounters.errands import errand_kind, errands_for, place_kinds, with_errands
from agents.minds.cognition.events import venue
from agents.roles.wording import activity_phrase, in_use_for
from agents.roles.common import clip
from agents.roles.sense_checks import food_room, no_state
from agents.roles.planning import (
    block_places,
    day_plan_fallback,
    day_plan_prompt,
    decompose_prompt,
    decomposition_fallback,
    decomposition_schema,
    one_emoji,
    pick_place,
    room_named,
    step_options,
    open_hours,
    schedule_fallback,
    schedule_from_plan,
    plan_from_skeleton,
    day_skeleton,
    schedule_schema,
    skeleton_kinds,
    hour_activity,
    schedule_prompt,
    SkeletonPart,
    STATE_BY_ENGINE,
)
from agents.minds.state import Block, Step

if TYPE_CHECKING:
    from agents.minds.generative import Resident

MEAL = re.compile(r"\b(breakfast|lunch|dinner|supper|meal|eat|eating)\b", re.IGNORECASE)


# ---------------------------------------------------------------------------------------------
# Day boundaries
# ---------------------------------------------------------------------------------------------


def waking_hours(wake: int, sleep: int) -> list[int]:
    """Hours of the waking day in order (sleep may fall after midnight)."""
    span = (sleep - wake) % 24 or 16
    return [(wake + i) % 24 for i in range(span)]


def day_key(wake: int, now: datetime) -> date:
    """The 'day' a moment belongs to: days start at the wake hour."""
    return (now - timedelta(hours=wake)).date()


def day_start(wake: int, now: datetime) -> datetime:
    key = day_key(wake, now)
    return datetime(key.year, key.month, key.day, wake, tzinfo=now.tzinfo)


def is_awake(wake: int, sleep: int, now: datetime) -> bool:
    """``now.hour in waking_hours(wake, sleep)``, without building the list (asked every tick)."""
    return (now.hour - wake) % 24 < ((sleep - wake) % 24 or 16)


def _verb(description: str) -> str:
    words = re.findall(r"[A-Za-z']+", description.lower())
    return words[0] if words else "doing"


def event_triple(name: str, description: str, obj: str | None, arena: str) -> tuple[str, str, str]:
    """(subject, predicate, object) for an action, derived without a model call."""
    target = (obj or arena).split(":")[-1]
    return (name, _verb(description), target)


# ---------------------------------------------------------------------------------------------
# Day plan and schedule
# ---------------------------------------------------------------------------------------------


def plans_query(name: str) -> str:
    """The retrieval query of the day plan (known from the start, so it is embedded early)."""
    return f"{name}'s plans and commitments for today"


async def plan_day(mind: "Resident", now: datetime) -> None:
    """New day: revise status, plan the day, make the hourly schedule, build the blocks."""
    p = mind.persona
    hours = waking_hours(p.wake_hour, p.sleep_hour)
    start = day_start(p.wake_hour, now)
    if mind.options.ablation in ("no_reflection_planning", "no_observation"):
        # No planning: the day is one open block per waking hour, decided step by step.
        entries = [(h, f"what {p.name.split()[0]} would usually do at {h}:00") for h in hours]
        mind.state.day_plan, mind.state.currently = [], mind.state.currently or p.lifestyle
    else:
        entries = await _planned_hours(mind, start, hours)
    # errands (a check-up, the bank, an intent) take their hour of the day (errands.py)
    entries = with_errands(entries, errands_for(p, day_key(p.wake_hour, now), place_kinds(mind.options), mind.options.seed))
    mind.state.blocks = mind.make_room(blocks_from_entries(start, entries))  # known gatherings get their slot
    mind.state.blocks = await mind.seek_out(mind.state.blocks)  # a host goes out to tell people (visits.py)
    mind.memory.prefetch([b.activity for b in mind.state.blocks])  # each is decompose's query later
    mind.emit_plan("hourly", [f"{b.start:%H:%M} {b.activity} ({b.minutes} min)" for b in mind.state.blocks])
    mind.state.day = day_key(p.wake_hour, now)
    mind.state.steps = []


async def _planned_hours(mind: "Resident", start: datetime, hours: list[int]) -> list[tuple[int, str]]:
    """The day plan (``plan_day``) on the persona's skeleton, then the hourly schedule (``schedule``):
    an activity for every waking hour; the plan and status are remembered and recorded."""
    p = mind.persona
    home, work = mind.home_arena(), mind.work_arena()
    skeleton = day_skeleton(p.wake_hour, p.sleep_hour, home, work, kitchen=mind.meal_arena())
    plan = await _day_plan(mind, start, skeleton, home, work)
    kinds = skeleton_kinds(skeleton, hours)
    asked = open_hours(hours, kinds)
    given: dict[int, str] = {}
    if asked:
        sched = await mind.caller.ask(
            "schedule",
            schedule_prompt(mind.summary, p.name, asked, plan, hours),
            schedule_schema(tuple(asked)),
            schedule_fallback(plan, hours, asked),
            max_tokens=600,
        )
        given = {e.hour: e.activity.strip() for e in sched.hours if e.activity.strip()}
    derived = dict(schedule_from_plan(plan, hours))
    mind.remember_fixed("plan", f"Currently: {mind.state.currently}", 5)
    mind.remember_fixed("plan", f"My plan for {start:%A %d %B}: " + "; ".join(plan), 5)
    mind.emit_plan("status", [mind.state.currently])
    mind.emit_plan("day", plan)
    # every waking hour gets an activity: the skeleton's at work hours, else the model's
    # (unless it is work, or at the workplace, out of work hours), else the plan's item for that hour
    return [(h, hour_activity(given.get(h, ""), derived[h], kinds.get(h, ""), work)) for h in hours]


async def _day_plan(mind: "Resident", start: datetime, skeleton: list[SkeletonPart], home: str, work: str) -> list[str]:
    """One ``plan_day`` call: the model words the skeleton's open parts and the new status;
    the skeleton sets every time and the work hours. Sets the state's plan and status."""
    p = mind.persona
    status = mind.state.currently or p.lifestyle
    memories = [m.text for m in await mind.memory_for(plans_query(p.name), 8)]
    fallback = day_plan_fallback(p.name, p.occupation, status, p.wake_hour, p.sleep_hour, home, work,
                                 kitchen=mind.meal_arena(), memories=tuple(memories))
    answer = await mind.caller.ask(
        "plan_day",
        day_plan_prompt(mind.summary, p.name, start, p.wake_hour, p.sleep_hour, home, work, status, memories,
                        skeleton),
        type(fallback),
        fallback,
        max_tokens=400,
    )
    plan = plan_from_skeleton(skeleton, list(answer.parts))
    mind.state.day_plan = plan
    mind.state.currently = answer.currently.strip()[:300] or status  # a patched status keeps the last, or the lifestyle
    return plan


def blocks_from_entries(start: datetime, entries: list[tuple[int, str]]) -> list[Block]:
    """Merge consecutive hours with the same activity into blocks."""
    blocks: list[Block] = []
    for offset, (_hour, activity) in enumerate(entries):
        begin = start + timedelta(hours=offset)
        if blocks and blocks[-1].activity.lower() == activity.lower():
            blocks[-1].minutes += 60
        else:
            blocks.append(Block(start=begin, minutes=60, activity=activity))
    return blocks


def block_at(mind: "Resident", now: datetime) -> Block | None:
    for block in mind.state.blocks:
        if block.start <= now < block.end:
            return block
    return None


# ---------------------------------------------------------------------------------------------
# Decomposition
# ---------------------------------------------------------------------------------------------


def make_step(mind: "Resident", start: datetime, minutes: int, description: str, arena: str,
              emoji: str = "", object_state: str | None = None, reaction: bool = False) -> Step:
    arena = room_named(description, arena, mind.spatial.arenas())
    arena = food_room(description, arena, mind.spatial.arenas())  # no toast made in the living room
    obj = mind.spatial.best_object(arena, description)
    return Step(
        start=start, minutes=max(1, minutes), description=activity_phrase(description)[:120] or "keeping busy",
        arena=arena, object=obj, emoji=one_emoji(emoji, description),
        # a state that is no state ('Cafe', 'Existing role in a workday'), or the embedded model's marker
        # (roles.planning.STATE_BY_ENGINE), gives way to the engine's words
        object_state=clip(object_state if object_state and object_state != STATE_BY_ENGINE and not no_state(object_state)
                          else in_use_for(description), 80) if obj else None,
        event=event_triple(mind.name, description, obj, arena), reaction=reaction,
    )


def fit_minutes(lengths: list[int], total: int) -> list[int]:
    """Scale step lengths so they fill ``total`` minutes exactly (at least 1 each)."""
    lengths = [max(1, int(x)) for x in lengths] or [total]
    scale = total / sum(lengths)
    out = [max(1, int(round(x * scale))) for x in lengths]
    while sum(out) > total and len(out) > 1:
        out.pop()
    out[-1] += total - sum(out)
    if out[-1] < 1:
        out = out[:-1]
        out[-1] += 1
    return out


def work_room(workplace: str, arenas: list[str]) -> str:
    """The room a whole-building workplace ('Willow Cafe', no room named) is worked in: the
    building's public room, the one a customer enters (a cafe's dining room, a pub's bar room),
    by the rule gatherings use; '' when the workplace names a room or no room of it is known.
    The first room found was the cafe's pantry, where no customer ever met its only worker."""
    if ":" in workplace:
        return ""
    rooms = [a.split(":", 1)[1] for a in arenas if a.startswith(workplace + ":")]
    return venue(workplace, rooms) if rooms else ""


def part_kind(mind: "Resident", at: datetime) -> str:
    """The skeleton's kind of part (wake, breakfast, work, ...) at a moment of a planned day;
    '' when the day is not planned (the no-planning ablations decide step by step)."""
    if mind.options.ablation in ("no_reflection_planning", "no_observation"):
        return ""
    p = mind.persona
    hours = waking_hours(p.wake_hour, p.sleep_hour)
    skeleton = day_skeleton(p.wake_hour, p.sleep_hour, mind.home_arena(), mind.work_arena())
    return skeleton_kinds(skeleton, hours).get(at.hour, "")


async def decompose(mind: "Resident", activity: str, start: datetime, end: datetime,
                    context: list[str] | None = None) -> list[Step]:
    """Steps of 5-15 minutes for [start, end) of an activity, at known places."""
    minutes = max(1, int((end - start).total_seconds() // 60))
    work = mind.work_arena()
    # work happens at the workplace, getting up and meals at home: the model picks rooms there
    kind = errand_kind(mind.persona, day_key(mind.persona.wake_hour, start), place_kinds(mind.options),
                       mind.options.seed, activity) or part_kind(mind, start)  # an errand is no meal
    places = block_places(kind, activity, mind.spatial.arenas(), mind.home_arena(), work, mind.own_flat())
    # a meal is eaten where the home eats (its kitchen), not in the bedroom a resident lives in
    home = mind.meal_arena() if MEAL.search(activity) else mind.home_arena()
    default_place = pick_place(activity, places, home, work)
    options = step_options(kind, activity)
    not_now = mind.not_on(start, end)  # a step may not go to a gathering that is not on in the block
    schema = decomposition_schema(tuple(places), kind, options, not_now)
    fallback = decomposition_fallback(tuple(places), activity, default_place, minutes, kind, options, not_now)
    notes = list(context or [])
    if mind.state.currently:
        notes.insert(0, f"Status: {mind.state.currently}")
    notes += [m.text for m in await mind.memory_for(activity, 4)]
    answer = await mind.caller.ask(
        "decompose",
        decompose_prompt(mind.summary, mind.persona.name, activity, start, minutes, places, home, work, notes[:8]),
        schema,
        fallback,
        max_tokens=900,
    )
    raw = merge_repeats([s for s in answer.steps if s.action.strip()] or list(fallback.steps))
    lengths = fit_minutes([s.minutes for s in raw], minutes)
    steps: list[Step] = []
    at = start
    for s, length in zip(raw, lengths):
        steps.append(make_step(mind, at, length, s.action, s.place, s.emoji, s.object_state))
        at += timedelta(minutes=length)
    mind.emit_plan("decomposed", [s.label() for s in steps])
    return steps


def merge_repeats(steps: list[Any]) -> list[Any]:
    """Consecutive steps with the same action at the same place as one longer step: a model
    choosing among a meal's steps may choose one twice in a row."""
    merged: list[Any] = []
    for step in steps:
        last = merged[-1] if merged else None
        if last is not None and (last.action, last.place) == (step.action, step.place):
            merged[-1] = last.model_copy(update={"minutes": last.minutes + step.minutes})
        else:
            merged.append(step)
    return merged


def sleep_step(mind: "Resident", now: datetime) -> Step:
    """Sleeping until the next wake hour, in bed at home (never decomposed)."""
    wake = mind.persona.wake_hour
    nxt = now.replace(hour=wake, minute=0, second=0, microsecond=0)
    if nxt <= now:
        nxt += timedelta(days=1)
    home = mind.home_arena()
    bedroom = home if "bed" in home.split(":")[-1].lower() else next(
        (a for a in mind.spatial.arenas() if a.startswith(home.split(":")[0]) and "bed" in a.lower()), home)
    step = make_step(mind, now, max(1, int((nxt - now).total_seconds() // 60)), "sleeping", bedroom, "😴",
                     "being slept in")
    if step.object is None:
        bed = mind.spatial.best_object(bedroom, "bed")
        if bed:
            step = step.model_copy(update={"object": bed, "object_state": "being slept in",
                                           "event": (mind.name, "sleeping", bed.split(":")[-1])})
    return step.model_copy(update={"sleep": True})
