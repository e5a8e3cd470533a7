"""Opening a run folder for viewing: its reader, its town drawn as a map, its title."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def mapview_for(meta: dict[str, Any]) -> MapView:
    """Load the run's town with maps.town; its residents file gives the panel's personas."""
    from maps.town import load_town

    ref = town_ref(meta)
    kwargs: dict[str, Any] = {}
    try:
        town = load_town(ref, **kwargs)
    except Exception as exc:
        if ref != meta.get("town_name") and isinstance(meta.get("town_name"), str):
            try:
                town = load_town(meta["town_name"])
            except Exception:
                raise ReaderError(f"cannot load the run's town {ref!r}: {exc}") from exc
        else:
            raise ReaderError(f"cannot load the run's town {ref!r}: {exc}") from exc
    view = from_town(town)
    personas = meta.get("personas") or meta.get("residents_data")
    if isinstance(personas, list):
        for p in personas:
            if isinstance(p, dict) and p.get("name"):
                view.personas[str(p["name"])] = p
    elif isinstance(personas, dict):
        for name, p in personas.items():
            if isinstance(p, dict):
                view.personas[str(name)] = {"name": name, **p}
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
