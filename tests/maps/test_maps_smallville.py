"""`townsfolk import smallville`: Generative Agents personas become residents of our town."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

from world.cli import import_ as import_command
from maps.smallville import SmallvilleError, convert, first_person, read_folder, read_scratch
from maps.town import load_town

FIXTURE = Path(__file__).parents[1] / "fixtures" / "smallville" / "personas"


def _import(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    import_command.add_arguments(parser)
    return import_command.main(parser.parse_args(["smallville", *argv]))


def test_import_writes_a_residents_file_the_town_loads(tmp_path: Path, capsys) -> None:
    out = tmp_path / "smallville.json"
    assert _import(str(FIXTURE), "--town", "default", "--out", str(out)) == 0
    printed = capsys.readouterr().out
    town = load_town("default", out)
    people = {p.name: p for p in town.residents}
    assert set(people) == {"Rosalind Harbor", "Owen Harbor", "Pip Harbor", "Dana Quill", "Mateo Vance"}
    # workplaces by kind of place: a cafe, a college, a pub
    assert people["Rosalind Harbor"].workplace == "Willow Cafe"
    assert people["Owen Harbor"].workplace == "Willowbrook College"
    assert people["Dana Quill"].workplace == "The Crooked Pub"
    # the Harbor household moves into one house, each of them with a bed
    homes = {people[n].home.split(":")[0] for n in ("Rosalind Harbor", "Owen Harbor", "Pip Harbor")}
    assert len(homes) == 1
    # every mapping is reported, and what did not map: the retired sailor names no workplace
    assert "Hobbs" not in printed and "'Lantern Cafe' (Rosalind Harbor) -> Willow Cafe" in printed
    assert "unmapped workplace of Mateo Vance" in printed
    assert json.loads(printed.strip().splitlines()[-1])["imported"] == 5
    # currently / daily_plan_req: first person, as seed memories and intentions
    rosalind = people["Rosalind Harbor"]
    assert "I am planning a bread tasting for my regulars on Saturday." in rosalind.seed_memories
    # ...in the town's own place names
    assert rosalind.intentions == ["I open Willow Cafe at 7am and bake until noon."]
    for p in people.values():
        for line in p.seed_memories + p.intentions:
            assert line.startswith(("I ", "My ")), line
            assert p.name not in line, line
    assert (rosalind.wake_hour, rosalind.sleep_hour) == (5, 22)
    assert people["Dana Quill"].sleep_hour == 1
    assert rosalind.traits == ["warm", "methodical", "curious"]
    assert rosalind.occupation == "baker"
    assert any(r.name == "Owen Harbor" for r in rosalind.relationships)
    assert "Intends: I open Willow Cafe" in rosalind.summary()
    # strangers do not share a home while homes are empty
    assert people["Dana Quill"].home.split(":")[0] != people["Mateo Vance"].home.split(":")[0]


def test_everyone_gets_a_bed_of_their_own_or_shares_a_double(tmp_path: Path) -> None:
    town = load_town("default", None)
    result = convert(read_folder(FIXTURE), town)
    beds: dict[str, int] = {}
    for p in result.residents:
        beds[p.home] = beds.get(p.home, 0) + 1
    for home, n in beds.items():
        rooms = [a for s in town.sectors.values() for a in s.arenas.values()
                 if a.address == home or (s.name == home and "bed" in a.objects)]
        assert rooms, home
        room = rooms[0]
        bed = room.objects["bed"].rect
        assert n <= bed.w * bed.h, (home, n)


def test_first_person() -> None:
    from maps.smallville import ScratchPersona

    p = ScratchPersona(name="Ann Lee", age=30, innate="x", learned="", currently="", lifestyle="",
                       living_area="the Ville:A:b", daily_plan_req="")
    assert first_person("Ann Lee is tired. Ann Lee goes home at 5pm. Ann watches her plants.", p) == [
        "I am tired.", "I go home at 5pm.", "I watch my plants."]
    assert first_person("Ann Lee's sister Bo visits.", p) == ["My sister Bo visits."]


def test_bad_folders_and_files_are_refused_clearly(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out.json"
    assert _import(str(tmp_path / "nope"), "--out", str(out)) == 1
    assert "no such folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert _import(str(tmp_path / "empty"), "--out", str(out)) == 1
    assert "no persona folders found" in capsys.readouterr().err

    bad = tmp_path / "bad"
    shutil.copytree(FIXTURE, bad)
    scratch = bad / "Dana Quill" / "bootstrap_memory" / "scratch.json"
    data = json.loads(scratch.read_text())
    del data["living_area"]
    scratch.write_text(json.dumps(data))
    assert _import(str(bad), "--out", str(out)) == 1
    err = capsys.readouterr().err
    assert str(scratch) in err and "'living_area'" in err and "Field required" in err
    data["living_area"] = "x"
    data["age"] = "old"
    scratch.write_text(json.dumps(data))
    with pytest.raises(SmallvilleError, match="field 'age'"):
        read_scratch(scratch)
    scratch.write_text("{ not json")
    with pytest.raises(SmallvilleError, match=r"not valid JSON \(line 1"):
        read_scratch(scratch)
    assert not out.exists()  # nothing half-written

    # a town without enough beds: refused before anything is written
    many = tmp_path / "many"
    for i in range(40):
        d = many / f"P{i}" / "bootstrap_memory"
        d.mkdir(parents=True)
        src = json.loads((FIXTURE / "Mateo Vance" / "bootstrap_memory" / "scratch.json").read_text())
        src["name"] = f"Person {i}"
        (d / "scratch.json").write_text(json.dumps(src))
    assert _import(str(many), "--out", str(out)) == 1
    assert "need one each" in capsys.readouterr().err
    assert not out.exists()


def test_the_25_resident_town_has_a_bed_for_everyone() -> None:
    """Every resident of residents25.json sleeps in a bed at home, no bed over capacity."""
    town = load_town("default", "residents25.json")
    use: dict[str, int] = {}
    for p in town.residents:
        sector = town.sectors[p.home.split(":")[0]]
        if ":" in p.home:
            room = sector.arenas[p.home.split(":")[1]]
        else:  # a house: the first room with a bed, as the minds choose it
            room = next(a for a in sector.arenas.values() if "bed" in a.objects)
        assert "bed" in room.objects, p.name
        use[room.objects["bed"].address] = use.get(room.objects["bed"].address, 0) + 1
    for address, n in use.items():
        rect = town.objects[address].rect
        assert n <= rect.w * rect.h, (address, n)


def test_first_person_mid_sentence() -> None:
    from maps.smallville import ScratchPersona

    p = ScratchPersona(name="Ann Lee", age=30, innate="x", learned="", currently="", lifestyle="",
                       living_area="the Ville:A:b", daily_plan_req="")
    assert first_person("Every day, Ann Lee studies; she is happy. Bo likes tea.", p) == [
        "Every day, I study; I am happy.", "Bo likes tea."]
