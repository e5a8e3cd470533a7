"""The rules: validating each resident's Intent against the world and applying it.

What a ``go``/``use``/``say``/``wait``/``sleep``/``continue`` intent does to a Body, the
objects and the conversations, and why an impossible one is refused (a ``note`` record with
``refused``: the place is unknown, the listener is not in view, ...). Walking one step per
tick along a cached path, arriving, using and releasing objects live here too.

:class:`Rules` is a collaborator of the loop (world/engine.py, ``engine.rules``). It is given
what it touches and nothing else: the town (read only), the bodies, the object states, the
spatial index (told what changed, for perception), the path finder and the run's counters.
It owns the holders (who set an object's state) and the conversations (ids by pair).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from maps.contracts import CONVERSATION_GAP_TICKS, Intent, Perception, Record, build, line_of, not_my_turn
from maps.town import Town
from replays.health import mind_error_message
from world.body import Body, Tile, stable_index
from world.pathfinding import PathFinder
from world.perception import SpatialIndex

log = logging.getLogger("world.engine")  # one logger for the engine's parts (tests and users filter on it)

BUSY_TICKS = 2  # a line between two people this recent means they are still talking
GOAL_SPREAD = 4  # distinct goal tiles per place
FORGET_TALKS_EVERY = 360  # ticks (an hour of 10 s ticks) between sweeps of ended conversations


class Rules:
    """Applies intents to the bodies and objects it is given (see the module docstring)."""

    def __init__(self, town: Town, bodies: Mapping[str, Body], objects: dict[str, str], index: SpatialIndex,
                 paths: PathFinder, stats: dict[str, Any]) -> None:
        self.town = town
        self.bodies = bodies  # name -> Body, in name order
        self.objects = objects  # address -> state; changed in place, shared with the engine
        self.index = index
        self.paths = paths
        self.stats = stats  # refused_intents, mind_errors
        self.places = set(town.addresses())
        self.holders: dict[str, str] = {}  # object address -> the resident whose use set its state
        self.conversations: dict[str, list] = {}  # "a|b" -> [conversation_id, last_tick]
        self._talks_of: dict[str, dict[str, None]] = {}  # name -> its keys in self.conversations, in that order
        self._mind_errors_logged: set[str] = set()
        self.spoke: set[str] = set()  # who said a line this tick (Engine calls end_tick after applying)
        self.addressed: dict[str, str] = {}  # who was spoken to this tick -> by whom, first

    def restore(self, holders: Mapping[str, str], conversations: Mapping[str, list]) -> None:
        """Back to the holders and conversations of a snapshot."""
        self.holders = dict(holders)
        self.conversations = {k: list(v) for k, v in conversations.items()}
        self._talks_of = {}
        for key in self.conversations:
            self._index_talk(key)

    def forget_ended_talks(self, tick: int) -> int:
        """Drop the conversations whose last line is more than ``CONVERSATION_GAP_TICKS`` old:
        a new line between them starts a new conversation anyway, so nothing behaves differently,
        but without the sweep every pair that ever spoke stayed in every snapshot and in each
        resident's talks (a town of thousands over days). Returns how many were dropped."""
        ended = [key for key, cur in self.conversations.items() if tick - cur[1] > CONVERSATION_GAP_TICKS]
        for key in ended:
            del self.conversations[key]
            a, _, b = key.partition("|")
            for name in (a, b):
                talks = self._talks_of.get(name)
                if talks is not None:
                    talks.pop(key, None)
                    if not talks:
                        del self._talks_of[name]
        return len(ended)

    def _index_talk(self, key: str) -> None:
        a, _, b = key.partition("|")
        self._talks_of.setdefault(a, {})[key] = None
        self._talks_of.setdefault(b, {})[key] = None

    def mind_error(self, name: str, exc: Exception, records: list[Record]) -> None:
        """Record a mind's failure (counted in the summary); log each distinct error once."""
        message = mind_error_message(exc)
        logged = self._mind_errors_logged
        if message not in logged:
            logged.add(message)
            log.error("mind of %s failed: %s: %s (further occurrences are counted in the run summary)",
                      name, type(exc).__name__, message)
            log.debug("mind of %s failed", name, exc_info=exc)
        self.stats["mind_errors"] = self.stats.get("mind_errors", 0) + 1
        records.append(_rec("mind_error", name, {"error": type(exc).__name__, "message": message}))

    def place(self, r: Body, tile: Tile) -> None:
        """Put a resident on a tile at once (scenario set-up, tests); stops their walk."""
        if not self.town.is_walkable(tile):
            raise ValueError(f"tile {tile} is not walkable")
        old_area = r.area
        self.index.move(r.name, r.tile, tile)
        r.tile = tuple(tile)  # type: ignore[assignment]
        r.area = self.town.area_id(r.tile)
        r.address = self.town.area_address[r.area]
        r.path, r.path_i, r.dest, r.pending_use = (), 0, None, None
        self.index.touch(old_area, r.name)
        self.index.touch(r.area, r.name)
        r.learn(self.town)

    def coerce(self, name: str, value: Any, records: list[Record]) -> Intent:
        """A mind answered something other than an Intent: accept a valid dict, else continue."""
        try:
            return Intent.model_validate(value)
        except Exception as exc:
            records.append(_rec("note", name, {"text": f"{name}: the mind answered an invalid intent ({exc.__class__.__name__}); continuing",
                                               "refused": True}))
            return Intent()

    def _refuse(self, r: Body, intent: Intent, why: str, records: list[Record]) -> None:
        self.stats["refused_intents"] += 1
        records.append(_rec("note", r.name, {"text": f"{r.name} cannot {intent.kind}: {why}", "refused": True,
                                             "intent": intent.model_dump(exclude_defaults=True)}))

    def apply(self, r: Body, intent: Intent, p: Perception, tick: int, records: list[Record]) -> None:
        """Apply one resident's intent, or refuse it with the reason (a refusal changes nothing)."""
        kind = intent.kind
        if kind == "continue":
            if intent.description and intent.description != r.description:
                # where the walk goes, else where the last action was (a line said in the street has none)
                self.set_action(r, intent.description, intent.emoji or r.emoji, intent.event,
                                r.dest or r.action_address or r.address, records)
            self._walk(r, records)
        elif kind == "go":
            self._go(r, intent, records)
        elif kind == "use":
            self._start_using(r, intent, records)
        elif kind == "say":
            self._say(r, intent, p, tick, records)  # speaking pauses the walk for this tick
        else:
            self._rest(r, intent, records)

    def _go(self, r: Body, intent: Intent, records: list[Record]) -> None:
        target = intent.target
        if not target or not self.town.has_address(target):
            self._refuse(r, intent, self.town.explain_unknown(target) if target else "no target given", records)
            self._walk(r, records)
            return
        self.release(r, records)
        r.asleep = False
        self.set_action(r, intent.description or f"going to {target}", intent.emoji, intent.event, target, records)
        self.head_to(r, target, None, records)
        self._walk(r, records)

    def _start_using(self, r: Body, intent: Intent, records: list[Record]) -> None:
        target = intent.target
        if not target or target not in self.objects:
            why = "no target given" if not target else (
                f"{target!r} is a place, not an object" if target in self.places else self.town.explain_unknown(target))
            self._refuse(r, intent, why, records)
            self._walk(r, records)
            return
        if r.holding != target:
            self.release(r, records)
        r.asleep = False
        state = intent.object_state or f"in use by {r.name}"
        obj = self.town.objects[target]
        self.set_action(r, intent.description or f"using the {obj.name}", intent.emoji, intent.event, target, records)
        if r.tile in obj.tiles:
            r.path, r.path_i, r.dest, r.pending_use = (), 0, None, None
            self._use(r, target, state, records)
        else:
            self.head_to(r, target, (target, state), records)
            self._walk(r, records)

    def _say(self, r: Body, intent: Intent, p: Perception, tick: int, records: list[Record]) -> None:
        if not intent.to or intent.to not in self.bodies:
            self._refuse(r, intent, f"no resident named {intent.to!r}", records)
        elif intent.to == r.name:
            self._refuse(r, intent, "cannot talk to oneself", records)
        elif intent.to not in p.nearby:
            self._refuse(r, intent, f"{intent.to} is not in view", records)
            self._hold_back(r, intent)
        elif not (intent.utterance or "").strip():
            self._refuse(r, intent, "nothing to say (empty utterance)", records)
        elif busy := self.talking_with(intent.to, r.name, tick):
            # a line said to someone in another talk would be recorded as said to them and never
            # answered (issue 26): it is not said, and its speaker learns so
            self._refuse(r, intent, f"{intent.to} is talking with {busy}", records)
            self._hold_back(r, intent)
        elif self._not_my_turn(r.name, intent.to, tick):
            # a turn taken, not a mistake: no refusal counted, and the speaker learns it (unsaid)
            self._hold_back(r, intent)
        else:
            r.asleep = False
            line = line_of(r.name, intent)
            text, news = line.text, line.news
            self.bodies[intent.to].hear(line)
            self.spoke.add(r.name)
            self.addressed.setdefault(intent.to, r.name)
            chat = {"speaker": r.name, "listener": intent.to, "text": text,
                    "conversation_id": self._conversation(r.name, intent.to, tick)}
            records.append(_rec("chat", r.name, chat | ({"news": news} if news else {})))
            desc = intent.description or f"talking to {intent.to}"
            self.set_action(r, desc, intent.emoji or "💬", intent.event or (r.name, "chat with", intent.to),
                             r.address, records)

    def _not_my_turn(self, speaker: str, listener: str, tick: int) -> bool:
        """:func:`maps.contracts.not_my_turn` on this tick's lines said."""
        cur = self.conversations.get(f"{min(speaker, listener)}|{max(speaker, listener)}")
        return not_my_turn(speaker, listener, self.spoke, self.addressed, cur[1] if cur else None, tick)

    def end_tick(self) -> None:
        """Forget who spoke this tick (the turn-taking of :meth:`_not_my_turn`)."""
        if self.spoke or self.addressed:
            self.spoke.clear()
            self.addressed.clear()

    @staticmethod
    def _hold_back(r: Body, intent: Intent) -> None:
        """The line was not said: its speaker's next Perception says so (Perception.unsaid)."""
        r.hold_back(line_of(r.name, intent))

    def _rest(self, r: Body, intent: Intent, records: list[Record]) -> None:
        """wait / sleep: stop walking; a waiter lets go of what it holds, a sleeper keeps its bed."""
        if intent.kind != "sleep":
            self.release(r, records)
        r.path, r.path_i, r.dest, r.pending_use = (), 0, None, None
        if intent.kind == "sleep":
            r.asleep = True
            self.set_action(r, intent.description or "sleeping", intent.emoji or "😴", intent.event, r.address, records)
        else:
            r.asleep = False
            self.set_action(r, intent.description or "waiting", intent.emoji, intent.event, r.address, records)

    def set_action(self, r: Body, description: str, emoji: str, event: tuple[str, str, str] | None,
                    address: str, records: list[Record]) -> None:
        # the actor is always the subject of their own event (the world owns attribution)
        ev = (r.name, event[1], event[2]) if event else (r.name, "is", description)
        if description == r.description and emoji == r.emoji and address == r.action_address and ev == r.event:
            return
        r.description, r.emoji, r.action_address, r.event = description, emoji, address, ev  # type: ignore[assignment]
        self.index.touch(r.area, r.name)
        records.append(_rec("action", r.name, {"description": description, "emoji": emoji, "address": address,
                                               "event": list(ev)}))

    def head_to(self, r: Body, target: str, pending_use: tuple[str, str] | None, records: list[Record]) -> None:
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

    def _walk(self, r: Body, records: list[Record]) -> None:
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
            r.learn(self.town)
        self.index.touch(area, r.name)
        records.append(_rec("move", r.name, {"tile": new, "address": r.address}))
        if r.path_i >= len(r.path):
            self._arrive(r, records)

    def _arrive(self, r: Body, records: list[Record]) -> None:
        r.arrived = True
        r.path, r.path_i, r.dest = (), 0, None
        if r.pending_use is not None:
            target, state = r.pending_use
            r.pending_use = None
            self._use(r, target, state, records)

    def _use(self, r: Body, target: str, state: str, records: list[Record]) -> None:
        r.holding = target
        self.set_object(target, state, r.name, records)

    def release(self, r: Body, records: list[Record]) -> None:
        """Stop using an object: it returns to its resting state unless someone changed it since."""
        held = r.holding
        if held is None:
            return
        r.holding = None
        if self.holders.get(held) == r.name:
            self.set_object(held, self.town.objects[held].default_state, r.name, records)
            self.holders.pop(held, None)

    def set_object(self, address: str, state: str, by: str, records: list[Record]) -> None:
        old = self.objects[address]
        if by in self.bodies:
            self.holders[address] = by
        else:
            self.holders.pop(address, None)
        if old == state:
            return
        self.objects[address] = state
        self.index.touch(self.town.area_id(self.town.objects[address].tiles[0]), address)
        records.append(_rec("object", by if by in self.bodies else None,
                            {"address": address, "old_state": old, "new_state": state, "by": by}))
        if by not in self.bodies:
            for r in self.bodies.values():  # whoever used it lets go: their change was overridden
                if r.holding == address:
                    r.holding = None

    def talking_with(self, name: str, other: str, tick: int) -> str:
        """Whom ``name`` is in the middle of a talk with (two lines or more between them, the last
        in the last ``BUSY_TICKS`` ticks), if not ``other``; '' when free. A line said in this same tick
        before theirs (intents apply in name order) still reaches them: a mind hearing a line
        from someone it is not talking with remembers it with who said it."""
        for key in self._talks_of.get(name, ()):  # only their own talks (all talks cost O(town) a line)
            _cid, last, *lines = self.conversations[key]
            if tick - last > BUSY_TICKS or (lines and lines[0] < 2):  # a greeting alone is no talk to interrupt
                continue
            a, _, b = key.partition("|")
            if name in (a, b) and other not in (a, b):
                return b if a == name else a
        return ""

    def _conversation(self, a: str, b: str, tick: int) -> str:
        key = f"{min(a, b)}|{max(a, b)}"
        cur = self.conversations.get(key)
        if cur is None:
            self._index_talk(key)
        if cur is None or tick - cur[1] > CONVERSATION_GAP_TICKS:
            cur = [f"t{tick}:{key}", tick, 0]
        cur[1] = tick
        if len(cur) == 3:  # [id, last tick, lines]; a snapshot from before the count has two
            cur[2] += 1
        self.conversations[key] = cur
        return cur[0]


def _rec(kind: str, resident: str | None, data: dict[str, Any]) -> Record:
    return build(Record, {"kind": kind, "resident": resident, "data": data})
