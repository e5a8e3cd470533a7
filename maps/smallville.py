"""Bring the original Generative Agents (Smallville) residents into one of our towns.

The release keeps each resident in ``<Name>/bootstrap_memory/scratch.json`` (name, age,
innate, learned, currently, lifestyle, living_area, daily_plan_req and many runtime fields we
ignore). Their places belong to "the Ville", so each home and workplace is mapped onto a place
of the target town by what kind of place it is (a cafe to the town's cafe, a college to its
school, a family house to a home with enough beds), and every mapping is reported, as is
anything left unmapped. ``currently`` becomes first-person seed memories and
``daily_plan_req`` the resident's intentions for the day.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from maps.contracts import Persona, Relationship
from maps.files import FileReadError, read_json
from maps.town import Town, TownError, load_residents, load_town

SCRATCH = Path("bootstrap_memory") / "scratch.json"
MAX_SCRATCH_BYTES = 4 * 1024 * 1024  # a Smallville scratch.json is ~2 KB

# Words in a Smallville place name or description -> the kind of sector it is in our towns.
# Order matters: the first kind whose word appears wins ("college dorm" is a home).
HOME_WORDS = ("house", "home", "apartment", "dorm", "co-living", "living space", "room")
WORK_WORDS: list[tuple[str, tuple[str, ...]]] = [
    ("cafe", ("cafe", "café", "coffee")),
    ("pub", ("pub", "bar ", "tavern")),
    ("school", ("college", "school", "university", "library", "lecture", "professor", "student")),
    ("clinic", ("pharmacy", "clinic", "doctor", "hospital", "pharmacist")),
    ("shop", ("market", "store", "shop", "grocer", "supply")),
    ("bank", ("bank",)),
    ("civic", ("town hall", "mayor", "council")),
    ("park", ("park", "garden")),
]


class SmallvilleError(ValueError):
    """A Smallville folder or file cannot be imported; the message names it and what was expected."""


class ScratchPersona(BaseModel):
    """The fields of a Smallville ``scratch.json`` that we use (the rest are runtime state)."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1, max_length=80)
    first_name: str = ""
    last_name: str = ""
    age: int = Field(ge=0, le=120)
    innate: str
    learned: str
    currently: str
    lifestyle: str
    living_area: str = Field(min_length=1)
    daily_plan_req: str


@dataclass
class SmallvilleImport:
    """The residents made for the town, what each Smallville place became, and what did not map."""

    residents: list[Persona]
    mappings: list[str] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------
# Reading the release's folders
# ---------------------------------------------------------------------------


def read_scratch(path: Path) -> ScratchPersona:
    """One ``scratch.json``, with an error naming the file and field when it is not usable."""
    try:
        raw = read_json(path, MAX_SCRATCH_BYTES)
    except FileReadError as exc:
        hint = f" (expected <Name>/{SCRATCH})" if exc.problem == "no such file" else ""
        raise SmallvilleError(f"{exc}{hint}") from None
    if not isinstance(raw, dict):
        raise SmallvilleError(f"{path}: expected a JSON object of persona fields, got {type(raw).__name__}")
    try:
        return ScratchPersona.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise SmallvilleError(f"{path}: field {where!r}: {err['msg']}") from None


def read_folder(directory: Path) -> list[ScratchPersona]:
    """Every persona under ``directory`` (the release's ``personas`` folder), by name."""
    directory = Path(directory)
    if not directory.is_dir():
        raise SmallvilleError(f"{directory}: no such folder (expected the release's personas folder, "
                              f"holding one <Name>/{SCRATCH} per resident)")
    found = sorted(p for p in directory.iterdir() if p.is_dir() and (p / SCRATCH).exists())
    if not found:
        raise SmallvilleError(f"{directory}: no persona folders found (expected <Name>/{SCRATCH} inside)")
    people = [read_scratch(p / SCRATCH) for p in found]
    seen: dict[str, Path] = {}
    for folder, person in zip(found, people):
        if person.name in seen:
            raise SmallvilleError(f"{folder / SCRATCH}: field 'name': {person.name!r} is also in {seen[person.name]}")
        seen[person.name] = folder / SCRATCH
    return people


# ---------------------------------------------------------------------------
# Text: first person, hours, occupation
# ---------------------------------------------------------------------------

_IRREGULAR = {"is": "am", "has": "have", "was": "was", "does": "do", "goes": "go"}


def _first_person_verb(verb: str) -> str:
    """"goes" -> "go", "studies" -> "study", "is" -> "am" (third person to first)."""
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if verb.endswith("ies") and len(verb) > 4:
        return verb[:-3] + "y"
    if verb.endswith(("ches", "shes", "sses", "xes")):
        return verb[:-2]
    if verb.endswith("s") and not verb.endswith("ss"):
        return verb[:-1]
    return verb


def first_person(text: str, person: ScratchPersona) -> list[str]:
    """The sentences of ``text`` told by the resident: "Isabella Rodriguez is planning" ->
    "I am planning", "Isabella's cafe" -> "My cafe", her/his -> my, "and bakes" -> "and
    bake". A sentence that never names the resident is kept as it is."""
    first = person.first_name or person.name.split()[0]
    names = "|".join(re.escape(n) for n in sorted({person.name, first}, key=len, reverse=True))
    out = []
    for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())):
        if not s:
            continue
        m = re.search(rf"\b(?:{names})('s)?\s+(\w+)", s)
        if m is not None:
            head = s[:m.start()]
            if m.group(1):  # possessive
                s = head + ("My " if not head else "my ") + s[m.start(2):]
            else:
                rest = re.sub(r"\b(and|then) (\w+[^s\W])s\b", r"\1 \2", s[m.end():])
                s = head + f"I {_first_person_verb(m.group(2))}" + rest
            s = re.sub(r"\b(?:her|his)\b(?= own| \w)", "my", s)
            s = re.sub(r"\b(?:[Ss]he|[Hh]e)\s+is\b", "I am", s)
            s = re.sub(r"\b(?:[Ss]he|[Hh]e)\s+has\b", "I have", s)
            s = re.sub(rf"\b(?:{names})\b", "me", s)  # named again later: the object of the sentence
        out.append(s)
    return out


def _hour(text: str, words: tuple[str, ...]) -> int | None:
    """The hour in "wakes up around 6am" / "goes to bed around 11pm" (None when absent)."""
    for word in words:
        m = re.search(rf"{word}[^.,;]*?\b(\d{{1,2}})(?::\d\d)?\s*(am|pm|a\.m\.|p\.m\.)", text, re.I)
        if m:
            h = int(m.group(1)) % 12
            return h + 12 if m.group(2).lower().startswith("p") else h
    return None


def occupation(person: ScratchPersona) -> str:
    """"Isabella Rodriguez is a cafe owner of Hobbs Cafe who ..." -> "cafe owner"."""
    m = re.search(r"\bis (?:an?|the) ([a-z][a-z \-]{2,40}?)(?: who\b| at\b| of\b| in\b| for\b|,|\.)", person.learned)
    return m.group(1).strip() if m else "resident"


# ---------------------------------------------------------------------------
# Places
# ---------------------------------------------------------------------------


def _kind_of(text: str) -> str | None:
    low = text.lower() + " "
    for kind, words in WORK_WORDS:
        if any(w in low for w in words):
            return kind
    return None


@dataclass
class HomeUnit:
    """A place to live (a house, or a self-contained flat: a room with a bed and a stove) and
    its bedrooms, each with how many people its bed sleeps (a two-tile bed sleeps two)."""

    address: str
    rooms: list[list]  # [room address, free places in its bed]
    taken: bool = False  # a household lives here

    @property
    def free(self) -> int:
        return sum(n for _, n in self.rooms)

    def take(self) -> str:
        """A bed's room for one more resident (fills a room's bed before the next room's)."""
        for room in self.rooms:
            if room[1] > 0:
                room[1] -= 1
                return room[0]
        raise SmallvilleError(f"{self.address}: no free bed")


def home_units(town: Town) -> list[HomeUnit]:
    """The town's homes and their beds, by address."""
    units: list[HomeUnit] = []
    for sector in town.sectors.values():
        if sector.kind != "home":
            continue
        bedrooms = [[a.address, a.objects["bed"].rect.w * a.objects["bed"].rect.h]
                    for a in sector.arenas.values() if "bed" in a.objects]
        flats = [r for r in bedrooms if "stove" in sector.arenas[r[0].split(":")[1]].objects]
        if flats:
            units += [HomeUnit(r[0], [r]) for r in flats]
        elif bedrooms:
            units.append(HomeUnit(sector.name, bedrooms))
    return units


def _workplace(person: ScratchPersona, town: Town) -> tuple[str | None, str]:
    """The town sector matching the first workplace the resident's description names."""
    by_kind: dict[str, str] = {}
    for sector in town.sectors.values():
        by_kind.setdefault(sector.kind, sector.name)
    for text in (person.learned, person.daily_plan_req, person.currently):
        for sentence in re.split(r"(?<=[.!?])\s+", text):
            for m in re.finditer(r"(?:at|in|of|to) (?:the )?((?:[A-Z][\w'\-]*\s?){1,5})", sentence):
                place = m.group(1).strip()
                kind = _kind_of(place)
                if kind is not None and kind in by_kind:
                    return by_kind[kind], place
    return None, ""


def households(people: list[ScratchPersona]) -> dict[str, list[ScratchPersona]]:
    """People grouped by the Smallville living area they share (its first level below the world)."""
    out: dict[str, list[ScratchPersona]] = {}
    for p in people:
        parts = p.living_area.split(":")
        out.setdefault(parts[1] if len(parts) > 1 else parts[0], []).append(p)
    return out


def _next_home(units: list[HomeUnit], need: int, area: str, result: SmallvilleImport) -> HomeUnit:
    """The home a household (or what is left of it) moves into next.

    A household gets homes of its own (the smallest that fits); strangers share a home only
    when every home is taken, and that is reported."""
    empty = [u for u in units if u.free and not u.taken]
    fits = [u for u in empty if u.free >= need]
    if fits:
        return min(fits, key=lambda u: (u.free, u.address))
    if empty:
        return max(empty, key=lambda u: (u.free, u.address))
    unit = max((u for u in units if u.free), key=lambda u: (u.free, u.address))
    result.unmapped.append(f"home: {area!r} shares {unit.address} with another household (no empty home left)")
    return unit


def assign_homes(people: list[ScratchPersona], units: list[HomeUnit], result: SmallvilleImport) -> dict[str, str]:
    """Each person's bedroom address; biggest households first, every move reported in ``result``."""
    home_of: dict[str, str] = {}
    for area, members in sorted(households(people).items(), key=lambda kv: (-len(kv[1]), kv[0])):
        left = list(members)
        placed: list[str] = []
        while left:
            unit = _next_home(units, len(left), area, result)
            take = min(unit.free, len(left))
            for p in left[:take]:
                home_of[p.name] = unit.take()
            unit.taken = True
            left = left[take:]
            placed.append(unit.address)
        result.mappings.append(f"home: {area!r} ({len(members)}) -> {', '.join(placed)}")
        if len(placed) > 1:
            result.unmapped.append(f"home: {area!r} split over {len(placed)} homes (no home has {len(members)} beds)")
    return home_of


def localise(lines: list[str], renames: dict[str, str]) -> list[str]:
    """Smallville's place names replaced by the town's (longest first, so no name eats a longer one)."""
    out = []
    for line in lines:
        for said, work in sorted(renames.items(), key=lambda kv: -len(kv[0])):
            line = line.replace(said, work)
        out.append(line)
    return out


def known_people(p: ScratchPersona, people: list[ScratchPersona]) -> list[str]:
    """Full names of the others this persona's description mentions, by full or first name."""
    text = p.learned + " " + p.currently
    names = {q.name for q in people}
    firsts = {(q.first_name or q.name.split()[0]): q.name for q in people}
    return sorted({n for n in names if n != p.name and n in text} |
                  {full for first, full in firsts.items() if full != p.name
                   and re.search(rf"\b{re.escape(first)}\b", text)})


def _resident(p: ScratchPersona, work: str, home: str, renames: dict[str, str],
              people: list[ScratchPersona], result: SmallvilleImport) -> Persona:
    """One persona as a resident; hours it does not state default to 7 and 23, and that is reported."""
    wake = _hour(p.lifestyle, ("wak", "get up", "gets up", "rise"))
    sleep = _hour(p.lifestyle, ("bed", "sleep"))
    if wake is None or sleep is None:
        result.unmapped.append(f"hours of {p.name}: no wake/bed time in 'lifestyle'; using 7 and 23")
    return Persona(
        name=p.name, age=p.age, traits=[t.strip() for t in p.innate.split(",") if t.strip()][:6],
        occupation=occupation(p), workplace=work, home=home, lifestyle=" ".join(p.lifestyle.split()),
        wake_hour=7 if wake is None else wake, sleep_hour=23 if sleep is None else sleep,
        seed_memories=localise(first_person(p.learned, p) + first_person(p.currently, p), renames),
        relationships=[Relationship(name=n, relation="acquaintance", closeness=0.5) for n in known_people(p, people)],
        intentions=localise(first_person(p.daily_plan_req, p), renames),
    )


def convert(people: list[ScratchPersona], town: Town) -> SmallvilleImport:
    """Residents of ``town`` for the Smallville personas, with every mapping reported.

    Households (people sharing a Smallville living area) move in together when a home has a
    bed for each; a household too big for any home is split over the fewest homes. Raises
    SmallvilleError when the town has fewer beds than people.
    """
    units = home_units(town)
    beds = sum(u.free for u in units)
    if beds < len(people):
        raise SmallvilleError(f"town {town.name!r} has {beds} beds in {len(units)} homes; "
                              f"{len(people)} Smallville residents need one each (pick a bigger town with --town)")
    result = SmallvilleImport(residents=[])
    home_of = assign_homes(people, units, result)
    works = {p.name: _workplace(p, town) for p in people}
    # Smallville's place names become the town's in what residents remember and intend
    renames = {said: work for work, said in works.values() if work is not None and said}
    for p in people:
        work, said = works[p.name]
        if work is None:
            work = home_of[p.name]
            result.unmapped.append(f"workplace of {p.name}: no place of {town.name!r} named in 'learned' or "
                                   f"'daily_plan_req'; works from home ({work})")
        else:
            result.mappings.append(f"workplace: {said!r} ({p.name}) -> {work}")
        result.residents.append(_resident(p, work, home_of[p.name], renames, people, result))
    return result


def write_residents(result: SmallvilleImport, town: Town, out: Path) -> None:
    """Write the residents file, checked against the town first: nothing is written when the
    file would not load, and an existing file is only replaced by a complete new one."""
    out = Path(out)
    if out.is_dir():
        raise SmallvilleError(f"--out {out}: is a folder; expected a file name such as smallville.json")
    tmp = out.with_name(out.name + ".tmp")
    data = [p.model_dump(exclude_defaults=True) | {"name": p.name} for p in result.residents]
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        if tmp.parent.is_dir():
            tmp.unlink(missing_ok=True)
        raise SmallvilleError(f"--out {out}: cannot write ({exc.strerror or exc})") from None
    try:
        load_residents(tmp, town)
    except TownError as exc:
        tmp.unlink(missing_ok=True)
        raise SmallvilleError(f"the imported residents do not fit town {town.name!r}: {exc}") from None
    tmp.replace(out)


def main(args: Any) -> int:
    """`townsfolk import smallville DIR --town T --out FILE`: report each mapping, then write."""
    try:
        town = load_town(args.town, None)
        result = convert(read_folder(args.directory), town)
        write_residents(result, town, args.out)
    except (SmallvilleError, TownError) as exc:
        print(f"townsfolk import smallville: {exc}", file=sys.stderr)
        print(json.dumps({"imported": 0, "written": None}))
        return 1
    for line in result.mappings:
        print(f"mapped   {line}")
    for line in result.unmapped:
        print(f"unmapped {line}")
    print(f"wrote {len(result.residents)} residents for town {town.name!r} to {args.out}")
    print(json.dumps({"imported": len(result.residents), "mapped": len(result.mappings),
                      "unmapped": len(result.unmapped), "town": town.name, "written": str(args.out)}))
    return 0
