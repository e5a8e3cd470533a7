"""Build an engine for a run: a fresh run, a resumed one, or a fork of a recorded one.

Shared by `townsfolk run` and `townsfolk watch`. :class:`RunOptions` is the run command's
options as a validated model; :func:`build_engine` turns it into a ready :class:`Engine`
with its run folder and store, and the run's :class:`~world.engine.RunContext` as
``engine.context`` (``run_dir``, ``until``, ``llm``, ``mind_kind``, ``encounters``).

Resume and fork go through the same path: lock the run folder (one writer), cut the run file
back in one store operation (RunStore.resume_point: records past the target tick, minds'
rows past the nearest snapshot; a fork's file is first made by RunStore.fork_to), restore
that snapshot, then re-run the recorded ticks up to the target with the run's own recorded
model answers (agents/llm/recorded.py) and recorded injections, so the world and the minds
continue from exactly the recorded state, call ids included.
Should a re-run tick still differ from the record, the recorded world state is imposed and
the run says how many ticks differed.
"""

from __future__ import annotations

import errno
import logging
import os
import platform
import re
import shutil
import sqlite3
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agents.encounters.episode import Models
from agents.encounters.town import EncounterPlugin
from agents.encounters.town_scenarios import load_town_scenarios
from agents.llm.gateway import make_llm
from agents.llm.recorded import Answer, AnswerLog
from agents.minds.generative import make_mind as make_generative
from agents.minds.player import join_players, join_problem
from agents.minds.routine import make_mind as make_routine
from maps.contracts import SCHEMA_VERSION, MindOptions, Persona, control_problem, parse_at
from maps.crowd import NoResidentsError, pick_residents
from maps.plaintext import invisible_problem
from maps.town import Town
from memory.runfile import DB_NAME, STORE_SCHEMA_VERSION, ResumePoint, RunStore, StoreError
from replays.lock import LOCK_NAME, RunFolderBusy, RunLock
from world.clock import parse_duration, parse_start
from world.engine import Engine, RunContext

log = logging.getLogger(__name__)

DEFAULT_START = datetime(2026, 2, 13, 7, 0)
MAX_DURATION = timedelta(days=3650)  # ten game years: beyond that a typo, and past it dates overflow
MIN_START, MAX_END = datetime(1900, 1, 1), datetime(9000, 1, 1)


class RunError(ValueError):
    """A run cannot be built; the message names the option or file and what was expected."""


MAX_AGENTS = 20_000  # --agents at most: bench scale goes to 10,000 (a generated town of 735 x 842 tiles)


class RunOptions(BaseModel):
    """The options of `townsfolk run`. None means 'not given' (defaults apply, or for
    --resume/--fork the recorded run's own values)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    town: str | None = Field(default=None, description="town name or folder (default: default)")
    residents: str | None = Field(default=None, description="residents file of the town")
    agents: int | None = Field(default=None, ge=1, le=MAX_AGENTS)
    start: datetime | None = None
    duration: timedelta | None = Field(default=None, description="game time to run, with a unit: 30m, 6h, 1d")
    model: str | None = None
    mind: Literal["auto", "generative", "routine"] | None = None
    seed: int | None = None
    pace: float | None = Field(default=None, gt=0)
    out: Path | None = None
    resume: Path | None = None
    fork: Path | None = None
    at: str | None = None
    chaos: float = Field(default=0.0, ge=0.0, le=1.0)
    seconds_per_tick: float | None = Field(default=None, ge=1, le=3600, description="game seconds per tick: "
                                           "1 s to 1 h (under a second, a 10-minute run would be millions of ticks)")
    snapshot_every: int = Field(default=60, ge=1)
    ablation: Literal["full", "no_reflection", "no_reflection_planning", "no_observation"] | None = None
    cache_dir: Path | None = None
    encounters: bool | str = Field(default=False, description="AI-assistant services with scored encounters: "
                                   "True for the built-in clinic/bank scenarios, or a HAICOSYSTEM scenario file/folder")
    assistant_model: str | None = Field(default=None, description="model of the AI assistant under test (default: --model)")
    join: list[str] = Field(default_factory=list, description="people who join as residents (watch --join NAME)")

    @field_validator("start", mode="before")
    @classmethod
    def _start(cls, v: Any) -> Any:
        return parse_start(v) if isinstance(v, str) else v

    @field_validator("duration", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> Any:
        if isinstance(v, str) and re.fullmatch(r"\s*[0-9.]+\s*", v):  # '2': minutes? hours? say which
            raise ValueError(f"expected a number with a unit (s, m, h or d), e.g. {v.strip()}m or {v.strip()}h; "
                             f"got {v!r} without one")
        try:
            v = parse_duration(v) if isinstance(v, str) else v
        except OverflowError:
            raise ValueError(f"expected at most {MAX_DURATION.days}d, got {v!r}") from None
        if isinstance(v, timedelta) and v > MAX_DURATION:
            raise ValueError(f"expected at most {MAX_DURATION.days}d (about {MAX_DURATION.days // 365} years), got {v}")
        return v

    @field_validator("out", "resume", "fork", "cache_dir", mode="before")
    @classmethod
    def _folder(cls, v: Any) -> Any:
        if isinstance(v, str) and not v.strip():
            raise ValueError("expected a folder, got an empty path")
        return v

    @field_validator("model")
    @classmethod
    def _model(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("expected 'local', 'scripted' or a litellm model string such as 'ollama/llama3'")
        why = (control_problem(v) or invisible_problem(v)) if v is not None else None
        if why:  # never echo a terminal escape back
            raise ValueError(f"the model string {why}; expected 'local', 'scripted' or a litellm model string")
        return v

    @model_validator(mode="after")
    def _combination(self) -> "RunOptions":
        if self.start is not None and not MIN_START <= self.start < MAX_END - (self.duration or timedelta(days=1)):
            raise ValueError(f"--start: expected a date from {MIN_START:%Y-%m-%d} whose run (--duration) ends before "
                             f"{MAX_END:%Y-%m-%d}, got {self.start:%Y-%m-%d %H:%M}")
        if self.cache_dir is not None and self.cache_dir.exists() and not self.cache_dir.is_dir():
            raise ValueError(f"--cache-dir {self.cache_dir}: is a file; expected a folder for cached model answers")
        if isinstance(self.encounters, str) and not Path(self.encounters).exists():
            raise ValueError(f"--encounters {self.encounters}: no such file or folder "
                             "(expected HAICOSYSTEM scenarios: a .json/.jsonl file or a folder of them)")
        if isinstance(self.encounters, str):  # read now: a bad file must not leave a half-made run folder
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
    """Load the town with a residents file fitting ``agents`` (maps.crowd.pick_residents)."""
    try:
        return pick_residents(town_name, agents, residents)
    except NoResidentsError as exc:
        raise RunError(str(exc)) from None


def mind_factory(kind: str) -> tuple[Callable[..., Any], Literal["generative", "routine"]]:
    """(factory, kind actually used). 'auto' is the generative mind."""
    if kind in ("auto", "generative"):
        return make_generative, "generative"
    return make_routine, "routine"


def make_model(model: str, mind: str, cache_dir: Path | None, chaos: float, seed: int) -> Any:
    """The LLM gateway for generative minds (None for routine minds, which never call it)."""
    if mind == "routine":
        return None
    try:
        return make_llm(model, cache_dir=cache_dir, chaos=chaos, seed=seed)
    except Exception as exc:  # a bad model string, a missing backend
        raise RunError(f"--model {model}: {exc}") from None


def lock_run_folder(run_dir: Path, option: str) -> RunLock:
    """The run folder's writer lock, or a RunError naming the folder and the holder's pid."""
    try:
        return RunLock.acquire(run_dir)
    except RunFolderBusy as exc:
        raise RunError(f"{option}: {exc}") from None
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise StoreError(f"{option} {run_dir}: the run folder is read-only ({exc.strerror}); a run is continued "
                             f"in place, so make it writable, or branch it elsewhere with --fork {run_dir} --at T "
                             f"--out NEW") from None
        raise RunError(f"{option} {run_dir}: cannot lock the run folder for writing ({exc.strerror or exc})") from None


def record_answers(llm: Any, store: RunStore, source: str) -> None:
    """Keep every answer of ``llm`` in the run's database (see agents/llm/recorded.py)."""
    if llm is None or not hasattr(llm, "recorder") or llm.recorder is not None:
        return
    log = AnswerLog(source)
    log.attach(llm)
    store.add_answer_log(log)


def replay_answers(store: RunStore, restored: int, last: int) -> None:
    """Ticks ``restored+1..last`` are about to be re-run: serve them their recorded answers,
    with call ids that go on from those of tick ``restored``."""
    for log in store.answer_logs:
        replay = store.answer_replay(log.source, restored, last)
        log.start_replay([Answer(**row) for row in replay.rows], first_no=replay.first_no, next_no=replay.next_no)


def _versions() -> dict[str, Any]:
    try:
        pkg = version("townsfolk")
    except Exception:  # not installed, a broken install: the record says so
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

    ``engine.context`` (a RunContext) holds ``run_dir``, ``until`` (the planned end), ``llm``,
    ``mind_kind`` and, with --encounters, the ``encounters`` plugin.
    Raises RunError / TownError / StoreError with a clear message on bad input.
    """
    if options.resume is not None:
        return _continue(Path(options.resume), options, fork=None)
    if options.fork is not None:
        return _fork(options, Path(options.fork))
    return _fresh(options)


def _assemble(meta: dict[str, Any], store: RunStore, run_dir: Path, options: RunOptions, llm: Any = None) -> Engine:
    town, people, _ = choose_residents(meta["town"], meta["agents"], meta.get("residents_file"))
    names = sorted(p.name for p in people)
    if meta.get("resident_names") and sorted(meta["resident_names"]) != names:
        raise RunError(f"{run_dir}: the town's residents changed since the run was recorded; cannot continue it")
    factory, kind = mind_factory(meta["mind"])
    if kind != meta["mind"]:
        raise RunError(f"{run_dir}: the run used the {meta['mind']} mind, which is not available now")
    if llm is None:
        llm = make_model(meta["model"], kind, options.cache_dir, options.chaos, meta["seed"])
    start = datetime.fromisoformat(meta["start"])
    mind_opts = MindOptions(ablation=meta.get("ablation", "full"), seed=meta["seed"], places=town.addresses(), start_time=start,
                            place_kinds={s.name: s.kind for s in town.sectors.values()},
                            sector_centres={s.name: s.rect.centre() for s in town.sectors.values()})
    record_answers(llm, store, "town")
    db = run_dir / DB_NAME
    minds = {p.name: factory(p, llm, db, mind_opts) for p in people}
    spot = next((s.name for s in town.sectors.values() if s.kind == "park"), next(iter(town.sectors)))
    people, minds, players = join_players(list(meta.get("players") or []), spot, set(town.addresses()), people, minds)
    context = RunContext(run_dir=run_dir, until=datetime.fromisoformat(meta["planned_end"]), llm=llm, mind_kind=kind)
    engine = Engine(town, people, minds, start=start, seconds_per_tick=meta["seconds_per_tick"], store=store,
                    snapshot_every=meta.get("snapshot_every", options.snapshot_every), context=context)
    if meta.get("encounters"):
        # Attached before any restore, so its snapshot lines up with the engine's plugins.
        context.encounters = attach_encounters(engine, people, meta, options)
    if players is not None:  # people who joined (watch --join): their 'play' commands
        engine.add_plugin(players)
    return engine


def attach_encounters(engine: Engine, people: list[Any], meta: dict[str, Any], options: RunOptions) -> EncounterPlugin:
    """The clinic and bank services with their AI assistant, as an engine plugin."""
    town_llm = engine.context.llm or make_model(meta["model"], "generative", options.cache_dir, options.chaos, meta["seed"])
    assistant_name = meta["encounters"].get("assistant_model") or meta["model"]
    assistant = town_llm if assistant_name == meta["model"] else make_model(
        assistant_name, "generative", options.cache_dir, options.chaos, meta["seed"])
    if engine.store is not None:
        record_answers(town_llm, engine.store, "town")
        record_answers(assistant, engine.store, "assistant")
    models = Models(assistant, town_llm, town_llm, assistant_name, meta["model"])
    scenarios, specs = None, None
    if meta["encounters"].get("scenarios"):
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
    run_dir = Path(options.out) if options.out else default_run_dir(town.folder.name)
    meta = fresh_meta(options, town_name, town, people, crowded, mind_kind)
    for name in options.join:  # a name that is taken is refused (issue 30 §7)
        if problem := join_problem(name, [p.name for p in people] + options.join[: options.join.index(name)]):
            raise RunError(problem)
    meta["players"] = list(options.join)
    # Everything that can be refused is checked before the run folder is touched.
    created = check_new_run_dir(run_dir, "--out")
    llm = make_model(meta["model"], mind_kind, options.cache_dir, options.chaos, meta["seed"])
    had_db = RunStore.db_path(run_dir).exists()
    store = _create_store(run_dir, meta, created, had_db)
    try:
        store.truncate_after(-1)  # rows a run killed before its first tick left behind
        return _assemble(store.meta(), store, run_dir, options, llm=llm)
    except BaseException:
        store.close()
        remove_created(run_dir, created, had_db)
        raise


def fresh_meta(options: RunOptions, town_name: str, town: Town, people: list[Persona], crowded: bool,
               mind_kind: str) -> dict[str, Any]:
    """The run file's metadata of a new run: its settings with defaults filled in (stamped now)."""
    model = options.model or ("scripted" if mind_kind == "routine" else "local")
    start = options.start or DEFAULT_START
    duration = options.duration or timedelta(days=1)
    return {
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


def _create_store(run_dir: Path, meta: dict[str, Any], created: list[Path], had_db: bool) -> RunStore:
    """Lock the new run folder and create its run file (holding the lock); on failure remove
    what this start created and release the lock."""
    try:
        lock = lock_run_folder(run_dir, "--out")
    except BaseException:
        remove_created(run_dir, created, had_db)
        raise
    try:
        store = RunStore.create(run_dir, meta)
    except (OSError, sqlite3.Error) as exc:
        lock.release()
        remove_created(run_dir, created, had_db)
        raise RunError(f"--out {run_dir}: cannot create the run folder ({exc})") from None
    except BaseException:
        lock.release()
        remove_created(run_dir, created, had_db)
        raise
    store.lock = lock
    return store


def check_new_run_dir(run_dir: Path, option: str) -> list[Path]:
    """Refuse a run folder that cannot be created or written; return the folders that would be
    created (outermost first), so that a failed start removes only those."""
    if run_dir.exists() and not run_dir.is_dir():
        raise RunError(f"{option} {run_dir}: is a file; expected a folder for the run (created if missing)")
    missing: list[Path] = []
    probe = run_dir.absolute()
    while not probe.exists():
        missing.insert(0, probe)
        probe = probe.parent
    if not probe.is_dir():
        raise RunError(f"{option} {run_dir}: {probe} is a file, not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise RunError(f"{option} {run_dir}: cannot write in {probe} (permission denied)")
    return missing


def remove_created(run_dir: Path, created: list[Path], had_db: bool) -> None:
    """Undo a start that failed half-way: remove the run database and folders this run created, nothing else."""
    if created:
        shutil.rmtree(created[0], ignore_errors=True)
        return
    if not had_db:
        db = RunStore.db_path(run_dir)
        for p in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"), db.with_name(db.name + "-journal")):
            p.unlink(missing_ok=True)


def _continue(run_dir: Path, options: RunOptions, fork: dict[str, Any] | None, lock: RunLock | None = None) -> Engine:
    """Resume the run in ``run_dir`` from its last committed tick (a fork's folder comes locked)."""
    made_lock = lock is None and not (run_dir / LOCK_NAME).exists()
    try:
        store = _open_for_writing(run_dir, lock)
    except BaseException:
        _forget_lock_file(run_dir, made_lock)
        raise
    try:
        check_model(store.meta(), options, forking=fork is not None)
        point = store.resume_point(extend_by=options.duration)
        engine = _assemble(point.meta, store, run_dir, options)
        _catch_up(engine, store, point)
        requeue_pending(engine, point)
        if fork is None and point.last is not None:
            store.mark_resumed(point.last)
        return engine
    except Exception:
        store.close()
        _forget_lock_file(run_dir, made_lock)
        raise


def _forget_lock_file(run_dir: Path, made: bool) -> None:
    """A resume that failed leaves the folder as it found it: the lock file it made goes too."""
    if made:
        (run_dir / LOCK_NAME).unlink(missing_ok=True)


def _open_for_writing(run_dir: Path, lock: RunLock | None) -> RunStore:
    """The run file of ``run_dir`` opened for writing, holding its lock (taken now unless given)."""
    if not (run_dir / DB_NAME).exists():
        if lock is not None:
            lock.release()
        raise RunError(f"--resume {run_dir}: no run here (expected a run folder holding {DB_NAME})")
    if (run_dir / DB_NAME).stat().st_size == 0:  # opening it would write a header into it
        if lock is not None:
            lock.release()
        raise StoreError(f"--resume {run_dir}: {DB_NAME} is empty (0 bytes): the run was stopped before it wrote "
                         "anything; start a new run instead (remove the folder or choose another --out)")
    if lock is None:
        lock = lock_run_folder(run_dir, "--resume")
    try:
        store = RunStore.open(run_dir, readonly=False)
    except BaseException:
        lock.release()
        raise
    store.lock = lock
    return store


def check_model(meta: dict[str, Any], options: RunOptions, forking: bool) -> None:
    """A resumed run keeps its model (a fork's was stamped by fork_meta before it is continued)."""
    if options.model is not None and options.model != meta["model"] and not forking:
        raise RunError(f"--model: the run was recorded with {meta['model']!r}; a resumed run keeps its model (fork it to change models)")


def _catch_up(engine: Engine, store: RunStore, point: ResumePoint) -> None:
    """Restore the point's snapshot and schedule the re-run of the ticks after it up to the
    last kept one, with their recorded answers (none to re-run: model calls are live at once)."""
    if point.snapshot is not None:
        engine.restore_full(point.snapshot)
    replay_answers(store, point.restored, point.kept)
    if point.kept > point.restored:
        engine.schedule_resimulation(point.ticks)
    else:
        store.end_replay()


def requeue_pending(engine: Engine, point: ResumePoint) -> int:
    """Queue again the commands a killed run had accepted (and kept, journal_command) for a tick
    it never committed: they apply at the first tick after the last kept one (a fork has none:
    they belong to the run it came from). How many were queued."""
    for command in point.pending:
        engine.submit(command)
    if point.pending:
        log.info("%d accepted commands of ticks after %d queued again", len(point.pending), point.kept)
    return len(point.pending)


MAX_COMMANDS_PER_TICK = 64


def submit_durably(engine: Engine) -> Any:
    """The control channel's submit: validate and queue (Engine.submit), then keep an accepted
    command in the run file before it is acknowledged, so a kill before its tick loses nothing.
    The reply says ``durable``: false when it could not be kept (then it applies only if the
    run lives to that tick)."""
    store = engine.store
    counted: dict[str, int] = {"tick": engine.tick, "n": 0}
    lock = threading.Lock()

    def submit(command: Any) -> Any:
        with lock:  # at most MAX_COMMANDS_PER_TICK a tick: 2,000 whispers at once stalled a run for a minute
            if counted["tick"] != engine.tick:
                counted.update(tick=engine.tick, n=0)
            if counted["n"] >= MAX_COMMANDS_PER_TICK:
                return {"ok": False, "accepted": False, "error": f"busy: {MAX_COMMANDS_PER_TICK} commands already "
                        f"accepted since tick {engine.tick}; try again after the next tick"}
            counted["n"] += 1
        result = engine.submit(command)
        if not result.accepted or store is None:
            return result
        applies_at = max(result.tick if result.tick is not None else 0, engine.tick + 1)
        durable = store.journal_command(applies_at, result.command)
        reply = result.model_dump(mode="json")
        reply["durable"] = durable
        if not durable:
            reply["message"] = f"{result.message}; not saved to the run file: lost if the run is killed before then"
        return reply

    return submit


def _fork(options: RunOptions, src_dir: Path) -> Engine:
    """A new run branching ``src_dir`` after the tick --at names (RunStore.fork_to), then continued."""
    if not (src_dir / DB_NAME).exists():
        raise RunError(f"--fork {src_dir}: no run here (expected a run folder holding {DB_NAME})")
    src = RunStore.open(src_dir, readonly=True)
    try:
        meta = src.meta()
        tick, at_time = fork_point(src, src_dir, options.at or "", meta)
        run_dir = Path(options.out) if options.out else default_run_dir(Path(meta.get("town_path", "town")).name, "-fork")
        created, lock = _lock_new_run(run_dir)
        try:
            src.fork_to(run_dir, tick, fork_meta(src_dir, tick, at_time, meta, options))
        except BaseException:
            lock.release()
            raise
    finally:
        src.close()
    opts = options.model_copy(update={"model": None})
    try:
        return _continue(run_dir, opts, fork={"tick": tick}, lock=lock)
    except BaseException:
        remove_created(run_dir, created, had_db=False)
        raise


def fork_point(src: RunStore, src_dir: Path, at: str, meta: dict[str, Any]) -> tuple[int, datetime | None]:
    """The committed tick --at names in the source run, and its time; a RunError outside the run."""
    if src.last_tick() is None:
        raise RunError(f"--fork {src_dir}: the run has no committed tick yet")
    try:
        when = parse_at(at, datetime.fromisoformat(meta["start"]))
    except ValueError as exc:
        raise RunError(f"--at: {exc}") from None
    point = src.fork_point(when, meta["seconds_per_tick"])
    if point.tick is None or point.tick < (point.first or 0):
        raise RunError(f"--at {at}: before the run's first tick ({point.first_time})")
    if not point.inside:
        raise RunError(f"--at {at}: after the run's last tick (tick {point.last} at {point.last_time}); "
                       f"fork at or before it, or continue the run with --resume {src_dir} --duration D")
    return point.tick, point.time


def _lock_new_run(run_dir: Path) -> tuple[list[Path], RunLock]:
    """Make and lock the fork's new run folder; (folders created, the lock)."""
    if RunStore.db_path(run_dir).exists():
        raise RunError(f"--out {run_dir}: a run already exists there; choose another folder")
    created = check_new_run_dir(run_dir, "--out")
    run_dir.mkdir(parents=True, exist_ok=True)
    return created, lock_run_folder(run_dir, "--out")


def fork_meta(src_dir: Path, tick: int, at_time: datetime | None, meta: dict[str, Any],
              options: RunOptions) -> dict[str, Any]:
    """The metadata a fork changes: where it comes from, its planned end, model and chaos."""
    step = timedelta(seconds=meta["seconds_per_tick"])
    end = (at_time + step + options.duration).isoformat() if options.duration else meta["planned_end"]  # type: ignore[operator]
    return {
        "forked_from": {"run": str(src_dir.resolve()), "tick": tick, "time": at_time.isoformat() if at_time else None},
        "planned_end": end, "created": datetime.now().isoformat(timespec="seconds"), "resumed": [],
        "model": options.model or meta["model"], "chaos": options.chaos,
    }

