"""The town generator: a town sized for N residents, deterministic by seed (maps/crowd.py)."""

from __future__ import annotations

import json

import pytest

from maps.crowd import BAND, ROW_MAX, GeneratedTownError, build_town, generated_town, parse_generated, pick_residents


@pytest.fixture(autouse=True)
def _towns_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOWNSFOLK_TOWNS_DIR", str(tmp_path / "towns"))


def test_same_seed_same_town_and_another_seed_another() -> None:
    a, b, c = build_town(120, 3), build_town(120, 3), build_town(120, 4)
    assert json.dumps(a) == json.dumps(b)
    assert json.dumps(a) != json.dumps(c)


def test_a_generated_town_houses_and_employs_everyone_nearby() -> None:
    town, people, crowded = pick_residents("generated:300:1", None, None)
    assert len(people) == 300 and not crowded and len({p.name for p in people}) == 300
    kinds = [s.kind for s in town.sectors.values()]
    assert {"home", "cafe", "shop", "pub", "park"} <= set(kinds)
    assert kinds.count("cafe") == 3  # venues in proportion: one per neighbourhood of about 100
    beds: dict[str, int] = {}
    for p in people:
        assert town.has_address(p.home) and town.has_address(p.workplace)
        assert town.sectors[p.workplace.split(":")[0]].kind != "home"
        beds[p.home] = beds.get(p.home, 0) + 1
    for home, sleepers in beds.items():  # nobody sleeps on the floor: one resident per bed tile
        assert sleepers <= sum(o.rect.w for o in town.objects.values() if o.address.startswith(home + ":") and o.name == "bed")
    # each works in their own stretch of town: closer to home than the town is wide, on average
    far = [abs(town.resolve(p.home)[0][0] - town.resolve(p.workplace)[0][0]) for p in people]
    assert sum(far) / len(far) < town.width / 3


def test_the_town_is_written_once_and_loaded_like_any_other() -> None:
    folder = generated_town(40, 2)
    assert (folder / "town.json").is_file() and (folder / "residents.json").is_file()
    stamp = (folder / "town.json").stat().st_mtime_ns
    assert generated_town(40, 2) == folder and (folder / "town.json").stat().st_mtime_ns == stamp
    town, people, _ = pick_residents(str(folder), 10, None)
    assert len(people) == 10 and town.folder == folder


def test_generated_alone_is_sized_by_the_residents_asked_for() -> None:
    assert parse_generated("generated", 77) == (77, 0)
    assert parse_generated("generated:500:9", None) == (500, 9)


@pytest.mark.parametrize("bad", ["generated:", "generated:0", "generated:ten", "generated:5:-1", "generated:5:1:2"])
def test_a_bad_generated_name_is_refused_with_what_was_expected(bad: str) -> None:
    with pytest.raises(GeneratedTownError, match="generated:N:SEED"):
        parse_generated(bad, None)


def test_no_commute_crosses_the_town_when_it_has_several_columns() -> None:
    """A town of thousands is laid out in columns of streets; a neighbourhood that goes on from
    one column into the next must go on beside it, not at the far end of the map (where its
    residents walked 1,000 tiles to work in a town of 10,000)."""
    town, people, _ = pick_residents("generated:2500:0", None, None)
    assert town.width > 2 * ROW_MAX  # more than one column

    def centre(address: str) -> tuple[int, int]:
        return town.sectors[address.split(":")[0]].rect.centre()

    commutes = [abs(centre(p.home)[0] - centre(p.workplace)[0]) + abs(centre(p.home)[1] - centre(p.workplace)[1])
                for p in people]
    assert max(commutes) <= ROW_MAX + 2 * BAND, max(commutes)  # a row's length and a band or two
    assert sum(commutes) / len(commutes) < 100
