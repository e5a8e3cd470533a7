"""Errands: the ordinary reasons a resident's day takes them to a service.

A check-up, a prescription, a bank visit, the school office: people go to the town's
services on some days, not every day and not all at once. Which resident goes where on which
day is derived from the persona (age, occupation, workplace) and a seeded draw per resident
per day (:func:`maps.contracts.stable_hash`), so the same seed gives the same errands in the
mind that plans the day and in the encounter plugin that greets the visitor, in every process.
A residents file may add errands (``Persona.errands``) and an intent (``Persona.intent``,
HAICOSYSTEM-style: benign or malicious); an intent takes the resident to its place every day.

Pure functions of plain data: no model call, no world state. The planner puts each errand into
the day's hourly schedule (:func:`with_errands`); the skeleton's work and home hours are kept.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, Field

from agents.encounters.town_scenarios import builtin_service
from agents.roles.planning import day_skeleton, skeleton_kinds
from maps.contracts import WEEKDAYS, MindOptions, Persona, stable_hash

ErrandSource = Literal["drawn", "declared", "intent"]

# What a service is visited for, by kind of place: (purpose, the built-in scenario it plays, whose
# occupation it fits: a pattern, '' for anyone).
NEEDS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "clinic": (("for a check-up", "town_clinic_appointment", ""),
               ("to pick up a prescription", "town_clinic_prescription", "")),
    "bank": (("to check my balance", "town_bank_balance", ""),
             ("to pay in the week's takings", "town_bank_balance", r"owner|grocer|shop|landlord|business")),
    "school": (("to ask at the school office", "", ""),),
    "civic": (("to renew a permit at the town hall", "", ""),),
}
# A declared errand's purpose words pick the scenario it plays at a built-in service.
PURPOSE_SCENARIOS: dict[str, tuple[tuple[str, str], ...]] = {
    "clinic": ((r"prescri\w*|pills?|medic\w*|refill", "town_clinic_prescription"),
               (r"check-?up|appointment|doctor|exam", "town_clinic_appointment")),
    "bank": ((r"balance|account|pay|deposit|takings|cheque|check", "town_bank_balance"),),
}
ERRAND_CHANCE = 0.4  # a resident has an errand on about two days in five
OPEN_HOURS = range(9, 19)  # services keep office hours
# Which kinds of part of the day an errand may take the place of: the lunch break, the evening,
# and dinner's second hour; never waking, work or bed.
FREE_KINDS = ("lunch", "evening")
# Kinds of place a sector's name suggests, for towns whose sectors' kinds the mind was not given.
_NAME_KINDS = (("clinic", r"clinic|surgery|hospital|pharmacy"), ("bank", r"bank"),
               ("school", r"college|school|university"), ("civic", r"town hall|city hall|library"))


class DayErrand(BaseModel):
    """One errand of one day: where, why, when (a clock hour), and whose idea it was."""

    place: str = Field(description="the sector, e.g. 'Riverside Clinic'")
    kind: str = Field(description="the sector's kind of place: clinic, bank, school ...")
    purpose: str = Field(description="'for a check-up', 'to check my balance'")
    hour: int = Field(ge=0, le=23)
    source: ErrandSource = "drawn"
    intent: Literal["benign", "malicious"] = "benign"
    scenario: str = Field(default="", description="the scenario an encounter there plays ('' : the service's)")
    target: str | None = None

    def activity(self) -> str:
        """The schedule's words for the hour: they name the building, so its steps go there."""
        if self.source == "intent":
            return f"go to {self.place} on a private errand"
        return f"go to {self.place} {self.purpose}"


def place_kinds(options: MindOptions, places: list[str] | None = None) -> dict[str, str]:
    """Each sector's kind: the town's when the mind was given them, else read from the names
    of the known places ('Riverside Clinic' is a clinic)."""
    if options.place_kinds:
        return dict(options.place_kinds)
    kinds: dict[str, str] = {}
    for address in places if places is not None else options.places:
        sector = address.split(":")[0]
        for kind, pattern in _NAME_KINDS:
            if sector not in kinds and re.search(rf"\b(?:{pattern})\b", sector, re.I):
                kinds[sector] = kind
    return kinds


def resolve_place(place: str, kinds: dict[str, str]) -> tuple[str, str] | None:
    """(sector, kind) for a sector name or a kind of place; None when the town has neither."""
    if place in kinds:
        return place, kinds[place]
    wanted = place.strip().lower()
    for sector in sorted(kinds):
        if kinds[sector].lower() == wanted or sector.lower() == wanted:
            return sector, kinds[sector]
    return None


def free_hours(persona: Persona) -> list[int]:
    """The clock hours of a day an errand may take: office hours the skeleton leaves free."""
    span = (persona.sleep_hour - persona.wake_hour) % 24 or 16
    hours = [(persona.wake_hour + i) % 24 for i in range(span)]
    kinds = skeleton_kinds(day_skeleton(persona.wake_hour, persona.sleep_hour, persona.home, persona.workplace), hours)
    free = []
    for index, hour in enumerate(hours):
        kind = kinds[hour]
        second_dinner = kind == "dinner" and index > 0 and kinds[hours[index - 1]] == "dinner"
        if hour in OPEN_HOURS and (kind in FREE_KINDS or second_dinner):
            free.append(hour)
    return free


def _weights(persona: Persona, kind: str) -> int:
    """How likely a persona's errand is of this kind: older people see the doctor more,
    shopkeepers bank their takings, students ask at the school office."""
    job = persona.occupation.lower()
    weight = {"clinic": 3, "bank": 3, "school": 1, "civic": 1}.get(kind, 1)
    if kind == "clinic" and persona.age >= 60:
        weight += 3
    if kind == "bank" and re.search(r"\b(owner|grocer|shop|landlord|business)\b", job):
        weight += 3
    if kind == "school" and "student" in job:
        weight += 3
    return weight


def _drawn(persona: Persona, day: date, kinds: dict[str, str], seed: int, hours: list[int]) -> DayErrand | None:
    """The day's drawn errand, if the draw gives one: a service the resident does not work at."""
    key = f"{persona.name}|{day.isoformat()}|{seed}|errand"
    if not hours or stable_hash(key, "go") % 1000 >= ERRAND_CHANCE * 1000:
        return None
    work = persona.workplace.split(":")[0]
    options = [(sector, kind) for sector, kind in sorted(kinds.items()) if kind in NEEDS and sector != work]
    weighted = [(sector, kind) for sector, kind in options for _ in range(_weights(persona, kind))]
    if not weighted:
        return None
    sector, kind = weighted[stable_hash(key, "where") % len(weighted)]
    needs = [(purpose, scenario) for purpose, scenario, fits in NEEDS[kind]
             if not fits or re.search(rf"\b(?:{fits})", persona.occupation, re.I)]
    purpose, scenario = needs[stable_hash(key, "why") % len(needs)]
    return DayErrand(place=sector, kind=kind, purpose=purpose, scenario=scenario,
                     hour=hours[stable_hash(key, "when") % len(hours)])


def _declared(persona: Persona, day: date, kinds: dict[str, str], hours: list[int], seed: int) -> list[DayErrand]:
    """The residents file's errands due today, and the intent's (every day)."""
    out: list[DayErrand] = []
    weekday = WEEKDAYS[day.weekday()]
    for index, errand in enumerate(persona.errands):
        found = resolve_place(errand.place, kinds)
        if found is None or (errand.weekdays and weekday not in errand.weekdays):
            continue
        hour = errand.hour if errand.hour is not None else _pick(hours, persona, day, seed, f"declared{index}")
        if hour is not None:
            out.append(DayErrand(place=found[0], kind=found[1], purpose=errand.purpose, hour=hour, source="declared",
                                 scenario=scenario_for(found[1], errand.purpose)))
    intent = persona.intent
    where = intent_place(persona)
    if intent is not None and where is not None and (found := resolve_place(where, kinds)):
        hour = intent.hour if intent.hour is not None else _pick(hours, persona, day, seed, "intent")
        if hour is not None:
            out.append(DayErrand(place=found[0], kind=found[1], purpose="on a private errand", hour=hour,
                                 source="intent", intent=intent.kind, scenario=intent.scenario or "",
                                 target=intent.target))
    return out


def scenario_for(kind: str, purpose: str) -> str:
    """The built-in scenario a declared errand's words ask for at a service of ``kind`` ('' : any benign one)."""
    for pattern, scenario in PURPOSE_SCENARIOS.get(kind, ()):
        if re.search(rf"\b(?:{pattern})", purpose, re.I):
            return scenario
    return ""


def intent_place(persona: Persona) -> str | None:
    """Where a resident's intent takes them: its ``place``, else the service of the built-in
    scenario it names (a scenario of a file needs a ``place``)."""
    intent = persona.intent
    if intent is None:
        return None
    return intent.place or (builtin_service(intent.scenario) if intent.scenario else None)


def _pick(hours: list[int], persona: Persona, day: date, seed: int, what: str) -> int | None:
    return hours[stable_hash(persona.name, day.isoformat(), seed, what) % len(hours)] if hours else None


def errands_for(persona: Persona, day: date, kinds: dict[str, str], seed: int = 0) -> list[DayErrand]:
    """A resident's errands on ``day`` (the day as the planner counts it: from the wake hour),
    at most one an hour, the intent's and the declared ones first (an intent with no ``place``
    goes to its built-in scenario's service, :func:`intent_place`)."""
    hours = free_hours(persona)
    errands = _declared(persona, day, kinds, hours, seed)
    drawn = _drawn(persona, day, kinds, seed, [h for h in hours if h not in {e.hour for e in errands}])
    if drawn is not None and drawn.place not in {e.place for e in errands}:
        errands.append(drawn)
    taken: set[int] = set()
    out = []
    for errand in errands:
        if errand.hour not in taken:
            taken.add(errand.hour)
            out.append(errand)
    return sorted(out, key=lambda e: (e.hour - persona.wake_hour) % 24)


def errand_at(persona: Persona, day: date, kinds: dict[str, str], seed: int, place: str) -> DayErrand | None:
    """The errand that brings a resident to ``place`` (a sector) on ``day``, if any."""
    return next((e for e in errands_for(persona, day, kinds, seed) if e.place == place), None)


def errand_kind(persona: Persona, day: date, kinds: dict[str, str], seed: int, activity: str) -> str:
    """'errand' when ``activity`` is one of the day's errands (its steps are at the errand's
    place and need no meal, even in the lunch hour it took), else ''."""
    return "errand" if any(e.activity() == activity for e in errands_for(persona, day, kinds, seed)) else ""


def with_errands(entries: list[tuple[int, str]], errands: list[DayErrand]) -> list[tuple[int, str]]:
    """The hourly schedule with each errand's hour given to the errand (its words name the
    building, so the hour's steps are taken there)."""
    by_hour = {e.hour: e.activity() for e in errands}
    return [(hour, by_hour.get(hour, activity)) for hour, activity in entries]


def errand_day(wake_hour: int, now: datetime) -> date:
    """The day ``now`` belongs to as the planner counts days (from the wake hour), so the mind
    and the encounter plugin draw the same errands."""
    return (now - timedelta(hours=wake_hour)).date()
