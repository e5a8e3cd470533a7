"""More residents than a town's files hold, and whole towns sized for them.

``crowd(town, n)`` keeps the town's own residents (from its largest residents file) and adds
generated, deterministic ones living in the town's home rooms and working in its public
rooms. They are plain personas, so every mind works with them.

``generated_town(n, seed)`` builds a town for ``n`` residents instead (``--town generated:N``
or ``generated:N:SEED``; ``generated`` alone is sized by ``--agents``): homes, workplaces and
venues in proportion, laid out in streets of the default town's buildings, each resident
living and working in their own neighbourhood, so 1,000 or 10,000 residents are a town and
not a crowd on 25 people's map. The same (n, seed) gives the same town byte for byte; it is
written once to a cache folder (``$TOWNSFOLK_TOWNS_DIR``, else ``~/.cache/townsfolk/towns``)
as an ordinary town folder (Tiled map + residents file), so replays and the viewer load it
like any other.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from maps import build_default_town as bdt
from maps.contracts import Persona
from maps.town import Town, TownError, load_town, residents_files, town_folder

FIRST = ["Ada", "Bruno", "Carmen", "Dev", "Elsa", "Farid", "Gwen", "Hiro", "Ines", "Jonas", "Kira", "Luis",
         "Mona", "Nils", "Olga", "Pavel", "Quinn", "Rhea", "Sami", "Tara", "Ugo", "Vera", "Wim", "Xena", "Yusuf", "Zoe"]
LAST = ["Abbott", "Berg", "Costa", "Dahl", "Eriksen", "Fontaine", "Gallo", "Holm", "Ivers", "Jansen", "Kovacs",
        "Lund", "Moreau", "Nash", "Ortega", "Pike", "Quist", "Reyes", "Stone", "Toivonen", "Ueda", "Varga", "Wolfe"]
TRAITS = ["friendly", "curious", "quiet", "busy", "cheerful", "careful", "chatty", "thoughtful"]


class NoResidentsError(ValueError):
    """The town folder holds no residents file."""


def pick_residents(town_name: str, agents: int | None, residents: str | None) -> tuple[Town, list[Persona], bool]:
    """Load the town with a residents file fitting ``agents``; generate more if none is big enough.

    ``town_name`` may be ``generated[:N[:SEED]]`` (see :func:`generated_town`). Returns (town,
    residents, whether any were generated): what a run chose, so a replay of it loads the
    same residents."""
    if is_generated(town_name):
        n, seed = parse_generated(town_name, agents)
        town_name = str(generated_town(n, seed))
    if residents is not None:
        town = load_town(town_name, residents)
        people = town.residents
        if agents is not None and agents > len(people):
            return town, crowd(town, agents, people), True
        return town, people[: agents or len(people)], False
    files = residents_files(town_name)
    if not files:
        raise NoResidentsError(f"{town_folder(town_name)}: no residents*.json file in the town folder")
    sizes = []
    for f in files:
        t = load_town(town_name, f.name)
        sizes.append((len(t.residents), f.name, t))
    want = agents or sizes[0][0]
    for n, _name, t in sizes:
        if n >= want:
            return t, t.residents[:want], False
    biggest = sizes[-1][2]
    return biggest, crowd(biggest, want, biggest.residents), True


def crowd(town: Town, n: int, base: list[Persona] | None = None) -> list[Persona]:
    """``n`` residents: the town's own first, then generated ones (deterministic)."""
    if base is None:
        files = residents_files(town.folder)
        base = load_town(town.folder, files[-1].name).residents if files else []
    people = list(base[:n])
    homes = [a.address for s in town.sectors.values() if s.kind == "home" for a in s.arenas.values()
             if any(o.name == "bed" for o in a.objects.values())]
    works = [a.address for s in town.sectors.values() if s.kind != "home" for a in s.arenas.values() if a.objects]
    if not homes or not works:
        raise ValueError(f"{town.map_path}: cannot generate residents without home rooms with a bed and public rooms with objects")
    taken = {p.name for p in people}
    i = 0
    while len(people) < n:
        first, last = FIRST[i % len(FIRST)], LAST[(i // len(FIRST)) % len(LAST)]
        name = f"{first} {last}" + (f" {i // (len(FIRST) * len(LAST)) + 1}" if i >= len(FIRST) * len(LAST) else "")
        i += 1
        if name in taken:
            continue
        taken.add(name)
        k = len(people)
        wake = 5 + k % 4
        people.append(Persona(
            name=name, age=20 + (k * 7) % 50, traits=[TRAITS[k % len(TRAITS)], TRAITS[(k * 3 + 1) % len(TRAITS)]],
            occupation="worker", workplace=works[k % len(works)], home=homes[k % len(homes)],
            lifestyle=f"Wakes at {wake}, works at {works[k % len(works)].split(':')[0]}.",
            wake_hour=wake, sleep_hour=21 + k % 3,
        ))
    return people


# ---------------------------------------------------------------------------------------------
# A town sized for N residents
# ---------------------------------------------------------------------------------------------

GENERATED = "generated"
GENERATOR_VERSION = 3  # part of the cache folder's name: bump when the layout or the people change
PER_UNIT = 100  # residents per neighbourhood unit (its homes, workplaces and venues)
BAND = 30  # map rows per band: a row of buildings, a street, a row facing it, a green strip
ROW_MAX = 180  # tiles of buildings in a row at most: a neighbourhood spans a row or two, whatever the town
STEMS = ["Oak", "Birch", "Cedar", "Elm", "Ash", "Maple", "Alder", "Rowan", "Hazel", "Linden", "Poplar", "Larch",
         "Holly", "Juniper", "Spruce", "Hawthorn", "Chestnut", "Sycamore", "Beech", "Yew", "Aspen", "Cypress"]
MORE_FIRST = ["Alma", "Bea", "Cyrus", "Dora", "Emil", "Fay", "Gus", "Hana", "Ivo", "Jade", "Kofi", "Lena", "Milo",
              "Nora", "Otto", "Pia", "Rafa", "Sofia", "Teo", "Una", "Viktor", "Wren", "Yara", "Zane"]
MORE_LAST = ["Ahmed", "Brandt", "Chen", "Diaz", "Evans", "Fischer", "Garcia", "Haddad", "Ito", "Kim", "Larsen",
             "Mensah", "Novak", "Okoye", "Patel", "Rossi", "Silva", "Tanaka", "Urban", "Vogel", "Weber", "Young"]
JOBS = {  # sector kind -> occupations of the people who work there, by room order
    "cafe": ["cook", "baker", "barista"], "shop": ["stock clerk", "bookkeeper", "shop assistant"],
    "bank": ["vault clerk", "loan officer", "bank teller"], "civic": ["council clerk", "mayor's aide", "receptionist"],
    "clinic": ["doctor", "medical secretary", "receptionist", "pharmacist"],
    "school": ["lecturer", "administrator", "teacher", "librarian"], "park": ["gardener", "groundskeeper", "park warden"],
    "pub": ["cook", "cellar keeper", "bartender"],
}
WORD = {"cafe": "Cafe", "shop": "Grocer", "bank": "Bank", "civic": "Hall", "clinic": "Clinic", "school": "College",
        "park": "Park", "pub": "Tavern"}


class GeneratedTownError(TownError):
    """A ``generated:N[:SEED]`` town name that is not one (a bad --town: exit status 2)."""

    def __init__(self, town_name: str, problem: str) -> None:
        super().__init__(town_name, "town", problem)


def is_generated(town_name: str) -> bool:
    return town_name == GENERATED or town_name.startswith(GENERATED + ":")


def parse_generated(town_name: str, agents: int | None) -> tuple[int, int]:
    """(residents, seed) of ``generated``, ``generated:N`` or ``generated:N:SEED``."""
    parts = town_name.split(":")[1:]
    try:
        n = int(parts[0]) if parts else (agents or 25)
        seed = int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        n = seed = -1
    if len(parts) > 2 or n < 1 or seed < 0 or n > 100_000:
        raise GeneratedTownError(town_name, "expected 'generated', 'generated:N' or 'generated:N:SEED' "
                                 "with N residents from 1 to 100000 and SEED >= 0")
    return n, seed


def towns_cache() -> Path:
    return Path(os.environ.get("TOWNSFOLK_TOWNS_DIR") or Path.home() / ".cache" / "townsfolk" / "towns")


def generated_town(n: int, seed: int = 0) -> Path:
    """The folder of the town for ``n`` residents and ``seed``, built on first use (atomically:
    two runs asking at once both get a whole folder)."""
    folder = towns_cache() / f"generated-{n}-seed{seed}-v{GENERATOR_VERSION}"
    if (folder / "residents.json").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    try:
        tmap, people = build_town(n, seed)
        (tmp / "town.json").write_text(json.dumps(tmap, separators=(",", ":")) + "\n")
        (tmp / "terrain.png").write_bytes(bdt.terrain_png())
        (tmp / "residents.json").write_text(json.dumps(people, indent=1, ensure_ascii=False) + "\n")
        try:
            tmp.rename(folder)
        except OSError:  # another process finished first: theirs is the same town
            if not (folder / "residents.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def build_town(n: int, seed: int) -> tuple[dict, list[dict]]:
    """(Tiled map, residents) of a town for ``n`` residents: see the module docstring."""
    rng = random.Random(seed)
    buildings = _buildings(n, rng)
    rows = _rows(buildings)
    row_width = max(sum(b.width for b in row) + bdt.GAP * (len(row) - 1) for row in rows) + bdt.MARGIN
    bands = (len(rows) + 1) // 2
    # districts: columns of bands side by side, so a bigger town grows in both directions
    # while a neighbourhood (and so a commute) stays the length of a row or two
    columns = max(1, round((bands * BAND / row_width) ** 0.5))
    per_column = -(-bands // columns)
    width = columns * row_width + bdt.MARGIN
    height = BAND * per_column + 2
    ground = _ground(width, height, per_column)
    layers, ids = bdt.TownObjects(), bdt.ObjectIds()
    for i, row in enumerate(rows):
        column, band, north = _row_place(i, per_column)
        y0 = 2 + BAND * band + (0 if north else 16)
        x0 = bdt.MARGIN + column * row_width
        for b in row:
            at = bdt.Placement(x0, y0, "south" if north else "north")
            bdt.add_building_objects(layers, ids, b, at)
            bdt.paint_building(ground, b, at)
            x0 += b.width + bdt.GAP
    layers.spawns.append(ids.rect("Town Square", width // 2, 2 + 13, 1, 1, point=True))
    ground_data, collision_data = bdt.terrain_layers(ground)
    size = (width, height)
    tmap = {
        "type": "map", "version": "1.10", "tiledversion": "1.10.2", "orientation": "orthogonal",
        "renderorder": "right-down", "width": width, "height": height, "tilewidth": bdt.TS, "tileheight": bdt.TS,
        "infinite": False, "nextlayerid": 7, "nextobjectid": ids.next_id, "compressionlevel": -1,
        "properties": [{"name": "name", "type": "string", "value": f"Generated town of {n}"}],
        "tilesets": [bdt.tileset()],
        "layers": [bdt.tile_layer(1, "ground", ground_data, size), bdt.tile_layer(2, "collision", collision_data, size, False),
                   bdt.object_layer(3, "sectors", layers.sectors), bdt.object_layer(4, "arenas", layers.arenas),
                   bdt.object_layer(5, "objects", layers.objects), bdt.object_layer(6, "spawns", layers.spawns)],
    }
    return tmap, _people(n, rng, buildings)  # in neighbourhood order


def _row_place(i: int, per_column: int) -> tuple[int, int, bool]:
    """(column, band, on the street's north side) of the ``i``-th row of buildings. The two
    rows of a band face each other across its street, and the columns snake (down one, up
    the next), so the last row of a column and the first of the next stand side by side: in
    plain reading order a neighbourhood begun at the bottom of a column went on at the top of
    the next, and its residents walked 1,000 tiles to work in a town of 10,000."""
    column, k = divmod(i, 2 * per_column)
    band, second = divmod(k, 2)
    north = not second
    if column % 2:  # walked upwards: the last band first, its south row first
        band, north = per_column - 1 - band, not north
    return column, band, north


def _public_templates() -> dict[str, bdt.Building]:
    """One building of each public kind, as the default town has it."""
    return {b.kind: b for b in bdt.ROW_B + bdt.ROW_C if b.kind != "home"}


def _buildings(n: int, rng: random.Random) -> list[bdt.Building]:
    """The town's buildings in neighbourhood order: each unit of about PER_UNIT residents gets
    its homes, a cafe, a grocer, a pub, a park and one of clinic / college / bank / hall."""
    templates = _public_templates()
    names: dict[str, int] = {}
    stems = STEMS[:]
    rng.shuffle(stems)

    def name(word: str) -> str:
        k = names.get(word, 0)
        names[word] = k + 1
        base = f"{stems[k % len(stems)]} {word}"
        return base if k < len(stems) else f"{base} {k // len(stems) + 1}"

    out: list[bdt.Building] = []
    housed = unit = 0
    while housed < n:
        want = min(PER_UNIT, n - housed)
        homes: list[bdt.Building] = []
        while sum(_beds(b) for b in homes) < want:
            pick = rng.random()
            homes.append(bdt.flats(name("Apartments")) if pick < 0.6 or want - sum(map(_beds, homes)) > 40
                         else bdt.home(name("House")) if pick < 0.85 else bdt.cottage(name("Cottage")))
        housed += sum(_beds(b) for b in homes)
        extra = ["clinic", "school", "bank", "civic"][unit % 4]
        public = ["cafe", "shop", "pub", "park", extra] if want >= 40 or unit == 0 else ["cafe", extra]
        public = [_renamed(templates[k], name(WORD[k])) for k in public]
        mid = len(homes) // 2
        out += homes[:mid] + public + homes[mid:]
        unit += 1
    return out


def _renamed(b: bdt.Building, name: str) -> bdt.Building:
    """A copy of a template building under another name (its spawn points too)."""
    return replace(b, name=name, spawns=[(name, room, dx, dy) for _, room, dx, dy in b.spawns])


def _beds(b: bdt.Building) -> int:
    """Residents a building sleeps: one per bed tile."""
    return sum((o[5] if len(o) > 5 else 1) for o in b.objects if o[1] == "bed") if b.kind == "home" else 0


def _rows(buildings: list[bdt.Building]) -> list[list[bdt.Building]]:
    """Buildings into rows of about the same length, so the map comes out roughly square."""
    total = sum(b.width + bdt.GAP for b in buildings)
    row_len = min(ROW_MAX, max(80, int((BAND / 2 * total) ** 0.5)))
    rows: list[list[bdt.Building]] = [[]]
    used = 0
    for b in buildings:
        if rows[-1] and used + b.width > row_len:
            rows.append([])
            used = 0
        rows[-1].append(b)
        used += b.width + bdt.GAP
    return rows


def _ground(width: int, height: int, bands: int) -> bdt.Grid:
    """Grass inside a ring of trees, one street per band (a road with a path on each side)."""
    ground = [["grass"] * width for _ in range(height)]
    for x in range(width):
        ground[0][x] = ground[height - 1][x] = "tree"
    for y in range(height):
        ground[y][0] = ground[y][width - 1] = "tree"
    for band in range(bands):
        street = 2 + BAND * band + 12
        for x in range(1, width - 1):
            ground[street][x] = ground[street + 3][x] = "path"
            ground[street + 1][x] = ground[street + 2][x] = "road"
    return ground


def _beds_of(b: bdt.Building) -> list[str]:
    """One home address per bed tile: the room of each bed (a flat, a bedroom)."""
    out: list[str] = []
    for room, obj, *_rest in b.objects:
        if obj == "bed":
            width = _rest[3] if len(_rest) > 3 else 1
            out += [f"{b.name}:{room}"] * width
    return out


def _people(n: int, rng: random.Random, buildings: list[bdt.Building]) -> list[dict]:
    """``n`` residents in neighbourhood order: beds filled home by home, each working in the
    room of a public building of the same stretch of town (both lists are in that order)."""
    beds = [(addr, b.name) for b in buildings if b.kind == "home" for addr in _beds_of(b)][:n]
    jobs = [(f"{b.name}:{room}", JOBS[b.kind][i % len(JOBS[b.kind])], b.kind)
            for b in buildings if b.kind != "home" for i, room in enumerate(b.layout.rooms)]
    names = _names(n, rng)
    people: list[dict] = []
    for k, ((home, house), name) in enumerate(zip(beds, names)):
        place, job, kind = jobs[min(len(jobs) - 1, k * len(jobs) // n)]
        wake = 5 + rng.randrange(4) if kind in ("cafe", "shop") else 6 + rng.randrange(3)
        people.append({
            "name": name, "age": 18 + rng.randrange(60), "traits": rng.sample(TRAITS, 2), "occupation": job,
            "workplace": place, "home": home, "wake_hour": wake, "sleep_hour": 21 + rng.randrange(3),
            "lifestyle": f"Wakes at {wake}, works as {job} at {place.split(':')[0]}, lives at {house}.",
            "relationships": [],
        })
    _relate(people, [h for _, h in beds])
    return people


def _names(n: int, rng: random.Random) -> list[str]:
    """``n`` distinct names, shuffled by the seed; a middle initial once plain names run out."""
    firsts, lasts = FIRST + MORE_FIRST, LAST + MORE_LAST
    plain = [f"{f} {last}" for last in lasts for f in firsts]
    rng.shuffle(plain)
    out = plain[:n]
    k = 0
    while len(out) < n:
        f, last = plain[k % len(plain)].split(" ", 1)
        out.append(f"{f} {chr(ord('A') + (k // len(plain)) % 26)}. {last}")
        k += 1
    return out


def _relate(people: list[dict], houses: list[str]) -> None:
    """Housemates know each other, and so do the next and previous workers of a workplace."""
    by_house: dict[str, list[dict]] = {}
    for p, h in zip(people, houses):
        by_house.setdefault(h, []).append(p)
    for mates in by_house.values():
        for p in mates:
            p["relationships"] += [{"name": q["name"], "relation": "housemate", "closeness": 0.7}
                                   for q in mates if q is not p][:8]
    by_work: dict[str, list[dict]] = {}
    for p in people:
        by_work.setdefault(p["workplace"], []).append(p)
    for staff in by_work.values():
        for i, p in enumerate(staff):
            p["relationships"] += [{"name": q["name"], "relation": "coworker", "closeness": 0.5}
                                   for q in (staff[i - 1] if i else None, staff[i + 1] if i + 1 < len(staff) else None) if q]
