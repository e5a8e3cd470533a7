"""A deterministic, LLM-free resident: home at night, work by day, real places, greetings.

It is the engine's test double and the fallback mind when the generative one is not
available, and it is what `townsfolk bench engine` measures the engine with. Its day is a
schedule of blocks derived from the persona (wake and sleep hours, home, workplace) with a
little per-day variety drawn from a seeded hash, so the same seed gives the same day.
It satisfies :class:`maps.contracts.Mind`; build it with :func:`make_mind`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from maps.contracts import ChatLine, Intent, LanguageModel, MindOptions, Perception, Persona
from maps.contracts import Record
from agents.minds.state import RoutineState
from maps.contracts import stable_hash as _h

CONTINUE = Intent()
STRANGER_GREETINGS = 6  # people without a relationship greeted per day, at most


_VENUES: list = []  # [(the options' kinds dict, kind -> [(sector, centre)])]: shared like _PLACES


def _venues(options: MindOptions) -> dict[str, list[tuple[str, tuple[int, int] | None]]]:
    """Each kind of place -> its sectors with their centre tiles (None when not given), in
    name order, built once per town."""
    kinds = options.place_kinds
    if _VENUES and _VENUES[0][0] is kinds:
        return _VENUES[0][1]
    out: dict[str, list[tuple[str, tuple[int, int] | None]]] = {}
    for sector in sorted(kinds):
        out.setdefault(kinds[sector], []).append((sector, options.sector_centres.get(sector)))
    _VENUES[:] = [(kinds, out)]
    return out


def nearest(sectors: list[tuple[str, tuple[int, int] | None]], origin: tuple[int, int] | None) -> str:
    """The sector whose centre is fewest tiles (Manhattan) from ``origin``; ties, and sectors or
    an origin with no known centre, go by name."""
    def distance(item: tuple[str, tuple[int, int] | None]) -> tuple[int, str]:
        sector, centre = item
        if origin is None or centre is None:
            return (0, sector)
        return (abs(centre[0] - origin[0]) + abs(centre[1] - origin[1]), sector)
    return min(sectors, key=distance)[0]


@dataclass(frozen=True)
class Block:
    """One stretch of the day: where to be and what to do there."""

    label: str
    start: int  # minute of day
    end: int
    target: str  # address to go to
    use: str | None  # object to use there, if any
    state: str
    description: str
    emoji: str
    sleep: bool = False


_PLACES: list = []  # [(a places list, its index)]: the minds of one town share one


def _places_index(places: list[str]) -> tuple[frozenset[str], dict[str, list[str]]]:
    """(the places as a set, sector or 'sector:arena' -> the object addresses under it, in
    list order), built once per places list: each mind scanning the town's addresses made
    a 10,000-resident town's set-up quadratic."""
    if _PLACES and _PLACES[0][0] is places:
        return _PLACES[0][1]
    under: dict[str, list[str]] = {}
    for a in places:
        if a.count(":") == 2:
            sector, arena, _ = a.split(":")
            under.setdefault(sector, []).append(a)
            under.setdefault(f"{sector}:{arena}", []).append(a)
    index = (frozenset(places), under)
    _PLACES[:] = [(places, index)]
    return index


class RoutineMind:
    """See module docstring. ``decide_fast`` answers every tick except at block changes and
    when someone speaks to it; ``decide`` handles those decision points."""

    def __init__(self, persona: Persona, options: MindOptions | None = None) -> None:
        self.persona = persona
        self.name = persona.name
        self.options = options or MindOptions()
        places = self.options.places
        self._places = places
        self._home_sector = persona.home.split(":")[0]
        self.bed = self._find(persona.home, ("bed",)) or persona.home
        # a home may be one's own bedroom in a shared house: eat and sit in the house's rooms
        self.kitchen = (self._find(persona.home, ("stove", "fridge", "kitchen table", "table"))
                        or self._find(self._home_sector, ("stove", "fridge", "kitchen table", "table")) or persona.home)
        self.lounge = (self._find(persona.home, ("sofa", "armchair", "tv", "radio", "table"))
                       or self._find(self._home_sector, ("sofa", "armchair", "tv", "radio", "table")) or persona.home)
        self.work = self._find(persona.workplace, ()) or persona.workplace
        # lunch at the cafe nearest work, evenings at the park or pub nearest home: in a town of
        # thousands everyone walking to one cafe is neither a town nor a linear cost
        self.lunch = self._venue("cafe", persona.workplace, "dining room", "Willow Cafe") or persona.workplace
        self.leisure = [a for a in (self._venue("park", persona.home, "lawn", "Willow Park"),
                                    self._venue("pub", persona.home, "bar room", "The Crooked Pub")) if a]
        self.state = RoutineState()
        self._blocks: list[Block] = []
        self._friends = frozenset(rel.name for rel in persona.relationships)
        self._strangers = 0  # strangers greeted today
        self._memo_key: tuple | None = None  # the block is recomputed once per game minute
        self._memo_block: Block | None = None
        self._records: list[Record] = []

    # -- places --------------------------------------------------------------

    def _first(self, candidates: tuple[str, ...]) -> str | None:
        if not self._places:
            return None
        known = _places_index(self._places)[0]
        for c in candidates:
            if c in known:
                return c
        return None

    def _venue(self, kind: str, near: str, arena: str, by_name: str) -> str | None:
        """The room ``arena`` (else the whole sector) of the sector of ``kind`` nearest to
        ``near``'s sector; without the town's kinds, the sector called ``by_name``."""
        sectors = _venues(self.options).get(kind)
        if not sectors:
            return self._first((f"{by_name}:{arena}", by_name))
        origin = self.options.sector_centres.get(near.split(":")[0])
        sector = nearest(sectors, origin)
        return self._first((f"{sector}:{arena}", sector))

    def _find(self, base: str, names: tuple[str, ...]) -> str | None:
        """An object under ``base`` (by preferred names, else the first one)."""
        under = _places_index(self._places)[1].get(base, []) if self._places else []
        for n in names:
            for a in under:
                if a.rsplit(":", 1)[1] == n:
                    return a
        if names:
            return None
        return under[0] if under else None

    # -- the day ---------------------------------------------------------------

    def _awake_at(self, minute: int) -> bool:
        w, s = self.persona.wake_hour * 60, self.persona.sleep_hour * 60
        if s > w:
            return w <= minute < s
        return minute >= w or minute < s

    def _plan(self, day: date) -> list[Block]:
        p = self.persona
        w = p.wake_hour * 60
        s = p.sleep_hour * 60 if p.sleep_hour > p.wake_hour else 24 * 60 - 1
        r = _h(self.options.seed, self.name, day.isoformat())
        blocks: list[Block] = []

        def add(label: str, start: int, end: int, target: str, use: str | None, state: str, desc: str, emoji: str) -> None:
            if end > start:
                blocks.append(Block(label, start, end, target, use, state, desc, emoji))

        breakfast_end = w + 45 + r % 20
        add("breakfast", w, breakfast_end, self.kitchen, self.kitchen if self.kitchen.count(":") == 2 else None,
            "cooking breakfast", "having breakfast", "🍳")
        work_end = min(breakfast_end + 8 * 60 + (r >> 4) % 60, s - 120)
        lunch = 12 * 60 + (r >> 8) % 30
        if breakfast_end < lunch < work_end - 60 and self.lunch.split(":")[0] != self.persona.workplace.split(":")[0]:
            add("work", breakfast_end, lunch, self.work, self._obj(self.work), "in use", f"working as {p.occupation}", "💼")
            add("lunch", lunch, lunch + 45, self.lunch, None, "", "having lunch", "🥪")
            add("work2", lunch + 45, work_end, self.work, self._obj(self.work), "in use", f"working as {p.occupation}", "💼")
        else:
            add("work", breakfast_end, work_end, self.work, self._obj(self.work), "in use", f"working as {p.occupation}", "💼")
        evening_end = max(work_end, s - 60)
        if self.leisure and (r >> 12) % 3:
            spot = self.leisure[(r >> 14) % len(self.leisure)]
            add("leisure", work_end, evening_end, spot, None, "",
                "relaxing in the park" if "Park" in spot else "having a drink at the pub", "🌳" if "Park" in spot else "🍺")
        else:
            add("evening", work_end, evening_end, self.lounge, self._obj(self.lounge), "in use", "relaxing at home", "🛋️")
        add("home", evening_end, s, self.lounge, None, "", "getting ready for bed", "🏠")
        return blocks

    @staticmethod
    def _obj(address: str) -> str | None:
        return address if address.count(":") == 2 else None

    def _current(self, when: datetime) -> Block:
        key = (when.date(), when.hour, when.minute)
        if key == self._memo_key:
            return self._memo_block  # type: ignore[return-value]
        block = self._compute(when)
        self._memo_key, self._memo_block = key, block
        return block

    def _compute(self, when: datetime) -> Block:
        minute = when.hour * 60 + when.minute
        if not self._awake_at(minute):
            return Block("sleep", 0, 0, self.bed, None, "", "sleeping", "😴", sleep=True)
        day = when.date() if minute >= self.persona.wake_hour * 60 or self.persona.sleep_hour > self.persona.wake_hour \
            else date.fromordinal(when.date().toordinal() - 1)
        if day != self.state.day:
            self.state.day = day
            self._blocks = self._plan(day)
            self.state.greeted.clear()
            self._strangers = 0
            self._records.append(Record(kind="plan", resident=self.name, data={
                "level": "day", "items": [f"{b.start // 60:02d}:{b.start % 60:02d} {b.description}" for b in self._blocks]}))
        if self.state.detour is not None and minute < self.state.detour[0]:
            return Block(f"detour:{self.state.detour[1]}", 0, 0, self.state.detour[1], None, "", f"going to {self.state.detour[1]}", "🚶")
        self.state.detour = None
        for b in self._blocks:
            if b.start <= minute < b.end:
                return b
        return Block("home", 0, 0, self.lounge, None, "", "at home", "🏠")

    # -- Mind protocol ---------------------------------------------------------

    def decide_fast(self, p: Perception) -> Intent | None:
        if p.unsaid:
            self._take_back(p.unsaid, {h.speaker for h in p.heard})
        for ev in p.events:
            if ev.subject != self.name and "sleep" in ev.description:
                self.state.sleepers.add(ev.subject)
            elif ev.subject in self.state.sleepers:
                self.state.sleepers.discard(ev.subject)
        if p.heard or p.whispers or p.announcements:
            return None
        block = self._current(p.time)
        if block.label != self.state.block:
            return None
        if block.sleep:
            if self.state.asleep:
                return CONTINUE
            if p.arrived:
                self.state.asleep = True
                return Intent(kind="sleep", description="sleeping", emoji="😴")
            return CONTINUE
        other = self._to_greet(p.nearby) if p.nearby else None
        if other is not None:
            self._strangers += other not in self._friends
            self.state.greeted.add(other)
            self.state.said = True
            part = "morning" if p.time.hour < 12 else "afternoon" if p.time.hour < 18 else "evening"
            return Intent(kind="say", to=other, utterance=f"Good {part}, {other.split()[0]}!",
                          description=f"greeting {other}", emoji="👋")
        if self.state.said:  # back to what I was doing before I spoke
            self.state.said = False
            return Intent(kind="continue", description=block.description, emoji=block.emoji)
        return CONTINUE

    def _take_back(self, unsaid: list[ChatLine], heard_from: set[str]) -> None:
        """A greeting the world did not say because the other greeted me at the same moment: not
        greeted yet, so I answer theirs instead. One held back because they were busy is given up
        for the day, as a greeting said is (tried again every tick, it was refused every tick:
        764 -> 3,489 refusals in a 300-resident day)."""
        for line in unsaid:
            if line.listener in heard_from and line.listener in self.state.greeted:
                self.state.greeted.discard(line.listener)
                self._strangers = max(0, self._strangers - (line.listener not in self._friends))

    def _to_greet(self, nearby: list[str]) -> str | None:
        """The first one nearby I may greet: not greeted today, not asleep, and a stranger only
        while today's strangers are under the cap (one does not greet every stranger in a
        crowd). Past the cap only friends are looked for, by set: a name-by-name pass over a
        cafe of eighty was a fifth of the mind's time."""
        done, sleepers = self.state.greeted, self.state.sleepers
        if self._strangers >= STRANGER_GREETINGS:
            friends = self._friends.intersection(nearby)
            friends -= done
            friends -= sleepers
            return next((o for o in nearby if o in friends), None) if friends else None
        return next((o for o in nearby if o not in done and o not in sleepers), None)

    def quiet_until(self, now: datetime) -> datetime | None:
        """Until when :meth:`decide_fast`, given the same perception again (nothing new in view,
        nothing heard), answers a bare continue and changes nothing: the end of the current
        block (a detour's, the night's), capped at midnight. The engine skips this resident
        meanwhile (world/engine.py, quiet residents); None: no promise."""
        minute = now.hour * 60 + now.minute
        block = self._current(now)
        if self.state.detour is not None and minute < self.state.detour[0]:
            end = self.state.detour[0]
        elif block.sleep:
            end = self.persona.wake_hour * 60
            end = end if end > minute else 24 * 60
        elif block.start <= minute < block.end:
            end = block.end
        else:
            return None
        end = min(end, 24 * 60)
        if end <= minute:
            return None
        midnight = datetime.combine(now.date(), datetime.min.time(), now.tzinfo)
        return midnight + timedelta(minutes=end)

    async def decide(self, p: Perception) -> Intent:
        block = self._current(p.time)
        if block.sleep and self.state.asleep:
            return CONTINUE  # asleep: hears nothing
        for text in list(p.whispers) + list(p.announcements):
            spot = self._mentioned_place(text)
            if spot:
                minute = p.time.hour * 60 + p.time.minute
                self.state.detour = (min(minute + 60, 24 * 60 - 1), spot)
                self._memo_key = None
                self._records.append(Record(kind="note", resident=self.name, data={"text": f"{self.name} decides to go to {spot}"}))
        block = self._current(p.time)
        for line in p.heard:
            if line.speaker in p.nearby and line.speaker not in self.state.greeted:
                self.state.greeted.add(line.speaker)
                self._strangers += line.speaker not in self._friends
                self.state.said = True
                return Intent(kind="say", to=line.speaker, utterance=f"Hello {line.speaker.split()[0]}, nice to see you!",
                              description=f"chatting with {line.speaker}", emoji="💬")
        self.state.block = block.label
        if block.sleep:
            self.state.going_to_bed = True
            if self.state.asleep:
                return CONTINUE
            return Intent(kind="go", target=block.target, description="going to bed", emoji="🛏️")
        self.state.asleep = False
        self.state.going_to_bed = False
        if block.use:
            return Intent(kind="use", target=block.use, object_state=block.state, description=block.description,
                          emoji=block.emoji)
        return Intent(kind="go", target=block.target, description=block.description, emoji=block.emoji)

    def _mentioned_place(self, text: str) -> str | None:
        low = text.lower()
        for a in self._places:
            if ":" not in a and a.lower() in low:
                return a
        return None

    def drain_records(self) -> list[Record]:
        out, self._records = self._records, []
        return out

    def snapshot(self) -> dict[str, Any]:
        return self.state.model_dump(mode="json")

    def restore(self, state: dict[str, Any]) -> None:
        self.state = RoutineState.model_validate(state)
        self._blocks = self._plan(self.state.day) if self.state.day else []
        self._strangers = len(self.state.greeted - self._friends)
        self._memo_key = None
        self._records = []


def make_mind(persona: Persona, llm: LanguageModel | None = None, run_db: Path | None = None,
              options: MindOptions | None = None) -> RoutineMind:
    """A :class:`maps.contracts.MindFactory` (the LLM and the database are not used)."""
    return RoutineMind(persona, options)
