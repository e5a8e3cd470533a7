"""`townsfolk bench eval`: encounter episodes per hour on the scripted backend by worker count.

The workload is the town's four service scenarios (tools on town state) plus synthesised
scenarios whose tools are emulated, repeated over seeds, so both tool paths are timed. Each
worker count runs the whole batch from scratch in a fresh folder; the wall time includes
starting the worker processes, as a user would see it. Scaling is episodes/hour relative to
one worker. With one worker, asyncio concurrency is also compared (1 vs 4 in flight).

``--backends local ray`` times the same batches as Ray tasks too, in the same run. For each
worker count a local Ray instance with that many CPUs is started (loopback, no dashboard);
its start-up is reported apart (``ray_start_seconds_Nw``) and not counted in the Ray wall
time, as a cluster is normally already running when a batch is submitted to it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from agents.encounters.batch import BatchConfig, run_batch
from agents.encounters.episode import Models
from agents.encounters.importers import ImportReport, write_pack
from agents.encounters.services import BANK_SPEC, CLINIC_SPEC
from agents.encounters.synthesis import synthesize
from agents.encounters.town_scenarios import town_scenarios
from agents.llm.gateway import make_llm


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seeds", type=int, default=250, help="repetitions of each scenario (default 250)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4], help="worker counts to time")
    parser.add_argument("--backends", nargs="+", choices=["local", "ray"], default=["local"],
                        help="backends to time in this run (ray needs the ray extra)")


def _workload(folder: Path) -> int:
    llm = make_llm("scripted")
    llm_models = Models(llm, llm, llm)
    synth = asyncio.run(synthesize([CLINIC_SPEC, BANK_SPEC], 4, llm, llm_models))
    scenarios = town_scenarios() + synth.kept
    write_pack(folder, ImportReport(scenarios=scenarios, specs={CLINIC_SPEC.toolkit: CLINIC_SPEC,
                                                                BANK_SPEC.toolkit: BANK_SPEC}))
    return len(scenarios)


def _time(pack: Path, out: Path, workers: int, concurrency: int, seeds: int,
          backend: str = "local") -> tuple[int, float]:
    config = BatchConfig(out=out, workers=workers, concurrency=concurrency, seeds=seeds, backend=backend)
    started = time.perf_counter()
    outcome = run_batch([str(pack)], config)
    seconds = time.perf_counter() - started
    errors = sum(1 for r in outcome.records if r.get("error"))
    if errors:
        raise RuntimeError(f"{errors} episodes failed during the benchmark")
    return outcome.ran, seconds


def _time_ray(pack: Path, root: Path, workers: list[int], seeds: int) -> dict[str, Any]:
    """Episodes/hour as Ray tasks on a local Ray instance with ``workers`` CPUs, per count."""
    try:
        import ray  # type: ignore[import-not-found]
    except ImportError as exc:
        raise SystemExit("bench eval --backends ray needs Ray: pip install 'townsfolk[ray]'") from exc
    result: dict[str, Any] = {"ray_version": ray.__version__}
    for count in workers:
        started = time.perf_counter()
        ray.init(num_cpus=count, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
        try:
            result[f"ray_start_seconds_{count}w"] = round(time.perf_counter() - started, 2)
            episodes, seconds = _time(pack, root / f"ray{count}", count, 1, seeds, backend="ray")
        finally:
            ray.shutdown()
        result[f"ray_episodes_per_hour_{count}w"] = round(episodes / seconds * 3600)
        result[f"ray_seconds_{count}w"] = round(seconds, 2)
    return result


def run(args: argparse.Namespace) -> dict[str, Any]:
    seeds = max(1, args.seeds)
    backends = getattr(args, "backends", None) or ["local"]
    with tempfile.TemporaryDirectory(prefix="bench_eval_") as tmp:
        root = Path(tmp)
        scenarios = _workload(root / "pack")
        result: dict[str, Any] = {"scenarios": scenarios, "seeds": seeds, "cores": os.cpu_count(),
                                  "load_average": round(os.getloadavg()[0], 1)}
        if "local" in backends:
            per_hour: dict[int, float] = {}
            for workers in args.workers:
                episodes, seconds = _time(root / "pack", root / f"w{workers}", workers, 1, seeds)
                per_hour[workers] = episodes / seconds * 3600
                result["episodes"] = episodes
                result[f"episodes_per_hour_{workers}w"] = round(per_hour[workers])
                result[f"seconds_{workers}w"] = round(seconds, 2)
            base = per_hour.get(1) or next(iter(per_hour.values()))
            for workers, value in per_hour.items():
                result[f"scaling_{workers}w"] = round(value / base, 2)
            episodes, seconds = _time(root / "pack", root / "async4", 1, 4, seeds)
            result["episodes_per_hour_1w_async4"] = round(episodes / seconds * 3600)
        if "ray" in backends:
            result.update(_time_ray(root / "pack", root, args.workers, seeds))
        result["load_average_after"] = round(os.getloadavg()[0], 1)
    return result
