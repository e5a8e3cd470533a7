"""`townsfolk bench llm [--agents 8] [--duration 1d]`: model calls and tokens per resident per
game hour, by purpose, for generative residents on the scripted backend over a full day.

The town is the real one (world.engine on the default map); the scripted backend makes
the calls free and deterministic, so what is measured is how often minds ask, which is the
same whatever model answers. Target: at most 5 calls per resident per game hour (the
original code made about 55).

`townsfolk bench llm --model M --callers 1 4 [--calls N]` measures something else: model calls
per second through the gateway (validation, retries, fallback included) with 1, then 4,
callers at once, in one process, for a model behind a server (``--model openai/<name>`` with
TOWNSFOLK_API_BASE, e.g. ``python -m llama_cpp.server``). Each row uses a fresh gateway without
the response cache, after one warm-up call; the load average is recorded beside every row.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, Field

from agents.llm.gateway import make_llm
from agents.minds.generative import make_mind
from maps.contracts import MindOptions
from maps.town import load_town
from memory.embeddings import get_embedder
from world.clock import parse_duration
from world.engine import Engine


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agents", type=int, default=8, help="residents (default 8; up to 25)")
    parser.add_argument("--duration", default="1d", help="game time to simulate, e.g. 1d, 12h (default 1d)")
    parser.add_argument("--start", default="2023-02-13T06:00", help="game start time (ISO)")
    parser.add_argument("--embedder", choices=["hashing", "minilm"], default="hashing",
                        help="memory embeddings (hashing: fast, no torch; the call counts do not depend on it)")
    parser.add_argument("--ablation", default="full",
                        choices=["full", "no_reflection", "no_reflection_planning", "no_observation"])
    parser.add_argument("--model", default="scripted",
                        help="with --callers: the model to measure (e.g. openai/smollm2 with TOWNSFOLK_API_BASE)")
    parser.add_argument("--callers", type=int, nargs="+",
                        help="measure calls/s with this many callers at once, one row each (e.g. 1 4)")
    parser.add_argument("--calls", type=int, default=8, help="with --callers: calls per row (default 8)")


class Errand(BaseModel):
    """A small decision of a resident's kind: a choice, a bounded number and a few words."""

    place: Literal["cafe", "park", "library", "home"]
    minutes: int = Field(ge=5, le=15)
    why: str = Field(max_length=60)


_FALLBACK = Errand(place="home", minutes=5, why="fallback")
_NAMES = ["Isabella", "Klaus", "Maria", "Tom", "Sam", "Ayesha", "John", "Eddy"]


async def _row(model: str, callers: int, calls: int) -> dict:
    llm = make_llm(model, use_cache=False)

    def ask(i: int):
        name = _NAMES[i % len(_NAMES)]
        return llm.acomplete("errand", [{"role": "user", "content": f"Where does {name} go next, and why?"}],
                             Errand, _FALLBACK, max_tokens=64)

    await ask(len(_NAMES) - 1)  # warm-up: the server's first grammar and prompt
    warm = llm.stats()["total"]
    gate = asyncio.Semaphore(callers)

    async def one(i: int) -> Errand:
        async with gate:
            return await ask(i)

    load, cpu, wall = os.getloadavg()[0], time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(calls)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    total = llm.stats()["total"]
    return {"callers": callers, "calls": calls, "wall_s": round(wall, 1), "calls_per_s": round(calls / wall, 3),
            "usable": calls - (total["fallbacks"] - warm["fallbacks"]),
            "attempts": total["attempts"] - warm["attempts"], "client_cpu_s": round(cpu, 2),
            "prompt_tokens_per_attempt": round((total["prompt_tokens"] - warm["prompt_tokens"])
                                               / max(1, total["attempts"] - warm["attempts"]), 1),
            "load_avg": [round(load, 1), round(os.getloadavg()[0], 1)], "unreachable": total["unreachable"] - warm["unreachable"]}


def throughput(args: argparse.Namespace) -> dict:
    """Calls/s with each number of callers, one after the other in this process."""
    if any(c < 1 for c in args.callers) or args.calls < 1:
        raise SystemExit("--callers and --calls must be 1 or more")
    rows = [asyncio.run(_row(args.model, callers, args.calls)) for callers in args.callers]
    return {"model": args.model, "api_base": os.environ.get("TOWNSFOLK_API_BASE"), "rows": rows}


def _people(agents: int):
    if agents < 1 or agents > 25:
        raise SystemExit(f"--agents {agents}: expected 1..25")
    residents = "residents.json" if agents <= 8 else "residents25.json"
    town = load_town("default", residents=residents)
    return town, sorted(town.residents, key=lambda p: p.name)[:agents]


def run(args: argparse.Namespace) -> dict:
    if args.callers:
        return throughput(args)
    duration = parse_duration(args.duration) if isinstance(args.duration, str) else args.duration
    try:
        start = datetime.fromisoformat(args.start)
    except ValueError:
        raise SystemExit(f"--start {args.start!r}: expected an ISO time like 2023-02-13T06:00") from None
    town, people = _people(args.agents)
    llm = make_llm("scripted")
    options = MindOptions(places=town.addresses(), start_time=start, ablation=args.ablation)
    embedder = get_embedder(args.embedder)
    minds = {p.name: make_mind(p, llm, None, options, embedder=embedder) for p in people}
    engine = Engine(town, people, minds, start=start)
    wall = time.perf_counter()
    asyncio.run(engine.run(start + duration))
    wall = time.perf_counter() - wall
    return _usage(people, minds, llm.stats(), engine.stats, duration, wall)


def _usage(people: list, minds: dict, stats: dict, engine_stats: dict, duration: timedelta, wall: float) -> dict:
    """Calls and tokens per resident-hour (and per waking hour), by purpose, from one scripted run."""
    hours = duration / timedelta(hours=1)
    waking = sum(((p.sleep_hour - p.wake_hour) % 24 or 16) for p in people) / len(people) * hours / 24
    n = len(people)
    per_purpose = {
        purpose: {
            "calls_per_agent_hour": round(s["calls"] / n / hours, 3),
            "tokens_per_agent_hour": round((s["prompt_tokens"] + s["completion_tokens"]) / n / hours, 1),
        }
        for purpose, s in stats["by_purpose"].items()
    }
    total = stats["total"]
    chats = sum(m.caller.counts["chat_summary"] for m in minds.values()) // 2
    return {
        "agents": n,
        "game_hours": hours,
        "calls": total["calls"],
        "calls_per_agent_hour": round(total["calls"] / n / hours, 3),
        "calls_per_agent_waking_hour": round(total["calls"] / n / waking, 3),
        "tokens_per_agent_hour": round((total["prompt_tokens"] + total["completion_tokens"]) / n / hours, 1),
        "prompt_tokens": total["prompt_tokens"],
        "completion_tokens": total["completion_tokens"],
        "by_purpose": per_purpose,
        "conversations": chats,
        "reflections": sum(m.caller.counts["reflect_insights"] for m in minds.values()),
        "memories": sum(len(m.memory) for m in minds.values()),
        "ticks": engine_stats["ticks"],
        "decide_calls": engine_stats["decide_calls"],
        "refused_intents": engine_stats["refused_intents"],
        "wall_s": round(wall, 1),
        "original_calls_per_agent_hour": 55,
    }
