"""The town loader: the default town is complete, and broken towns fail loudly and precisely."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from maps.town import TOWNS_DIR, TownError, load_town


@pytest.fixture(scope="module")
def town():
    return load_town("default")


@pytest.fixture
def town_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "town"
    shutil.copytree(TOWNS_DIR / "default", dest)
    return dest


def _edit_map(folder: Path, fn) -> None:
    path = folder / "town.json"
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


def _layer(data: dict, name: str) -> dict:
    return next(l for l in data["layers"] if l["name"] == name)


def test_default_town_has_the_promised_places_and_people(town) -> None:
    kinds = {s.kind for s in town.sectors.values()}
    assert {"home", "cafe", "clinic", "bank", "school", "park", "pub", "shop", "civic"} <= kinds
    assert len(town.sectors) >= 10
    assert len(town.objects) >= 40
    assert sum(len(s.arenas) for s in town.sectors.values()) >= 30
    assert len(town.residents) == 8
    assert len(load_town("default", "residents25.json").residents) == 25
    # lives interlock: everyone in the default eight knows at least two others
    assert all(len(p.relationships) >= 2 for p in town.residents)


def test_every_persona_place_resolves_and_every_spawn_is_walkable(town) -> None:
    for p in load_town("default", "residents25.json").residents:
        assert town.resolve(p.home) and town.resolve(p.workplace)
        assert p.spawn in town.spawns
    for sp in town.spawns.values():
        assert town.is_walkable(sp.tile)


def test_resolve_and_reverse_lookup_agree(town) -> None:
    tiles = town.resolve("Willow Cafe:kitchen:stove")
    assert len(tiles) == 1
    assert town.address_at(tiles[0]) == "Willow Cafe:kitchen"
    assert town.object_at(tiles[0]).address == "Willow Cafe:kitchen:stove"
    assert town.objects["Willow Cafe:kitchen:stove"].default_state == "off"
    kitchen = set(town.resolve("Willow Cafe:kitchen"))
    assert set(tiles) <= kitchen <= set(town.resolve("Willow Cafe"))
    assert all(town.is_walkable(t) for t in kitchen)
    # streets are outdoors
    assert town.address_at(town.spawns["Main Street"].tile) == ""
    places = town.addresses()
    assert "Willow Cafe" in places and "Willow Cafe:kitchen" in places and "Willow Cafe:kitchen:stove" in places
    assert town.addresses("object") == list(town.objects)


@pytest.mark.parametrize(
    "address, hint",
    [("Nowhere", "no sector 'Nowhere'"), ("Willow Cafe:attic", "no room 'attic'"), ("Willow Cafe:kitchen:tv", "no object 'tv'")],
)
def test_unknown_address_says_which_part_is_wrong(town, address: str, hint: str) -> None:
    with pytest.raises(KeyError, match=hint):
        town.resolve(address)


def test_missing_layer_names_file_and_layer(town_copy: Path) -> None:
    _edit_map(town_copy, lambda d: d.update(layers=[l for l in d["layers"] if l["name"] != "collision"]))
    with pytest.raises(TownError) as err:
        load_town(town_copy)
    assert "town.json" in str(err.value) and "collision" in str(err.value)
    assert err.value.field == "layers"


def test_unreachable_spawn_is_refused(town_copy: Path) -> None:
    def wall_off(d: dict) -> None:
        W = d["width"]
        sp = next(o for o in _layer(d, "spawns")["objects"] if o["name"] == "Main Street")
        x, y = int(sp["x"]) // 32, int(sp["y"]) // 32
        col = _layer(d, "collision")["data"]
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            col[(y + dy) * W + x + dx] = 4

    _edit_map(town_copy, wall_off)
    with pytest.raises(TownError, match=r"spawns.*Main Street.*unreachable"):
        load_town(town_copy)


def test_spawn_on_a_wall_is_refused(town_copy: Path) -> None:
    def on_wall(d: dict) -> None:
        sp = next(o for o in _layer(d, "spawns")["objects"] if o["name"] == "Main Street")
        sp["x"], sp["y"] = 16, 16  # the tree border
    _edit_map(town_copy, on_wall)
    with pytest.raises(TownError, match="blocked tile"):
        load_town(town_copy)


def test_object_outside_any_room_is_refused(town_copy: Path) -> None:
    def stray(d: dict) -> None:
        _layer(d, "objects")["objects"].append({"id": 9999, "name": "lamp post", "x": 32 * 5, "y": 32 * 15, "width": 32, "height": 32})
    _edit_map(town_copy, stray)
    with pytest.raises(TownError, match=r"objects\[\d+\] \(lamp post\).*inside a room"):
        load_town(town_copy)


def test_walled_in_room_is_refused(town_copy: Path) -> None:
    town = load_town(town_copy)
    pantry = town.sectors["Willow Cafe"].arenas["pantry"].rect

    def seal(d: dict) -> None:
        W = d["width"]
        col = _layer(d, "collision")["data"]
        for y in range(pantry.y - 1, pantry.y + pantry.h + 1):
            for x in range(pantry.x - 1, pantry.x + pantry.w + 1):
                if not pantry.contains_tile((x, y)):
                    col[y * W + x] = 4
    _edit_map(town_copy, seal)
    with pytest.raises(TownError, match="Willow Cafe:pantry.*no reachable"):
        load_town(town_copy)


def test_bad_tile_layer_size(town_copy: Path) -> None:
    _edit_map(town_copy, lambda d: _layer(d, "ground")["data"].pop())
    with pytest.raises(TownError, match=r"ground.*expected 106x49"):
        load_town(town_copy)


def test_invalid_json_reports_the_line(town_copy: Path) -> None:
    (town_copy / "town.json").write_text('{"width": 3,\n "height": }')
    with pytest.raises(TownError, match=r"town.json: line 2"):
        load_town(town_copy)


def _edit_residents(folder: Path, fn) -> None:
    path = folder / "residents.json"
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


def test_unknown_home_address_names_resident_and_field(town_copy: Path) -> None:
    _edit_residents(town_copy, lambda d: d[0].update(home="Atlantis"))
    with pytest.raises(TownError) as err:
        load_town(town_copy)
    msg = str(err.value)
    assert "residents.json" in msg and "[0] (Maria Alvarez).home" in msg and "Atlantis" in msg


def test_bad_persona_field(town_copy: Path) -> None:
    _edit_residents(town_copy, lambda d: d[2].update(age="seventeen"))
    with pytest.raises(TownError, match=r"residents.json: \[2\] \(Lucy Alvarez\)\.age"):
        load_town(town_copy)


def test_unknown_field_and_spawn_and_relationship(town_copy: Path) -> None:
    _edit_residents(town_copy, lambda d: d[1].update(favourite_colour="red"))
    with pytest.raises(TownError, match="favourite_colour"):
        load_town(town_copy)
    shutil.copy(TOWNS_DIR / "default" / "residents.json", town_copy / "residents.json")
    _edit_residents(town_copy, lambda d: d[1].update(spawn="Moon"))
    with pytest.raises(TownError, match=r"\.spawn: unknown spawn point 'Moon'"):
        load_town(town_copy)
    shutil.copy(TOWNS_DIR / "default" / "residents.json", town_copy / "residents.json")
    _edit_residents(town_copy, lambda d: d[1]["relationships"].append({"name": "Nobody", "relation": "friend"}))
    with pytest.raises(TownError, match=r"relationships\[\d+\]\.name: unknown resident 'Nobody'"):
        load_town(town_copy)


def test_duplicate_resident_name(town_copy: Path) -> None:
    _edit_residents(town_copy, lambda d: d.append(dict(d[0])))
    with pytest.raises(TownError, match="duplicate resident name"):
        load_town(town_copy)


def test_unknown_town_name() -> None:
    with pytest.raises(TownError, match="no such town"):
        load_town("atlantis")


def test_generator_reproduces_the_committed_town() -> None:
    from maps import build_default_town

    on_disk = json.loads((TOWNS_DIR / "default" / "town.json").read_text())
    assert build_default_town.build() == on_disk


# -- hostile files: binary, deeply nested, huge fields, terminal escapes ------------------


def test_binary_map_names_the_file(town_copy: Path) -> None:
    (town_copy / "town.json").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    with pytest.raises(TownError, match=r"town.json: \(file\): not UTF-8 text \(byte 0x89 at offset 0\)"):
        load_town(town_copy)


def test_deeply_nested_residents_file_is_refused_not_a_recursion_error(town_copy: Path) -> None:
    from maps.town import residents_files

    (town_copy / "residents.json").write_text("[" * 100_000 + "]" * 100_000)
    assert town_copy / "residents.json" in residents_files(town_copy)  # listing does not crash
    with pytest.raises(TownError, match=r"residents.json: \(file\): JSON nested too deeply"):
        load_town(town_copy)


def test_huge_file_is_refused_before_reading(town_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import maps.town as town_mod

    limit = (town_copy / "town.json").stat().st_size
    res = town_copy / "residents.json"
    res.write_text(res.read_text() + " " * limit)  # larger than the map, still valid JSON
    monkeypatch.setattr(town_mod, "MAX_FILE_BYTES", limit)
    with pytest.raises(TownError, match=rf"residents.json: \(file\): file is \d+ bytes; expected .* at most {limit} bytes"):
        load_town(town_copy)


def test_a_ten_megabyte_lifestyle_is_refused_with_the_limit(town_copy: Path) -> None:
    _edit_residents(town_copy, lambda d: d[0].update(lifestyle="wakes at 7. " * 900_000))
    with pytest.raises(TownError, match=r"\[0\] \(Maria Alvarez\)\.lifestyle: String should have at most 2000 characters") as err:
        load_town(town_copy)
    assert len(str(err.value)) < 500  # the 10 MB is not echoed back


def test_escape_codes_in_a_seed_memory_are_refused(town_copy: Path) -> None:
    _edit_residents(town_copy, lambda d: d[1]["seed_memories"].append("\x1b]0;pwned\x07"))
    with pytest.raises(TownError, match=r"\[1\] \(.*\)\.seed_memories\[\d+\]: .*control character U\+001B"):
        load_town(town_copy)


def test_escape_codes_and_long_states_in_the_map_are_refused(town_copy: Path) -> None:
    def name(d: dict) -> None:
        _layer(d, "objects")["objects"][0]["name"] = "stove\x1b[2J"

    _edit_map(town_copy, name)
    with pytest.raises(TownError, match=r"objects\[0\]\.name: name .* control character U\+001B"):
        load_town(town_copy)
    shutil.copy(TOWNS_DIR / "default" / "town.json", town_copy / "town.json")

    def state(d: dict) -> None:
        obj = _layer(d, "objects")["objects"][0]
        obj["properties"] = [p for p in obj.get("properties", []) if p["name"] != "state"]
        obj["properties"].append({"name": "state", "type": "string", "value": "x" * 5000})

    _edit_map(town_copy, state)
    with pytest.raises(TownError, match=r"properties\.state: state .* is 5000 characters long; expected at most 200"):
        load_town(town_copy)
    shutil.copy(TOWNS_DIR / "default" / "town.json", town_copy / "town.json")

    def town_name(d: dict) -> None:
        d["properties"] = [p for p in d.get("properties", []) if p["name"] != "name"]
        d["properties"].append({"name": "name", "type": "string", "value": "Willow\x9b31m"})

    _edit_map(town_copy, town_name)
    with pytest.raises(TownError, match=r"town.json: properties\.name: .*U\+009B"):
        load_town(town_copy)


def test_an_escape_in_a_resident_name_is_named_not_replayed(town_copy: Path) -> None:
    _edit_residents(town_copy, lambda d: d[0].update(name="Maria\x1b[2J" + "A" * 200))
    with pytest.raises(TownError, match=r"\[0\] \(Maria\\x1b\[2JA+\)\.name: .*at most 80 characters") as err:
        load_town(town_copy)
    assert "\x1b" not in str(err.value) and len(str(err.value)) < 500
