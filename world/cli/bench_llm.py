"""`townsfolk bench llm [--agents 8] [--duration 1d]`: model calls and tokens per resident per
game hour, by purpose, for generative residents on the scripted backend over a full day.

The town is the real one (world.engine on the default map); the scripted backend makes
the calls free and deterministic, so what is measured is how often minds ask, which is the
same whatever model answers. Target: at most 5 calls per resident per game hour (the
original code made about 55).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from datetime import datetime, timedelta


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agents", type=int, default=8, help="residents (default 8; up to 25)")
    parser.add_argument("--duration", default="1d", help="game time to simulate, e.g. 1d, 12h (default 1d)")
    parser.add_argument("--start", default="2023-02-13T06:00", help="game start time (ISO)")
    parser.add_argument("--embedder", choices=["hashing", "minilm"], default="hashing",
                        help="memory embeddings (hashing: fast, no torch; the call counts do not depend on it)")
    parser.add_argument("--ablation", default="full",
                        choices=["full", "no_reflection", "no_reflection_planning", "no_observation"])


def _people(agents: int):
    from maps.town import load_town

    if agents < 1 or agents > 25:
        raise SystemExit(f"--agents {agents}: expected 1..25")
    residents = "residents.json" if agents <= 8 else "residents25.json"
    town = load_town("default", residents=residents)
    return town, sorted(town.residents, key=lambda p: p.name)[:agents]


def run(args: argparse.Namespace) -> dict:
    from maps.contracts import MindOptions
    from agents.llm.gateway import make_llm
    from agents.minds.generative import make_mind
    from memory.embeddings import get_embedder
    from world.clock import parse_duration
    from world.engine import Engine

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
    hours = duration / timedelta(hours=1)
    waking = sum(((p.sleep_hour - p.wake_hour) % 24 or 16) for p in people) / len(people) * hours / 24
    stats = llm.stats()
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
        "ticks": engine.stats["ticks"],
        "decide_calls": engine.stats["decide_calls"],
        "refused_intents": engine.stats["refused_intents"],
        "wall_s": round(wall, 1),
        "original_calls_per_agent_hour": 55,
    }
