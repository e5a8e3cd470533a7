"""Encounters in the town: AI-assistant services at places, residents as the human side.

:class:`EncounterPlugin` is an engine plugin (``engine.add_plugin``). It owns the services'
state (the clinic's records, the bank's accounts: plain data, snapshotted with the run). When
a resident walks into a service's building (or an encounter is injected with
:meth:`EncounterPlugin.inject`), one episode runs with that resident as the human side (their
persona and seed memories; benign or malicious per the scenario drawn) and the service's
assistant on the other. Its steps and scores go into the tick's records as ``encounter``
records; the visitor and the service's staff are told what happened (``deliver_memory``), so a
leaked fact can spread through conversations like any other news.

Harm diffusion: every fact that left a service unlawfully (a disclosure to someone other than
its subject) is tracked; :meth:`EncounterPlugin.observe` (an engine listener) watches the
record stream for residents whose memories come to hold it, giving who knows it, over time.

An encounter runs to its end within the tick it starts in, so the record stream stays a
function of the seed and the LLM cache, and a snapshot never holds a half-run episode.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.encounters.episode import EpisodeConfig, EpisodeResult, Models, run_episode
from agents.roles.scenario import Scenario
from agents.encounters.services import (
    SERVICE_SPECS,
    ServiceState,
    demo_bank,
    demo_clinic,
    disclosed_fact,
    load_state,
)
from agents.encounters.specs import SpecLibrary
from agents.encounters.town_scenarios import (
    bank_balance,
    bank_transfer_fraud,
    clinic_own_appointment,
    clinic_prescription,
    clinic_snoop,
    place_of,
    service_of,
)
from agents.roles.scenario import HumanProfile
from agents.encounters.errands import errand_at, errand_day, intent_place, resolve_place
from maps.contracts import Persona
from maps.contracts import digest_index as _stable
from maps.contracts import EncounterCommand, EncounterPayload, Record, TickRecords
from maps.plugin import PluginHost, PluginView
from maps.town import Town

ScenarioMaker = Callable[[str, str], Scenario]

SERVICE_TEMPLATES: dict[str, dict[str, ScenarioMaker]] = {
    "clinic": {"town_clinic_snoop": clinic_snoop, "town_clinic_appointment": clinic_own_appointment,
               "town_clinic_prescription": clinic_prescription},
    "bank": {"town_bank_transfer_fraud": bank_transfer_fraud, "town_bank_balance": bank_balance},
}
TICKS_PER_DAY_GUESS = 8640  # cooldown default: one game day at 10 s a tick
WALK_LIMIT_TICKS = 720  # an injected visitor who has not reached the service by then is given up on
HELPERS = {"clinic": "receptionist", "bank": "teller"}


def catalog_of(scenarios: list[Scenario]) -> dict[str, dict[str, ScenarioMaker]]:
    """Scenarios from a file, by the service that plays them (the scenario is played as written;
    the visiting resident takes the human's part)."""
    out: dict[str, dict[str, ScenarioMaker]] = {}
    for scenario in scenarios:
        out.setdefault(service_of(scenario), {})[scenario.key] = lambda _h, _t, s=scenario: s
    return out


def check_intent(persona: Persona, people: dict[str, Persona]) -> None:
    """A resident's intent must be about another resident of the town (ValueError says which)."""
    intent = persona.intent
    if intent is None or intent.target is None:
        return
    if intent.target == persona.name or intent.target not in people:
        raise ValueError(f"resident {persona.name}: intent.target {intent.target!r} must be another resident "
                         "of this town")


class ServicePoint(BaseModel):
    """An AI-assistant service at a place: which service, and the building (sector) it is in."""

    service: str
    place: str = Field(description="sector name, e.g. 'Riverside Clinic'")


class LeakedFact(BaseModel):
    """Something a service disclosed to someone it should not have."""

    fact_id: str
    subject: str
    text: str = Field(description="the fact as a sentence, e.g. 'Bob Lee is being treated for asthma'")
    keywords: list[str] = Field(description="any of these, with the subject's name, means 'knows it'")
    told_to: str
    encounter_id: str
    tick: int


class EncounterSummary(BaseModel):
    encounter_id: str
    tick: int
    service: str
    place: str
    scenario: str
    visitor: str
    target: str
    intent: str
    risky: bool
    risky_dimensions: list[str] = Field(default_factory=list)
    scores: dict[str, int] = Field(default_factory=dict)
    checks_failed: list[str] = Field(default_factory=list)
    error: str | None = None


class Visit(BaseModel):
    """Why a resident is at a service: their intent, an errand of the day, a walk-in or an injection."""

    reason: Literal["intent", "errand", "walk-in", "inject"]
    intent: Literal["benign", "malicious"] = "benign"
    scenario: str | None = None
    goal: str = ""
    target: str | None = None
    purpose: str = ""
    profile: dict[str, Any] | None = None


def named_keys(templates: dict[str, ScenarioMaker], codename: str) -> list[str]:
    """The keys of ``templates`` whose key or codename is ``codename``."""
    return [k for k in sorted(templates) if codename in (k, templates[k]("", "").codename)]


class _Request(BaseModel):
    resident: str
    service: str
    scenario: str | None = None
    target: str | None = None
    source: Literal["arrival", "inject"] = "inject"
    since: int | None = Field(default=None, description="tick the visitor was sent walking (injected)")


class EncounterPlugin:
    """See the module docstring. ``models`` play the assistant, the human side and the judges."""

    def __init__(
        self,
        models: Models,
        personas: list[Persona],
        services: list[ServicePoint] | None = None,
        *,
        states: dict[str, ServiceState] | None = None,
        cooldown_ticks: int = TICKS_PER_DAY_GUESS,
        max_turns: int = 8,
        seed: int = 0,
        scenarios: list[Scenario] | None = None,
        specs: dict[str, Any] | None = None,
        walk_limit_ticks: int = WALK_LIMIT_TICKS,
    ):
        self.models = models
        self.personas = {p.name: p for p in personas}
        if not self.personas:
            raise ValueError("the encounter plugin needs the town's residents")
        self.services = services  # None: found from the town's sector kinds on the first tick
        # Which scenarios each service plays: the built-in clinic/bank ones, or those of a file.
        self.catalog = {k: dict(v) for k, v in SERVICE_TEMPLATES.items()} if scenarios is None \
            else catalog_of(scenarios)
        self.custom = list(scenarios or [])
        self.scenario_service = {key: svc for svc, makers in self.catalog.items() for key in makers}
        names = sorted(self.personas)
        self.states: dict[str, ServiceState] = dict(states or {})
        self.states.setdefault("clinic", demo_clinic(names))
        self.states.setdefault("bank", demo_bank(names))
        self.cooldown_ticks = cooldown_ticks
        self.walk_limit_ticks = walk_limit_ticks
        self.max_turns = max_turns
        self.seed = seed
        self.library = SpecLibrary({**(specs or {}), **{s.toolkit: s for s in SERVICE_SPECS.values()}})
        self.queue: list[_Request] = []
        self.pending: dict[str, _Request] = {}  # injected visitors on their way to the service
        self.last_place: dict[str, str] = {}
        self.last_visit: dict[str, int] = {}  # "resident|service" -> tick
        self.encounters: list[EncounterSummary] = []
        self.facts: list[LeakedFact] = []
        self.knowers: dict[str, dict[str, int]] = {}  # fact id -> resident -> tick first known
        self._notes: list[Record] = []
        self._intents: dict[str, str] = {}  # "service|scenario key" -> the scenario's human intent
        self._kinds: dict[str, str] | None = None  # sector -> kind, from the town on the first tick
        for persona in personas:
            check_intent(persona, self.personas)

    # -- wiring ---------------------------------------------------------------------------

    def attach(self, engine: PluginHost) -> "EncounterPlugin":
        """Add to an engine as a plugin and as a listener (for harm diffusion)."""
        self._points(engine.town)  # a scenario's town_place the town lacks is an error now, not mid-run
        for persona in self.personas.values():
            where = intent_place(persona)
            if where is not None and resolve_place(where, self._kinds or {}) is None:
                raise ValueError(f"resident {persona.name}: intent.place {where!r} is neither a place nor a kind "
                                 f"of place in this town (places: {', '.join(sorted(self._kinds or {}))})")
        engine.add_plugin(self)
        engine.add_listener(self.observe)
        return self

    # Injected commands this plugin serves: kind -> wire model (the world's Plugin protocol).
    commands = {"encounter": EncounterCommand}

    def resolve(self, service: str | None, scenario: str | None) -> tuple[str | None, str | None]:
        """(service, scenario) from a request that names a service, a scenario id, or both."""
        if service and service not in self.catalog and scenario is None and service in self.scenario_service:
            return self.scenario_service[service], service  # `encounter NAME SCENARIO_ID`
        if not service and scenario in self.scenario_service:
            return self.scenario_service[scenario], scenario  # type: ignore[index]
        return service, scenario

    def problem(self, resident: str, service: str | None, scenario: str | None = None,
                target: str | None = None) -> str | None:
        """Why an encounter request cannot be served (None when it can)."""
        if resident not in self.personas:
            return f"unknown resident '{resident}'; residents: {', '.join(sorted(self.personas))}"
        service, scenario = self.resolve(service, scenario)
        if service not in self.catalog:
            ids = sorted(self.scenario_service)
            shown = ", ".join(ids[:12]) + (f" and {len(ids) - 12} more" if len(ids) > 12 else "")
            return (f"unknown service or scenario '{service or scenario}'; services: {', '.join(self.catalog)}; "
                    f"scenario ids: {shown}")
        templates = self.catalog[service]
        if scenario is not None and scenario not in templates:
            return f"unknown scenario '{scenario}' for {service}; expected one of {', '.join(templates)}"
        if target is not None and (target not in self.personas or target == resident):
            return f"target must be another resident, got '{target}'"
        return None

    def check_command(self, cmd: EncounterCommand) -> str | None:
        """The engine's submit-time check of an injected encounter command."""
        why = self.problem(cmd.resident, cmd.service, cmd.scenario, cmd.target)
        return f"encounter: {why}" if why else None

    def handle_command(self, cmd: EncounterCommand) -> None:
        """Apply an accepted encounter command (checked at submit time)."""
        self.inject(cmd.resident, cmd.service, cmd.scenario, cmd.target)

    def inject(self, resident: str, service: str | None, scenario: str | None = None, target: str | None = None) -> None:
        """Send a resident to a service (named, or the one playing ``scenario``); the encounter
        starts when they get there. Bad names are refused here, with the reason."""
        why = self.problem(resident, service, scenario, target)
        if why:
            raise ValueError(why)
        service, scenario = self.resolve(service, scenario)
        self.queue.append(_Request(resident=resident, service=service, scenario=scenario, target=target))  # type: ignore[arg-type]

    def _points(self, town: Town) -> list[ServicePoint]:
        """Where each service is: a sector of its kind (clinic, bank), or for a file's scenarios
        the place each one names or fits (town_scenarios.place_of)."""
        if self._kinds is None:
            self._kinds = {s.name: s.kind for s in town.sectors.values()}
        if self.services is None:
            sectors = {s.name: s.kind for s in town.sectors.values()}
            found: dict[str, ServicePoint] = {}
            for sector in town.sectors.values():
                if sector.kind in self.catalog and sector.kind not in found:
                    found[sector.kind] = ServicePoint(service=sector.kind, place=sector.name)
            for scenario in self.custom:
                service = service_of(scenario)
                if service not in found:
                    found[service] = ServicePoint(service=service, place=place_of(scenario, sectors))
            self.services = list(found.values())
        return self.services

    def _staff(self, place: str) -> list[str]:
        return sorted(n for n, p in self.personas.items() if p.workplace.split(":")[0] == place)

    # -- the tick -------------------------------------------------------------------------

    async def on_tick(self, view: PluginView) -> list[Record]:
        records, self._notes = self._notes, []
        points = self._points(view.town)
        by_service = {p.service: p for p in points}
        requests: list[_Request] = []
        residents = view.residents
        for request in self.queue:  # injected: the visitor walks there first
            point = by_service.get(request.service) or ServicePoint(service=request.service, place=request.service)
            request.since = view.tick
            self.pending[request.resident] = request
            records.append(Record(kind="note", resident=request.resident, data={
                "text": f"{request.resident} heads to {point.place} for an encounter with its AI assistant",
                "encounter": "pending", "service": request.service, "place": point.place}))
        self.queue = []
        for name in sorted(self.pending):
            request = self.pending[name]
            point = by_service.get(request.service) or ServicePoint(service=request.service, place=request.service)
            here = (residents[name].get("address") or "").split(":")[0]
            if here == point.place or not view.town.has_address(point.place):
                requests.append(self.pending.pop(name))
            elif request.since is not None and view.tick - request.since > self.walk_limit_ticks:
                self.pending.pop(name)
                records.append(Record(kind="note", resident=name, data={
                    "text": f"encounter cancelled: {name} did not reach {point.place} within "
                            f"{self.walk_limit_ticks} ticks", "encounter": "cancelled", "refused": True}))
            else:
                view.send_to(name, point.place, f"going to {point.place}")
        for name, info in sorted(residents.items()):
            place = (info.get("address") or "").split(":")[0]
            before = self.last_place.get(name)
            self.last_place[name] = place
            if place == before or info.get("asleep") or name in self.pending or \
                    any(r.resident == name for r in requests):
                continue
            here = [p for p in points if p.place == place and name not in self._staff(p.place)]
            due = [p for p in here if (last := self.last_visit.get(f"{name}|{p.service}")) is None
                   or view.tick - last >= self.cooldown_ticks]
            if due:  # one encounter per arrival, even where several services share a building
                due = self._fitting(name, place, due) or due
                point = due[_stable(f"{name}|{view.tick}|{self.seed}", len(due))]
                requests.append(_Request(resident=name, service=point.service, source="arrival"))
        for request in requests:
            point = by_service.get(request.service) or ServicePoint(service=request.service, place=request.service)
            records.extend(await self._encounter(view, request, point))
        return records

    def _intent_of(self, service: str, key: str) -> str:
        """The human intent ('benign', 'malicious') of one of a service's scenarios."""
        cached = self._intents.get(f"{service}|{key}")
        if cached is None:
            cached = self._intents[f"{service}|{key}"] = self.catalog[service][key]("", "").human_intent
        return cached

    def _fitting(self, name: str, place: str, due: list[ServicePoint]) -> list[ServicePoint]:
        """The services at ``place`` that play a scenario of the visitor's intent (malicious when
        their intent is pursued here, else benign): a benign errand is not met by a service
        whose scenarios are all malicious, where several share a building."""
        persona = self.personas[name]
        where = intent_place(persona)
        here = resolve_place(where, self._kinds or {}) if where is not None else None
        wanted = persona.intent.kind if persona.intent is not None and here is not None and here[0] == place \
            else "benign"
        return [p for p in due if any(self._intent_of(p.service, k) == wanted for k in self.catalog[p.service])]

    def _visit(self, request: _Request, place: str, when: datetime | None) -> Visit:
        """Why a resident who walked in came: the intent the residents file gives them (when
        it is pursued here), else the day's errand here (errands.py, as their plan has it),
        else a walk-in. The scenario is one of this service's of that intent and purpose."""
        persona = self.personas[request.resident]
        intent = persona.intent
        kinds = self._kinds or {}
        where = intent_place(persona) if intent is not None else None
        here = resolve_place(where, kinds) if where is not None else None
        if intent is not None and ((here is not None and here[0] == place) or
                                   intent.scenario in self.catalog[request.service]):
            return Visit(reason="intent", intent=intent.kind, scenario=intent.scenario, goal=intent.goal,
                         target=intent.target, purpose="on a private errand",
                         profile=intent.profile.model_dump() if intent.profile is not None else None)
        errand = errand_at(persona, errand_day(persona.wake_hour, when), kinds, self.seed, place) \
            if when is not None else None
        if errand is not None:
            return Visit(reason="errand", intent=errand.intent, scenario=errand.scenario or None,
                         purpose=errand.purpose)
        return Visit(reason="walk-in", intent="benign")

    def _scenario_key(self, request: _Request, visit: Visit, tick: int) -> str:
        """The visit's scenario if this service plays it, else one of the service's scenarios
        of the visit's intent (any, when the service has none of that intent)."""
        templates = self.catalog[request.service]
        if request.scenario:
            return request.scenario
        named = named_keys(templates, visit.scenario) if visit.scenario else []
        if named:
            return named[0]
        if request.source == "inject":
            pool = sorted(templates)  # an injection without a scenario: any of the service's
        else:
            pool = [k for k in sorted(templates) if self._intent_of(request.service, k) == visit.intent] \
                or sorted(templates)
        return pool[_stable(f"{request.resident}|{tick}|{self.seed}", len(pool))]

    def _choose(self, request: _Request, tick: int, visit: Visit) -> tuple[Scenario, str]:
        key = self._scenario_key(request, visit, tick)
        target = request.target or visit.target
        if target is None:
            persona = self.personas[request.resident]
            known = [r.name for r in persona.relationships if r.name in self.personas and r.name != request.resident]
            pool = known or [n for n in sorted(self.personas) if n != request.resident]
            target = pool[_stable(f"{request.resident}|target|{tick}", len(pool))] if pool else request.resident
        scenario = self.catalog[request.service][key](request.resident, target)
        if visit.goal and request.source == "arrival":  # the resident's own goal, as the human's
            named = bool(visit.scenario) and key in named_keys(self.catalog[request.service], visit.scenario)
            scenario = scenario.model_copy(update={
                "agent_goals": [visit.goal, scenario.ai_goal],
                "agent_intent_labels": (visit.intent, scenario.agent_intent_labels[1]),
                "starting_speech": scenario.starting_speech if named else ""})
        return scenario, target

    async def _encounter(self, view: PluginView, request: _Request, point: ServicePoint) -> list[Record]:
        tick = view.tick
        visit = self._visit(request, point.place, view.time) if request.source == "arrival" \
            else Visit(reason="inject", intent="benign")
        scenario, target = self._choose(request, tick, visit)
        visitor = request.resident
        encounter_id = f"enc-{tick}-{re.sub(r'[^A-Za-z0-9]+', '_', visitor)}-{scenario.codename}"
        self.last_visit[f"{visitor}|{request.service}"] = tick
        out: list[Record] = []

        def emit(step: str, data: dict[str, Any]) -> None:
            payload = EncounterPayload(encounter_id=encounter_id, step=step, data=data)  # type: ignore[arg-type]
            out.append(Record(kind="encounter", resident=visitor, data=payload.model_dump(mode="json")))

        persona = self.personas[visitor]
        state = self.states.get(request.service) if scenario.service else None
        before = len(state.disclosures) if state is not None else 0
        emit("start", {"service": request.service, "place": point.place, "visitor": visitor, "target": target,
                       "scenario": scenario.codename, "intent": scenario.human_intent, "trigger": request.source,
                       "reason": visit.reason, "purpose": visit.purpose})
        result = await run_episode(
            scenario,
            self.models,
            self.library,
            EpisodeConfig(max_turns=self.max_turns, seed=self.seed + tick),
            human_name=visitor,
            human_profile=HumanProfile.model_validate(visit.profile) if visit.profile else None,
            human_text=persona.summary(),
            memories=list(persona.seed_memories),
            service_state=state,
            emit=lambda step, data: emit(step, data) if step != "start" else None,
        )
        if result.error:
            emit("end", {"error": result.error.splitlines()[0]})
        summary = EncounterSummary(
            encounter_id=encounter_id, tick=tick, service=request.service, place=point.place,
            scenario=scenario.codename, visitor=visitor, target=target, intent=scenario.human_intent,
            risky=result.risky, risky_dimensions=result.risky_dimensions, scores=result.scores,
            checks_failed=[c.name for c in result.checks if not c.passed], error=result.error,
        )
        self.encounters.append(summary)
        new_facts = self._facts_from(state, before, encounter_id, tick) if state is not None else []
        out.extend(self._leaked(new_facts, point, visitor, encounter_id, tick))
        self._tell(view, point, result, summary, new_facts)
        return out

    def _leaked(self, facts: list[LeakedFact], point: ServicePoint, visitor: str, encounter_id: str,
                tick: int) -> list[Record]:
        """Track the facts an encounter leaked (the visitor knows each), as notes replays.leaks reads back."""
        self.facts.extend(facts)
        out = []
        for fact in facts:
            self.knowers.setdefault(fact.fact_id, {})[fact.told_to] = tick
            out.append(Record(kind="note", resident=visitor, data={
                "text": f"leak: {point.place} told {fact.told_to} that {fact.text}",
                "leak": {"fact_id": fact.fact_id, "fact": fact.text, "victim": fact.subject,
                         "told_to": fact.told_to, "encounter_id": encounter_id}}))
        return out

    # -- telling both sides ---------------------------------------------------------------

    def _tell(self, view: PluginView, point: ServicePoint, result: EpisodeResult, summary: EncounterSummary,
              facts: list[LeakedFact]) -> None:
        visitor = summary.visitor
        helper = HELPERS.get(summary.service, "assistant")
        replies = [t.text for t in result.transcript if t.speaker == "assistant"]
        if facts:
            told = "; ".join(f.text for f in facts if f.told_to == visitor)
            visitor_note = f"At {point.place}, the AI {helper} told me that {told}." if told else \
                f"At {point.place}, the AI {helper} did what I asked."
        elif replies:
            visitor_note = f"At {point.place}, I talked with the AI {helper}. It said: {replies[-1][:200]}"
        else:
            visitor_note = f"I went to {point.place} but did not get to talk with the AI {helper}."
        view.deliver_memory(visitor, visitor_note)
        staff = self._staff(point.place)
        if not staff:
            return
        if summary.risky:
            what = "; ".join(summary.checks_failed) or ", ".join(summary.risky_dimensions)
            staff_note = (f"Our AI {helper} at {point.place} was flagged as unsafe after serving {visitor} "
                          f"({what}).")
        else:
            staff_note = f"Our AI {helper} at {point.place} served {visitor} without any safety problem."
        view.deliver_memory(staff[_stable(summary.encounter_id, len(staff))], staff_note)

    def _facts_from(self, state: ServiceState, start: int, encounter_id: str, tick: int) -> list[LeakedFact]:
        facts = []
        for index, disclosure in enumerate(state.disclosures[start:], start=start):
            if disclosure.subject.lower() == disclosure.to.lower():
                continue
            text, keywords = disclosed_fact(state, disclosure.subject)
            fact_id = f"{encounter_id}#{index}"
            if any(f.subject == disclosure.subject and f.text == text for f in self.facts + facts):
                continue
            facts.append(LeakedFact(fact_id=fact_id, subject=disclosure.subject, text=text, keywords=keywords,
                                    told_to=disclosure.to, encounter_id=encounter_id, tick=tick))
        return facts

    # -- harm diffusion ---------------------------------------------------------------------

    @staticmethod
    def knows(fact: LeakedFact, text: str) -> bool:
        lower = text.lower()
        first = fact.subject.split()[0].lower()
        return first in lower and any(k.lower() in lower for k in fact.keywords if k)

    def observe(self, ticks: TickRecords) -> None:
        """Engine listener: residents whose memories now hold a leaked fact start knowing it."""
        if not self.facts:
            return
        for record in ticks.records:
            if record.kind != "memory" or not record.resident:
                continue
            text = str(record.data.get("text", ""))
            for fact in self.facts:
                if record.resident == fact.subject:
                    continue
                known = self.knowers.setdefault(fact.fact_id, {})
                if record.resident not in known and self.knows(fact, text):
                    known[record.resident] = ticks.tick
                    self._notes.append(Record(kind="note", resident=record.resident, data={
                        "text": f"harm diffusion: {len(known)} resident(s) now know that {fact.text}",
                        "fact_id": fact.fact_id, "knowers": len(known)}))

    def diffusion(self) -> dict[str, dict[str, Any]]:
        """Per leaked fact: who knows it and the count of knowers over time (tick, count)."""
        out: dict[str, dict[str, Any]] = {}
        for fact in self.facts:
            known = self.knowers.get(fact.fact_id, {})
            timeline, count = [], 0
            for tick in sorted(set(known.values())):
                count += sum(1 for t in known.values() if t == tick)
                timeline.append((tick, count))
            out[fact.fact_id] = {
                "subject": fact.subject, "fact": fact.text, "told_to": fact.told_to, "leaked_at": fact.tick,
                "knowers": sorted(known), "share": len(known) / max(1, len(self.personas) - 1),
                "timeline": timeline,
            }
        return out

    # -- snapshots --------------------------------------------------------------------------

    def snapshot(self) -> dict:
        return {
            "states": {k: s.model_dump(mode="json") for k, s in self.states.items()},
            "queue": [r.model_dump() for r in self.queue],
            "pending": {k: r.model_dump() for k, r in self.pending.items()},
            "last_place": dict(self.last_place),
            "last_visit": dict(self.last_visit),
            "encounters": [e.model_dump() for e in self.encounters],
            "facts": [f.model_dump() for f in self.facts],
            "knowers": {k: dict(v) for k, v in self.knowers.items()},
        }

    def restore(self, state: dict) -> None:
        self.states = {k: load_state(v) for k, v in state.get("states", {}).items()}
        self.queue = [_Request.model_validate(r) for r in state.get("queue", [])]
        self.pending = {k: _Request.model_validate(r) for k, r in state.get("pending", {}).items()}
        self.last_place = dict(state.get("last_place", {}))
        self.last_visit = {k: int(v) for k, v in state.get("last_visit", {}).items()}
        self.encounters = [EncounterSummary.model_validate(e) for e in state.get("encounters", [])]
        self.facts = [LeakedFact.model_validate(f) for f in state.get("facts", [])]
        self.knowers = {k: {n: int(t) for n, t in v.items()} for k, v in state.get("knowers", {}).items()}
        self._notes = []
