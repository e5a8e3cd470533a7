"""More residents than a town's files hold, for large runs and benchmarks.

``crowd(town, n)`` keeps the town's own residents (from its largest residents file) and adds
generated, deterministic ones living in the town's home rooms and working in its public
rooms. They are plain personas, so every mind works with them.
"""

from __future__ import annotations

from maps.contracts import Persona
from maps.town import Town, load_town, residents_files, town_folder

FIRST = ["Ada", "Bruno", "Carmen", "Dev", "Elsa", "Farid", "Gwen", "Hiro", "Ines", "Jonas", "Kira", "Luis",
         "Mona", "Nils", "Olga", "Pavel", "Quinn", "Rhea", "Sami", "Tara", "Ugo", "Vera", "Wim", "Xena", "Yusuf", "Zoe"]
LAST = ["Abbott", "Berg", "Costa", "Dahl", "Eriksen", "Fontaine", "Gallo", "Holm", "Ivers", "Jansen", "Kovacs",
        "Lund", "Moreau", "Nash", "Ortega", "Pike", "Quist", "Reyes", "Stone", "Toivonen", "Ueda", "Varga", "Wolfe"]
TRAITS = ["friendly", "curious", "quiet", "busy", "cheerful", "careful", "chatty", "thoughtful"]


class NoResidentsError(ValueError):
    """The town folder holds no residents file."""


def pick_residents(town_name: str, agents: int | None, residents: str | None) -> tuple[Town, list[Persona], bool]:
    """Load the town with a residents file fitting ``agents``; generate more if none is big enough.

    Returns (town, residents, whether any were generated): what a run chose, so a replay
    of it loads the same residents."""
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
