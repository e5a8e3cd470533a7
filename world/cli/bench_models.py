"""`townsfolk bench models`: which embedded model should `local` be? (cases: agents/model_quality.py)

Runs each embedded model through the gateway (grammar-constrained, as in a simulation) on the
quality cases and reports the share of schema-valid and sensible answers, latency and tokens per
second. Figures are recorded in docs/MODELS.md.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import agents.model_quality as quality
from agents.llm.gateway import Gateway
from agents.llm.local import LocalBackend, default_threads, load_model
from agents.llm.models import LOCAL_MODELS
from agents.model_quality import all_cases
from world.cli.args import positive_int


@dataclass
class Tally:
    calls: int = 0
    valid_first: int = 0
    valid: int = 0
    sensible: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    by_purpose: dict[str, list[int]] = field(default_factory=dict)  # purpose -> [sensible, calls]
    samples: dict[str, str] = field(default_factory=dict)


def evaluate(name: str, seeds: int, grammar: bool, temperature: float, verbose: bool) -> dict[str, Any]:
    backend = LocalBackend(name, grammar=grammar)
    started = time.perf_counter()
    backend.load()
    load_s = time.perf_counter() - started
    tally = Tally()
    importance_spread: list[int] = []
    for seed in range(seeds):
        llm = Gateway(backend, model=backend.name, max_attempts=1, timeout_s=600, seed=seed)
        infos: list[Any] = []
        llm.add_listener(infos.append)
        for case in all_cases():
            value = llm.complete(case.purpose, case.messages, case.schema, case.fallback,
                                 temperature=temperature, max_tokens=160)
            info = infos[-1]
            ok = info.ok and not info.fallback
            good = ok and case.sensible(value)
            tally.calls += 1
            tally.valid_first += int(ok and info.attempts == 1)
            tally.valid += int(ok)
            tally.sensible += int(good)
            tally.seconds += info.latency_s
            slot = tally.by_purpose.setdefault(case.purpose, [0, 0])
            slot[0] += int(good)
            slot[1] += 1
            if ok and case.purpose == "importance":
                importance_spread += value.ratings
            tally.samples.setdefault(case.purpose, value.model_dump_json())
            if verbose:
                mark = "ok " if good else ("bad" if ok else "INV")
                print(f"  [{name} s{seed}] {mark} {case.purpose:<10} {value.model_dump_json()[:110]}", file=sys.stderr)
        tally.completion_tokens += llm.stats()["total"]["completion_tokens"]
    return {
        "model": backend.name,
        "grammar": grammar,
        "raw_decode_tokens_per_s": raw_decode_speed(name),
        "calls": tally.calls,
        "valid_first_attempt": round(tally.valid_first / tally.calls, 3),
        "sensible": round(tally.sensible / tally.calls, 3),
        "sensible_by_purpose": {k: f"{s}/{n}" for k, (s, n) in tally.by_purpose.items()},
        "importance_distinct_values": len(set(importance_spread)),
        "load_s": round(load_s, 2),
        "mean_latency_s": round(tally.seconds / tally.calls, 2),
        "tokens_per_s": round(tally.completion_tokens / tally.seconds, 1) if tally.seconds else 0.0,
        "samples": tally.samples,
    }


def raw_decode_speed(name: str, tokens: int = 64) -> float:
    """Plain generation speed: a short prompt, no grammar, a fixed number of new tokens."""
    model = load_model(LOCAL_MODELS[name])
    with model.lock:
        started = time.perf_counter()
        out = model.llama.create_completion("The town woke up slowly. At the cafe,", max_tokens=tokens,
                                            temperature=0.7, seed=0)
        seconds = time.perf_counter() - started
    return round(out["usage"]["completion_tokens"] / seconds, 1)


def machine() -> str:
    return f"{platform.machine()} {default_threads()} threads, Python {platform.python_version()}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models", nargs="+", default=[n for n, s in LOCAL_MODELS.items() if not s.opt_in],
                        choices=list(LOCAL_MODELS), help="default: every model but the opt-in ones (qwen)")
    parser.add_argument("--seeds", type=positive_int, default=2, help="repeat every case with this many seeds")
    parser.add_argument("--temperature", type=float, default=0.7, help="as in a simulation (default 0.7)")
    parser.add_argument("--no-grammar", action="store_true", help="decode without the schema grammar")
    parser.add_argument("--shots", type=int, choices=(0, 1), default=1,
                        help="1: one worked example per prompt (default); 0: instructions only")
    parser.add_argument("--verbose", action="store_true", help="print every answer to stderr")


def run(args: argparse.Namespace) -> dict[str, Any]:
    quality.SHOTS = args.shots
    results = [
        evaluate(m, args.seeds, not args.no_grammar, args.temperature, args.verbose) for m in args.models
    ]
    return {"machine": machine(), "cases": len(all_cases()), "seeds": args.seeds, "shots": args.shots,
            "temperature": args.temperature, "results": results}

