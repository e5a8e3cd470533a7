"""Spatial memory: the places a resident knows, as a sector -> arena -> object tree.

A resident only ever chooses among places it knows, and it chooses an *arena*
('sector:arena') from an enumeration in the output schema, so a model — even a tiny one —
cannot name a place that does not exist. The object inside the arena is then picked
without a model call, by the words the action shares with the object names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_WORD = re.compile(r"[a-z]+")


def split_address(address: str) -> tuple[str, str, str]:
    parts = [p.strip() for p in address.split(":")]
    parts += [""] * (3 - len(parts))
    return parts[0], parts[1], parts[2]


def arena_of(address: str) -> str:
    sector, arena, _ = split_address(address)
    return f"{sector}:{arena}" if arena else sector


def _stem(word: str) -> str:
    for suffix in ("ing", "es", "s", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _stems(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower())}


_SHARED: list = []  # [(the places list a town's minds were given, its index)]: one index per town


def _town_index(town: Iterable[str]) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """(sorted addresses, prefix -> addresses under it, sector names) of a town.

    Every prefix (sector, sector:arena, full address) maps to the town addresses under it, so
    learning is a lookup rather than a scan of the town (it runs every tick). The minds of
    one run are given the same places list: they share one index (read only), where a copy
    each cost a 1,000-resident town a million dict entries per hundred residents."""
    if isinstance(town, list) and _SHARED and _SHARED[0][0] is town:
        return _SHARED[0][1]
    addresses = sorted(dict.fromkeys(a for a in town if a))
    under: dict[str, list[str]] = {}
    for address in addresses:
        parts = address.split(":")
        for depth in range(1, len(parts) + 1):
            under.setdefault(":".join(parts[:depth]), []).append(address)
    index = (addresses, under, sorted(k for k in under if k and ":" not in k))
    if isinstance(town, list) and len(addresses) > 100:
        _SHARED[:] = [(town, index)]  # the list is kept alive here, so its identity stays its own
    return index


class SpatialMemory:
    """Known places. ``town`` is every address in the map; only known ones are offered."""

    def __init__(self, town: Iterable[str] = (), known: Iterable[str] = ()):
        self.town, self._under, self._sectors = _town_index(town)
        self._known: set[str] = set()
        self._arena_set: set[str] = set()
        self._arena_list: list[str] | None = []
        self.learn(known)

    # -- learning ---------------------------------------------------------------------------

    def _add(self, address: str, new_arenas: set[str]) -> None:
        if address in self._known:
            return
        self._known.add(address)
        arena = arena_of(address)
        if arena not in self._arena_set:
            self._arena_set.add(arena)
            new_arenas.add(arena)
            self._arena_list = None

    def learn(self, addresses: Iterable[str]) -> list[str]:
        """Remember addresses (full or partial: a sector or arena brings what lies under it).

        Returns the arenas that were new. Addresses not in the town are kept only when the
        town is unknown (a mind tested without a map).
        """
        new_arenas: set[str] = set()
        for address in addresses:
            address = address.strip()
            if not address:
                continue
            under = self._under.get(address)
            if under:
                for a in under:
                    self._add(a, new_arenas)
            elif not self.town:
                self._add(address, new_arenas)
        return sorted(new_arenas)

    def learn_sectors_named_in(self, text: str) -> list[str]:
        """Learn every sector whose name appears in a text (a place heard of in a chat)."""
        lower = text.lower()
        named = [s for s in self._sectors if s.lower() in lower]
        return self.learn(named)

    # -- reading ----------------------------------------------------------------------------

    def known(self) -> list[str]:
        return sorted(self._known)

    def arenas(self) -> list[str]:
        """Known 'sector:arena' addresses, sorted (the enumeration offered to the model)."""
        if self._arena_list is None:
            self._arena_list = sorted(self._arena_set)
        return list(self._arena_list)

    def knows(self, address: str) -> bool:
        return arena_of(address) in self._arena_set or address in self._known

    def objects_in(self, arena: str) -> list[str]:
        return sorted(a for a in self._known if arena_of(a) == arena and split_address(a)[2])

    def best_object(self, arena: str, description: str) -> str | None:
        """The object in ``arena`` whose name shares most words with the action, or None."""
        words = _stems(description)
        best, best_score = None, 0
        for address in self.objects_in(arena):
            score = len(words & _stems(split_address(address)[2]))
            if score > best_score:
                best, best_score = address, score
        return best

    def match_arena(self, text: str, default: str | None = None) -> str | None:
        """The known arena that a free-text place name refers to (exact, then by words)."""
        arenas = self.arenas()
        lower = text.strip().lower()
        for arena in arenas:
            if arena.lower() == lower:
                return arena
        words = _stems(text)
        best, best_score = default, 0
        for arena in arenas:
            score = len(words & _stems(arena.replace(":", " ")))
            if score > best_score:
                best, best_score = arena, score
        return best

    def describe(self, limit: int = 40) -> str:
        """A compact tree for prompts: 'Sector: arena (objects), arena ...'."""
        tree: dict[str, dict[str, list[str]]] = {}
        for address in self.known():
            sector, arena, obj = split_address(address)
            arenas = tree.setdefault(sector, {})
            objects = arenas.setdefault(arena, []) if arena else None
            if obj and objects is not None:
                objects.append(obj)
        lines = []
        for sector, arenas in sorted(tree.items())[:limit]:
            parts = [f"{a} ({', '.join(o[:4])})" if o else a for a, o in sorted(arenas.items()) if a]
            lines.append(f"{sector}: {'; '.join(parts)}" if parts else sector)
        return "\n".join(lines)

    # -- persistence ------------------------------------------------------------------------------

    def to_dict(self) -> dict:
        return {"known": self.known()}

    def restore(self, state: dict) -> None:
        self._known, self._arena_set, self._arena_list = set(), set(), []
        self.learn(state.get("known", []))
