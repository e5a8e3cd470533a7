"""Batch evaluation: many episodes in parallel, resumable, results as JSONL.

Episodes are independent, so they parallelise two ways: asyncio inside a process (many
episodes waiting on a remote model at once) and processes across cores (CPU-bound work:
the scripted backend, validation, the local model). ``workers`` processes each run up to
``concurrency`` episodes concurrently; with one worker everything runs in this process.
With ``backend="ray"`` each episode is a Ray task on a local or existing cluster.

Results are appended, one JSON line per finished episode, as they arrive, so an
interrupted batch loses nothing; a re-run skips every episode that already finished
without error.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing as mp
import os
import queue
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.encounters.episode import EpisodeConfig, Models, episode_id, run_episode
from agents.encounters.importers import (ImportFailure, ImportReport, ScenarioFileError, load_scenario_paths,
                                         parse_toolkits)
from agents.encounters.metrics import judged
from agents.encounters.services import SERVICE_SPECS
from agents.encounters.specs import SpecLibrary
from agents.encounters.town_scenarios import BUILTIN_PREFIX, builtin
from agents.llm.gateway import make_llm
from agents.roles.scenario import HumanProfile, Scenario, ToolkitSpec
from maps.contracts import digest_index as _stable_index

RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"
DERIVED_DIR = "derived_toolkits"


class BatchError(Exception):
    """A batch that cannot start (bad option, missing extra); the message says what to do."""


class BatchConfig(BaseModel):
    models: list[str] = Field(default_factory=lambda: ["scripted"], min_length=1)
    judge_model: str | None = Field(default=None, description="default: the first --model")
    env_model: str | None = Field(default=None, description="plays human and tools; default: judge model")
    workers: int = Field(default=1, ge=1, le=256)
    concurrency: int = Field(default=4, ge=1, le=256, description="episodes in flight per worker")
    backend: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    ray_max_retries: int = Field(default=3, ge=0, le=20, description="Ray re-runs a task whose worker died")
    limit: int | None = Field(default=None, ge=1, description="at most this many scenarios")
    seeds: int = Field(default=1, ge=1, description="repetitions per scenario and model")
    emulator_mode: Literal["standard", "adversarial"] = "standard"
    max_turns: int = Field(default=20, ge=2)  # the human goes first: fewer and the assistant never speaks
    out: Path = Path("eval_out")
    cache_dir: str | None = None

    @property
    def judge(self) -> str:
        return self.judge_model or self.models[0]

    @property
    def env(self) -> str:
        return self.env_model or self.judge


class Task(BaseModel):
    episode_id: str
    scenario: dict[str, Any]
    profile: dict[str, Any] | None = None
    model: str
    seed: int


# ---------------------------------------------------------------------------
# Scenario selection and tasks
# ---------------------------------------------------------------------------


def load_sets(paths: list[str], toolkit_files: list[str] | None = None) -> ImportReport:
    """Scenarios from paths and ``builtin:NAME`` sets, with specs from --toolkits files."""
    files = [p for p in paths if not p.startswith(BUILTIN_PREFIX)]
    report = load_scenario_paths(files) if files else ImportReport()
    for name in paths:
        if name.startswith(BUILTIN_PREFIX):
            try:
                for scenario in builtin(name):
                    if scenario.key not in report.origins:
                        report.scenarios.append(scenario)
                        report.origins[scenario.key] = name
            except ValueError as exc:
                report.failures.append(ImportFailure(path=name, error=str(exc)))
    for spec_file in toolkit_files or []:
        try:
            report.specs.update({s.toolkit: s for s in parse_toolkits(Path(spec_file))})
        except ScenarioFileError as exc:
            report.failures.append(ImportFailure(path=spec_file, error=str(exc)))
    return report


def toolkit_sources(report: ImportReport) -> dict[str, list[str]]:
    """Which named toolkits have a published (or town-backed) spec and which will be invented
    (derived from the scenario by the model, cached in OUT/derived_toolkits)."""
    known = set(report.specs) | {spec.toolkit for spec in SERVICE_SPECS.values()}
    named = sorted({t for s in report.scenarios for t in s.toolkits})
    return {"published": [t for t in named if t in known], "invented": [t for t in named if t not in known]}


def _fitting(scenario: Scenario, profiles: list[HumanProfile]) -> list[HumanProfile]:
    """Profiles that meet the scenario's occupation_constraint (HAICOSYSTEM), else all."""
    wanted = str(getattr(scenario, "occupation_constraint", "") or "").strip().lower()
    if not wanted:
        return profiles
    return [p for p in profiles if wanted in p.occupation.lower()] or profiles


def make_tasks(scenarios: list[Scenario], profiles: list[HumanProfile], config: BatchConfig) -> list[Task]:
    """One task per scenario x model x seed; a scenario without a profile gets one from the
    pool (chosen by its name, so a re-run pairs them the same way)."""
    chosen = sorted(scenarios, key=lambda s: s.key)
    if config.limit:
        chosen = chosen[: config.limit]
    tasks = []
    for scenario in chosen:
        profile = None
        if scenario.profile is None and profiles:
            pool = _fitting(scenario, profiles)
            profile = pool[_stable_index(scenario.key, len(pool))].model_dump(mode="json")
        for model in config.models:
            for seed in range(config.seeds):
                tasks.append(
                    Task(
                        episode_id=episode_id(scenario, model, seed, config.emulator_mode),
                        scenario=scenario.model_dump(mode="json"),
                        profile=profile,
                        model=model,
                        seed=seed,
                    )
                )
    return tasks


# ---------------------------------------------------------------------------
# Results file
# ---------------------------------------------------------------------------


def read_results(path: Path) -> dict[str, dict[str, Any]]:
    """Latest record per episode id; a torn last line (a killed run) is ignored."""
    records: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return records
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                continue
            if isinstance(record, dict) and "episode_id" in record:
                records[record["episode_id"]] = record
    return records


TORN_FILE = "results.torn"


def repair_results(path: Path) -> int:
    """Keep ``path`` valid JSON Lines after a killed run: lines that are not a complete JSON
    record (a torn tail, or one an older version left mid-file) are moved to
    ``results.torn`` beside it, and the file is rewritten atomically without them. Returns
    how many lines were moved; a file that is already valid is not touched."""
    if not path.is_file():
        return 0
    raw = path.read_bytes()
    if not raw:
        return 0
    kept: list[bytes] = []
    torn: list[bytes] = []
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            torn.append(line)
            continue
        (kept if isinstance(record, dict) and "episode_id" in record else torn).append(line)
    if not torn and raw.endswith(b"\n"):
        return 0
    if torn:
        with (path.parent / TORN_FILE).open("ab") as handle:
            handle.write(b"\n".join(torn) + b"\n")
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as handle:
        handle.write(b"".join(line + b"\n" for line in kept))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return len(torn)


def finished_ids(records: dict[str, dict[str, Any]]) -> set[str]:
    """Episodes a resumed batch skips: those judged (an error or a judge that gave no
    answer means the episode is run again)."""
    return {eid for eid, r in records.items() if judged(r)}


# ---------------------------------------------------------------------------
# Running episodes (shared by every backend)
# ---------------------------------------------------------------------------


class EpisodeWorker:
    """What one process needs to run episodes: gateways per (model, seed) and the spec library."""

    def __init__(self, config: dict[str, Any], specs: list[dict[str, Any]]):
        self.config = BatchConfig.model_validate(config)
        known = {s["toolkit"]: ToolkitSpec.model_validate(s) for s in specs}
        self.library = SpecLibrary(known, cache_dir=self.config.out / DERIVED_DIR)
        self._gateways: dict[tuple[str, int], Any] = {}

    def llm(self, model: str, seed: int) -> Any:
        key = (model, seed)
        if key not in self._gateways:
            self._gateways[key] = make_llm(model, seed=seed, cache_dir=self.config.cache_dir)
        return self._gateways[key]

    async def run(self, task: Task | dict[str, Any]) -> dict[str, Any]:
        task = Task.model_validate(task) if isinstance(task, dict) else task
        try:
            scenario = Scenario.model_validate(task.scenario)
            profile = HumanProfile.model_validate(task.profile) if task.profile else None
            cfg = self.config
            models = Models(
                assistant=self.llm(task.model, task.seed),
                environment=self.llm(cfg.env, task.seed),
                judge=self.llm(cfg.judge, task.seed),
                assistant_name=task.model,
                judge_name=cfg.judge,
            )
            episode = EpisodeConfig(max_turns=cfg.max_turns, emulator_mode=cfg.emulator_mode, seed=task.seed)
            result = await run_episode(scenario, models, self.library, episode, human_profile=profile)
            for gateway in self._gateways.values():  # a model that cannot answer stops the batch
                if isinstance(getattr(gateway, "unavailable", None), BaseException):
                    raise gateway.unavailable
            return result.model_dump(mode="json")
        except Exception as exc:  # setup failures (e.g. an unknown model) become error records
            if getattr(exc, "fatal", False):
                raise
            return {"episode_id": task.episode_id, "model": task.model, "seed": task.seed,
                    "error": f"{type(exc).__name__}: {exc}"}


def _error_record(task: Task, message: str) -> dict[str, Any]:
    return {"episode_id": task.episode_id, "model": task.model, "seed": task.seed, "error": message}


async def _run_in_process(worker: EpisodeWorker, tasks: list[Task], concurrency: int,
                          on_result: Callable[[dict[str, Any]], None]) -> None:
    semaphore = asyncio.Semaphore(concurrency)

    async def one(task: Task) -> None:
        async with semaphore:
            on_result(await worker.run(task))

    await asyncio.gather(*(one(t) for t in tasks))


def _process_main(config: dict[str, Any], specs: list[dict[str, Any]], concurrency: int,
                  tasks: Any, results: Any) -> None:
    """A worker process: pull tasks until a sentinel, run up to ``concurrency`` at a time."""
    worker = EpisodeWorker(config, specs)

    async def consumer() -> None:
        loop = asyncio.get_running_loop()
        while True:
            task = await loop.run_in_executor(None, tasks.get)
            if task is None:
                return
            results.put(await worker.run(task))

    async def main() -> None:
        await asyncio.gather(*(consumer() for _ in range(concurrency)))

    asyncio.run(main())


def _run_processes(config: BatchConfig, specs: list[dict[str, Any]], tasks: list[Task],
                   on_result: Callable[[dict[str, Any]], None]) -> None:
    ctx = mp.get_context("spawn")  # no fork: gateways and model backends may hold threads
    task_q, result_q = ctx.Queue(), ctx.Queue()
    for task in tasks:
        task_q.put(task.model_dump(mode="json"))
    workers = min(config.workers, max(1, len(tasks)))
    for _ in range(workers * config.concurrency):
        task_q.put(None)
    cfg = config.model_dump(mode="json")
    procs = [
        ctx.Process(target=_process_main, args=(cfg, specs, config.concurrency, task_q, result_q), daemon=True)
        for _ in range(workers)
    ]
    for proc in procs:
        proc.start()
    pending = {t.episode_id: t for t in tasks}
    try:
        while pending:
            try:
                record = result_q.get(timeout=0.5)
            except queue.Empty:
                if not any(p.is_alive() for p in procs):
                    for task in pending.values():  # a worker died: say so, resumable later
                        on_result(_error_record(task, "worker process exited before the episode finished"))
                    break
                continue
            pending.pop(record.get("episode_id", ""), None)
            on_result(record)
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
            proc.join(timeout=5)


_RAY_WORKER: EpisodeWorker | None = None


def _ray_task(config: dict[str, Any], specs: list[dict[str, Any]], task: dict[str, Any]) -> dict[str, Any]:
    """One episode as a Ray task (each Ray worker process keeps its EpisodeWorker)."""
    global _RAY_WORKER
    if _RAY_WORKER is None or _RAY_WORKER.config.model_dump(mode="json") != config:
        _RAY_WORKER = EpisodeWorker(config, specs)
    return asyncio.run(_RAY_WORKER.run(task))


def _unreachable(address: str, timeout: float = 5.0) -> str | None:
    """Why a ``HOST:PORT`` (or ``ray://HOST:PORT``) address cannot be reached, or None.
    Ray itself retries an absent head for minutes; a quick TCP probe answers at once."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return None  # "auto", "local" and the like: left to Ray
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        return f"nothing answers at {host}:{port} ({exc.strerror or exc})"
    return None


def _connect_ray(ray: Any, address: str | None) -> None:
    """Join the cluster at ``address`` (or start a local one); a driver that already joined
    one keeps it. A cluster that cannot be reached is a BatchError, not a traceback."""
    if ray.is_initialized():
        return
    problem = _unreachable(address) if address else None
    if problem:
        raise BatchError(f"could not join the Ray cluster at {address!r}: {problem} "
                         "(check --ray-address / RAY_ADDRESS, or use --backend local)")
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    except Exception as exc:  # ConnectionError, ValueError for a malformed address, ...
        where = f"the Ray cluster at {address!r}" if address else "a local Ray instance"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        auth = (" If that cluster uses token authentication (`ray start` turns it on when "
                "~/.ray/auth_token exists), export RAY_AUTH_MODE=token here too."
                if address and not os.environ.get("RAY_AUTH_MODE") else "")
        raise BatchError(f"could not start or join {where}: {first} "
                         f"(check --ray-address / RAY_ADDRESS, or use --backend local).{auth}") from exc


def join_ray(address: str | None = None) -> Any:
    """Ray, joined to the cluster at ``address`` (else RAY_ADDRESS, else a local instance it
    starts). Raises BatchError, saying what to do, when Ray is not installed or the cluster
    cannot be reached. Public: ``townsfolk run-many`` runs whole towns as Ray tasks with it."""
    try:
        import ray  # type: ignore[import-not-found]
    except ImportError as exc:
        raise BatchError(
            "--backend ray needs Ray, which is an optional extra: pip install 'townsfolk[ray]' "
            "(or pip install ray), or use --backend local"
        ) from exc
    _connect_ray(ray, address or os.environ.get("RAY_ADDRESS"))
    return ray


def ray_failure(exc: BaseException) -> str:
    """One line for a Ray task that failed (its worker died, it was cancelled, ...)."""
    text = str(exc).strip().splitlines()
    return f"ray task failed: {type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def ray_results(ray: Any, launch: Callable[[Any], Any], items: list[Any],
                limit: int) -> Iterator[tuple[Any, Any, str | None]]:
    """Run ``launch(item)`` (which returns a Ray object ref) for each item, at most ``limit`` in
    flight, and yield ``(item, result, None)`` as each finishes, or ``(item, None, why)`` when
    its task failed for good (after Ray's own retries). Public, like :func:`join_ray`."""
    todo = list(items)
    in_flight: dict[Any, Any] = {}
    while todo or in_flight:
        while todo and len(in_flight) < max(1, limit):
            item = todo.pop(0)
            in_flight[launch(item)] = item
        done, _ = ray.wait(list(in_flight), num_returns=1)
        item = in_flight.pop(done[0])
        try:
            yield item, ray.get(done[0]), None
        except Exception as exc:  # the worker died more often than Ray retries, or the task was lost
            yield item, None, ray_failure(exc)


def _run_ray(config: BatchConfig, specs: list[dict[str, Any]], tasks: list[Task],
             on_result: Callable[[dict[str, Any]], None]) -> None:
    """Episodes as Ray tasks, at most ``workers * concurrency * 2`` in flight. A task whose
    worker process dies is re-run by Ray up to ``ray_max_retries`` times; after that it is an
    error record, which a resumed batch runs again."""
    ray = join_ray(config.ray_address)
    remote = ray.remote(num_cpus=1, max_retries=config.ray_max_retries)(_ray_task)
    cfg = config.model_dump(mode="json")
    specs_ref = ray.put(specs)

    def launch(task: Task) -> Any:
        return remote.remote(cfg, specs_ref, task.model_dump(mode="json"))

    for task, record, failure in ray_results(ray, launch, tasks, config.workers * config.concurrency * 2):
        on_result(record if failure is None else _error_record(task, failure))


# ---------------------------------------------------------------------------
# The batch
# ---------------------------------------------------------------------------


class BatchOutcome(BaseModel):
    out: Path
    tasks: int
    skipped: int
    ran: int
    seconds: float
    records: list[dict[str, Any]] = Field(default_factory=list, description="this batch's latest records")
    load_failures: list[str] = Field(default_factory=list)
    torn_lines: int = Field(default=0, description="incomplete lines moved to results.torn on resume")
    toolkits: dict[str, list[str]] = Field(default_factory=dict, description="published vs invented toolkit specs")


def run_batch(
    paths: list[str],
    config: BatchConfig,
    *,
    toolkit_files: list[str] | None = None,
    progress: Callable[[int, int, dict[str, Any] | None], None] | None = None,
    strict: bool = False,
) -> BatchOutcome:
    """Run (or resume) a batch; ``progress(done, total, record)`` is called as results come."""
    report, failures = _load_checked(paths, toolkit_files, strict)
    results_path = config.out / RESULTS_FILE
    torn = repair_results(results_path)
    existing = read_results(results_path)
    done_ids = finished_ids(existing)
    tasks = make_tasks(report.scenarios, report.profiles, config)
    todo = [t for t in tasks if t.episode_id not in done_ids]
    if todo and config.backend == "ray":
        join_ray(config.ray_address)  # before anything is written: a cluster that is not there stops here
    config.out.mkdir(parents=True, exist_ok=True)
    specs = [s.model_dump(mode="json") for s in report.specs.values()]
    started = time.perf_counter()
    if progress:
        progress(len(tasks) - len(todo), len(tasks), None)
    with results_path.open("a", encoding="utf-8") as handle:
        on_result = _result_writer(handle, existing, len(tasks), len(tasks) - len(todo), progress)
        if todo:
            _dispatch(config, specs, todo, on_result)
    return BatchOutcome(
        out=config.out,
        tasks=len(tasks),
        skipped=len(tasks) - len(todo),
        ran=len(todo),
        seconds=round(time.perf_counter() - started, 3),
        records=[existing[t.episode_id] for t in tasks if t.episode_id in existing],
        load_failures=failures,
        torn_lines=torn,
        toolkits=toolkit_sources(report),
    )


def _load_checked(paths: list[str], toolkit_files: list[str] | None,
                  strict: bool) -> tuple[ImportReport, list[str]]:
    """The scenarios to run and the load failures; BatchError when none (or any, with strict)."""
    report = load_sets(paths, toolkit_files)
    failures = [f.error for f in report.failures]
    if strict and failures:
        raise BatchError("some scenario files failed to load (--strict):\n" + "\n".join(failures))
    if not report.scenarios:
        raise BatchError("no scenarios to run" + (":\n" + "\n".join(failures) if failures else ""))
    return report, failures


def _result_writer(handle: Any, existing: dict[str, dict[str, Any]], total: int, done: int,
                   progress: Callable[[int, int, dict[str, Any] | None], None] | None,
                   ) -> Callable[[dict[str, Any]], None]:
    """Appends each record as it comes (flushed: a killed batch loses nothing finished)."""
    count = done

    def on_result(record: dict[str, Any]) -> None:
        nonlocal count
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        handle.flush()
        existing[record["episode_id"]] = record
        count += 1
        if progress:
            progress(count, total, record)

    return on_result


def _dispatch(config: BatchConfig, specs: list[dict[str, Any]], todo: list[Task],
              on_result: Callable[[dict[str, Any]], None]) -> None:
    """The episodes on the configured backend: Ray, this process, or worker processes."""
    if config.backend == "ray":
        _run_ray(config, specs, todo, on_result)
    elif config.workers == 1:
        worker = EpisodeWorker(config.model_dump(mode="json"), specs)
        asyncio.run(_run_in_process(worker, todo, config.concurrency, on_result))
    else:
        _run_processes(config, specs, todo, on_result)


def iter_records(path: Path) -> Iterator[dict[str, Any]]:
    yield from read_results(path).values()

