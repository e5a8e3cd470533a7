"""Planning prompts: the day plan (with the new-day status), the hourly schedule, and the
just-in-time decomposition of a block into 5-15 minute steps at known places.

Purposes: ``plan_day``, ``schedule``, ``decompose``.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, Field, model_validator

from agents.llm.schemas import ONE_OF, PLAIN_WORDS, SLOTS
from agents.llm.task import Prompt, Task
from agents.roles.wording import activity_phrase, in_use_for, starts_with_verb, without_place
from agents.roles.plan_times import format_plan, normalise_plan, offset, read_time, strip_time, waking_span
from agents.roles.checks import copied_from, fits_place, goes_out_of_time, just_a_name, names_another_place
from agents.roles.sense_checks import emoji_contradicts
from agents.roles.common import Activity, Patched, mostly_bad, require_words, bullet, clip, fit_activity, fit_words, choice_type, facts, first_line, make_model, messages, require_action

# ---------------------------------------------------------------------------------------------
# Day plan
# ---------------------------------------------------------------------------------------------


class SkeletonPart(BaseModel):
    """One part of the day the engine lays out from the persona (the model never sets times)."""

    hour: int = Field(ge=0, le=23)
    kind: str  # wake | breakfast | work | lunch | dinner | evening | bed
    text: str  # the persona's default words for it
    fixed: bool = False  # wake, work and bed are the engine's; the model words the rest


def day_skeleton(wake: int, sleep: int, home: str, work: str, extra: str = "", kitchen: str = "") -> list[SkeletonPart]:
    """The day's structure from the persona alone: wake, meals, work hours at the workplace,
    the evening, bed. Hours are laid out as hours after waking, so a resident who goes to bed
    after midnight gets parts in day order with clock hours 0-23, never a negative hour."""
    home, work = home.replace(":", " "), work.replace(":", " ")
    kitchen = kitchen.replace(":", " ") or home  # meals where the home eats, not in a bedroom
    span = waking_span(wake, sleep)
    end_of_day = wake + span  # bedtime on an extended clock (may be >= 24)
    start = min(max(wake + 2, 8), end_of_day - 6)
    lunch = max(12, start + 3)
    dinner = min(max(lunch + 4, 17), end_of_day - 3)
    wanted = [
        (wake, "wake", f"wake up and get ready at {home}", True),
        (wake + 1, "breakfast", f"have breakfast at {kitchen}", False),
        (start, "work", f"work at {work}", True),
        (lunch, "lunch", "have lunch", False),
        (lunch + 1, "work", f"work at {work}", True),
        (dinner, "dinner", f"have dinner at {kitchen}", False),
        (dinner + 1, "evening", extra, False) if extra else (dinner + 2, "evening", f"relax and read at {home}", False),
    ]
    parts: list[SkeletonPart] = []
    last = wake - 1
    for at, kind, text, fixed in wanted:
        at = max(at, last + 1)
        if at >= end_of_day:
            continue  # a short day keeps the parts that fit before bedtime
        parts.append(SkeletonPart(hour=at % 24, kind=kind, text=text, fixed=fixed))
        last = at
    parts.append(SkeletonPart(hour=end_of_day % 24, kind="bed", text=f"go to bed at {home}", fixed=True))
    return parts


def default_day_plan(name: str, wake: int, sleep: int, home: str, work: str, extra: str = "") -> list[str]:
    """The skeleton as plan lines ('7:00 wake up ...'): the fallback, and the scripted plan."""
    return format_plan([(part.hour, part.text) for part in day_skeleton(wake, sleep, home, work, extra)])


# Bounds on free text, which the grammar enforces: a tiny model fills whatever room it is given
# (SmolLM2 wrote 296 tokens of dates into a day plan), and every generated token costs a decode.
PART_MAX = 80
CURRENTLY_MAX = 200
ACTIVITY_MAX = 80
DAY_PLAN_INSTRUCTION = (
    "Write {name}'s status for today (currently) and, for each open part of the day below, in order,"
    " what {name} does then, in a few words (no times: the times are set)."
)


# The prompt lists open parts as '8:00 breakfast (usually: have breakfast at home)'; SmolLM2 wrote
# 'Morning breakfast (usually: have breakfast at Oak House)' back as a part (quickstart, 2026-11-25).
_LAYOUT = re.compile(r"\(\s*usually\b", re.I)
# a part copying this many words in a row of one memory is the memory, not an activity: 'The clinic's
# records computer keeps asking for a new password' was a plan part, twice (bench seed 2, 2026-11-26)
MEMORY_COPY_RUN = 5


_SEEN_DOING = re.compile(r"^[A-Z][\w'-]*(?: [A-Z][\w'-]*)* is ")  # 'Tom Alvarez is having lunch ...'


def copies_a_memory(words: str, memories: tuple[str, ...]) -> str | None:
    """A problem when a part is one of the prompt's thoughts or talks copied. Plans, the status
    and what someone was seen doing are left out: a day may well repeat yesterday's plan or what
    a neighbour did ('have lunch at Oak House kitchen')."""
    for memory in memories:
        if memory.startswith(("My plan for", "Currently:")) or _SEEN_DOING.match(memory):
            continue
        if copied_from(words, memory, run=MEMORY_COPY_RUN):
            return "copies a memory, not an activity"
    return None


def part_words(text: str, memories: tuple[str, ...] = ()) -> tuple[str, str | None]:
    """A day-plan part's words and the problem with them (None when they read as an activity):
    not the instruction or one of the prompt's ``memories`` copied either. A leading time is
    dropped, not refused: the skeleton sets the times, and a model that copies the skeleton's
    '7:00 ...' layout (Qwen did, for every part of every plan) still wrote the words we asked for."""
    words = " ".join(strip_time(text).split()) if read_time(text) is not None else " ".join(text.split())
    if _LAYOUT.search(words):
        return words, "copies the prompt's layout, '(usually: ...)'"
    try:
        words = require_action(words)
    except ValueError as exc:
        return words, str(exc)
    return words, copied_from(words, DAY_PLAN_INSTRUCTION, run=6) or copies_a_memory(words, memories)


def status_problem(text: str, name: str = "") -> str | None:
    """Why a day's status ('currently') says nothing of what the resident is up to. SmolLM2's, in
    the quickstarts of 2026-11-26: 'Tom Alvarez', 'Maria Alvarez', 'Hannah Price's status is
    currently:', 'Lucy Alvarez is idle', ''."""
    try:
        require_words(text)
    except ValueError as exc:
        return str(exc)
    if name and just_a_name(text, (name,)):
        return "is only the resident's name"
    if text.rstrip().endswith(":"):
        return "is a label with nothing after it"
    if re.search(r"\bis idle\b", text, re.I):
        return "says only that the resident is idle"
    if len(re.findall(r"[A-Za-z']+", text)) < 3:
        return "is too short to say what the resident is up to"
    return None


class DayPlanAnswer(Patched):
    """The model's words for the open parts. A part that is no activity ('Mercury', 'Bike, bike,
    bike') is patched: left empty, so the skeleton's own words stand for it, and counted (the run
    summary shows patched items); when most parts are bad the answer is refused (retry, then the
    skeleton). One bad part of four no longer throws away three good ones."""

    currently: str
    parts: list[str]
    open_kinds: ClassVar[tuple[str, ...]] = ()  # the skeleton kind of each open part, when known
    memories: ClassVar[tuple[str, ...]] = ()  # the memories the prompt showed (a part must not copy one)
    resident: ClassVar[str] = ""  # whose plan it is (a status that is only the name says nothing)

    @model_validator(mode="after")
    def _patch_parts(self) -> "DayPlanAnswer":
        kinds = self.open_kinds or ("",) * len(self.parts)
        checked = [_part_for_kind(*part_words(p, self.memories), kind) for p, kind in zip(self.parts, kinds)]
        bad = [f"parts.{i}: {problem}" for i, (_, problem) in enumerate(checked) if problem]
        if mostly_bad(bad, len(checked)):
            raise ValueError(f"most parts are no activity ({'; '.join(bad[:2])})")
        kept = [words if problem is None else "" for words, problem in checked]
        self.parts = tuple(kept) if isinstance(self.parts, tuple) else kept  # chosen parts are a tuple
        problem = status_problem(self.currently, self.resident)
        if problem:  # a status that says nothing ('Today: Friday', 'Tom Alvarez') keeps yesterday's
            bad.append(f"currently: {problem}")
            self.currently = ""
        self._patches = bad
        return self


# The meals a part of each kind may name: 'dinner' at 12:00 or 'lunch' at 17:00 (SmolLM2, 2026-11-24)
# is a plan no reader believes.
_MEALS_ALLOWED = {"wake": {"breakfast"}, "breakfast": {"breakfast", "brunch"}, "lunch": {"lunch", "brunch"},
                  "dinner": {"dinner", "supper"}, "evening": {"dinner", "supper"}}
_MEAL_WORD = re.compile(r"\b(breakfast|brunch|lunch|dinner|supper)\b", re.I)
# 'going to bed' at 07:13 and 'getting up at lunch' were SmolLM2's wake-up steps (2026-11-25);
# getting out of bed and making it are what the morning is for
_BED_WORD = re.compile(r"\b(?:(?<!making the )(?<!make the )(?<!out of )(?<!out of the )bed|sleep|sleeps|sleeping|slept|asleep|nap)\b",
                       re.I)


def _part_for_kind(words: str, problem: str | None, kind: str) -> tuple[str, str | None]:
    """A part's words and problem, adding a meal named at another meal's time."""
    allowed = _MEALS_ALLOWED.get(kind)
    if problem is None and allowed is not None:
        wrong = [m.lower() for m in _MEAL_WORD.findall(words) if m.lower() not in allowed]
        if wrong:
            problem = f"{wrong[0]} in the {kind} part of the day"
        elif kind != "evening" and _BED_WORD.search(words):  # 'late to bed' at 12:00 (SmolLM2, 2026-11-25)
            problem = f"bed in the {kind} part of the day"
    return words, problem


def part_options(part: SkeletonPart, home: str, kitchen: str = "") -> tuple[str, ...]:
    """What a resident may do in an open part of the day, the skeleton's usual words first: the
    embedded model chooses among them (a grammar-only ONE_OF), a remote model words the part as
    it likes. Of 24 day plans SmolLM2 wrote for captured quickstart prompts (2026-11-26) the checks
    accepted 2, and neither was believable ('Work', 'Home', 'Life'; the rest were 'morning',
    'Monday ia Monday', 'Heathrow Border'), so its day plans fell back to the skeleton; choosing,
    it plans in a few tokens and the choice is its own."""
    home = home.replace(":", " ")
    kitchen = kitchen.replace(":", " ") or home
    others = {
        "breakfast": (f"make coffee and toast at {kitchen}", f"have a quick breakfast at {kitchen}",
                      f"have breakfast and read the news at {kitchen}"),
        "lunch": ("have lunch with a colleague", "eat a packed lunch", "have a quick sandwich"),
        "dinner": (f"cook dinner at {kitchen}", f"have dinner with family at {kitchen}",
                   f"make a simple supper at {kitchen}"),
        "evening": (f"watch TV at {home}", "take an evening walk", f"call a friend from {home}"),
    }.get(part.kind, ())
    return tuple(dict.fromkeys(fit_activity(o, PART_MAX, "keeping busy") for o in (part.text, *others)))


def day_plan_schema(open_parts: int, kinds: tuple[str, ...] = (), memories: tuple[str, ...] = (),
                    options: tuple[tuple[str, ...], ...] = (), resident: str = "") -> type[BaseModel]:
    """The new-day status and the words for each open part of the skeleton (exactly that many);
    with the parts' skeleton ``kinds``, a part naming another part's meal is patched too, with
    the prompt's ``memories`` a part copying one of them, with ``options`` (one tuple per part,
    :func:`part_options`) the embedded model's grammar chooses each part among them, and with the
    ``resident``'s name a status that is only that name is patched."""
    return _day_plan_schema(open_parts, tuple(kinds), tuple(memories), tuple(tuple(o) for o in options), resident)


@lru_cache(maxsize=64)
def _day_plan_schema(open_parts: int, kinds: tuple[str, ...], memories: tuple[str, ...],
                     options: tuple[tuple[str, ...], ...] = (), resident: str = "") -> type[BaseModel]:
    if kinds and len(kinds) != open_parts:
        raise ValueError(f"day_plan_schema: {len(kinds)} kinds for {open_parts} open parts")
    if options and (len(options) != open_parts or not all(options)):
        raise ValueError(f"day_plan_schema: {len(options)} option lists for {open_parts} open parts")
    description = "what the resident does in each open part, in order"
    if options:  # one string per part, each with its own choices (prefixItems in the JSON schema)
        slots = tuple(Annotated[str, Field(max_length=PART_MAX, json_schema_extra={ONE_OF: list(o)})] for o in options)
        parts: Any = (tuple[slots], Field(description=description))  # type: ignore[valid-type]
    else:
        parts = (list[Annotated[str, Field(max_length=PART_MAX, json_schema_extra=PLAIN_WORDS)]],
                 Field(min_length=open_parts, max_length=open_parts, description=description))
    model = make_model(
        "DayPlan",
        __base__=DayPlanAnswer,
        currently=(Annotated[str, Field(max_length=CURRENTLY_MAX)],
                   Field(description="one sentence: what the resident is up to these days")),
        parts=parts,
    )
    model.open_kinds = kinds
    model.memories = memories
    model.resident = resident
    return model


def plan_from_skeleton(skeleton: list[SkeletonPart], words: list[str]) -> list[str]:
    """Plan lines: the skeleton's times and fixed parts, the model's words for the open ones."""
    given = iter(words)
    return format_plan([(p.hour, p.text if p.fixed else (next(given, "") or p.text)) for p in skeleton])


def day_plan_fallback(name: str, occupation: str, status: str, wake: int, sleep: int, home: str,
                      work: str, kitchen: str = "", memories: tuple[str, ...] = ()) -> BaseModel:
    """The typed fallback of ``plan_day``: the persona's skeleton as it is, valid for any persona
    (an instance of the schema that checks parts against the prompt's ``memories``)."""
    skeleton = day_skeleton(wake, sleep, home, work, kitchen=kitchen)
    free = [fit_activity(p.text, PART_MAX, "keeping busy") for p in skeleton if not p.fixed]
    kinds = tuple(p.kind for p in skeleton if not p.fixed)
    options = tuple(part_options(p, home, kitchen) for p in skeleton if not p.fixed)
    currently = fit_words(status, CURRENTLY_MAX, f"{name} is a {occupation}".strip())
    for other in (f"{name} is a {occupation}".strip(), "Keeping to the usual routine today."):
        if status_problem(currently, name):  # a status that says nothing is no fallback either
            currently = fit_words(other, CURRENTLY_MAX, "Keeping to the usual routine today.")
    # the skeleton's words are the engine's own: checked against the memories (a resident who
    # thought 'I will go to work at the clinic' copies nothing), the fallback was refused too and
    # the resident stood frozen, its plan failing every tick (SmolLM2 bench, 2026-11-27). The
    # answer is the memory-checking schema's instance, built from the one that does not check
    plain = day_plan_schema(len(free), kinds, (), options, resident=name)(currently=currently, parts=free)
    checked = day_plan_schema(len(free), kinds, memories, options, resident=name)
    answer = checked.model_construct(currently=plain.currently, parts=plain.parts)
    answer._patches = plain.patches()
    return answer


def day_plan_prompt(
    summary: str, name: str, today: datetime, wake: int, sleep: int, home: str, work: str,
    currently: str, memories: list[str], skeleton: list[SkeletonPart] | None = None,
) -> Prompt:
    skeleton = skeleton if skeleton is not None else day_skeleton(wake, sleep, home, work)
    user = "\n".join(
        [
            summary,
            facts(
                name=name, home=home, workplace=work, today=today.strftime("%A %d %B %Y"), wakes_at=f"{wake}:00",
                sleeps_at=f"{sleep}:00", yesterday_status=currently,
            ),
            "Memories:",
            bullet(memories),
            "Set parts of the day:",
            bullet([f"{p.hour}:00 {p.text}" for p in skeleton if p.fixed]),
            "Open parts:",
            bullet([f"{p.hour}:00 {p.kind} (usually: {p.text})" for p in skeleton if not p.fixed]),
            "",
            DAY_PLAN_INSTRUCTION.format(name=name),
        ]
    )
    task = Task({"name": name, "work": work, "open_parts": tuple(p.text for p in skeleton if not p.fixed)}, scripted_day)
    return Prompt(messages(user), task)


# ---------------------------------------------------------------------------------------------
# Hourly schedule
# ---------------------------------------------------------------------------------------------


class HourEntry(BaseModel):
    hour: int = Field(ge=0, le=23)
    activity: Annotated[Activity, Field(max_length=ACTIVITY_MAX)]


class Schedule(BaseModel):
    """What the resident does in each waking hour."""

    hours: list[HourEntry]


@lru_cache(maxsize=64)
def schedule_schema(hours: tuple[int, ...]) -> type[BaseModel]:
    """A Schedule whose hours are an enumeration of the waking hours (the grammar enforces it)."""
    entry = make_model("HourEntry", hour=(choice_type(hours), Field(description="a waking hour")),
                       activity=(Annotated[Activity, Field(max_length=ACTIVITY_MAX)],
                                           Field(description="what, in a few words", json_schema_extra=PLAIN_WORDS)))
    return make_model("Schedule", hours=(list[entry], Field(min_length=1, max_length=len(hours))))


def skeleton_kinds(skeleton: list[SkeletonPart], hours: list[int]) -> dict[int, str]:
    """The kind of part (wake, breakfast, work, ...) each waking hour falls in."""
    kinds: dict[int, str] = {}
    current = skeleton[0].kind if skeleton else ""
    starts = {p.hour: p.kind for p in skeleton}
    for h in hours:
        current = starts.get(h, current)
        kinds[h] = current
    return kinds


_WORK_WORDS = re.compile(r"\b(?:work|works|working|shift)\b", re.I)
FIXED_KINDS = ("wake", "work")  # the skeleton's parts the hourly schedule keeps whatever the model says
SCHEDULE_EXAMPLE = {"hour": 19, "activity": "reading at home"}  # the schedule prompt's one example entry


def hour_activity(model_words: str, planned: str, kind: str, work: str = "") -> str:
    """An hour's activity: the skeleton's plan item in its fixed hours (:data:`FIXED_KINDS`:
    getting up and work, whatever the model said), the model's words elsewhere unless they are
    the prompt's example copied (:data:`SCHEDULE_EXAMPLE`: SmolLM2 (2026-11-28) began 23 of 25 days
    'reading at home'), work ('working at Oak House classroom' in the hour of getting up, SmolLM2
    2026-11-24), at the workplace (``work``, an address) out of its hours, or, in a meal's hour, no
    meal ('reading at Green Grocer shop floor' for Noah Price's breakfast, lunch and dinner, SmolLM2
    2026-11-28: he ate breakfast at the grocer's, and went back there to read every evening), else
    the plan's item."""
    words = clip(strip_time(model_words), 200)
    building = work.split(":")[0].strip().lower()
    if kind in FIXED_KINDS or not words or words.lower() == SCHEDULE_EXAMPLE["activity"] \
            or _WORK_WORDS.search(words) \
            or (kind in MEAL_STEPS and not _MEAL_STEP.search(words)) \
            or (building and building in words.lower() and building not in planned.lower()):
        return planned
    return words


def skeleton_work_hours(skeleton: list[SkeletonPart], hours: list[int]) -> set[int]:
    """The waking hours the skeleton gives to work (kept at the workplace whatever the model says)."""
    return {h for h, kind in skeleton_kinds(skeleton, hours).items() if kind == "work"}


def schedule_fallback(plan: list[str], hours: list[int], asked: list[int] | None = None) -> BaseModel:
    """The typed fallback of ``schedule`` for the ``asked`` hours (all waking ``hours`` unless
    given): each hour takes the plan's item for it."""
    asked = list(hours if asked is None else asked)
    return schedule_schema(tuple(asked)).model_validate(
        {"hours": [{"hour": h, "activity": fit_activity(a, ACTIVITY_MAX, "keeping busy")}
                   for h, a in schedule_from_plan(plan, hours) if h in asked]})


def open_hours(hours: list[int], kinds: dict[int, str]) -> list[int]:
    """The waking hours a schedule asks the model about: all but the skeleton's fixed hours
    (:data:`FIXED_KINDS`), which keep the plan's item whatever the model says
    (:func:`hour_activity`), so asking about them only cost decoding (work alone was about half
    of a schedule's tokens)."""
    return [h for h in hours if kinds.get(h) not in FIXED_KINDS]


def schedule_prompt(summary: str, name: str, hours: list[int], plan: list[str],
                    waking: list[int] | None = None) -> Prompt:
    """The hourly schedule's prompt for the asked ``hours``; ``waking``: all the day's waking hours
    in order (default ``hours``), which the plan's times are read against."""
    user = "\n".join(
        [
            summary,
            facts(name=name, hours=", ".join(str(h) for h in hours)),
            "Plan:",
            bullet(plan),
            "",
            f"Give {name}'s activity for each of these hours ({', '.join(str(h) for h in hours)}), one entry"
            ' per hour, like ' + json.dumps(SCHEDULE_EXAMPLE) + ".",
        ]
    )
    fields = {"hours": tuple(hours), "plan": tuple(plan), "waking": tuple(waking or hours)}
    return Prompt(messages(user), Task(fields, scripted_schedule))


def schedule_from_plan(plan: list[str], hours: list[int]) -> list[tuple[int, str]]:
    """Each waking hour takes the latest plan item started by then (no model call needed).

    ``hours`` are the waking hours in day order; plan times are normalised on that day
    (12-hour clocks, after-midnight hours) before they are compared.
    """
    if not hours:
        return []
    wake, sleep = hours[0], (hours[-1] + 1) % 24
    timed = normalise_plan(plan, wake, sleep) or [(wake, strip_time(plan[0]) if plan else "rest")]
    timed = [(offset(h, wake), a) for h, a in timed]
    out = []
    for hour in hours:
        current = timed[0][1]
        for start, activity in timed:
            if start <= offset(hour, wake):
                current = activity
        out.append((hour, current))
    return out


# ---------------------------------------------------------------------------------------------
# Decomposition of one block into steps
# ---------------------------------------------------------------------------------------------


# A window's steps are rescaled to fill it, so a few steps suffice; the bounds keep a small
# model's answer short (the grammar enforces them; repair truncates a remote model's text).
MAX_STEPS = 8
ACTION_MAX = 80
OBJECT_STATE_MAX = 60


DECOMPOSE_INSTRUCTION = (
    "For each step give the action, minutes, the place (exactly one of the known places),"
    " one emoji, and the state of the object used."
)


# the prompt's own request, 'Break "..." into steps of 5 to 15 minutes': 'break into steps of ipsc'
# was a step of SmolLM2's (quickstart, 2026-11-26)
_ASKED_FOR = re.compile(r"\b(?:into steps|steps of|together fill)\b", re.I)


# What the steps of a meal are made of, as the paper's morning was 'wake up, brush teeth, take a
# shower, eat breakfast': a preparation, the meal, and what comes after. The embedded model
# chooses one of each in order (a grammar-only SLOTS hint, see step_options); its free steps of a
# breakfast were 'write' and 'read' (Hannah Price) and 'write' (Tom Alvarez) in the quickstart of
# 2026-11-26, and choosing one step among all of them it spent the hour on one, never eating.
MEAL_STEPS: dict[str, tuple[tuple[str, ...], ...]] = {
    "breakfast": (("make coffee in the kitchen", "make toast", "boil the kettle for tea"),
                  ("eat breakfast at the kitchen table", "read the news over coffee", "have a bowl of cereal"),
                  ("wash the breakfast dishes", "tidy the kitchen", "get ready to leave")),
    "lunch": (("buy a sandwich", "heat up a packed lunch", "find a quiet seat for lunch"),
              ("eat lunch", "have lunch with a colleague", "eat a sandwich"),
              ("have a cup of tea after lunch", "take a short walk after lunch", "clear away the lunch things")),
    "dinner": (("cook dinner in the kitchen", "set the table", "heat up some leftovers"),
               ("eat dinner at the kitchen table", "eat dinner with the family", "eat a simple supper"),
               ("wash the dishes", "tidy the kitchen", "put the leftovers away")),
}
# a step that is part of a meal: eating, cooking, drinking, the table and the dishes
_MEAL_STEP = re.compile(
    r"\b(?:eat|eats|eating|ate|dine|dines|dining|cook|cooks|cooking|cooked|bake|baking|fry|frying|grill|grilling|"
    r"breakfast|brunch|lunch|dinner|supper|meal|meals|food|snack|coffee|tea|toast|cereal|porridge|oatmeal|eggs?|"
    r"bacon|pancakes?|sandwich|sandwiches|soup|salad|bread|fruit|pasta|rice|stew|juice|milk|drink|drinks|drinking|"
    r"brew|brewing|kettle|table|dishes|dish|plates?|kitchen|recipe|chop|chopping|taste|tasting|feast|picnic)\b",
    re.I)


_GOING_HOME = re.compile(r"\b(?:go|goes|going|went|head|heads|heading|walk|walks|walking|return|returns|returning|"
                         r"come|comes|coming|get|gets|getting)\s+(?:back\s+)?home\b", re.I)


def going_home_at_home(action: str, kind: str) -> str | None:
    """A problem when a step of a part of the day spent at home (:data:`AT_HOME`) is going home:
    'going home' was Lucy Alvarez's step at 07:29 in her own living room (SmolLM2, 2026-11-26)."""
    if kind in AT_HOME and _GOING_HOME.search(action):
        return f"going home in the {kind} part of the day, spent at home"
    return None


def step_options(kind: str, activity: str) -> tuple[tuple[str, ...], ...]:
    """The steps the embedded model chooses for a block of a meal (``kind`` breakfast, lunch or
    dinner): one of each slot of :data:`MEAL_STEPS` in order, the block's own words first among the
    meal's; () for any other block, whose steps it words."""
    slots = MEAL_STEPS.get(kind)
    if not slots:
        return ()
    own = fit_activity(activity, ACTION_MAX, "")
    meal = tuple(dict.fromkeys(s for s in (own if own and _MEAL_STEP.search(own) else "", *slots[1]) if s))
    return (slots[0], meal, *slots[2:])


def meal_missing(actions: list[str], kind: str) -> str | None:
    """A problem when a meal's block (``kind`` breakfast, lunch or dinner) has no step of the
    meal: not one of eating, cooking, the table or the dishes."""
    if kind in MEAL_STEPS and actions and not any(_MEAL_STEP.search(a) for a in actions):
        return f"no step of the {kind} in the {kind} part of the day"
    return None


def step_problem(action: str, place: str) -> str | None:
    """Why a step's action is no answer: the instruction copied, a place it cannot happen at, or
    another place named ('working at Willowbrook College' as a step in the bedroom)."""
    if _ASKED_FOR.search(action):
        return "words of the instructions"
    return (copied_from(action, DECOMPOSE_INSTRUCTION, run=6) or fits_place(action, place)
            or names_another_place(action, place))


def _step_problem(step: Any, not_now: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> str | None:
    try:
        require_action(step.action)
    except ValueError as exc:
        return str(exc)
    return step_problem(step.action, step.place) or goes_out_of_time(step.action, step.place, not_now)


class DecompositionAnswer(Patched):
    """Steps in order. A step whose action is no activity ('Lucy Alvarez', 'sleeping' at the
    bank) is dropped and counted; the rest are rescaled to fill the window. When most steps are
    bad the answer is refused (retry, then the fallback)."""

    steps: list[Any]
    block_kind: ClassVar[str] = ""  # the skeleton kind of the block (breakfast, work, ...), when known
    # (venue, words) of the gatherings not on during the block: a step going to or joining one is dropped
    not_now: ClassVar[tuple[tuple[str, tuple[str, ...]], ...]] = ()

    @model_validator(mode="after")
    def _drop_bad_steps(self) -> "DecompositionAnswer":
        # a meal's block takes no other meal and no bed ('taking lunch', 'going to bed' at 07:30, SmolLM2)
        problems = [_step_problem(step, self.not_now) or _part_for_kind(step.action, None, self.block_kind)[1]
                    or going_home_at_home(step.action, self.block_kind) for step in self.steps]
        bad = [f"steps.{i}.action {p}" for i, p in enumerate(problems) if p]
        if mostly_bad(bad, len(self.steps)):
            raise ValueError(f"most steps are no activity ({'; '.join(bad[:2])})")
        kept = [step for step, p in zip(self.steps, problems) if p is None]
        missing = meal_missing([step.action for step in kept], self.block_kind)
        if missing:
            raise ValueError(missing)
        self.steps = kept
        self._patches = bad
        return self


STATE_BY_ENGINE = "in use"
ENGINE_STATE_HINT = {ONE_OF: [STATE_BY_ENGINE]}
"""A step's object state, for the embedded model's grammar only: the engine's marker, written as
forced tokens, for which the engine words the state from the action (cognition.planning.make_step:
'being used for making coffee'). SmolLM2, free to word it, gave a kitchen table 'amazing', every
object of a morning 'active' (society bench, 2026-11-28), and, on 16 decompositions, 'magenta',
'marching over lazy dogs', 'House'. A remote model still words the state ('brewing coffee')."""


def decomposition_schema(places: tuple[str, ...], kind: str = "", options: tuple[tuple[str, ...], ...] = (),
                         not_now: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> type[BaseModel]:
    """Steps whose place is an enumeration of the resident's known arenas; with the block's skeleton
    ``kind``, a step naming another meal or bed in a meal's block is dropped too, and a meal's block
    needs a step of the meal; with ``options`` (:func:`step_options`, one tuple per step) the
    embedded model's grammar chooses each step's action among its slot's (a remote model words
    its steps); with ``not_now`` (cognition.gatherings.not_now_words), a step going to or joining
    a gathering that is not on during the block is dropped (SmolLM2's Ana 'going to a Valentine's
    Day party' at 08:26 in her classroom). One class per (places, kind, options, not_now), however
    it is called (the fallback must be an instance of the asked schema)."""
    return _decomposition_schema(tuple(places), kind, tuple(tuple(o) for o in options), tuple(not_now))


@lru_cache(maxsize=256)
def _decomposition_schema(places: tuple[str, ...], kind: str, options: tuple[tuple[str, ...], ...] = (),
                          not_now: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> type[BaseModel]:
    step = make_model(
        "Step",
        action=(str, Field(max_length=ACTION_MAX, description="what the resident does, e.g. 'making coffee'",
                           json_schema_extra=PLAIN_WORDS)),
        minutes=(int, Field(ge=5, le=15)),
        place=(choice_type(places), Field(description="one of the known places")),
        emoji=(str, Field(max_length=8, description="one emoji", json_schema_extra=EMOJI_HINT)),
        object_state=(str, Field(max_length=OBJECT_STATE_MAX, description="state of the object used, e.g. 'brewing coffee'",
                                 json_schema_extra=ENGINE_STATE_HINT)),
    )
    model = make_model(
        "Decomposition",
        __base__=DecompositionAnswer,
        steps=(list[step], Field(min_length=1, max_length=MAX_STEPS, description="5-15 minute steps in order",
                                 json_schema_extra={SLOTS: [{"action": list(o)} for o in options]} if options else None)),
    )
    model.block_kind = kind
    model.not_now = not_now
    return model


def decomposition_fallback(places: tuple[str, ...], activity: str, place: str, minutes: int,
                           kind: str = "", options: tuple[tuple[str, ...], ...] = (),
                           not_now: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> BaseModel:
    """The typed fallback of ``decompose``: the activity itself in 15-minute steps at ``place``
    (in a meal's block, the meal's first step when the activity names no meal).

    Every text is clipped to the schema's bounds, so this is valid for any activity.
    """
    schema = decomposition_schema(places, kind, options, not_now)
    action = fit_activity(activity, ACTION_MAX, "keeping busy")
    if _part_for_kind(action, None, kind)[1] or going_home_at_home(action, kind) \
            or goes_out_of_time(action, place, not_now):
        action = "keeping busy"
    if meal_missing([action], kind):
        action = MEAL_STEPS[kind][1][0]
    n = min(MAX_STEPS, max(1, minutes // 15))
    place = place if place in places else places[0]
    if step_problem(action, place):  # e.g. 'sleep in' at the office: somewhere it fits, else keep busy
        place = next((p for p in places if not step_problem(action, p)), place)
        if step_problem(action, place):
            action = "keeping busy"
    step = {"action": action, "minutes": 15, "place": place,
            "emoji": emoji_for(activity), "object_state": clip(in_use_for(action), OBJECT_STATE_MAX)}
    return schema.model_validate({"steps": [dict(step) for _ in range(n)]})


def decompose_prompt(
    summary: str, name: str, block: str, start: datetime, minutes: int, places: list[str],
    home: str, work: str, context: list[str],
) -> Prompt:
    user = "\n".join(
        [
            summary,
            facts(name=name, home=home, workplace=work),
            "Known places:",
            bullet(places),
            "",
            facts(block=block, starts=start.strftime("%H:%M"), minutes=minutes),
            "Context:",
            bullet(context),
            "",
            f'Break "{block}" into steps of 5 to 15 minutes that together fill {minutes} minutes.'
            " " + DECOMPOSE_INSTRUCTION,
        ]
    )
    task = Task({"block": block, "minutes": minutes, "places": tuple(places), "home": home, "work": work}, scripted_steps)
    return Prompt(messages(user), task)


_EMOJI = {
    "sleep": "😴", r"bed\b": "😴", "breakfast": "🍳", "lunch": "🥪", "dinner": "🍲", "cook": "🍳",
    "coffee": "☕", "work": "💼", r"read(?:s|ing)?\b": "📖", "stud": "📚", "class": "📚", "teach": "🧑‍🏫",
    "walk": "🚶", "party": "🎉", "patient": "🩺", "bank": "🏦", r"bar\b": "🍺", "relax": "🛋️",
    "wash": "🚿", "ready": "🪥", "talk": "💬", "shop": "🛒", "bake": "🥐",
}
_EMOJI_PATTERNS = [(re.compile(rf"\b{stem}"), emoji) for stem, emoji in _EMOJI.items()]
DEFAULT_EMOJI = "🙂"
EMOJI_CHOICES = tuple(dict.fromkeys([*_EMOJI.values(), DEFAULT_EMOJI]))
EMOJI_HINT = {ONE_OF: list(EMOJI_CHOICES)}
"""The embedded model's grammar picks a step's or reaction's emoji from the engine's own (a few
tokens); left free, SmolLM2 wrote up to eight of any kind ('🍍🍍🍍🍍🍍🍍' for breakfast)."""


_ONE_EMOJI = re.compile(r"^(?:[\U0001F1E6-\U0001F1FF]{2}|[^\w\s](?:[\uFE0F\U0001F3FB-\U0001F3FF]|\u200d[^\w\s])*\uFE0F?)")


def one_emoji(emoji: str, activity: str) -> str:
    """The emoji shown for a step: the activity's own when its words name one (SmolLM2, choosing
    among the engine's emoji, gave breakfast a stew and a reaction a sleeper), else the model's
    cut to its first one (a model free of the grammar writes '💡💡💡💡💡💡💡💡'), else a smile."""
    own = emoji_for(activity)
    if own != DEFAULT_EMOJI:
        return own
    match = _ONE_EMOJI.match(emoji.strip())
    # an emoji of another activity (a bank's for 'making toast', issue 30) is no better than a smile
    return match.group(0) if match and not emoji_contradicts(match.group(0), activity) else own


def emoji_for(text: str) -> str:
    """The emoji of an activity, read from its words (a word's start, so "bar" is not "barber"),
    not from where it happens: "having breakfast at Oak House bedroom" is breakfast, not sleep."""
    activity = re.split(r"\s(?:at|in|on)\s", text.lower(), maxsplit=1)[0]
    for pattern, emoji in _EMOJI_PATTERNS:
        if pattern.search(activity):
            return emoji
    return DEFAULT_EMOJI


_AT_HOME = re.compile(r"\b(?:at|go|goes|going|went|back|stay|stays|staying) home\b")  # one's own (not 'at Tom's home')
AT_HOME = ("wake", "breakfast", "dinner", "bed")  # parts of the day spent at home unless the words say where


def block_places(kind: str, activity: str, places: list[str], home: str, work: str, unit: str = "") -> list[str]:
    """The places a block's steps may be at, by the skeleton's ``kind`` of part: a work block at
    the workplace, getting up and the morning and evening meals at home (SmolLM2, free to
    choose, put 'working at Riverside Clinic' at home and breakfast in the pub cellar). A
    building the activity names wins ('dinner at The Crooked Pub with Lucy'). Other
    parts ('' when the day was not planned, as in the no-planning ablation) keep every known
    place, unless the words say home (:data:`_AT_HOME`: SmolLM2 spent Ben Okafor's evening
    'eating at home' at The Crooked Pub and 'sleeping at home' in a neighbour's flat). The model
    still picks the room, the words and the lengths.

    ``unit`` is a home that is one flat of a shared building ('Elm Apartments:apartment 2'; not a
    room of a family house, whose kitchen is shared): the other flats there are someone else's
    home, kept only when the activity names one (Ben Okafor woke up, ate and read in Priya Shah's
    flat all day, his own flat's name in every step)."""
    words = activity.lower()
    named = {p.split(":")[0] for p in places if p.split(":")[0].lower() in words}
    if named:
        buildings = named
    elif kind == "work":
        buildings = {work.split(":")[0]}
    elif kind in AT_HOME or _AT_HOME.search(words):
        buildings = {home.split(":")[0]}
    else:
        return places
    inside = [p for p in places if p.split(":")[0] in buildings]
    if ":" in unit:
        inside = [p for p in inside if not _someone_elses_flat(p, unit, words)] or inside
    return inside or places


def _someone_elses_flat(place: str, unit: str, activity: str) -> bool:
    """``place`` is in the building of the home ``unit`` but not in that flat, and ``activity``
    (lower case) does not name it ('visit Priya at Elm Apartments apartment 1' does)."""
    building = unit.split(":")[0]
    if place.split(":")[0] != building or place == unit or place.startswith(unit + ":"):
        return False
    return " ".join(place.split(":")[:2]).lower() not in activity


def _place_words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def room_named(text: str, place: str, places: Sequence[str]) -> str:
    """The room of ``place``'s building that ``text`` names, else ``place``. SmolLM2 chose the
    building 'Oak House' for 'make coffee and toast at Oak House kitchen', and Lucy made her
    coffee in the living room. A room counts as named when the words say '<building> <room>', or
    when all its words but 'room' are there and no other room of the building fits as well; a
    bedroom only in the first way (a house has more than one, and whose is the words' to say)."""
    building = place.split(":")[0]
    words = _place_words(text)
    said, said_set = f" {' '.join(words)} ", set(words)
    rooms = [p for p in places if ":" in p and p.split(":")[0] == building]
    for room in rooms:
        if f" {' '.join(_place_words(room))} " in said:
            return room
    fits: list[tuple[int, str]] = []
    for room in rooms:
        room_words = set(_place_words(room.split(":", 1)[1])) - {"room", "the", "of", "a"}
        if room_words and room_words <= said_set and "bedroom" not in room_words:
            fits.append((len(room_words), room))
    best = [room for n, room in fits if n == max(fits)[0]] if fits else []
    return best[0] if len(best) == 1 else place


def pick_place(text: str, places: list[str], home: str, work: str) -> str:
    """The known place a block most plausibly happens at (words first, then home/work)."""
    lower = text.lower()
    words = set(re.findall(r"[a-z0-9]+", lower))
    best, best_score = None, 0
    for place in places:
        pwords = set(re.findall(r"[a-z0-9]+", place.lower())) - {"the", "of", "a"}
        shared = words & pwords
        named = sum(not w.isdigit() for w in shared)
        # a number only tells flats apart ('apartment 2' is not 'apartment 1'); alone ('lunch
        # at 1') it names no place
        score = 10 * named + (len(shared) - named) if named else 0
        if score > best_score:
            best, best_score = place, score
    if best is not None:
        return best
    target = work if any(w in lower for w in ("work", "shift", "office", "class", "teach")) else home
    under = [p for p in places if p == target or p.startswith(target + ":") or target.startswith(p)]
    if under:
        for room in ("kitchen", "bedroom", "living"):
            for p in under:
                if room in p.lower() and room[:4] in lower + ("bedroom" if "bed" in lower else ""):
                    return p
        return under[0]
    return places[0]


# ---------------------------------------------------------------------------------------------
# The scripted backend's answers (from the fields the prompts above were written from)
# ---------------------------------------------------------------------------------------------


def scripted_day(fields: Mapping[str, Any], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    """The scripted backend's day plan: each open part in the persona's usual words. A gathering the
    resident knows of is not placed here: the engine gives it its own slot at its time
    (agents/minds/cognition/gatherings.py), where an evening 'go to the party I heard about' put it
    on the wrong day and after it ended (issue 26)."""
    name = first_line(fields["name"]) or "I"
    work = first_line(fields["work"]) or "work"
    # as the prompt lists them (no open part is one '(none)' line, which has no usual words)
    parts = [text.rstrip(")") for text in fields["open_parts"]] or [""]
    first = name.split()[0]
    return {"currently": f"{first} is keeping up with work at {work} and the people around them.", "parts": parts}


def scripted_schedule(fields: Mapping[str, Any], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    """The scripted backend's hours: each asked hour's plan line (:func:`schedule_from_plan`, over
    the whole waking day: read from the first asked hour, the plan's getting up came last)."""
    hours = [h for h in fields["hours"] if h >= 0] or [8]
    plan = [line.strip() for line in fields["plan"]] or ["(none)"]
    waking = [h for h in fields.get("waking", ()) if h >= 0]
    by_hour = dict(schedule_from_plan(plan, waking if set(hours) <= set(waking) else hours))
    return {"hours": [{"hour": h, "activity": by_hour[h]} for h in hours]}


def _step_actions(block: str) -> tuple[str, ...]:
    """The scripted steps of a block as activity phrases: 'getting ready to have breakfast',
    'having breakfast at Oak House kitchen', ..., 'almost done having breakfast'."""
    doing = activity_phrase(block)
    short = without_place(doing)
    ready = f"getting ready to {without_place(block)}" if starts_with_verb(block) and "ready" not in block else doing
    return (ready, doing, doing, "taking a short break", doing, doing, f"almost done {short}")


def scripted_steps(fields: Mapping[str, Any], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    """The scripted backend's steps: getting ready, doing, a break, almost done, at the block's place."""
    block = first_line(fields["block"]) or "keep busy"
    minutes = fields["minutes"]
    places = [p.strip() for p in fields["places"]] or ["(none)"]
    home, work = first_line(fields["home"]), first_line(fields["work"])
    place = pick_place(block, places, home, work)
    steps = []
    left = minutes
    i = 0
    actions = _step_actions(block)
    # At most MAX_STEPS; decompose() rescales the lengths to fill the window exactly.
    while left > 0 and len(steps) < MAX_STEPS:
        length = min(left, rng.choice((10, 15, 15)))
        if length < 5:
            steps[-1]["minutes"] = min(15, steps[-1]["minutes"] + length)
            break
        action = actions[min(i, len(actions) - 2)]
        if i > 0 and (left <= 15 or len(steps) == MAX_STEPS - 1):
            action = actions[-1]
        action = fit_words(action, ACTION_MAX, "keeping busy")
        steps.append(
            {
                "action": action,
                "minutes": length,
                "place": place,
                "emoji": emoji_for(action),
                "object_state": clip(in_use_for(block), OBJECT_STATE_MAX),
            }
        )
        left -= length
        i += 1
    return {"steps": steps}
