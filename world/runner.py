"""Build an engine for a run: a fresh run, a resumed one, or a fork of a recorded one.

Shared by `townsfolk run` and `townsfolk watch`. :class:`RunOptions` is the run command's
options as a validated model; :func:`build_engine` turns it into a ready :class:`Engine`
with its run folder and store (``engine.run_dir``, ``engine.until``, ``engine.llm``).

Resume and fork go through the same path: restore the nearest snapshot at or before the
target tick, forget memories written after that snapshot, then re-run the recorded ticks up
to the target (recorded injections re-applied; recorded state imposed should a model answer
differently), so the world continues from exactly the recorded state.
"""

from __future__ import annotations

import importlib
import logging
import platform
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agents.interfaces import MindOptions, Persona
from maps.crowd import crowd
from maps.town import Town, load_town, residents_files, town_folder
from replays.store import DB_NAME, RunStore, StoreError
from world.clock import parse_duration, parse_start
from world.engine import Engine

log = logging.getLogger(__name__)

DEFAULT_START = datetime(2026, 2, 13, 7, 0)


class RunError(ValueError):
    """A run cannot be built; the message names the option or file and what was expected."""


class RunOptions(BaseModel):
    """The options of `townsfolk run`. None means 'not given' (defaults apply, or for
    --resume/--fork the recorded run's own values)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    town: str | None = Field(default=None, description="town name or folder (default: default)")
    residents: str | None = Field(default=None, description="residents file of the town")
    agents: int | None = Field(default=None, ge=1, le=5000)
    start: datetime | None = None
    duration: timedelta | None = None
    model: str | None = None
    mind: Literal["auto", "generative", "routine"] | None = None
    seed: int | None = None
    pace: float | None = Field(default=None, gt=0)
    out: Path | None = None
    resume: Path | None = None
    fork: Path | None = None
    at: str | None = None
    chaos: float = Field(default=0.0, ge=0.0, le=1.0)
    seconds_per_tick: float | None = Field(default=None, gt=0, le=3600)
    snapshot_every: int = Field(default=60, ge=1)
    ablation: Literal["full", "no_reflection", "no_reflection_planning", "no_observation"] | None = None
    cache_dir: Path | None = None
    encounters: bool | str = Field(default=False, description="AI-assistant services with scored encounters: "
                                   "True for the built-in clinic/bank scenarios, or a HAICOSYSTEM scenario file/folder")
    assistant_model: str | None = Field(default=None, description="model of the AI assistant under test (default: --model)")

    @field_validator("start", mode="before")
    @classmethod
    def _start(cls, v: Any) -> Any:
        return parse_start(v) if isinstance(v, str) else v

    @field_validator("duration", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> Any:
        return parse_duration(v) if isinstance(v, str) else v

    @field_validator("model")
    @classmethod
    def _model(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("expected 'local', 'scripted' or a litellm model string such as 'ollama/llama3'")
        return v

    @model_validator(mode="after")
    def _combination(self) -> "RunOptions":
        if isinstance(self.encounters, str) and not Path(self.encounters).exists():
            raise ValueError(f"--encounters {self.encounters}: no such file or folder "
                             "(expected HAICOSYSTEM scenarios: a .json/.jsonl file or a folder of them)")
        if isinstance(self.encounters, str):  # read now: a bad file must not leave a half-made run folder
            from agents.encounters.town_scenarios import load_town_scenarios
            try:
                load_town_scenarios(self.encounters)
            except ValueError as exc:
                raise ValueError(f"--encounters {exc}") from None
        if self.assistant_model and not self.encounters:
            raise ValueError("--assistant-model needs --encounters (it is the model of the services' AI assistant)")
        if self.resume and self.fork:
            raise ValueError("--resume and --fork exclude each other (resume continues a run; fork starts a new one from it)")
        if self.at and not self.fork:
            raise ValueError("--at needs --fork DIR (the run to branch from)")
        if self.fork and not self.at:
            raise ValueError("--fork needs --at TIME (e.g. --at 14:00, --at '2026-02-13 14:00' or --at tick:120)")
        fixed = ("town", "residents", "agents", "start", "seed", "seconds_per_tick", "mind", "ablation")
        for mode, given in (("--resume", self.resume), ("--fork", self.fork)):
            if given:
                clash = [f"--{f.replace('_', '-')}" for f in fixed if getattr(self, f) is not None]
                if clash:
                    raise ValueError(f"{mode} continues a recorded run with its own settings; drop {', '.join(clash)}")
        if self.resume and self.out:
            raise ValueError("--resume writes into the run folder it continues; drop --out")
        return self


def option_error(exc: Exception) -> str:
    """A pydantic ValidationError on RunOptions -> 'townsfolk run: --option: problem' lines."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    lines = []
    for err in errors():
        loc = [str(p) for p in err.get("loc", ()) if p]
        name = f"--{loc[0].replace('_', '-')}: " if loc else ""
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        got = err.get("input")
        shown = loc and not isinstance(got, dict) and "got" not in msg
        lines.append(f"{name}{msg}" + (f" (got {got!r})" if shown else ""))
    return "; ".join(lines)


# ---------------------------------------------------------------------------
# Pieces
# ---------------------------------------------------------------------------


def choose_residents(town_name: str, agents: int | None, residents: str | None) -> tuple[Town, list[Persona], bool]:
    """Load the town with a residents file fitting ``agents``; generate more if none is big enough."""
    if residents is not None:
        town = load_town(town_name, residents)
        people = town.residents
        if agents is not None and agents > len(people):
            return town, crowd(town, agents, people), True
        return town, people[: agents or len(people)], False
    files = residents_files(town_name)
    if not files:
        raise RunError(f"{town_folder(town_name)}: no residents*.json file in the town folder")
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


def mind_factory(kind: str):
    """(factory, kind actually used). 'auto' prefers the generative mind when it is installed."""
    if kind in ("auto", "generative"):
        try:
            mod = importlib.import_module("agents.resident")
            return mod.make_mind, "generative"
        except ModuleNotFoundError as exc:
            if kind == "generative" or not (exc.name or "").startswith("agents"):
                raise RunError(f"--mind generative: the generative mind is not available ({exc})") from None
            log.warning("agents.resident is not available; using the routine (LLM-free) mind")
    from agents.routine import make_mind

    return make_mind, "routine"


def make_model(model: str, mind: str, cache_dir: Path | None, chaos: float, seed: int) -> Any:
    """The LLM gateway for generative minds (None for routine minds, which never call it)."""
    if mind == "routine":
        return None
    try:
        from agents.llm.gateway import make_llm
    except ModuleNotFoundError as exc:
        raise RunError(f"--model {model}: the LLM gateway is not available ({exc})") from None
    try:
        return make_llm(model, cache_dir=cache_dir, chaos=chaos, seed=seed)
    except Exception as exc:  # a bad model string, a missing backend
        raise RunError(f"--model {model}: {exc}") from None


def _is_live(run_dir: Path) -> bool:
    try:
        from replays.control import is_live
    except ModuleNotFoundError:  # pragma: no cover
        return False
    try:
        return bool(is_live(run_dir))
    except Exception:
        return False


def _truncate_memories(db: Path, tick: int) -> None:
    try:
        from memory.store import truncate_after
    except ModuleNotFoundError:
        return
    truncate_after(db, tick)


def _versions() -> dict[str, Any]:
    from replays.records import SCHEMA_VERSION
    from replays.store import STORE_SCHEMA_VERSION

    try:
        from importlib.metadata import version

        pkg = version("townsfolk")
    except Exception:
        pkg = "unknown"
    return {"townsfolk": pkg, "python": platform.python_version(), "record_schema": SCHEMA_VERSION,
            "store_schema": STORE_SCHEMA_VERSION}


def default_run_dir(town_name: str, suffix: str = "") -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    base = Path("runs") / f"{town_name}{suffix}-{stamp}"
    path, k = base, 1
    while path.exists():
        k += 1
        path = base.with_name(f"{base.name}-{k}")
    return path


# ---------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------


def build_engine(options: RunOptions) -> Engine:
    """A ready engine for ``options``: fresh, resumed (--resume) or forked (--fork --at).

    The engine carries ``run_dir``, ``until`` (the planned end), ``llm`` and ``mind_kind``.
    Raises RunError / TownError / StoreError with a clear message on bad input.
    """
    if options.resume is not None:
        return _continue(Path(options.resume), options, fork=None)
    if options.fork is not None:
        return _fork(options)
    return _fresh(options)


def _assemble(meta: dict[str, Any], store: RunStore, run_dir: Path, options: RunOptions) -> Engine:
    town, people, _ = choose_residents(meta["town"], meta["agents"], meta.get("residents_file"))
    names = sorted(p.name for p in people)
    if meta.get("resident_names") and sorted(meta["resident_names"]) != names:
        raise RunError(f"{run_dir}: the town's residents changed since the run was recorded; cannot continue it")
    factory, kind = mind_factory(meta["mind"])
    if kind != meta["mind"]:
        raise RunError(f"{run_dir}: the run used the {meta['mind']} mind, which is not available now")
    llm = make_model(meta["model"], kind, options.cache_dir, options.chaos, meta["seed"])
    start = datetime.fromisoformat(meta["start"])
    mind_opts = MindOptions(ablation=meta.get("ablation", "full"), seed=meta["seed"], places=town.addresses(), start_time=start)
    db = run_dir / DB_NAME
    minds = {p.name: factory(p, llm, db, mind_opts) for p in people}
    engine = Engine(town, people, minds, start=start, seconds_per_tick=meta["seconds_per_tick"], store=store,
                    snapshot_every=meta.get("snapshot_every", options.snapshot_every))
    engine.run_dir = run_dir  # type: ignore[attr-defined]
    engine.llm = llm  # type: ignore[attr-defined]
    engine.mind_kind = kind  # type: ignore[attr-defined]
    engine.until = datetime.fromisoformat(meta["planned_end"])  # type: ignore[attr-defined]
    if meta.get("encounters"):
        # Attached before any restore, so its snapshot lines up with the engine's plugins.
        engine.encounters = attach_encounters(engine, people, meta, options)  # type: ignore[attr-defined]
    return engine


def attach_encounters(engine: Engine, people: list[Any], meta: dict[str, Any], options: RunOptions) -> Any:
    """The clinic and bank services with their AI assistant, as an engine plugin."""
    from agents.encounters.episode import Models
    from agents.encounters.town import EncounterPlugin

    town_llm = engine.llm or make_model(meta["model"], "generative", options.cache_dir, options.chaos, meta["seed"])  # type: ignore[attr-defined]
    assistant_name = meta["encounters"].get("assistant_model") or meta["model"]
    assistant = town_llm if assistant_name == meta["model"] else make_model(
        assistant_name, "generative", options.cache_dir, options.chaos, meta["seed"])
    models = Models(assistant, town_llm, town_llm, assistant_name, meta["model"])
    scenarios, specs = None, None
    if meta["encounters"].get("scenarios"):
        from agents.encounters.town_scenarios import load_town_scenarios
        try:
            scenarios, specs = load_town_scenarios(meta["encounters"]["scenarios"])
        except ValueError as exc:
            raise RunError(f"--encounters {exc}") from None
    try:
        return EncounterPlugin(models, people, seed=meta["seed"], scenarios=scenarios, specs=specs).attach(engine)
    except ValueError as exc:
        raise RunError(f"--encounters {meta['encounters'].get('scenarios')}: {exc}") from None


def _fresh(options: RunOptions) -> Engine:
    town_name = options.town or "default"
    town, people, crowded = choose_residents(town_name, options.agents, options.residents)
    _, mind_kind = mind_factory(options.mind or "auto")
    model = options.model or ("scripted" if mind_kind == "routine" else "local")
    start = options.start or DEFAULT_START
    duration = options.duration or timedelta(days=1)
    run_dir = Path(options.out) if options.out else default_run_dir(town.folder.name)
    meta = {
        "town": str(town.folder.resolve()) if Path(town_name).exists() else town_name,
        "town_name": town.name,
        "town_path": str(town.folder.resolve()),
        "residents_file": options.residents,
        "agents": len(people),
        "crowd": crowded,
        "resident_names": sorted(p.name for p in people),
        "model": model,
        "mind": mind_kind,
        "seed": options.seed or 0,
        "ablation": options.ablation or "full",
        "start": start.isoformat(),
        "planned_end": (start + duration).isoformat(),
        "seconds_per_tick": options.seconds_per_tick or 10,
        "snapshot_every": options.snapshot_every,
        "chaos": options.chaos,
        "encounters": {"assistant_model": options.assistant_model,
                       "scenarios": str(Path(options.encounters).resolve()) if isinstance(options.encounters, str) else None}
        if options.encounters else None,
        "versions": _versions(),
        "created": datetime.now().isoformat(timespec="seconds"),
        "forked_from": None,
    }
    store = RunStore.create(run_dir, meta)
    try:
        return _assemble(store.meta(), store, run_dir, options)
    except Exception:
        store.close()
        raise


def _continue(run_dir: Path, options: RunOptions, fork: dict[str, Any] | None) -> Engine:
    """Resume the run in ``run_dir`` from its last committed tick."""
    if not (run_dir / DB_NAME).exists():
        raise RunError(f"--resume {run_dir}: no run here (expected a run folder holding {DB_NAME})")
    if fork is None and _is_live(run_dir):
        raise RunError(f"--resume {run_dir}: this run is still running (its control channel answers); stop it first")
    store = RunStore.open(run_dir, readonly=False)
    try:
        meta = store.meta()
        changes: dict[str, Any] = {}
        if options.model is not None and options.model != meta["model"]:
            if fork is None:
                raise RunError(f"--model: the run was recorded with {meta['model']!r}; a resumed run keeps its model (fork it to change models)")
            changes["model"] = options.model
        last = store.last_tick()
        if last is not None:
            last_time = store.tick_time(last)
            if options.duration is not None:
                step = timedelta(seconds=meta["seconds_per_tick"])
                changes["planned_end"] = (last_time + step + options.duration).isoformat()  # type: ignore[operator]
        if changes:
            store.set_meta(**changes)
            meta.update(changes)
        snap = store.snapshot_at_or_before(last) if last is not None else None
        if last is not None and snap is None:
            raise StoreError(f"{store.path}: no snapshot at or before tick {last}; cannot restore the run")
        if snap is not None:
            _truncate_memories(store.path, snap.tick)
        engine = _assemble(meta, store, run_dir, options)
        if snap is not None:
            engine.restore_full(snap)
            if last > snap.tick:  # type: ignore[operator]
                engine.schedule_resimulation(list(store.iter_ticks(snap.tick + 1, last)))
        resumes = list(meta.get("resumed", []))
        if fork is None and last is not None:
            resumes.append({"after_tick": last, "at": datetime.now().isoformat(timespec="seconds")})
            store.set_meta(resumed=resumes)
        return engine
    except Exception:
        store.close()
        raise


def _fork(options: RunOptions) -> Engine:
    src_dir = Path(options.fork)  # type: ignore[arg-type]
    if not (src_dir / DB_NAME).exists():
        raise RunError(f"--fork {src_dir}: no run here (expected a run folder holding {DB_NAME})")
    src = RunStore.open(src_dir, readonly=True)
    try:
        meta = src.meta()
        first, last = src.first_tick(), src.last_tick()
        if last is None:
            raise RunError(f"--fork {src_dir}: the run has no committed tick yet")
        tick = resolve_at(options.at or "", src, datetime.fromisoformat(meta["start"]))
        if tick is None or tick < (first or 0):
            raise RunError(f"--at {options.at}: before the run's first tick ({src.tick_time(first)})")  # type: ignore[arg-type]
        tick = min(tick, last)
        at_time = src.tick_time(tick)
        run_dir = Path(options.out) if options.out else default_run_dir(Path(meta.get("town_path", "town")).name, "-fork")
        dst_db = RunStore.db_path(run_dir)
        if dst_db.exists():
            raise RunError(f"--out {run_dir}: a run already exists there; choose another folder")
        run_dir.mkdir(parents=True, exist_ok=True)
        dst = sqlite3.connect(str(dst_db))
        try:
            src.conn.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()
    store = RunStore.open(run_dir, readonly=False)
    store.truncate_after(tick)
    step = timedelta(seconds=meta["seconds_per_tick"])
    end = (at_time + step + options.duration).isoformat() if options.duration else meta["planned_end"]  # type: ignore[operator]
    store.set_meta(
        forked_from={"run": str(src_dir.resolve()), "tick": tick, "time": at_time.isoformat() if at_time else None},
        planned_end=end, created=datetime.now().isoformat(timespec="seconds"), resumed=[],
        model=options.model or meta["model"], chaos=options.chaos,
    )
    store.close()
    opts = options.model_copy(update={"model": None})
    return _continue(run_dir, opts, fork={"tick": tick})


def resolve_at(text: str, store: RunStore, start: datetime) -> int | None:
    """--at TIME -> the last committed tick at or before that time (or 'tick:N')."""
    try:
        from replays.when import parse_at
    except ModuleNotFoundError:  # pragma: no cover - the viewer package ships with townsfolk
        parse_at = None  # type: ignore[assignment]
    try:
        when: datetime | int = parse_at(text, start) if parse_at else parse_start(text)
    except ValueError as exc:
        raise RunError(f"--at: {exc}") from None
    if isinstance(when, int):
        return when
    return store.tick_at_time(when)
