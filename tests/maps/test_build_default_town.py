"""The default town's generator writes exactly the committed files, byte for byte.

Guards the generator's re-layout (and any later edit) against silent drift: Tiled object
ids, key order, terrain gids and the tileset image all show up in a byte comparison."""

from __future__ import annotations

from pathlib import Path

import pytest

from maps import build_default_town

COMMITTED = Path(build_default_town.__file__).resolve().parent / "towns" / "default"


def test_generator_writes_the_committed_town_files_byte_for_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(build_default_town, "OUT", tmp_path)
    build_default_town.main()
    assert "wrote" in capsys.readouterr().out
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["residents.json", "residents25.json", "terrain.png", "town.json"]
    for name in written:
        assert (tmp_path / name).read_bytes() == (COMMITTED / name).read_bytes(), name


def test_every_building_object_gets_a_unique_increasing_id() -> None:
    town = build_default_town.build()
    ids = [o["id"] for layer in town["layers"] if layer["type"] == "objectgroup" for o in layer["objects"]]
    assert len(ids) == len(set(ids)) and town["nextobjectid"] == max(ids) + 1
