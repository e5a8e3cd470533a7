"""The tick engine (the loop): the single owner of world state.

The loop holds its parts as collaborators, each given only the state it touches:

- ``self.rules`` (world/rules.py): validates and applies intents; reads the town, changes the
  bodies, the object states, holders and conversations, tells the spatial index what changed;
- ``self.perceiver`` (world/perception.py): each body's Perception; reads the bodies, object
  states, the spatial index and object sight, changes only the perceiving body;
- ``self.snapshots`` (world/resim.py): state to and from JSON, re-simulation of recorded
  ticks; reads and restores the clock, bodies, objects, the rules' state, index and plugins.

Also here: the Body of each resident (world/body.py), the command registry
(world/commands.py), plugins and their WorldView (world/plugins.py). ``step(intents)`` is the
small API a test drives: it runs one tick with the given intents instead of asking those
residents' minds.

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
import gc
import logging
import threading
import time as _time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from maps.contracts import Command, Intent, LanguageModel, Mind, Perception, Persona, Record, TickRecords, build
from maps.town import Town
from memory.runfile import RunStore, Snapshot
from world.body import Body, Tile, make_bodies, stable_index
from world.clock import Clock
from world.commands import InjectResult, Registry, TownFacts
from world.pathfinding import PathFinder
from world.perception import ObjectSight, Perceiver, SpatialIndex
from world.plugins import Plugin, WorldView, plugin_problem
from world.quiet import Dormancy
from world.resim import Snapshots
from world.rules import FORGET_TALKS_EVERY, Rules, _rec

log = logging.getLogger(__name__)

MIN_JUMP = timedelta(minutes=1)
# The cyclic collector's first threshold while the loop runs (CPython's default is 700). A tick
# makes a Perception, an Intent and records per resident that live until the tick ends; with the
# default, so many survive young collections that full collections keep walking the whole town
# (its tiles, objects and routes), a cost per tick that grows with the town: at 1,000 residents
# it was a third of the routine run's CPU time (bench scale, docs/BENCHMARKS.md). A tick of a
# larger town makes more of them (about six per resident), so the threshold grows with the town:
# at 10,000 residents, 20,000 left a fifth of a busy hour in the collector, 100,000 a tenth
# (one hour of a generated town's morning, 2026-11-28: 145 -> 116 s).
LOOP_GC_THRESHOLD = 20_000
LOOP_GC_PER_RESIDENT = 10

__all__ = ["Body", "Engine", "Plugin", "RunContext", "WorldView", "stable_index"]


@dataclass
class RunContext:
    """What a run is beyond its world state, for the code that drives the engine (the run and
    watch commands, benches): where the run is kept, its planned end, the model its minds
    call, which mind it runs and its encounter plugin. world/runner.py fills it in; an engine
    built bare (a test driving ``step``) has the empty one."""

    run_dir: Path | None = None  # the run folder (holding the store's run.db)
    until: datetime | None = None  # the planned end (run meta 'planned_end')
    llm: LanguageModel | None = None  # the town's model gateway (None for routine minds)
    mind_kind: Literal["generative", "routine"] | None = None
    encounters: Plugin | None = None  # the encounter plugin (agents/encounters/town.py) of --encounters


class Engine:
    """See the module docstring. Other layers use: step, run, submit, add_listener,
    add_plugin, state and ``context`` (the :class:`RunContext` the runner built it with);
    the runner uses snapshot/restore/resimulate. It is a maps.plugin.PluginHost."""

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
        context: RunContext | None = None,
        quiet: bool = True,
    ) -> None:
        self.context = context if context is not None else RunContext()
        self.residents: dict[str, Body] = make_bodies(town, personas, minds)  # in name order
        self.town = town
        self.clock = Clock(start, seconds_per_tick)
        self.tick = -1
        self.store = store
        self.snapshot_every = max(1, int(snapshot_every))
        self._order = list(self.residents.values())
        self._names = list(self.residents)
        self._places = set(town.addresses())
        self.objects: dict[str, str] = town.default_states()  # shared with rules, perceiver, snapshots
        self.index = SpatialIndex(town)
        for r in self._order:
            self.index.add(r.name, r.tile)
        self.paths = PathFinder(town.walkable)
        self.paths.fit(len(self.residents))  # a day of walks of everyone stays cached
        self.sight = ObjectSight(town)
        self.stats = {"ticks": 0, "jumps": 0, "decide_calls": 0, "refused_intents": 0, "quiet_skips": 0, "wall_s": 0.0}
        self._plugins: list[Plugin] = []
        self.commands = Registry()  # the command kinds this world serves
        self.rules = Rules(town, self.residents, self.objects, self.index, self.paths, self.stats)
        self.perceiver = Perceiver(self.residents, self.objects, self.index, self.sight, cache=perception_cache,
                                   defaults=town.default_states())
        self.snapshots = Snapshots(town, self.clock, self.residents, self.objects, self.rules, self.index,
                                   self._plugins, check=lambda data: self.commands.check(data, self._facts())[0])
        self.quiet = quiet  # False asks every mind every tick (the reference quiet residents are tested against)
        self.dormancy = Dormancy(self._order, self.index, self.perceiver)
        self._init_loop()

    def _init_loop(self) -> None:
        """The loop's own state: listeners, the command queue, the planned end, re-simulation."""
        self._listeners: list[Callable[[TickRecords], None]] = []
        self._queue: list[tuple[Any, InjectResult]] = []
        self._lock = threading.Lock()
        self._until: datetime | None = None
        self._in_tick = False
        self._accepting_tick = 0  # the tick a command submitted now will be applied at
        self._resim: list[TickRecords] | None = None  # recorded ticks to re-run before going on
        self.diverged = 0

    # ------------------------------------------------------------------ public API

    def add_listener(self, fn: Callable[[TickRecords], None]) -> None:
        self._listeners.append(fn)

    def add_plugin(self, plugin: Plugin) -> None:
        """Run ``plugin`` every tick and serve the command kinds it declares."""
        problem = plugin_problem(plugin)
        if problem:
            raise TypeError(problem)
        self._plugins.append(plugin)
        self.commands.serve(plugin)

    def _facts(self) -> TownFacts:
        return TownFacts(self._names, self.objects, self._places)

    @property
    def resident_names(self) -> list[str]:
        return list(self._names)

    def submit(self, command: Any) -> InjectResult:
        """Validate a command now (thread-safe) and queue it for the start of the next tick.

        A refused command changes nothing; it is recorded as refused in the next tick.
        """
        cmd, result = self.commands.check(command, self._facts())
        with self._lock:
            result.tick = self._accepting_tick if result.accepted else None
            if cmd is not None:
                result.message = _queued(result.tick, cmd)
            self._queue.append((cmd, result))
        return result

    def place(self, name: str, tile: Tile) -> None:
        """Put a resident on a tile at once (scenario set-up, tests); stops their walk."""
        self.rules.place(self.residents[name], tile)

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
            with roomy_collector(loop_gc_threshold(len(self.residents))):
                await self._loop(until, pace, progress)
        finally:
            self._until = None
        if self.store is not None and self.tick >= 0:
            self.save_snapshot()

    async def _loop(self, until: datetime, pace: float | None,
                    progress: Callable[[TickRecords], None] | None) -> None:
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

    async def step(self, intents: Mapping[str, Intent] | None = None) -> TickRecords:
        """One tick (or a night fast-forward jump); committed to the store; listeners called.

        ``intents`` (as PettingZoo's actions): the residents named there do these instead of
        asking their minds this tick; the rules check them like any mind's.
        """
        unknown = sorted(set(intents or {}) - set(self._names))
        if unknown:
            raise ValueError(f"step: no resident named {', '.join(map(repr, unknown))}; residents: {', '.join(self._names)}")
        await self.prepare()
        return await self._advance(commit=True, given=intents)

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
            if self.store is not None and ticks:
                self.store.note_rerun(ticks[0].tick - 1, len(ticks), self.diverged)
            if self.diverged:
                log.warning("resume is not exact: %d of %d re-run ticks differ from the record (recorded world "
                            "state imposed; from here on the run may differ from an uninterrupted one)",
                            self.diverged, len(ticks))

    # ------------------------------------------------------------------ the tick

    async def _advance(self, commit: bool, forced: list[Command] | None = None, forced_time: datetime | None = None,
                       given: Mapping[str, Intent] | None = None) -> TickRecords:
        self._in_tick = True  # until this tick is fully applied, memory state != stored state
        tick = self.tick + 1
        records: list[Record] = []
        queued = self._take_queue(tick, forced)
        now = self._tick_time(self.clock.next_time, forced_time, bool(queued), records)
        view = WorldView(self.town, self.residents, self.objects, self.rules, tick, now, records)
        for cmd, result in queued:
            if cmd is not None:
                self.commands.apply(cmd, view)
            records.append(_rec("inject", getattr(cmd, "resident", None),
                                {"command": result.command, "accepted": result.accepted, "message": result.message,
                                 "text": result.text}))
        if tick == 0:
            for r in self._order:
                records.append(_rec("move", r.name, {"tile": r.tile, "address": r.address}))
        active = self._perceive_all(tick, now, given or {}, bool(queued))  # quiet residents left out
        intents = await self._decide(active, given or {}, records)
        for (r, p), intent in zip(active, intents):
            self.rules.apply(r, intent, p, tick, records)
        self.rules.end_tick()
        if tick % FORGET_TALKS_EVERY == 0:  # by tick number, so a resumed run sweeps when the original did
            self.rules.forget_ended_talks(tick)
        for plugin in self._plugins:
            records.extend(await plugin.on_tick(view))
        for r, _p in active:  # a quiet mind was not asked, so it has written nothing since it was drained
            records.extend(r.mind.drain_records())
        return self._finish(build(TickRecords, {"tick": tick, "time": now, "records": records}), commit)

    def _take_queue(self, tick: int, forced: list[Command] | None) -> list[tuple[Command | None, InjectResult]]:
        """The commands this tick applies: the queue (live) or the recorded ones (re-simulation)."""
        if forced is not None:
            # as submit() recorded them, so that a re-run tick equals its record
            return [(c, InjectResult(accepted=True, message=_queued(tick, c), command=c.model_dump(), text=c.describe()))
                    for c in forced]
        with self._lock:
            queued, self._queue = self._queue, []
            self._accepting_tick = tick + 1
        return queued

    def _tick_time(self, now: datetime, forced_time: datetime | None, queued: bool, records: list[Record]) -> datetime:
        """The time of this tick: the next one, or later when everyone sleeps (night fast-forward)."""
        if forced_time is not None:
            if forced_time != now:
                records.append(_rec("note", None, {"text": f"fast-forward: night, {now:%H:%M} -> {forced_time:%H:%M}",
                                                    "skipped_s": (forced_time - now).total_seconds()}))
            return forced_time
        if queued or not self._all_asleep() or self._pending():
            return now
        target = self._wake_target(now)
        if self._until is not None and target > self._until:
            target = self._until
        if target - now < MIN_JUMP:
            return now
        records.append(_rec("note", None, {"text": f"fast-forward: night, {now:%H:%M} -> {target:%H:%M}",
                                            "skipped_s": (target - now).total_seconds()}))
        self.stats["jumps"] += 1
        return target

    def _perceive_all(self, tick: int, now: datetime, given: Mapping[str, Intent],
                      commands: bool) -> list[tuple[Body, Perception]]:
        """Each resident that is not quiet with its Perception, in name order. Quiet: its mind said
        it would only 'continue' until ``quiet_until`` (:meth:`_note_quiet`) and it perceives
        nothing new; its 'continue' would change nothing, so the rest of the tick leaves it out.
        Dormant residents cost nothing until their promise runs out or something stirs them
        (world/quiet.py): this is what keeps a town of thousands linear, since most residents,
        most ticks, stand at work or sleep. A tick that applied commands asks everyone (a
        command may reach a mind)."""
        dormancy = self.dormancy
        if commands:
            dormancy.wake_all()
        else:
            if given:
                dormancy.wake_names(given)
            dormancy.wake_due(now)
        out: list[tuple[Body, Perception]] = []
        perceive = self.perceiver.perceive
        order = self._order
        skipped = 0
        for i in dormancy.awake():
            r = order[i]
            until = r.quiet_until
            if until is not None:
                if now < until and not commands and r.name not in given and dormancy.sees_nothing_new(i, r):
                    if not dormancy.doze(i, r):
                        skipped += 1  # its view cannot be watched: checked again next tick
                    continue
                r.quiet_until = None
            out.append((r, perceive(r, tick, now, dormancy.take_look(i))))
        self.stats["quiet_skips"] += skipped + dormancy.count
        return out

    def _note_quiet(self, r: Body, p: Perception, intent: Intent) -> None:
        """After ``decide_fast`` answered a 'continue' that changes nothing to a perception with
        nothing new in it, ask the mind until when it would answer the same to the same
        (``quiet_until``, optional)."""
        # a 'continue' whose description is the body's own changes nothing (Rules.apply ignores
        # its emoji and event then): a generative mind carries on with its step that way
        if (not self.quiet or intent.kind != "continue" or intent.description not in ("", r.description)
                or p.events or p.heard or p.unsaid or p.whispers or p.announcements
                or p.memories or p.arrived or p.known_places or r.walking):
            return
        ask = getattr(r.mind, "quiet_until", None)
        if ask is not None:
            r.quiet_until = ask(p.time)

    async def _decide(self, active: list[tuple[Body, Perception]], given: Mapping[str, Intent],
                      records: list[Record]) -> list[Intent]:
        """Each active resident's intent: the given one, else ``decide_fast``, else ``decide``
        (concurrently)."""
        intents: list[Intent | None] = []
        slow: list[int] = []
        for i, (r, p) in enumerate(active):
            intent = given[r.name] if r.name in given else r.mind.decide_fast(p)
            intents.append(intent)
            if intent is None and r.name not in given:
                slow.append(i)
            elif isinstance(intent, Intent) and r.name not in given:
                self._note_quiet(r, p, intent)
        if slow:
            self.stats["decide_calls"] += len(slow)
            answers = await asyncio.gather(
                *(active[i][0].mind.decide(active[i][1]) for i in slow), return_exceptions=True
            )
            for i, ans in zip(slow, answers):
                if isinstance(ans, BaseException):
                    if not isinstance(ans, Exception) or getattr(ans, "fatal", False):
                        raise ans  # e.g. ModelUnavailable: the run stops, it is not a mind error
                    self.rules.mind_error(active[i][0].name, ans, records)
                    ans = Intent(kind="continue")
                intents[i] = ans
        for i, intent in enumerate(intents):
            if intent is not None and not isinstance(intent, Intent):
                intents[i] = self.rules.coerce(active[i][0].name, intent, records)
        return [intent or Intent() for intent in intents]

    def _finish(self, tr: TickRecords, commit: bool) -> TickRecords:
        """The tick is done: advance the clock; when committing, store it and tell the listeners."""
        self.tick = tr.tick
        self.clock.time = tr.time
        self.stats["ticks"] += 1
        if commit and self.store is not None:
            snap = self.full_snapshot() if tr.tick % self.snapshot_every == 0 else None
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

    # ------------------------------------------------------------------ snapshots (world/resim.py)

    def snapshot(self) -> dict[str, Any]:
        """The engine's full state after the last committed tick (JSON-ready).

        A superset of :meth:`state`: what a viewer needs plus every internal needed to go on.
        """
        return self.snapshots.state(self.tick)

    def restore(self, state: dict[str, Any]) -> None:
        """Put the engine in the state a :meth:`snapshot` describes."""
        self._restored(self.snapshots.restore(state))

    def full_snapshot(self) -> Snapshot:
        """Engine state plus every mind's snapshot, as stored in the run database."""
        return self.snapshots.full(self.tick)

    def restore_full(self, snap: Snapshot) -> None:
        self._restored(self.snapshots.restore_full(snap))

    def _restored(self, tick: int) -> None:
        self.dormancy.wake_all()  # a mind restored may be another than the one that said so
        self.tick = tick
        self._accepting_tick = tick + 1

    def save_snapshot(self) -> None:
        """Store a snapshot of the last committed tick (e.g. at the end of a run or on Ctrl-C)."""
        if self.store is not None and self.tick >= 0 and not self._in_tick and self._resim is None:
            self.store.save_snapshot(self.full_snapshot())

    async def resimulate(self, ticks: Iterable[TickRecords]) -> int:
        """Re-run recorded ticks after a restore, uncommitted (:meth:`Snapshots.resimulate`);
        returns how many were not exact."""
        async def rerun(forced: list[Command], when: datetime) -> TickRecords:
            return await self._advance(commit=False, forced=forced, forced_time=when)

        discard = self.store.discard_pending if self.store is not None else None
        return await self.snapshots.resimulate(ticks, self.tick, rerun, discard)


def loop_gc_threshold(residents: int) -> int:
    """The collector's first threshold for a loop over ``residents`` (see :data:`LOOP_GC_THRESHOLD`)."""
    return max(LOOP_GC_THRESHOLD, LOOP_GC_PER_RESIDENT * residents)


@contextmanager
def roomy_collector(threshold: int = LOOP_GC_THRESHOLD) -> Iterator[None]:
    """Raise the collector's first threshold to ``threshold`` (never lower it) for the duration
    (see :data:`LOOP_GC_THRESHOLD`), and put back what was set before, whatever happens."""
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], threshold), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def _queued(tick: int | None, cmd: Command) -> str:
    """The message of an accepted command (recorded in its inject record)."""
    return f"queued for tick {tick}: {cmd.describe()}"
