"""The generative resident: a Mind (maps.contracts) built on the paper's architecture.

Each tick the engine calls :meth:`Resident.decide_fast`. It takes in the perception (new
events become observation memories waiting for importance, whispers become the resident's
own high-importance thought, places seen are learned) and, when nothing needs judgement,
follows the current step with no model call: walk to the step's place, use its object,
carry on, sleep. It returns None only at a decision point — a line heard, something worth
reacting to, a new day, the end of the decomposed steps, a conversation gone quiet, or
memories waiting too long for importance — and then the engine awaits :meth:`decide`,
which makes the model calls (importance batch, reflection, planning, reaction,
conversation) and returns the Intent.

Everything a mind writes or plans is handed to the engine through :meth:`drain_records`;
:meth:`snapshot` / :meth:`restore` carry the rest of its state across checkpoints.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field

from agents.minds.cognition.calls import Caller
from agents.minds.cognition.conversation import answer_again, close_conversation, on_heard, take_back, timed_out
from agents.minds.cognition.gatherings import event_steps, learn, not_now_words, settle, slots, undecided, with_events
from agents.minds.cognition.importance import RESTING_IMPORTANCE, ImportanceRater
from agents.minds.state import MindSnapshot, MindState, PendingMemory, dump_snapshot, load_snapshot
from agents.minds.cognition.life_events import prior_for
from agents.minds.cognition.planning import (
    Block,
    Step,
    block_at,
    day_key,
    decompose,
    is_awake,
    plan_day,
    plans_query,
    sleep_step,
    work_room,
)
from agents.minds.cognition.reacting import react
from agents.minds.cognition.reflection import reflect
from agents.minds.cognition.visits import plan_visit, visit_steps
from maps.contracts import Intent, LanguageModel, MindOptions, PerceivedEvent, Perception, Persona
from memory.social import SocialMemory
from memory.embeddings import CachedEmbedder, get_embedder
from memory.retrieval import RetrievalConfig
from memory.spatial import SpatialMemory, arena_of, split_address
from memory.store import MemoryDraft, MemoryRecord, MemoryStore
from maps.contracts import MemoryPayload, PlanPayload, Record

_URGENT = ("fire", "burning", "emergency", "help!", "hurt", "injured", "screaming", "flood")
_PUBLIC = ("cafe", "café", "pub", "bar", "park", "store", "shop", "market", "college", "school",
           "library", "clinic", "hospital", "bank", "plaza", "square", "town hall", "church", "bakery",
           "grocer", "supply", "post office")


class Tuning(BaseModel):
    """Budgets and cadences of a resident (paper values where the paper gives one)."""

    max_chat_lines: int = Field(default=8, ge=2, description="lines per conversation, both sides")
    reply_timeout_ticks: int = Field(default=6, ge=1)
    talk_cooldown_min: int = Field(default=180, ge=0, description="before talking to the same person again")
    chat_gap_min: int = Field(default=45, ge=0, description="after any conversation before starting another")
    react_cooldown_min: int = Field(default=30, ge=0, description="per subject seen")
    importance_batch_max: int = Field(default=12, ge=1)
    importance_max_age_min: int = Field(default=30, ge=1)
    reflection_threshold: float = Field(default=150.0, gt=0)
    window_min: int = Field(default=120, ge=15, description="decomposition window (just in time)")
    seen_window_min: int = Field(default=60, ge=0, description="an identical observation is skipped")


@lru_cache(maxsize=4)
def _sectors(town: tuple[str, ...]) -> list[tuple[str, str, bool]]:
    """(sector, its lower case, public) per address of the town, read once for all its residents
    (per resident it was the town's size again: a quarter of a 1,000-resident town's set-up)."""
    rows = []
    for address in town:
        sector = split_address(address)[0]
        lower = sector.lower()
        rows.append((sector, lower, any(word in lower for word in _PUBLIC)))
    return rows


class Resident:
    """One resident's mind; holds its own memory, never touches world state."""

    def __init__(
        self,
        persona: Persona,
        llm: LanguageModel,
        run_db: Path | str | None,
        options: MindOptions,
        *,
        embedder: CachedEmbedder | None = None,
        retrieval: RetrievalConfig | None = None,
        tuning: Tuning | None = None,
    ):
        self.name = persona.name
        self.persona = persona
        self.options = options
        self.state = MindState(now=options.start_time or MindState().now)
        self.tuning = tuning or Tuning()
        self.summary = persona.summary()
        self.run_db = Path(run_db) if run_db is not None else None
        self.caller = Caller(llm, self.name)
        self.memory_on = options.ablation != "no_observation"
        self.reflection_on = options.ablation == "full"
        embedder = embedder or get_embedder()
        embedder.warm()  # the model loads while the town is built, not inside the first tick
        self.memory = MemoryStore(self.run_db, self.name, embedder=embedder, config=retrieval)
        self.memory.register_resident(persona.model_dump_json(), options.model_dump_json())
        self.spatial = SpatialMemory(options.places, self._initial_places(options.places))
        self.social = SocialMemory(persona, self.memory.conn)
        self.rater = ImportanceRater(self.caller, self.summary, self.name, self.tuning.importance_batch_max,
                                     events=prior_for(embedder))
        self._records: list[Record] = []
        self._forget_tick_caches()
        self.memory.prefetch([plans_query(persona.name)])  # the first decision plans the day

    def _forget_tick_caches(self) -> None:
        """Caches of per-tick answers that only change now and then (the fast path runs ~170k
        times in a 25-resident day); all are derived from the state, so a restore drops them."""
        self._absorbed_tick: int | None = None
        self._learned_address = ""  # the last address taken in by spatial memory
        self._clock_at: tuple[datetime | None, bool, date | None] = (None, False, None)  # time, awake, day
        self._step_span: tuple[list[Step], Step, datetime, datetime] | None = None  # steps list, step, start, end
        self._steady: tuple[Step, str, Intent] | None = None  # the step's carry-on intent, built once

    # -- places ----------------------------------------------------------------------------------

    def _initial_places(self, town: list[str]) -> list[str]:
        """Home, workplace, the town's public places, and places the persona mentions."""
        p = self.persona
        if not town:
            return [p.home, p.workplace]
        known = [split_address(p.home)[0], split_address(p.workplace)[0]]
        blob = " ".join([p.lifestyle, *p.seed_memories]).lower()
        known += [sector for sector, lower, public in _sectors(tuple(town)) if public or (lower and lower in blob)]
        return known

    def home_arena(self) -> str:
        return self._arena_for(self.persona.home, prefer=("bed", "living", "kitchen"))

    def own_flat(self) -> str:
        """The home when it is a flat of a shared building ('Elm Apartments:apartment 2': no kitchen
        outside it, so the other flats there are other people's homes), else ''. A room of a
        family house ('Oak House:second bedroom') is not one: the house's kitchen is shared."""
        home = self.persona.home
        return home if ":" in home and self.meal_arena() == self.home_arena() else ""

    def meal_arena(self) -> str:
        """Where the home eats: its kitchen or dining room (a home may be one bedroom of a house)."""
        sector = split_address(self.persona.home)[0]
        under = [a for a in self.spatial.arenas() if a.startswith(sector + ":")]
        for word in ("kitchen", "dining"):
            for arena in under:
                if word in arena.lower():
                    return arena
        return self.home_arena()

    def work_arena(self) -> str:
        """The workplace's room; a whole building is worked in its public room (work_room)."""
        return work_room(self.persona.workplace, self.spatial.arenas()) or self._arena_for(self.persona.workplace, prefer=())

    def _arena_for(self, address: str, prefer: tuple[str, ...]) -> str:
        arenas = self.spatial.arenas()
        if address in arenas:
            return address
        under = [a for a in arenas if a.startswith(split_address(address)[0] + ":")]
        for word in prefer:
            for a in under:
                if word in a.lower():
                    return a
        return under[0] if under else (arenas[0] if arenas else address)

    def arena_here(self, p: Perception) -> str:
        return arena_of(p.address) if p.address else ""

    def learn_places_from(self, text: str) -> None:
        self.spatial.learn_sectors_named_in(text)

    @staticmethod
    def _at(p: Perception, arena: str) -> bool:
        if not p.address:
            return False
        return arena_of(p.address) == arena or p.address == arena or p.address.startswith(arena + ":")

    # -- memory helpers ----------------------------------------------------------------------------

    async def memory_for(self, queries: str | list[str], k: int) -> list[MemoryRecord]:
        if not self.memory_on or not queries:
            return []
        return await self.memory.aretrieve(queries, self.state.now, self.state.tick, k)

    def remember_pending(self, kind: str, text: str, triple: tuple[str, str, str] | None = None,
                         importance: int | None = None) -> None:
        """A memory waiting to be written; rated with the next batch unless ``importance`` is given."""
        if self.memory_on and text.strip():
            self.state.pending.append(PendingMemory(kind=kind, text=text.strip(), tick=self.state.tick, time=self.state.now,
                                                    triple=triple, importance=importance))
            self.memory.prefetch([text.strip()])  # embedded while it waits to be rated and written

    def remember_fixed(self, kind: str, text: str, importance: int, evidence: list[int] | None = None) -> int | None:
        """Write a memory whose importance is already known (no model call)."""
        if not self.memory_on or not text.strip():
            return None
        draft = MemoryDraft(kind=kind, text=text.strip(), importance=min(10, max(1, int(importance))),
                            evidence=list(evidence or []))
        record = self.memory.add(draft, self.state.tick, self.state.now)
        self._emit_memory(record)
        return record.id

    def _emit_memory(self, record: MemoryRecord) -> None:
        if record.kind != "reflection":
            self.state.importance_since_reflection += record.importance
        payload = MemoryPayload(memory_id=record.id, kind=record.kind, text=record.text,
                                importance=record.importance, evidence=record.evidence)
        self._records.append(Record(kind="memory", resident=self.name, data=payload.model_dump()))

    def emit_plan(self, level: str, items: list[str]) -> None:
        self._records.append(Record(kind="plan", resident=self.name, data=PlanPayload(level=level, items=items).model_dump()))

    async def flush(self) -> None:
        """Rate every waiting memory (one batched call) and write them all."""
        if not self.state.pending:
            return
        pending, self.state.pending = self.state.pending, []
        await self.rater.rate(pending)
        by_time: dict[tuple[int, datetime], list[PendingMemory]] = {}
        for item in pending:
            by_time.setdefault((item.tick, item.time), []).append(item)
        for (tick, when), items in by_time.items():
            drafts = [MemoryDraft(kind=i.kind, text=i.text, importance=i.importance or 3, triple=i.triple,
                                  evidence=i.evidence) for i in items]
            for record in self.memory.add_many(drafts, tick, when):
                self._emit_memory(record)

    def _flush_due(self) -> bool:
        if not self.state.pending:
            return False
        if len(self.state.pending) >= self.tuning.importance_batch_max:
            return True
        age = self.state.now - self.state.pending[0].time
        return age >= timedelta(minutes=self.tuning.importance_max_age_min)

    # -- perception --------------------------------------------------------------------------------

    def can_talk_to(self, other: str, now: datetime) -> bool:
        if self.state.convo is not None:
            return False
        if self.state.last_chat_end and now - self.state.last_chat_end < timedelta(minutes=self.tuning.chat_gap_min):
            return False
        last = self.state.last_talk.get(other)
        return last is None or now - last >= timedelta(minutes=self.tuning.talk_cooldown_min)

    def _awake(self, now: datetime) -> bool:
        return self._clock(now)[1]

    def _planning_day(self, now: datetime) -> date:
        """The planning day ``now`` belongs to (days start at the wake hour)."""
        return self._clock(now)[2]  # type: ignore[return-value]

    def _clock(self, now: datetime) -> tuple[datetime | None, bool, date | None]:
        """(now, awake, day), computed once per tick's time."""
        clock = self._clock_at
        if clock[0] is not now:
            wake = self.persona.wake_hour
            clock = self._clock_at = (now, is_awake(wake, self.persona.sleep_hour, now), day_key(wake, now))
        return clock

    def _absorb(self, p: Perception) -> None:
        """Take in a perception once per tick (decide_fast and decide may both see it)."""
        if self._absorbed_tick == p.tick:
            return
        self._absorbed_tick = p.tick
        self.state.now, self.state.tick = p.time, p.tick
        if p.unsaid:
            take_back(self, p.unsaid)
        if not self.state.started:
            self.state.started = True
            self.social.record_start(p.tick)
            if not len(self.memory):
                for text in self.persona.seed_memories:
                    self.remember_pending("thought", text)
                    learn(self, text, "", self.name)  # 'I am planning a party at ...': my own event
        if p.known_places:
            self.spatial.learn(p.known_places)
        if p.address and p.address != self._learned_address:
            self._learned_address = p.address
            self.spatial.learn([arena_of(p.address)])
        for whisper in p.whispers:
            # the inner voice is taken as the resident's own, high-importance thought
            self.remember_fixed("whisper", whisper, 9)
            self.learn_places_from(whisper)
            learn(self, whisper, "whisper", self.name)
            self.state.triggers.append(f"A thought: {whisper}")
        for text in p.announcements:
            self.remember_pending("observation", f"Announcement: {text}")
            self.learn_places_from(text)
            learn(self, text, "announcement")
            self.state.triggers.append(f"Town announcement: {text}")
        for text in p.memories:
            self.remember_pending("encounter", text)
        if p.events:
            self._observe(p)
        if len(self.state.seen) > 500:
            cutoff = p.time - timedelta(minutes=self.tuning.seen_window_min)
            self.state.seen = {t: w for t, w in self.state.seen.items() if w >= cutoff}

    def _observe(self, p: Perception) -> None:
        """The events in view become observations (unless just seen), and maybe triggers."""
        recent = {m.text for m in self.memory.recent(5)} | {m.text for m in self.state.pending[-5:]}
        awake = self._awake(p.time)
        for event in p.events:
            if event.subject == self.name:
                continue
            text = event.description.strip()
            seen = self.state.seen.get(text)
            if text in recent or (seen and p.time - seen < timedelta(minutes=self.tuning.seen_window_min)):
                continue
            self.state.seen[text] = p.time
            if self.options.ablation != "no_observation":
                # an object at rest is the original code's 'idle' object: 1, no model call
                self.remember_pending("observation", text, (event.subject, event.predicate, event.object),
                                      RESTING_IMPORTANCE if event.resting else None)
            if self._worth_reacting(event, p, awake):
                self.state.triggers.append(text)

    def _worth_reacting(self, event: PerceivedEvent, p: Perception, awake: bool) -> bool:
        lower = event.description.lower()
        if any(word in lower for word in _URGENT):
            return True
        if not awake or self.state.convo is not None:
            return False
        subject = event.subject
        if subject not in p.nearby or not self.can_talk_to(subject, p.time):
            return False
        seen = self.state.react_seen.get(subject)
        if seen and p.time - seen < timedelta(minutes=self.tuning.react_cooldown_min):
            return False
        self.state.react_seen[subject] = p.time
        return True

    # -- the Mind protocol -----------------------------------------------------------------------------

    def decide_fast(self, perception: Perception) -> Intent | None:
        """Follow the current step with no model call, or None at a decision point."""
        self._absorb(perception)
        if self._needs_decision(perception):
            return None
        if self.state.convo is not None:  # listening is talking too: no walking off mid-conversation
            return self._talking()
        return self._follow(perception)

    def quiet_until(self, now: datetime) -> datetime | None:
        """Until when :meth:`decide_fast`, given the same perception again (nothing new in view,
        nothing heard), carries on with the current step and changes nothing: the step's end,
        when the waiting memories are due to be rated, and the next full hour (waking and sleep
        go by the hour). None while anything could make the next tick a decision: a talk, a
        trigger, a re-plan, an event not decided on, a reflection due, a step not yet under way.
        The engine skips this resident meanwhile (world/engine.py, quiet residents)."""
        s = self.state
        if (s.convo is not None or s.triggers or s.replan_reason or s.phase != "doing"
                or (s.events and undecided(self))
                or (self.reflection_on and s.importance_since_reflection >= self.tuning.reflection_threshold)
                or len(s.pending) >= self.tuning.importance_batch_max or not self._awake(now)
                or s.day != self._planning_day(now)):
            return None
        step = self._step_at(now)
        current = s.current
        if step is None or step.sleep or current is None or (current.start, current.description) != (
                step.start, step.description):
            return None
        until = min(step.end, now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1))
        if s.pending:
            until = min(until, s.pending[0].time + timedelta(minutes=self.tuning.importance_max_age_min))
        return until if until > now else None

    def _talking(self) -> Intent:
        """The intent of a resident in a conversation between its own lines."""
        self._interrupt()
        return Intent(kind="wait", description=f"talking with {self.state.convo.partner}", emoji="💬")

    def _interrupt(self) -> None:
        """Standing still to talk ends the walk and lets go of the object in use (world rules), so
        the current step must be taken up again afterwards: walked to, or its object used again.
        Without this a resident stopped on the way to bed stood in the kitchen 'sleeping' all night."""
        if self.state.phase in ("walking", "doing"):
            self.state.phase = "interrupted"

    def _needs_decision(self, p: Perception) -> bool:
        if any(h.listener == self.name for h in p.heard):
            return True
        if self.state.convo is not None:
            return self.state.convo.owed or timed_out(self, p)
        if self.state.triggers or self._flush_due():
            return True
        if self.state.events and undecided(self):
            return True
        if self.reflection_on and self.state.importance_since_reflection >= self.tuning.reflection_threshold:
            return True
        if self._awake(p.time):
            if self.state.day != self._planning_day(p.time) or self.state.replan_reason:
                return True
            if self._step_at(p.time) is None:
                return True
        return False

    async def decide(self, perception: Perception) -> Intent:
        """A decision point: the model calls, then the Intent for this tick."""
        intent = await self._decide(perception)
        if intent.kind in ("say", "wait"):
            self._interrupt()
        return intent

    async def _decide(self, p: Perception) -> Intent:
        self._absorb(p)
        await self.flush()
        if self.state.events and undecided(self):
            await settle(self)
        if self.reflection_on and self.state.importance_since_reflection >= self.tuning.reflection_threshold:
            await reflect(self)
        heard = [h for h in p.heard if h.listener == self.name]
        if heard:
            intent = await on_heard(self, heard, p)
            if intent is not None:
                return intent
        elif self.state.convo is not None and self.state.convo.owed:
            intent = await answer_again(self, p)
            if intent is not None:
                return intent
        elif self.state.convo is not None and timed_out(self, p):
            await close_conversation(self, p)
        if self.state.convo is not None:
            return self._talking()
        awake = self._awake(p.time)
        if awake and self.state.day != self._planning_day(p.time):
            await plan_day(self, p.time)
        if self.state.triggers:
            observed, self.state.triggers = self.state.triggers[-3:], []
            intent = await react(self, p, observed)
            if intent is not None:
                return intent
        if awake and self.state.replan_reason:
            await self._replan_rest(p.time, self.state.replan_reason)
        if awake and self._step_at(p.time) is None:
            await self._extend_steps(p.time)
        return self._follow(p)

    def drain_records(self) -> list[Record]:
        out = self._records + self.caller.records
        self._records, self.caller.records = [], []
        return out

    # -- steps -----------------------------------------------------------------------------------

    def _step_at(self, now: datetime) -> Step | None:
        if not self._awake(now):
            if self.state.sleep is None or not (self.state.sleep.start <= now < self.state.sleep.end):
                self.state.sleep = sleep_step(self, now)
            return self.state.sleep
        steps, span = self.state.steps, self._step_span
        if span is not None and span[0] is steps and span[2] <= now < span[3]:
            return span[1]
        for step in steps:
            start, end = step.start, step.end
            if start <= now < end:
                self._step_span = (steps, step, start, end)
                return step
        return None

    async def _extend_steps(self, now: datetime) -> None:
        start = now.replace(second=0, microsecond=0)
        block = block_at(self, now)
        if block is None:  # past the schedule's end while still awake: one open block
            block = Block(start=start, minutes=60, activity="winding down for the day")
        end = min(block.end, start + timedelta(minutes=self.tuning.window_min))
        if block.end - end < timedelta(minutes=15):
            end = block.end  # no stub window at the end of a block
        if end <= start:
            end = start + timedelta(minutes=15)
        if block.event:  # a gathering's slot: at the venue, no decomposition
            self.state.steps = event_steps(self, block, start)
            return
        if block.visit:  # out to tell people: walk there and stay (visits.py)
            self.state.steps = visit_steps(self, block, start)
            return
        self.state.steps = await decompose(self, block.activity, start, end)

    def not_on(self, start: datetime, end: datetime) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(venue, words) of the gatherings I know that are not on at any moment of [start, end)."""
        return not_now_words(self, start, end)

    def make_room(self, blocks: list[Block]) -> list[Block]:
        """The day's blocks with a slot for each gathering this resident goes to that day (the
        skeleton gives the slot; whether to go was the model's choice), remembered as planned."""
        if not blocks or not self.state.events:
            return blocks
        day_slots = slots(self, blocks[0].start.date(), blocks[0].start, blocks[-1].end)
        if not day_slots:
            return blocks
        lines = [f"{start:%H:%M} {activity}" for start, _end, activity, _key in day_slots]
        self.state.day_plan = sorted(self.state.day_plan + lines, key=lambda l: (len(l.split(":")[0]), l))
        self.remember_fixed("plan", f"My plan for {blocks[0].start:%A} also has: " + "; ".join(lines), 6)
        return with_events(blocks, day_slots)

    async def seek_out(self, blocks: list[Block]) -> list[Block]:
        """The day's blocks with an hour out to tell people of its own news (visits.py)."""
        if self.options.ablation in ("no_reflection_planning", "no_observation"):
            return blocks
        return await plan_visit(self, blocks)

    async def _replan_rest(self, now: datetime, reason: str) -> None:
        """After a conversation that matters, the rest of the window is planned again."""
        self.state.replan_reason = ""
        step = self._step_at(now)
        block = block_at(self, now)
        if block is None or step is None or step.sleep:
            return
        start = now.replace(second=0, microsecond=0)
        if block.event:  # at a gathering, what is on my mind is talked about there
            self.state.steps, self.state.current = event_steps(self, block, start), None
            return
        if block.visit:  # out telling people: stay there
            self.state.steps, self.state.current = visit_steps(self, block, start), None
            return
        end = max(self.state.steps[-1].end if self.state.steps else block.end, start + timedelta(minutes=15))
        self.state.steps = await decompose(self, block.activity, start, end, context=[f"On my mind: {reason}"])
        self.state.current = None

    def _follow(self, p: Perception) -> Intent:
        """The no-model path: walk to the step's place, use its object, carry on."""
        step = self._step_at(p.time)
        if step is None:
            return Intent(kind="wait", description="thinking about what to do next", emoji="🤔")
        base = {"description": step.description, "emoji": step.emoji, "event": step.event}
        current = self.state.current
        if current is None or (current.start, current.description) != (step.start, step.description) \
                or self.state.phase == "interrupted":
            self.state.current = step
            if self._at(p, step.arena):
                self.state.phase = "doing"
                return self._use(step, base)
            self.state.phase = "walking"
            return Intent(kind="go", target=step.object or step.arena, **base)
        if self.state.phase == "walking":
            if p.arrived or self._at(p, step.arena):
                self.state.phase = "doing"
                return self._use(step, base)
            return self._carry_on(step, "continue", base)
        return self._carry_on(step, "sleep" if step.sleep else "continue", base)

    def _carry_on(self, step: Step, kind: str, base: dict) -> Intent:
        """The same intent every tick while a step goes on: built (and validated) once."""
        steady = self._steady
        if steady is None or steady[0] is not step or steady[1] != kind:
            steady = self._steady = (step, kind, Intent(kind=kind, **base))
        return steady[2]

    @staticmethod
    def _use(step: Step, base: dict) -> Intent:
        if step.object:
            return Intent(kind="use", target=step.object, object_state=step.object_state, **base)
        return Intent(kind="sleep" if step.sleep else "continue", **base)

    # -- checkpoints ------------------------------------------------------------------------------------

    def snapshot(self) -> dict:
        """Everything but the memory rows (those are in the run file, cut back by tick)."""
        # built without validation: the state is already valid (it is validated on restore),
        # and a snapshot of 25 minds every 60 ticks was a tenth of a town day's time
        return dump_snapshot(MindSnapshot.model_construct(
            **dict(self.state), name=self.name, spatial=self.spatial.to_dict(), social=self.social.to_dict(),
            rated=dict(self.rater.known),
        ))

    def restore(self, state: dict) -> None:
        """Back to a snapshot; memory is reloaded as it was at the snapshot's tick."""
        if state.get("name") not in (None, self.name):
            raise ValueError(f"snapshot is of {state.get('name')!r}, not {self.name!r}")
        snapshot = load_snapshot(state)
        self.state = MindState.model_validate(snapshot.model_dump(include=set(MindState.model_fields)))
        self.memory.rollback_to(self.state.tick)
        self.spatial.restore(snapshot.spatial)
        self.social.restore(snapshot.social)
        self.rater.known = dict(snapshot.rated)
        self._forget_tick_caches()
        self._records, self.caller.records = [], []


def make_mind(
    persona: Persona,
    llm: LanguageModel,
    run_db: Path | str | None,
    options: MindOptions,
    **kwargs,
) -> Resident:
    """The MindFactory the engine uses: one generative resident per persona.

    Extra keyword arguments (embedder, retrieval, tuning) are for tests and benchmarks; the
    embedder defaults to $TOWNSFOLK_EMBEDDER (minilm unless set to hashing).
    """
    return Resident(persona, llm, run_db, options, **kwargs)
