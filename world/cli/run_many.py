"""`townsfolk run-many`: a batch of whole towns (seeds x ablations), each in its own run folder.

    townsfolk run-many --out DIR [--seeds 0 1 2] [--ablations full no_reflection ...]
                       [--backend local|ray] [--ray-address ADDR] [--workers N]
                       [--town T] [--agents N] [--duration 1h] [--model M] [--mind M] [--json]

Each town is a `townsfolk run` in a child process (so one town's crash or model failure
cannot take the others down), written to DIR/<ablation>-seed<N>/. With ``--backend local``
up to ``--workers`` run at once on this machine; with ``--backend ray`` each is a Ray task
(1 CPU) on a local instance or the cluster at --ray-address (DIR must then be storage every
node sees). Each finished town appends one line to DIR/runs.jsonl as it ends; a re-run skips
towns that already finished with exit 0. DIR/summary.md is the table across them; the exit
code is 1 when any town failed.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from agents.encounters.batch import BatchError, join_ray, ray_results
from replays.lock import RunFolderBusy, RunLock

RUNS_FILE = "runs.jsonl"
TABLE_FILE = "summary.md"
ABLATIONS = ["full", "no_reflection", "no_reflection_planning", "no_observation"]
PASSED_OPTIONS = ("town", "agents", "duration", "model", "mind", "start")


class RunManyError(Exception):
    """A batch that cannot start; the message names the option."""


class TownSpec(BaseModel):
    """One town of the batch: its folder name and the `townsfolk run` options."""

    name: str
    seed: int
    ablation: str
    options: dict[str, Any] = Field(default_factory=dict)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="batch folder (one run folder per town inside)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="seeds to run (default 0)")
    parser.add_argument("--ablations", nargs="+", choices=ABLATIONS, default=["full"], help="ablations to run (default full): full; no_reflection; no_reflection_planning; "
                             "no_observation (the paper's ablations: which parts of the mind are switched off)")
    parser.add_argument("--backend", choices=["local", "ray"], default="local",
                        help="local: towns as child processes on this machine, --workers at once (default); "
                             "ray: each town a Ray task on a local instance or --ray-address")
    parser.add_argument("--ray-address", help="an existing Ray cluster (default: RAY_ADDRESS or a local instance)")
    parser.add_argument("--workers", type=int, default=2, help="towns at once (local backend; default 2)")
    parser.add_argument("--town", help="town name or folder (passed to every run)")
    parser.add_argument("--agents", type=int, help="residents per town")
    parser.add_argument("--duration", default="1h", help="game time per town (default 1h)")
    parser.add_argument("--model", help="model for every town (see townsfolk run --model)")
    parser.add_argument("--mind", choices=["auto", "generative", "routine"],
                        help="resident minds of every town: generative (LLM), routine (deterministic, no LLM); "
                             "auto (default) prefers generative")
    parser.add_argument("--start", help='game start, "YYYY-MM-DD HH:MM"')
    parser.add_argument("--json", action="store_true", help="print the summaries as one JSON line at the end")


def plan(args: argparse.Namespace) -> list[TownSpec]:
    """Seeds x ablations, in a stable order; a duplicated seed or ablation is run once."""
    if args.workers < 1:
        raise RunManyError(f"--workers must be at least 1, not {args.workers}")
    if any(seed < 0 for seed in args.seeds):
        raise RunManyError("--seeds must be 0 or more")
    options = {f: getattr(args, f) for f in PASSED_OPTIONS if getattr(args, f, None) is not None}
    towns = []
    for ablation in dict.fromkeys(args.ablations):
        for seed in dict.fromkeys(args.seeds):
            towns.append(TownSpec(name=f"{ablation}-seed{seed}", seed=seed, ablation=ablation, options=options))
    return towns


def run_command(town: TownSpec, folder: Path) -> list[str]:
    """The `townsfolk run` child process for one town."""
    cmd = [sys.executable, "-m", "world.cli", "run", "--out", str(folder), "--seed", str(town.seed),
           "--quiet", "--no-control", "--json"]
    if town.ablation != "full":
        cmd += ["--ablation", town.ablation]
    for key, value in town.options.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    return cmd


def run_town(town: dict[str, Any], out: str, cwd: str) -> dict[str, Any]:
    """Run one town to its end; its summary (the run's last JSON line) plus name and exit code.
    Shared by both backends (a Ray task calls it in a Ray worker)."""
    spec = TownSpec.model_validate(town)
    folder = Path(out) / spec.name
    row: dict[str, Any] = {"name": spec.name, "seed": spec.seed, "ablation": spec.ablation, "folder": str(folder)}
    try:
        done = subprocess.run(run_command(spec, folder), cwd=cwd, capture_output=True, text=True,
                              preexec_fn=_die_with_parent)
    except OSError as exc:
        return {**row, "exit": 1, "error": f"could not start the run: {exc}"}
    row["exit"] = done.returncode
    summary = _last_json(done.stdout)
    if summary is not None:
        row["summary"] = summary
    if done.returncode != 0 or summary is None:
        tail = [line for line in done.stderr.splitlines() if line.strip()][-3:]
        row["error"] = " | ".join(tail) or "the run printed no summary"
        row["exit"] = done.returncode or 1
    return row


def _prctl() -> Any:
    """libc's prctl (Linux), looked up in the parent: the child must not import after fork."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before it runs: ask Linux to send SIGTERM when the batch process dies (even
    by kill -9), so no town runs on as an orphan; the town then stops like any run on SIGTERM
    (its committed ticks kept, resumable). Elsewhere a no-op."""
    if _PRCTL is None:
        return
    _PRCTL(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() == 1:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _last_json(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                return None
            return value if isinstance(value, dict) else None
    return None


def finished(out: Path) -> dict[str, dict[str, Any]]:
    """Latest row per town from runs.jsonl (a torn line from a killed batch is skipped)."""
    rows: dict[str, dict[str, Any]] = {}
    path = out / RUNS_FILE
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and "name" in row:
                rows[row["name"]] = row
    return rows


def _local(towns: list[TownSpec], out: Path, workers: int, on_row: Any) -> None:
    with ThreadPoolExecutor(max_workers=workers) as pool:  # threads wait; the towns are processes
        futures = [pool.submit(run_town, t.model_dump(), str(out), os.getcwd()) for t in towns]
        for future in as_completed(futures):
            on_row(future.result())


def _ray(towns: list[TownSpec], out: Path, address: str | None, on_row: Any) -> None:
    try:
        ray = join_ray(address)
    except BatchError as exc:
        raise RunManyError(str(exc)) from exc
    remote = ray.remote(num_cpus=1, max_retries=1)(run_town)
    folder, cwd = str(out.resolve()), os.getcwd()

    def launch(town: TownSpec) -> Any:
        return remote.remote(town.model_dump(), folder, cwd)

    for town, row, failure in ray_results(ray, launch, towns, limit=len(towns)):
        on_row(row if failure is None else {"name": town.name, "seed": town.seed, "ablation": town.ablation,
                                            "exit": 1, "error": failure})


def table_row(row: dict[str, Any]) -> dict[str, Any]:
    """The figures compared across towns; columns a run does not report stay empty."""
    s = row.get("summary") or {}
    total = ((s.get("llm") or {}).get("total") or {}) if isinstance(s.get("llm"), dict) else {}
    by_purpose = (s.get("llm") or {}).get("by_purpose") or {} if isinstance(s.get("llm"), dict) else {}
    fallbacks = total.get("fallbacks", sum(p.get("fallbacks", 0) for p in by_purpose.values()) if by_purpose else None)
    digest = s.get("records_digest")
    return {
        "town": row["name"], "exit": row.get("exit"), "health": _health_cell(s.get("health")),
        "mind_errors": _errors_cell(s.get("mind_errors")), "ticks": s.get("ticks"), "llm_calls": s.get("llm_calls"),
        "fallbacks": fallbacks, "conversations": s.get("conversations"),
        "records_digest": digest[:12] if isinstance(digest, str) else None, "wall_s": s.get("wall_s"),
        "error": row.get("error"),
    }


def _health_cell(health: Any) -> Any:
    """'ok', or 'degraded: <first reason>' — words for a table cell, not a dict."""
    if not isinstance(health, dict):
        return health
    reasons = health.get("reasons") or []
    return str(health.get("status")) + (f": {reasons[0]}" if reasons else "")


def _errors_cell(errors: Any) -> Any:
    """'0 errors, 2 fallbacks of 40 calls' for a table cell."""
    if not isinstance(errors, dict):
        return errors
    return (f"{errors.get('errors', 0)} errors, {errors.get('fallbacks', 0)} fallbacks "
            f"of {errors.get('calls', 0)} calls")


def markdown(rows: list[dict[str, Any]]) -> str:
    cols = list(table_row({"name": ""}).keys())
    lines = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    for row in rows:
        cells = table_row(row)
        lines.append("| " + " | ".join("" if cells[c] is None else str(cells[c]).replace("|", "/") for c in cols) + " |")
    return "\n".join(lines) + "\n"


def main(args: argparse.Namespace) -> int:
    try:
        towns = plan(args)
    except (RunManyError, ValidationError) as exc:
        print(f"townsfolk run-many: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    try:
        lock = RunLock.acquire(out)  # one batch per folder: two would each call the other's towns failed
    except RunFolderBusy as exc:
        print(f"townsfolk run-many: --out {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"townsfolk run-many: --out {out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    with lock:
        return _run_batch(args, towns, out)


def _run_batch(args: argparse.Namespace, towns: list[TownSpec], out: Path) -> int:
    """Run the towns still to do (the batch folder locked), then write the table and say how it went."""
    previous = finished(out)
    todo = [t for t in towns if previous.get(t.name, {}).get("exit") != 0]
    if len(todo) < len(towns):
        print(f"run-many: {len(towns) - len(todo)} towns already finished in {out}; running {len(todo)}",
              file=sys.stderr)
    rows = {name: row for name, row in previous.items() if name in {t.name for t in towns}}
    _end_torn_line(out / RUNS_FILE)  # a killed batch's half line must not swallow the next row
    with (out / RUNS_FILE).open("a", encoding="utf-8") as handle:

        def on_row(row: dict[str, Any]) -> None:
            handle.write(json.dumps(row, default=str) + "\n")
            handle.flush()
            rows[row["name"]] = row
            state = "ok" if row.get("exit") == 0 else f"FAILED (exit {row.get('exit')}): {row.get('error')}"
            print(f"run-many: {row['name']} {state}", file=sys.stderr)

        try:
            if todo and args.backend == "ray":
                _ray(todo, out, args.ray_address, on_row)
            elif todo:
                _local(todo, out, args.workers, on_row)
        except RunManyError as exc:
            print(f"townsfolk run-many: {exc}", file=sys.stderr)
            return 2
    ordered = [rows[t.name] for t in towns if t.name in rows]
    _keep_latest(out / RUNS_FILE, [t.name for t in towns])
    (out / TABLE_FILE).write_text(markdown(ordered), encoding="utf-8")
    failed = [r["name"] for r in ordered if r.get("exit") != 0]
    if args.json:
        print(json.dumps({"out": str(out), "towns": [table_row(r) for r in ordered], "failed": failed}, default=str))
    else:
        print(markdown(ordered), end="")
        print(f"{len(ordered) - len(failed)} of {len(towns)} towns finished; table in {out / TABLE_FILE}"
              + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def _keep_latest(path: Path, order: Sequence[str] = ()) -> None:
    """Rewrite runs.jsonl with only the latest row of each town (atomically): a FAILED row of
    an earlier batch must not stand beside the later ok one. Rows follow the batch's town order
    (then towns of other batches), not the order parallel towns happened to finish in."""
    latest = finished(path.parent)
    rank = {name: i for i, name in enumerate(order)}
    rows = sorted(latest.values(), key=lambda row: (rank.get(row["name"], len(rank)), str(row["name"])))
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(row, default=str) + "\n" for row in rows), encoding="utf-8")
    tmp.replace(path)


def _end_torn_line(path: Path) -> None:
    """A killed batch may leave a half-written last row: end it, so the next row starts a line
    (reading skips a row that is not valid JSON)."""
    if path.is_file() and path.stat().st_size:
        with path.open("rb") as handle:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                with path.open("ab") as out:
                    out.write(b"\n")
