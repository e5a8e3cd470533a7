"""`townsfolk bench scale`: how the engine's cost grows with the number of residents.

Each size runs `bench engine` on a town generated for it (maps/crowd.py, ``generated:N``) in
its own process, so each peak RSS is that size's alone and no cache carries over. Reported per
size: wall time of the simulated span, agent-ticks per second, peak RSS, run.db bytes per
resident-day (per resident-hour when the span is under a day: the busy morning of a 2 h span scaled
by 12 overstated a day four- to fivefold) and the run summary's own time; over all sizes, the growth exponent of wall
time in N (least squares on log-log: 1.0 is linear), and of CPU time (the fairer one on a
machine shared with other jobs). ``--plot FILE`` draws both on log-log
axes as a PNG.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from world.runner import MAX_AGENTS

DEFAULT_SIZES = "25,100,250,1000,2500,10000"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help=f"residents per run, comma-separated (default {DEFAULT_SIZES})")
    parser.add_argument("--mind", choices=["routine", "generative"], default="routine",
                        help="routine (no model) or generative on the scripted backend")
    parser.add_argument("--duration", default=None, help="game time per size (default 1d routine, 2h generative)")
    parser.add_argument("--start", default="2026-02-13 07:00", help="game start")
    parser.add_argument("--seed", type=int, default=0, help="run seed and town seed")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds one size may take before it is stopped (default 3600)")
    parser.add_argument("--plot", default=None, help="write a log-log PNG of wall time and agent-ticks/s against N here")


def sizes_of(text: str) -> list[int]:
    """``25,100,1000`` -> [25, 100, 1000]; a clear error for anything else."""
    try:
        sizes = sorted({int(p) for p in text.split(",") if p.strip()})
    except ValueError:
        raise SystemExit(f"--sizes {text!r}: expected whole numbers separated by commas, e.g. {DEFAULT_SIZES}") from None
    if not sizes or sizes[0] < 1 or sizes[-1] > MAX_AGENTS:
        raise SystemExit(f"--sizes {text!r}: expected at least one size, each from 1 to {MAX_AGENTS:,}")
    return sizes


def run(args: argparse.Namespace) -> dict[str, Any]:
    sizes = sizes_of(args.sizes)
    duration = args.duration or ("1d" if args.mind == "routine" else "2h")
    rows: list[dict[str, Any]] = []
    for n in sizes:
        row = measure(n, args.mind, duration, args.start, args.seed, args.timeout)
        rows.append(row)
        print(_line(row), file=sys.stderr, flush=True)
    done = [r for r in rows if "error" not in r]
    result: dict[str, Any] = {
        "mind": args.mind, "duration": duration, "sizes": sizes, "runs": rows,
        "wall_exponent": fit_exponent([(r["agents"], r["wall_s"]) for r in done]),
        # CPU seconds of the simulation: the fairer figure on a machine shared with other jobs
        "cpu_exponent": fit_exponent([(r["agents"], r["cpu_s"]) for r in done]),
        "failed": [r["agents"] for r in rows if "error" in r],  # sizes that did not run: the exit code is 1
    }
    small, big = (done[0], done[-1]) if len(done) > 1 else (None, None)
    if small and big:
        result["agent_ticks_per_s_ratio"] = round(small["agent_ticks_per_s"] / big["agent_ticks_per_s"], 2)
    if args.plot:
        plot(done, Path(args.plot), f"bench scale: {args.mind} minds, {duration}")
        result["plot"] = str(args.plot)
    return result


def measure(n: int, mind: str, duration: str, start: str, seed: int, timeout: float) -> dict[str, Any]:
    """`bench engine` on the town generated for ``n`` residents, in a child process."""
    cmd = [sys.executable, "-m", "world.cli", "bench", "engine", "--json", "--agents", str(n),
           "--town", f"generated:{n}:{seed}", "--mind", mind, "--duration", duration, "--start", start,
           "--seed", str(seed)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"agents": n, "error": f"stopped after --timeout {timeout:g} s"}
    total = time.perf_counter() - t0
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"agents": n, "error": f"exit {proc.returncode}: {proc.stderr.strip()[-400:]}"}
    r = json.loads(lines[-1])
    return {
        "agents": r["agents"], "wall_s": r["wall_s"], "agent_ticks_per_s": r["agent_ticks_per_s"],
        "cpu_s": r["cpu_s"], "agent_ticks_per_cpu_s": r["agent_ticks_per_cpu_s"],
        "ticks": r["ticks"], "setup_s": r["setup_s"], "summary_s": r["summary_s"], "process_s": round(total, 1),
        "peak_rss_mb": r["peak_rss_mb"], "rss_kb_per_resident": round(r["peak_rss_mb"] * 1024 / r["agents"], 1),
        "run_db_bytes_per_resident_day": r["run_db_bytes_per_resident_day"],
        "run_db_bytes_per_resident_hour": r["run_db_bytes_per_resident_hour"], "records": r["records"],
        "chat_lines": r["chat_lines"], "slow_decisions": r["slow_decisions"], "quiet_share": r.get("quiet_share"),
    }


def fit_exponent(points: list[tuple[float, float]]) -> float | None:
    """Slope of log(y) on log(x) by least squares (None with fewer than two distinct x)."""
    pts = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    if len({x for x, _ in pts}) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxy = sum((x - mx) * (y - my) for x, y in pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return round(sxy / sxx, 3)


def plot(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    """Wall and CPU time and agent-ticks/s against residents, log-log, with the linear reference
    drawn from the smallest size's CPU time: on a shared machine wall time says more about the
    other jobs than about the engine, so both are shown."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [r["agents"] for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.loglog(ns, [r["wall_s"] for r in rows], "o-", label="wall s")
    a.loglog(ns, [r["cpu_s"] for r in rows], "s-", label="CPU s")
    if rows:
        a.loglog(ns, [rows[0]["cpu_s"] * n / ns[0] for n in ns], "--", color="grey", label="linear (from CPU s)")
    a.set_xlabel("residents")
    a.set_ylabel("seconds")
    a.legend()
    b.loglog(ns, [r["agent_ticks_per_s"] for r in rows], "o-", color="tab:green", label="per wall second")
    b.loglog(ns, [r["agent_ticks_per_cpu_s"] for r in rows], "s-", color="tab:olive", label="per CPU second")
    b.set_xlabel("residents")
    b.set_ylabel("agent-ticks per second")
    b.legend()
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _line(row: dict[str, Any]) -> str:
    if "error" in row:
        return f"{row['agents']:>6} residents: {row['error']}"
    return (f"{row['agents']:>6} residents: {row['wall_s']:.1f} s ({row['cpu_s']:.1f} s CPU), "
            f"{row['agent_ticks_per_s']:.0f} agent-ticks/s, "
            f"{row['peak_rss_mb']:.0f} MB peak, {_db_line(row)}")


def _db_line(row: dict[str, Any]) -> str:
    """run.db per resident-day from a whole day; from a shorter span, per resident-hour and said so."""
    if row.get("run_db_bytes_per_resident_day") is not None:
        return f"{row['run_db_bytes_per_resident_day']} run.db bytes/resident-day"
    return (f"{row['run_db_bytes_per_resident_hour']} run.db bytes/resident-hour "
            "(span under a day: not scaled to one, its hours are not alike)")
