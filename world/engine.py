"""The tick engine: the single owner of world state.

Each tick: apply queued injections, build every resident's Perception, ask minds for Intents
(``decide_fast`` first; ``decide`` awaited concurrently only for minds that returned None),
validate each Intent against the rules (walkable, object exists, listener in view), apply
them in a fixed order (by name), run plugins, collect the minds' records, and emit one
TickRecords that is committed to the run store and handed to listeners. When every resident
sleeps, a tick jumps to the next wake-up instead (night fast-forward).

Nothing here draws random numbers, and every iteration over residents is in name order, so a
run is a function of its inputs: same seed + same LLM cache => identical record stream.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time as _time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any, Protocol

from maps.contracts import ChatLine, Intent, Mind, Perception, PerceivedEvent, Persona
from maps.town import Town
from maps.contracts import Record, TickRecords
from memory.runfile import TIMING_KEYS, RunStore, Snapshot
from world import injections
from world.clock import Clock
from maps.contracts import build, stable_index
from world.injections import AnnounceCommand, EncounterCommand, InjectResult, ObjectCommand, WhisperCommand
from world.pathfinding import PathFinder
from world.perception import Attention, ObjectSight, Sight, SpatialIndex, choose

log = logging.getLogger(__name__)

Tile = tuple[int, int]
CONVERSATION_GAP_TICKS = 60  # lines between two people this close together are one conversation
MIN_JUMP = timedelta(minutes=1)
GOAL_SPREAD = 4  # distinct goal tiles per place


class Plugin(Protocol):
    """World-side services (e.g. a clinic whose records live in the world)."""

    async def on_tick(self, view: "WorldView") -> list[Record]: ...

    def snapshot(self) -> dict: ...

    def restore(self, state: dict) -> None: ...


class Resident:
    """The world's side of a resident: where they are and what they are doing."""

    __slots__ = (
        "name", "persona", "mind", "tile", "area", "address", "path", "path_i", "dest", "pending_use",
        "holding", "description", "emoji", "event", "action_address", "asleep", "arrived",
        "heard", "whispers", "announcements", "memories", "attention", "known", "known_dirty", "base_known",
    )

    def __init__(self, persona: Persona, mind: Mind, tile: Tile, town: Town) -> None:
        self.name = persona.name
        self.persona = persona
        self.mind = mind
        self.tile = tile
        self.area = town.area_id(tile)
        self.address = town.address_at(tile)
        self.path: tuple[Tile, ...] = ()
        self.path_i = 0
        self.dest: str | None = None
        self.pending_use: tuple[str, str] | None = None
        self.holding: str | None = None
        self.description = ""
        self.emoji = ""
        self.event: tuple[str, str, str] = (self.name, "is", "idle")
        self.action_address = self.address
        self.asleep = False
        self.arrived = False
        self.heard: list[ChatLine] = []
        self.whispers: list[str] = []
        self.announcements: list[str] = []
        self.memories: list[str] = []
        self.attention = Attention()
        self.known: set[str] = set()
        self.base_known: frozenset[str] = frozenset()  # what they knew at the start (not stored)
        self.known_dirty = True

    @property
    def walking(self) -> bool:
        return self.path_i < len(self.path)

    def has_inbox(self) -> bool:
        return bool(self.heard or self.whispers or self.announcements or self.memories)

    def snapshot(self) -> dict:
        return {
            "tile": list(self.tile), "address": self.address, "action": self.description, "emoji": self.emoji,
            "asleep": self.asleep, "event": list(self.event), "action_address": self.action_address,
            "path": [list(t) for t in self.path[self.path_i:]], "dest": self.dest,
            "pending_use": list(self.pending_use) if self.pending_use else None, "holding": self.holding,
            "arrived": self.arrived, "heard": [c.model_dump() for c in self.heard], "whispers": list(self.whispers),
            "announcements": list(self.announcements), "memories": list(self.memories),
            "attention": self.attention.snapshot(), "known_extra": sorted(self.known - self.base_known),
            "known_dirty": self.known_dirty,
        }

    def restore(self, s: dict, town: Town) -> None:
        self.tile = (int(s["tile"][0]), int(s["tile"][1]))
        self.area = town.area_id(self.tile)
        self.address = town.address_at(self.tile)
        self.description, self.emoji, self.asleep = s["action"], s["emoji"], s["asleep"]
        self.event = tuple(s["event"])  # type: ignore[assignment]
        self.action_address = s["action_address"]
        self.path, self.path_i = tuple((int(x), int(y)) for x, y in s["path"]), 0
        self.dest = s["dest"]
        self.pending_use = tuple(s["pending_use"]) if s["pending_use"] else None  # type: ignore[assignment]
        self.holding = s["holding"]
        self.arrived = s["arrived"]
        self.heard = [ChatLine(**c) for c in s["heard"]]
        self.whispers, self.announcements, self.memories = list(s["whispers"]), list(s["announcements"]), list(s["memories"])
        self.attention = Attention.restore(s["attention"])
        self.known = set(self.base_known) | set(s["known_extra"])
        self.known_dirty = s["known_dirty"]


class WorldView:
    """What a plugin may see and do during a tick."""

    def __init__(self, engine: "Engine", tick: int, time: datetime, records: list[Record]) -> None:
        self._engine = engine
        self.tick = tick
        self.time = time
        self._records = records
        self.town = engine.town

    @property
    def residents(self) -> dict[str, dict[str, Any]]:
        return {
            r.name: {"tile": r.tile, "address": r.address, "action": r.description, "asleep": r.asleep}
            for r in self._engine._order
        }

    def resident_address(self, name: str) -> str:
        return self._engine.residents[name].address

    def resident_tile(self, name: str) -> Tile:
        return self._engine.residents[name].tile

    @property
    def objects(self) -> dict[str, str]:
        return dict(self._engine.objects)

    def deliver_whisper(self, name: str, text: str) -> None:
        self._engine.residents[name].whispers.append(text)

    def deliver_memory(self, name: str, text: str) -> None:
        self._engine.residents[name].memories.append(text)

    def send_to(self, name: str, address: str, description: str = "") -> None:
        """Send a resident walking to ``address`` on the route a ``go`` intent takes (a plugin's
        errand, e.g. an encounter's visitor); no-op while already on the way there."""
        engine, r = self._engine, self._engine.residents[name]
        if r.dest == address and r.walking:
            return
        engine._release(r, self._records)
        r.asleep = False
        engine._set_action(r, description or f"going to {address}", "🚶", None, address, self._records)
        engine._head_to(r, address, None, self._records)

    def set_object_state(self, address: str, state: str, by: str = "engine") -> None:
        if address not in self._engine.objects:
            raise KeyError(f"no object {address!r}")
        self._engine._set_object(address, state, by, self._records)


class Engine:
    """See the module docstring. Other layers use: step, run, submit, add_listener,
    add_plugin, state; the runner uses snapshot/restore/resimulate."""

    def __init__(
        self,
        town: Town,
        personas: list[Persona],
        minds: dict[str, Mind],
        *,
        start: datetime,
        seconds_per_tick: float = 10,
        store: RunStore | None = None,
        snapshot_every: int = 60,
        perception_cache: bool = True,
    ) -> None:
        if not personas:
            raise ValueError("a world needs at least one resident")
        self.town = town
        self.clock = Clock(start, seconds_per_tick)
        self.tick = -1
        self.store = store
        self.snapshot_every = max(1, int(snapshot_every))
        self.perception_cache = perception_cache  # False: look at everything every tick (reference)
        self.paths = PathFinder(town.walkable)
        self.index = SpatialIndex(town)
        self.sight = ObjectSight(town)
        self.objects: dict[str, str] = town.default_states()
        self.holders: dict[str, str] = {}
        self.conversations: dict[str, list] = {}  # "a|b" -> [conversation_id, last_tick]
        self.residents: dict[str, Resident] = {}
        names = sorted(p.name for p in personas)
        if len(set(names)) != len(names):
            raise ValueError("resident names must be unique")
        by_name = {p.name: p for p in personas}
        for name in names:
            persona = by_name[name]
            if name not in minds:
                raise ValueError(f"no mind for resident {name!r}")
            r = Resident(persona, minds[name], self._spawn_tile(persona), town)
            r.base_known = frozenset(self._initial_known(persona, by_name))
            r.known = set(r.base_known)
            self._learn(r)
            self.residents[name] = r
            self.index.add(name, r.tile)
        self._order = [self.residents[n] for n in names]
        self._names = names
        self._places = set(town.addresses())
        self._listeners: list[Callable[[TickRecords], None]] = []
        self._plugins: list[Any] = []
        self._queue: list[tuple[Any, InjectResult]] = []
        self._lock = threading.Lock()
        self._until: datetime | None = None
        self._in_tick = False
        self._accepting_tick = 0  # the tick a command submitted now will be applied at
        self._resim: list[TickRecords] | None = None  # recorded ticks to re-run before going on
        self.diverged = 0
        self.stats = {"ticks": 0, "jumps": 0, "decide_calls": 0, "refused_intents": 0, "wall_s": 0.0}

    # ------------------------------------------------------------------ set-up

    def _spawn_tile(self, persona: Persona) -> Tile:
        if persona.spawn is not None:
            return self.town.spawns[persona.spawn].tile
        tiles = self.town.resolve(persona.home)
        return tiles[stable_index(persona.name, len(tiles))]

    def _initial_known(self, persona: Persona, everyone: dict[str, Persona]) -> set[str]:
        """Public places, one's own home and workplace, and the homes of people one knows."""
        private = {s.name for s in self.town.sectors.values() if s.kind == "home"}
        own = {persona.home.split(":")[0], persona.workplace.split(":")[0]}
        own |= {everyone[rel.name].home.split(":")[0] for rel in persona.relationships if rel.name in everyone}
        return {a for a in self.town.addresses() if a.split(":")[0] not in private or a.split(":")[0] in own}

    def _learn(self, r: Resident) -> None:
        """Spatial memory: entering a room teaches its address and its objects."""
        addr = r.address
        if not addr or addr in r.known:
            return
        sector_name = addr.split(":")[0]
        new = {sector_name, addr}
        sector = self.town.sectors.get(sector_name)
        if sector is not None and ":" in addr:
            arena = sector.arenas.get(addr.split(":")[1])
            if arena is not None:
                new |= {o.address for o in arena.objects.values()}
        if not new <= r.known:
            r.known |= new
            r.known_dirty = True

    # ------------------------------------------------------------------ public API

    def add_listener(self, fn: Callable[[TickRecords], None]) -> None:
        self._listeners.append(fn)

    def add_plugin(self, plugin: Any) -> None:
        self._plugins.append(plugin)

    @property
    def resident_names(self) -> list[str]:
        return list(self._names)

    def submit(self, command: Any) -> InjectResult:
        """Validate a command now (thread-safe) and queue it for the start of the next tick.

        A refused command changes nothing; it is recorded as refused in the next tick.
        """
        cmd, result = injections.check(command, self._names, self.objects, self._places)
        if cmd is not None and isinstance(cmd, EncounterCommand):
            problem = self._plugin_problem(cmd)
            if problem:
                cmd, result = None, InjectResult(accepted=False, message=problem, command=result.command)
        with self._lock:
            result.tick = self._accepting_tick if result.accepted else None
            if result.accepted:
                result.message = f"queued for tick {result.tick}: {injections.describe(cmd)}"
            self._queue.append((cmd, result))
        return result

    def place(self, name: str, tile: Tile) -> None:
        """Put a resident on a tile at once (scenario set-up, tests); stops their walk."""
        r = self.residents[name]
        if not self.town.is_walkable(tile):
            raise ValueError(f"tile {tile} is not walkable")
        old_area = r.area
        self.index.move(name, r.tile, tile)
        r.tile = tuple(tile)  # type: ignore[assignment]
        r.area = self.town.area_id(r.tile)
        r.address = self.town.area_address[r.area]
        r.path, r.path_i, r.dest, r.pending_use = (), 0, None, None
        self.index.touch(old_area, name)
        self.index.touch(r.area, name)
        self._learn(r)

    def state(self) -> dict[str, Any]:
        """What a viewer draws: positions, current actions and emojis, object states, time."""
        return {
            "tick": self.tick,
            "time": self.clock.now().isoformat(),
            "residents": {
                r.name: {
                    "tile": list(r.tile), "address": r.address, "action": r.description, "emoji": r.emoji,
                    "asleep": r.asleep, "destination": r.dest,
                }
                for r in self._order
            },
            "objects": dict(self.objects),
        }

    async def run(
        self,
        until: datetime,
        pace: float | None = None,
        progress: Callable[[TickRecords], None] | None = None,
    ) -> None:
        """Step until the next tick would be at or after ``until``.

        ``pace`` is game seconds per real second (None: as fast as possible).
        """
        await self.prepare()
        self._until = until
        try:
            started = _time.perf_counter()
            while self.clock.next_time < until:
                if self._all_asleep() and not self._pending() and self._wake_target(self.clock.next_time) >= until:
                    break  # everyone sleeps past the end: nothing left to simulate
                t0 = _time.perf_counter()
                tr = await self.step()
                if progress is not None:
                    progress(tr)
                if pace:
                    budget = self.clock.seconds_per_tick / pace
                    spare = budget - (_time.perf_counter() - t0)
                    await asyncio.sleep(spare if spare > 0 else 0)
                elif self.tick % 50 == 0:
                    await asyncio.sleep(0)  # let other tasks (control channel, viewer) breathe
            self.stats["wall_s"] += _time.perf_counter() - started
        finally:
            self._until = None
        if self.store is not None and self.tick >= 0:
            self.save_snapshot()

    async def step(self) -> TickRecords:
        """One tick (or a night fast-forward jump); committed to the store; listeners called."""
        await self.prepare()
        return await self._advance(commit=True)

    def schedule_resimulation(self, ticks: list[TickRecords]) -> None:
        """After a restore: re-run these recorded ticks (see :meth:`resimulate`) before the next step."""
        self._resim = list(ticks)

    async def prepare(self) -> None:
        """Finish a resume or fork: bring the world to exactly the last recorded tick."""
        if self._resim is not None:
            ticks, self._resim = self._resim, None
            try:
                self.diverged = await self.resimulate(ticks)
            finally:
                if self.store is not None:
                    self.store.end_replay()  # model calls are live again, numbered after the record's
            if self.diverged:
                log.warning("resume is not exact: %d of %d re-run ticks differ from the record (recorded world "
                            "state imposed; from here on the run may differ from an uninterrupted one)",
                            self.diverged, len(ticks))

    # ------------------------------------------------------------------ the tick

    async def _advance(self, commit: bool, forced: list[Any] | None = None, forced_time: datetime | None = None) -> TickRecords:
        self._in_tick = True  # until this tick is fully applied, memory state != stored state
        tick = self.tick + 1
        now = self.clock.next_time
        records: list[Record] = []

        if forced is None:
            with self._lock:
                queued, self._queue = self._queue, []
                self._accepting_tick = tick + 1
        else:
            queued = [(c, InjectResult(accepted=True, message="replayed", command=c.model_dump())) for c in forced]

        if forced_time is not None:
            if forced_time != now:
                records.append(_rec("note", None, {"text": f"fast-forward: night, {now:%H:%M} -> {forced_time:%H:%M}",
                                                    "skipped_s": (forced_time - now).total_seconds()}))
            now = forced_time
        elif not queued and self._all_asleep() and not self._pending():
            target = self._wake_target(now)
            if self._until is not None and target > self._until:
                target = self._until
            if target - now >= MIN_JUMP:
                records.append(_rec("note", None, {"text": f"fast-forward: night, {now:%H:%M} -> {target:%H:%M}",
                                                    "skipped_s": (target - now).total_seconds()}))
                self.stats["jumps"] += 1
                now = target

        for cmd, result in queued:
            if cmd is not None:
                self._apply_command(cmd, records)
            records.append(_rec("inject", getattr(cmd, "resident", None),
                                {"command": result.command, "accepted": result.accepted, "message": result.message}))

        if tick == 0:
            for r in self._order:
                records.append(_rec("move", r.name, {"tile": r.tile, "address": r.address}))

        perceptions = [self._perceive(r, tick, now) for r in self._order]
        intents: list[Intent | None] = []
        slow: list[int] = []
        for i, r in enumerate(self._order):
            intent = r.mind.decide_fast(perceptions[i])
            intents.append(intent)
            if intent is None:
                slow.append(i)
        if slow:
            self.stats["decide_calls"] += len(slow)
            answers = await asyncio.gather(
                *(self._order[i].mind.decide(perceptions[i]) for i in slow), return_exceptions=True
            )
            for i, ans in zip(slow, answers):
                if isinstance(ans, BaseException):
                    if not isinstance(ans, Exception) or getattr(ans, "fatal", False):
                        raise ans  # e.g. ModelUnavailable: the run stops, it is not a mind error
                    self._mind_error(self._order[i].name, ans, records)
                    ans = Intent(kind="continue")
                intents[i] = ans
        for i, intent in enumerate(intents):
            if intent is not None and not isinstance(intent, Intent):
                intents[i] = self._coerce(self._order[i].name, intent, records)

        for i, r in enumerate(self._order):
            self._apply(r, intents[i] or Intent(), perceptions[i], tick, records)

        if self._plugins:
            view = WorldView(self, tick, now, records)
            for plugin in self._plugins:
                records.extend(await plugin.on_tick(view))

        for r in self._order:
            records.extend(r.mind.drain_records())

        tr = build(TickRecords, {"tick": tick, "time": now, "records": records})
        self.tick = tick
        self.clock.time = now
        self.stats["ticks"] += 1
        if commit:
            if self.store is not None:
                snap = self.full_snapshot() if tick % self.snapshot_every == 0 else None
                self.store.commit_tick(tr, snap)
        self._in_tick = False
        if commit:
            for fn in self._listeners:
                try:
                    fn(tr)
                except Exception:  # a broken viewer must not stop the town
                    log.exception("tick listener failed")
        return tr

    def _all_asleep(self) -> bool:
        for r in self._order:
            if not r.asleep:
                return False
        return True

    def _pending(self) -> bool:
        if self._queue:
            return True
        return any(r.has_inbox() or r.walking for r in self._order)

    def _wake_target(self, now: datetime) -> datetime:
        """The earliest next wake-up hour among residents; ``now`` if someone is overdue."""
        best: datetime | None = None
        for r in self._order:
            w = now.replace(hour=r.persona.wake_hour, minute=0, second=0, microsecond=0)
            if w < now:
                w += timedelta(days=1)
            if w - now > timedelta(hours=16):  # the wake hour passed recently: asleep past it
                return now
            if best is None or w < best:
                best = w
        return best or now

    # ------------------------------------------------------------------ perception

    def _perceive(self, r: Resident, tick: int, now: datetime) -> Perception:
        att = r.attention
        if r.asleep:  # a sleeper sees nothing (they still hear what is said to them)
            chosen: list[Sight] = []
            nearby: list[str] = []
            att.cache_key = None
        else:
            area = r.area
            version = self.index.version[area]
            ck = att.cache_key
            changed = None
            if self.perception_cache and ck is not None and ck[0] == r.tile and ck[1] == area and not att.truncated:
                changed = self.index.changed_since(area, ck[2])
            if changed is None:
                chosen, nearby = self._look(r)
            elif changed or att.blocked:
                chosen, nearby = self._look_again(r, changed)
            else:
                chosen, nearby = [], att.nearby
            att.cache_key = (r.tile, area, version)
            att.nearby = nearby
        events = [
            build(PerceivedEvent, {"subject": s.subject, "predicate": s.predicate, "object": s.object,
                                   "description": s.description, "address": s.address, "distance": s.distance})
            for s in chosen
        ]
        known: list[str] = []
        if r.known_dirty:
            known = sorted(r.known)
            r.known_dirty = False
        p = build(Perception, {
            "resident": r.name, "tick": tick, "time": now, "tile": r.tile, "address": r.address, "events": events,
            "nearby": list(nearby), "heard": r.heard, "whispers": r.whispers, "announcements": r.announcements,
            "arrived": r.arrived, "known_places": known, "memories": r.memories,
        })
        if r.heard:
            r.heard = []
        if r.whispers:
            r.whispers = []
        if r.announcements:
            r.announcements = []
        if r.memories:
            r.memories = []
        r.arrived = False
        return p

    def _classify(self, att: Attention, key: str, s: str, p: str, o: str, fresh: list[Sight], blocked: set[str],
                  dist: float, description: str, address: str) -> None:
        """Sort one thing in view: already known, held back by retention, or new."""
        if att.seen.get(s) == (p, o):
            return
        if (s, p, o) in att.recent:
            blocked.add(key)
            return
        fresh.append(Sight(dist, s, p, o, description, address))

    def _look(self, r: Resident) -> tuple[list[Sight], list[str]]:
        """Everything in view, from scratch."""
        att = r.attention
        x, y = r.tile
        area = r.area
        fresh: list[Sight] = []
        blocked: set[str] = set()
        nearby: list[str] = []
        residents = self.residents
        for name in self.index.around(r.tile):
            o = residents[name]
            if o.area != area or o is r:
                continue
            ox, oy = o.tile
            if abs(ox - x) > 4 or abs(oy - y) > 4:
                continue
            nearby.append(name)
            s, p, ob = o.event
            self._classify(att, name, s, p, ob, fresh, blocked, ((ox - x) ** 2 + (oy - y) ** 2) ** 0.5,
                           f"{name} is {o.description or 'idle'}", o.action_address or o.address)
        objects = self.objects
        for dist, addr, oname in self.sight.visible(r.tile):
            state = objects[addr]
            self._classify(att, addr, addr, "is", state, fresh, blocked, dist, f"{oname} is {state}", addr)
        nearby.sort()
        att.blocked = blocked
        chosen, att.truncated = choose(fresh, att) if fresh else ([], False)
        return chosen, nearby

    def _look_again(self, r: Resident, changed: list[str]) -> tuple[list[Sight], list[str]]:
        """Only what changed in the area since the last look (and what retention held back):
        gives exactly what :meth:`_look` would, at the cost of the changes."""
        att = r.attention
        x, y = r.tile
        area = r.area
        fresh: list[Sight] = []
        blocked: set[str] = set()
        nearby_set = set(att.nearby)
        residents = self.residents
        objects = self.objects
        view = self.sight.visible_map(r.tile)
        for key in sorted(set(changed) | att.blocked):
            o = residents.get(key)
            if o is not None:
                if o is r:
                    continue
                ox, oy = o.tile
                if o.area != area or abs(ox - x) > 4 or abs(oy - y) > 4:
                    nearby_set.discard(key)
                    continue
                nearby_set.add(key)
                s, p, ob = o.event
                self._classify(att, key, s, p, ob, fresh, blocked, ((ox - x) ** 2 + (oy - y) ** 2) ** 0.5,
                               f"{key} is {o.description or 'idle'}", o.action_address or o.address)
            else:
                seen_from_here = view.get(key)
                if seen_from_here is None:
                    continue
                dist, oname = seen_from_here
                state = objects[key]
                self._classify(att, key, key, "is", state, fresh, blocked, dist, f"{oname} is {state}", key)
        att.blocked = blocked
        chosen, att.truncated = choose(fresh, att) if fresh else ([], False)
        return chosen, sorted(nearby_set)

    # ------------------------------------------------------------------ applying intents

    def _mind_error(self, name: str, exc: Exception, records: list[Record]) -> None:
        """Record a mind's failure (counted in the summary); log each distinct error once."""
        from replays.health import mind_error_message

        message = mind_error_message(exc)
        logged = self.__dict__.setdefault("_mind_errors_logged", set())
        if message not in logged:
            logged.add(message)
            log.error("mind of %s failed: %s: %s (further occurrences are counted in the run summary)",
                      name, type(exc).__name__, message)
            log.debug("mind of %s failed", name, exc_info=exc)
        self.stats["mind_errors"] = self.stats.get("mind_errors", 0) + 1
        records.append(_rec("mind_error", name, {"error": type(exc).__name__, "message": message}))

    def _coerce(self, name: str, value: Any, records: list[Record]) -> Intent:
        """A mind answered something other than an Intent: accept a valid dict, else continue."""
        try:
            return Intent.model_validate(value)
        except Exception as exc:
            records.append(_rec("note", name, {"text": f"{name}: the mind answered an invalid intent ({exc.__class__.__name__}); continuing",
                                               "refused": True}))
            return Intent()

    def _refuse(self, r: Resident, intent: Intent, why: str, records: list[Record]) -> None:
        self.stats["refused_intents"] += 1
        records.append(_rec("note", r.name, {"text": f"{r.name} cannot {intent.kind}: {why}", "refused": True,
                                             "intent": intent.model_dump(exclude_defaults=True)}))

    def _apply(self, r: Resident, intent: Intent, p: Perception, tick: int, records: list[Record]) -> None:
        kind = intent.kind
        if kind == "continue":
            if intent.description and intent.description != r.description:
                self._set_action(r, intent.description, intent.emoji or r.emoji, intent.event, r.action_address, records)
            self._walk(r, records)
            return
        if kind == "go":
            target = intent.target
            if not target or not self.town.has_address(target):
                self._refuse(r, intent, self.town.explain_unknown(target) if target else "no target given", records)
                self._walk(r, records)
                return
            self._release(r, records)
            r.asleep = False
            self._set_action(r, intent.description or f"going to {target}", intent.emoji, intent.event, target, records)
            self._head_to(r, target, None, records)
            self._walk(r, records)
            return
        if kind == "use":
            target = intent.target
            if not target or target not in self.objects:
                why = "no target given" if not target else (
                    f"{target!r} is a place, not an object" if target in self._places else self.town.explain_unknown(target))
                self._refuse(r, intent, why, records)
                self._walk(r, records)
                return
            if r.holding != target:
                self._release(r, records)
            r.asleep = False
            state = intent.object_state or f"in use by {r.name}"
            obj = self.town.objects[target]
            self._set_action(r, intent.description or f"using the {obj.name}", intent.emoji, intent.event, target, records)
            if r.tile in obj.tiles:
                r.path, r.path_i, r.dest, r.pending_use = (), 0, None, None
                self._use(r, target, state, records)
            else:
                self._head_to(r, target, (target, state), records)
                self._walk(r, records)
            return
        if kind == "say":
            if not intent.to or intent.to not in self.residents:
                self._refuse(r, intent, f"no resident named {intent.to!r}", records)
            elif intent.to == r.name:
                self._refuse(r, intent, "cannot talk to oneself", records)
            elif intent.to not in p.nearby:
                self._refuse(r, intent, f"{intent.to} is not in view", records)
            elif not (intent.utterance or "").strip():
                self._refuse(r, intent, "nothing to say (empty utterance)", records)
            else:
                r.asleep = False
                text = intent.utterance.strip()  # type: ignore[union-attr]
                self.residents[intent.to].heard.append(ChatLine(speaker=r.name, listener=intent.to, text=text))
                records.append(_rec("chat", r.name, {"speaker": r.name, "listener": intent.to, "text": text,
                                                     "conversation_id": self._conversation(r.name, intent.to, tick)}))
                desc = intent.description or f"talking to {intent.to}"
                self._set_action(r, desc, intent.emoji or "💬", intent.event or (r.name, "chat with", intent.to),
                                 r.address, records)
            return  # speaking pauses the walk for this tick
        # wait / sleep
        self._release(r, records)
        r.path, r.path_i, r.dest, r.pending_use = (), 0, None, None
        if kind == "sleep":
            r.asleep = True
            self._set_action(r, intent.description or "sleeping", intent.emoji or "😴", intent.event, r.address, records)
        else:
            r.asleep = False
            self._set_action(r, intent.description or "waiting", intent.emoji, intent.event, r.address, records)

    def _set_action(self, r: Resident, description: str, emoji: str, event: tuple[str, str, str] | None,
                    address: str, records: list[Record]) -> None:
        # the actor is always the subject of their own event (the world owns attribution)
        ev = (r.name, event[1], event[2]) if event else (r.name, "is", description)
        if description == r.description and emoji == r.emoji and address == r.action_address and ev == r.event:
            return
        r.description, r.emoji, r.action_address, r.event = description, emoji, address, ev  # type: ignore[assignment]
        self.index.touch(r.area, r.name)
        records.append(_rec("action", r.name, {"description": description, "emoji": emoji, "address": address,
                                               "event": list(ev)}))

    def _head_to(self, r: Resident, target: str, pending_use: tuple[str, str] | None, records: list[Record]) -> None:
        tiles = self.town.resolve(target)
        if r.tile in tiles:
            goal = r.tile
        else:
            # a few spread-out goal tiles per place: people do not all stand on one tile, and
            # walks between the same few tiles repeat, so the path cache serves most of them
            k = min(GOAL_SPREAD, len(tiles))
            j = stable_index(f"{r.name}|{target}", k)
            goal = tiles[(2 * j + 1) * len(tiles) // (2 * k)]
        r.path = self.paths.path(r.tile, goal)
        r.path_i = 0
        r.dest = target
        r.pending_use = pending_use
        if not r.path:
            self._arrive(r, records)

    def _walk(self, r: Resident, records: list[Record]) -> None:
        if r.path_i >= len(r.path):
            return
        new = r.path[r.path_i]
        r.path_i += 1
        old = r.tile
        old_area = r.area
        r.tile = new
        self.index.move(r.name, old, new)
        area = self.town.area_id(new)
        if area != old_area:
            self.index.touch(old_area, r.name)
            r.area = area
            r.address = self.town.area_address[area]
            self._learn(r)
        self.index.touch(area, r.name)
        records.append(_rec("move", r.name, {"tile": new, "address": r.address}))
        if r.path_i >= len(r.path):
            self._arrive(r, records)

    def _arrive(self, r: Resident, records: list[Record]) -> None:
        r.arrived = True
        r.path, r.path_i, r.dest = (), 0, None
        if r.pending_use is not None:
            target, state = r.pending_use
            r.pending_use = None
            self._use(r, target, state, records)

    def _use(self, r: Resident, target: str, state: str, records: list[Record]) -> None:
        r.holding = target
        self._set_object(target, state, r.name, records)

    def _release(self, r: Resident, records: list[Record]) -> None:
        """Stop using an object: it returns to its resting state unless someone changed it since."""
        held = r.holding
        if held is None:
            return
        r.holding = None
        if self.holders.get(held) == r.name:
            self._set_object(held, self.town.objects[held].default_state, r.name, records)
            self.holders.pop(held, None)

    def _set_object(self, address: str, state: str, by: str, records: list[Record]) -> None:
        old = self.objects[address]
        if by in self.residents:
            self.holders[address] = by
        else:
            self.holders.pop(address, None)
        if old == state:
            return
        self.objects[address] = state
        self.index.touch(self.town.area_id(self.town.objects[address].tiles[0]), address)
        records.append(_rec("object", by if by in self.residents else None,
                            {"address": address, "old_state": old, "new_state": state, "by": by}))
        if by not in self.residents:
            for r in self._order:  # whoever used it lets go: their change was overridden
                if r.holding == address:
                    r.holding = None

    def _conversation(self, a: str, b: str, tick: int) -> str:
        key = f"{min(a, b)}|{max(a, b)}"
        cur = self.conversations.get(key)
        if cur is None or tick - cur[1] > CONVERSATION_GAP_TICKS:
            cur = [f"t{tick}:{key}", tick]
        cur[1] = tick
        self.conversations[key] = cur
        return cur[0]

    def _plugin_for(self, kind: str) -> Any | None:
        """The plugin that serves injected commands of this kind, if any."""
        return next((p for p in self._plugins if kind in getattr(p, "commands", ())), None)

    def _plugin_problem(self, cmd: Any) -> str | None:
        """What is wrong with a plugin-served command (None: a plugin takes it)."""
        plugin = self._plugin_for(cmd.kind)
        if plugin is None:
            return f"{cmd.kind}: not served in this run (start it with --encounters)"
        return plugin.check_command(cmd)

    def _apply_command(self, cmd: Any, records: list[Record]) -> None:
        if isinstance(cmd, EncounterCommand):
            plugin = self._plugin_for(cmd.kind)
            if plugin is not None:
                plugin.handle_command(cmd)
        elif isinstance(cmd, WhisperCommand):
            self.residents[cmd.resident].whispers.append(cmd.text)
        elif isinstance(cmd, ObjectCommand):
            self._set_object(cmd.address, cmd.state, "inject", records)
        elif isinstance(cmd, AnnounceCommand):
            for r in self._order:
                r.announcements.append(cmd.text)

    # ------------------------------------------------------------------ snapshots

    def snapshot(self) -> dict[str, Any]:
        """The engine's full state after the last committed tick (JSON-ready).

        A superset of :meth:`state`: what a viewer needs plus every internal needed to go on.
        """
        return {
            "tick": self.tick,
            "time": self.clock.now().isoformat(),
            "clock": self.clock.snapshot(),
            "residents": {r.name: r.snapshot() for r in self._order},
            "objects": dict(self.objects),
            "holders": dict(self.holders),
            "conversations": {k: list(v) for k, v in self.conversations.items()},
            "plugins": [p.snapshot() if hasattr(p, "snapshot") else None for p in self._plugins],
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Put the engine in the state a :meth:`snapshot` describes."""
        missing = set(self.residents) ^ set(state["residents"])
        if missing:
            raise ValueError(f"snapshot residents differ from this world's: {sorted(missing)}")
        self.tick = int(state["tick"])
        self._accepting_tick = self.tick + 1
        self.clock.restore(state["clock"])
        self.objects = dict(state["objects"])
        self.holders = dict(state["holders"])
        self.conversations = {k: list(v) for k, v in state["conversations"].items()}
        self.index = SpatialIndex(self.town)
        for r in self._order:
            r.restore(state["residents"][r.name], self.town)
            self.index.add(r.name, r.tile)
        for p, s in zip(self._plugins, state.get("plugins", [])):
            if s is not None and hasattr(p, "restore"):
                p.restore(s)

    def full_snapshot(self) -> Snapshot:
        """Engine state plus every mind's snapshot, as stored in the run database."""
        return Snapshot(
            tick=self.tick, time=self.clock.now(), state=self.snapshot(),
            minds={r.name: r.mind.snapshot() for r in self._order},
        )

    def save_snapshot(self) -> None:
        """Store a snapshot of the last committed tick (e.g. at the end of a run or on Ctrl-C)."""
        if self.store is not None and self.tick >= 0 and not self._in_tick and self._resim is None:
            self.store.save_snapshot(self.full_snapshot())

    def restore_full(self, snap: Snapshot) -> None:
        self.restore(snap.state)
        for r in self._order:
            if r.name in snap.minds:
                r.mind.restore(snap.minds[r.name])

    async def resimulate(self, ticks: Iterable[TickRecords]) -> int:
        """Re-run recorded ticks after a restored snapshot, without committing them.

        Recorded injections are re-applied at their ticks and recorded times are kept; model
        calls get the run's recorded answers (agents/llm/recorded.py). A re-run tick is
        exact when all its records (memories, plans, call ids included; latencies aside)
        equal the recorded ones. If its world records differ, the recorded positions,
        actions and object states are imposed, so the world ends in the recorded state.
        Returns the number of ticks that were not exact.
        """
        diverged = 0
        for recorded in ticks:
            if recorded.tick != self.tick + 1:
                raise ValueError(f"cannot re-simulate tick {recorded.tick} after tick {self.tick}")
            forced = []
            for rec in recorded.records:
                if rec.kind == "inject" and rec.data.get("accepted"):
                    cmd, res = injections.check(rec.data.get("command", {}), self._names, self.objects, self._places)
                    if cmd is not None:
                        forced.append(cmd)
            produced = await self._advance(commit=False, forced=forced, forced_time=recorded.time)
            if self.store is not None:
                self.store.discard_pending()  # its answers are already in the store
            if _full_view(produced.records) != _full_view(recorded.records):
                diverged += 1
            if _world_view(produced.records) != _world_view(recorded.records):
                self._impose(recorded)
            for r in self._order:  # records of the re-run are already in the store
                r.mind.drain_records()
        return diverged

    def _impose(self, recorded: TickRecords) -> None:
        for rec in recorded.records:
            r = self.residents.get(rec.resident or "")
            if rec.kind == "move" and r is not None:
                old = r.tile
                r.tile = (int(rec.data["tile"][0]), int(rec.data["tile"][1]))
                self.index.move(r.name, old, r.tile)
                r.area = self.town.area_id(r.tile)
                r.address = self.town.area_address[r.area]
            elif rec.kind == "action" and r is not None:
                r.description, r.emoji = rec.data.get("description", ""), rec.data.get("emoji", "")
                r.action_address = rec.data.get("address", "")
                if rec.data.get("event"):
                    r.event = tuple(rec.data["event"])  # type: ignore[assignment]
            elif rec.kind == "object":
                self.objects[rec.data["address"]] = rec.data["new_state"]
        for r in self._order:  # positions were imposed: everyone looks afresh
            r.attention.cache_key = None


_WORLD_KINDS = {"move", "action", "object", "chat", "inject"}


def _world_view(records: list[Record]) -> list[tuple]:
    return [(r.kind, r.resident, _norm(r.data)) for r in records if r.kind in _WORLD_KINDS]


def _full_view(records: list[Record]) -> list[tuple]:
    """Every record as stored and digested (memory.runfile.RunStore.records_digest): no latencies."""
    return [(r.kind, r.resident, _norm(json.loads(json.dumps(r.data, default=str)))) for r in records]


def _norm(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _norm(v)) for k, v in value.items() if k not in TIMING_KEYS))
    if isinstance(value, (list, tuple)):
        return tuple(_norm(v) for v in value)
    return value


def _rec(kind: str, resident: str | None, data: dict[str, Any]) -> Record:
    return build(Record, {"kind": kind, "resident": resident, "data": data})
