"""Opening a run folder for viewing: its reader, its town drawn as a map, its title."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maps.crowd import pick_residents
from maps.town import load_town
from replays.frames import FrameState, ResidentFrame
from replays.mapview import MapView, from_town
from replays.reader import ReaderError, RunReader


@dataclass
class RunView:
    run_dir: Path
    reader: RunReader
    map: MapView
    meta: dict[str, Any]
    title: str


def town_ref(meta: dict[str, Any]) -> str:
    """The town a run was made in, as load_town accepts it (path first, then name)."""
    for key in ("town_path", "town_dir", "town_folder", "town", "town_name"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, dict):
            for sub in ("path", "folder", "name"):
                if isinstance(value.get(sub), str) and value[sub]:
                    return value[sub]
    return "default"


def _load_run_town(meta: dict[str, Any]) -> Any:
    """The town with the residents the run actually had (a bigger residents file, or a
    generated crowd), as the runner chose them; falls back to the town's default file."""
    ref = town_ref(meta)
    try:
        town, people, _ = pick_residents(ref, meta.get("agents"), meta.get("residents_file"))
        town.residents = list(people)
        return town
    except Exception as exc:
        if not meta.get("agents"):
            raise ReaderError(f"cannot load the run's town {ref!r}: {exc}") from exc
    try:
        return load_town(ref)
    except Exception as exc:
        raise ReaderError(f"cannot load the run's town {ref!r}: {exc}") from exc


def mapview_for(meta: dict[str, Any]) -> MapView:
    """The run's town as a map; its residents give the side panel's personas."""
    view = from_town(_load_run_town(meta))
    personas = meta.get("personas")
    if isinstance(personas, list):
        for p in personas:
            if isinstance(p, dict) and p.get("name"):
                view.personas[str(p["name"])] = p
    return view


def initial_frame(meta: dict[str, Any]) -> FrameState:
    """The frame before the first tick: every resident the run names, nowhere yet."""
    names = meta.get("resident_names") or []
    return FrameState(residents={str(n): ResidentFrame(name=str(n)) for n in names})


def open_run(run_dir: str | Path, mapview: MapView | None = None) -> RunView:
    """Open ``run_dir`` read-only (a run may still be writing it) for drawing."""
    path = Path(run_dir)
    probe = RunReader.open(path)
    meta = probe.meta()
    probe.close()
    reader = RunReader.open(path, initial=initial_frame(meta))
    view = mapview or mapview_for(meta)
    title = f"{meta.get('town_name') or view.name} — {path.name}"
    return RunView(path, reader, view, meta, title)
