"""`townsfolk bench local`: per-call latency of the embedded model with and without the prefix cache.

The prompts are a town's own: a short generative run on the scripted backend records every
request its residents make (interleaved as in a real run), then the same requests, in the
same order, go to the embedded model twice in one process: once with the KV prefix cache off
(llama-cpp-python still reuses the prefix it shares with the previous call) and once on
(agents/llm/local.py). Same seeds, so the answers should match; the share that do is shown, and so is the share of
prompt tokens llama.cpp had to evaluate (load-independent evidence of what the cache saves).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from world.cli.args import positive_int
from world.clock import parse_duration, parse_start


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="local", help="embedded model: local, local:qwen, local:/x.gguf")
    parser.add_argument("--agents", type=positive_int, default=4, help="residents of the recorded run (default 4)")
    parser.add_argument("--duration", default="1h", help="game time of the recorded run (default 1h)")
    parser.add_argument("--start", default="2026-02-13 07:00", help="game start (default a Friday 07:00)")
    parser.add_argument("--calls", type=positive_int, default=40, help="requests replayed per mode (default 40)")
    parser.add_argument("--seed", type=int, default=0)


class _Recording:
    """A backend that hands every request to the scripted one and keeps a copy."""

    def __init__(self, inner: Any):
        self.inner, self.name, self.requests = inner, inner.name, []

    async def generate(self, request: Any) -> Any:
        self.requests.append(request)
        return await self.inner.generate(request)


def town_requests(args: argparse.Namespace) -> list[Any]:
    """The requests a short scripted generative run makes, in order."""
    from world.runner import RunOptions, build_engine

    try:
        duration, start = parse_duration(args.duration), parse_start(args.start)
    except ValueError as exc:
        raise SystemExit(f"townsfolk bench local: {exc}") from None
    with tempfile.TemporaryDirectory(prefix="townsfolk-bench-local-") as tmp:
        options = RunOptions(town="default", agents=args.agents, start=start, duration=duration, seed=args.seed,
                             mind="generative", model="scripted", out=Path(tmp) / "run")
        engine = build_engine(options)
        gateway = engine.llm  # type: ignore[attr-defined]
        recording = _Recording(gateway.backend)
        gateway.backend, gateway.cache = recording, None
        asyncio.run(engine.run(engine.until))
        engine.store.close()
    return recording.requests


def _replay(model: Any, requests: list[Any], grammar_for: Any, generate: Any) -> tuple[list[float], list[str], int, int]:
    """Latencies, answers, prompt tokens sent and prompt tokens llama.cpp actually evaluated."""
    import llama_cpp

    latencies, answers, prompt_tokens, evaluated = [], [], 0, 0
    for request in requests:
        llama_cpp.llama_perf_context_reset(model.llama.ctx)
        started = time.perf_counter()
        text, prompt, _ = generate(model.spec.name, request.messages, grammar=grammar_for(request.schema),
                                   temperature=request.temperature, max_tokens=request.max_tokens,
                                   seed=request.seed)
        latencies.append(time.perf_counter() - started)
        answers.append(text)
        prompt_tokens += prompt
        evaluated += int(llama_cpp.llama_perf_context(model.llama.ctx).n_p_eval)
    return latencies, answers, prompt_tokens, evaluated


def run(args: argparse.Namespace) -> dict[str, Any]:
    from agents.llm.grammar import grammar_for
    from agents.llm.local import (DEFAULT_KV_CACHE_MB, LocalBackend, default_threads, generate_local,
                                  prefix_cache_bytes, set_prefix_cache)

    name = args.model.split(":", 1)[1] if args.model.startswith("local:") else None
    if args.model not in ("local",) and name is None:
        raise SystemExit(f"townsfolk bench local: --model {args.model!r}: expected local or local:<name>")
    try:
        backend = LocalBackend(name)
        model = backend.load()
    except (ValueError, RuntimeError, OSError) as exc:
        raise SystemExit(f"townsfolk bench local: {exc}") from None
    requests = town_requests(args)[: args.calls]
    if not requests:
        raise SystemExit("townsfolk bench local: the recorded run made no model calls")
    generate_local(model.spec.name, requests[0].messages, grammar=None, temperature=0.0, max_tokens=4, seed=0)
    result: dict[str, Any] = {"model": backend.name, "calls": len(requests), "threads": default_threads()}
    answers: dict[str, list[str]] = {}
    for mode in ("off", "on"):
        set_prefix_cache(model, (prefix_cache_bytes() or DEFAULT_KV_CACHE_MB << 20) if mode == "on" else 0)
        latencies, answers[mode], prompt_tokens, evaluated = _replay(model, requests, grammar_for, generate_local)
        result[f"kv_{mode}_p50_s"] = round(statistics.median(latencies), 3)
        result[f"kv_{mode}_mean_s"] = round(statistics.fmean(latencies), 3)
        result[f"kv_{mode}_total_s"] = round(sum(latencies), 1)
        result[f"kv_{mode}_prompt_tokens_evaluated"] = f"{evaluated}/{prompt_tokens}"
    result["speedup_mean"] = round(result["kv_off_mean_s"] / result["kv_on_mean_s"], 2)
    result["same_answers"] = f"{sum(a == b for a, b in zip(answers['off'], answers['on']))}/{len(requests)}"
    return result
