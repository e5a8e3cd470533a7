"""The world's side of a resident (their Body): where they are and what they are doing.

The mind (agents/minds/) decides; the body is what the world knows of the resident and the
only thing the rules change. Snapshot/restore make a Body part of a run's snapshots.
:func:`make_bodies` places a town's residents at the start: spawn tile and known places,
read from the town and the personas only.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from maps.contracts import ChatLine, Mind, Persona, stable_index
from maps.town import Town
from world.perception import Attention

Tile = tuple[int, int]


class Body:
    """The world's side of a resident: where they are and what they are doing."""

    __slots__ = (
        "name", "persona", "mind", "tile", "area", "address", "path", "path_i", "dest", "pending_use",
        "holding", "description", "emoji", "event", "action_address", "asleep", "arrived",
        "heard", "unsaid", "whispers", "announcements", "memories", "attention", "known", "known_dirty", "base_known", "public",
        "quiet_until", "bell",
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
        self.unsaid: list[ChatLine] = []  # my lines the world did not deliver (Perception.unsaid)
        self.whispers: list[str] = []
        self.announcements: list[str] = []
        self.memories: list[str] = []
        self.attention = Attention()
        self.public: frozenset[str] = frozenset()  # public places known from the start, shared by neighbours
        self.known: set[str] = set()  # every other known place
        self.base_known: frozenset[str] = frozenset()  # of those, what they knew at the start (not stored)
        self.known_dirty = True
        # engine state, never stored: until when the mind said it would only 'continue' if it
        # perceived nothing new (Engine._perceive_all skips it meanwhile); None: ask every tick
        self.quiet_until: datetime | None = None
        self.bell: set[str] | None = None  # where a dormant resident is rung awake (world/quiet.py)

    @property
    def walking(self) -> bool:
        return self.path_i < len(self.path)

    def known_places(self) -> list[str]:
        """Every place this resident knows, sorted (what a Perception carries when it changed)."""
        return sorted(self.public | self.known)

    def stir(self) -> None:
        """Something reached this resident from outside (its inbox, an errand): a dormant one is
        looked at again next tick. Every writer of another body's inbox goes through here."""
        if self.bell is not None:
            self.bell.add(self.name)

    def hear(self, line: ChatLine) -> None:
        self.heard.append(line)
        self.stir()

    def hold_back(self, line: ChatLine) -> None:
        """A line of this resident's that was not said: its mind learns so next tick."""
        self.unsaid.append(line)
        self.stir()

    def deliver(self, kind: str, text: str) -> None:
        """A whisper, an announcement or a memory put into this resident's inbox."""
        {"whisper": self.whispers, "announcement": self.announcements, "memory": self.memories}[kind].append(text)
        self.stir()

    def has_inbox(self) -> bool:
        return bool(self.heard or self.unsaid or self.whispers or self.announcements or self.memories)

    def learn(self, town: Town) -> None:
        """Spatial memory: entering a room teaches its address and its objects."""
        addr = self.address
        if not addr or addr in self.known or addr in self.public:
            return
        sector_name = addr.split(":")[0]
        new = {sector_name, addr}
        sector = town.sectors.get(sector_name)
        if sector is not None and ":" in addr:
            arena = sector.arenas.get(addr.split(":")[1])
            if arena is not None:
                new |= {o.address for o in arena.objects.values()}
        new -= self.public
        if not new <= self.known:
            self.known |= new
            self.known_dirty = True

    def snapshot(self) -> dict:
        return {
            "tile": list(self.tile), "address": self.address, "action": self.description, "emoji": self.emoji,
            "asleep": self.asleep, "event": list(self.event), "action_address": self.action_address,
            "path": [list(t) for t in self.path[self.path_i:]], "dest": self.dest,
            "pending_use": list(self.pending_use) if self.pending_use else None, "holding": self.holding,
            "arrived": self.arrived, "heard": [c.model_dump() for c in self.heard],
            "unsaid": [c.model_dump() for c in self.unsaid], "whispers": list(self.whispers),
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
        self.unsaid = [ChatLine(**c) for c in s.get("unsaid", ())]  # none in a snapshot from before it
        self.whispers, self.announcements, self.memories = list(s["whispers"]), list(s["announcements"]), list(s["memories"])
        self.attention = Attention.restore(s["attention"])
        self.known = set(self.base_known) | set(s["known_extra"])
        self.known_dirty = s["known_dirty"]


def spawn_tile(town: Town, persona: Persona) -> Tile:
    """The persona's spawn point, else a tile of their home chosen by name (stable across runs)."""
    if persona.spawn is not None:
        return town.spawns[persona.spawn].tile
    tiles = town.resolve(persona.home)
    return tiles[stable_index(persona.name, len(tiles))]


NEIGHBOURHOOD = 110  # tiles around one's home whose public places one knows from the start
# (the default town, 106x49 tiles, lies whole within it: there everyone knows every public place)


class KnownPlaces:
    """What residents know at the start: the public places of their neighbourhood (one shared
    frozenset per home), their own home and workplace, and the homes of people they know.

    The town's addresses are grouped by sector once, so this costs a resident its own homes,
    not a scan of the town, and a 10,000-resident town does not hold 10,000 copies of its
    public places."""

    def __init__(self, town: Town) -> None:
        self.town = town
        self.by_sector: dict[str, list[str]] = {}
        for a in town.addresses():
            self.by_sector.setdefault(a.split(":")[0], []).append(a)
        self.public_sectors = [s for s in town.sectors.values() if s.kind != "home"]
        self._near: dict[str, frozenset[str]] = {}

    def public_near(self, home: str) -> frozenset[str]:
        """The public places within NEIGHBOURHOOD tiles of the sector of ``home``."""
        sector = home.split(":")[0]
        hit = self._near.get(sector)
        if hit is None:
            own = self.town.sectors.get(sector)
            hit = self._near[sector] = frozenset(
                a for s in self.public_sectors if own is None or _gap(own.rect, s.rect) <= NEIGHBOURHOOD
                for a in self.by_sector.get(s.name, ()))
        return hit

    def own(self, persona: Persona, everyone: Mapping[str, Persona]) -> set[str]:
        """One's own home and workplace, and the homes of people one knows (beyond the public ones)."""
        sectors = {persona.home.split(":")[0], persona.workplace.split(":")[0]}
        sectors |= {everyone[rel.name].home.split(":")[0] for rel in persona.relationships if rel.name in everyone}
        return {a for sector in sectors for a in self.by_sector.get(sector, ())}


def _gap(a: Any, b: Any) -> int:
    """Tiles between two rectangles (0 when they touch or overlap), the larger of the two axes."""
    dx = max(0, b.x - (a.x + a.w - 1), a.x - (b.x + b.w - 1))
    dy = max(0, b.y - (a.y + a.h - 1), a.y - (b.y + b.h - 1))
    return max(dx, dy)


def initial_known(town: Town, persona: Persona, everyone: Mapping[str, Persona]) -> set[str]:
    """Every place a resident knows at the start (see :class:`KnownPlaces`)."""
    places = KnownPlaces(town)
    return set(places.public_near(persona.home)) | places.own(persona, everyone)


def make_bodies(town: Town, personas: list[Persona], minds: Mapping[str, Mind]) -> dict[str, Body]:
    """One Body per persona, in name order, on its spawn tile, knowing its usual places.

    Refuses an empty town, two residents of one name and a resident without a mind.
    """
    if not personas:
        raise ValueError("a world needs at least one resident")
    names = sorted(p.name for p in personas)
    if len(set(names)) != len(names):
        raise ValueError("resident names must be unique")
    by_name = {p.name: p for p in personas}
    places = KnownPlaces(town)
    bodies: dict[str, Body] = {}
    for name in names:
        persona = by_name[name]
        if name not in minds:
            raise ValueError(f"no mind for resident {name!r}")
        body = Body(persona, minds[name], spawn_tile(town, persona), town)
        body.public = places.public_near(persona.home)
        body.base_known = frozenset(places.own(persona, by_name) - body.public)
        body.known = set(body.base_known)
        body.learn(town)
        bodies[name] = body
    return bodies
