"""`townsfolk bench local`: where an embedded call's time goes, with the KV prefix cache off and on.

The prompts are a town's own: a short generative run on the scripted backend records every
request its residents make (interleaved as in a real run), then the same requests, in the
same order, go to the embedded model in one process, once per mode: KV prefix cache off
(llama-cpp-python still reuses the prefix a prompt shares with the previous call) and on
(agents/llm/local.py). Same seeds, so the answers should match; the share that do is shown.

Wall time on a shared machine is mostly waiting for a core, so every call is also measured
in CPU seconds and tokens, which load changes little: prompt tokens sent and evaluated (the
prefix reuse share is what the cache saved), tokens generated, and the CPU spent evaluating
the prompt, decoding, and sampling under the grammar. A line per call goes to stderr while
it runs; the result carries per-purpose figures and a quickstart estimate from them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from agents.llm.grammar import grammar_for
from agents.llm.local import (DEFAULT_KV_CACHE_MB, LocalBackend, completion_prompt, default_threads, generate_local,
                              prefix_cache_bytes, set_prefix_cache)
from world.cli.args import count_or_all, positive_int
from world.clock import parse_duration, parse_start
from world.runner import RunOptions, build_engine

MODES = ("off", "on")


def _modes(text: str) -> tuple[str, ...]:
    """--modes: a comma-separated subset of off,on, in the order given."""
    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    wrong = [m for m in chosen if m not in MODES]
    if wrong or not chosen or len(set(chosen)) != len(chosen):
        raise argparse.ArgumentTypeError(f"expected off, on or off,on; got '{text}'")
    return chosen


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="local", help="embedded model: local, local:qwen, local:/x.gguf")
    parser.add_argument("--agents", type=positive_int, default=4, help="residents of the recorded run (default 4)")
    parser.add_argument("--duration", default="1h", help="game time of the recorded run (default 1h)")
    parser.add_argument("--start", default="2026-02-13 07:00", help="game start (default a Friday 07:00)")
    parser.add_argument("--calls", type=count_or_all, default=40,
                        help="requests replayed per mode (default 40; 0: all the recorded run made)")
    parser.add_argument("--modes", type=_modes, default=MODES,
                        help="KV prefix cache modes to replay, in order (default off,on)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quiet", action="store_true", help="no progress line per call")
    parser.add_argument("--tokens-only", action="store_true",
                        help="no generation: tokenize every recorded prompt and count the prompt tokens"
                             " llama.cpp would evaluate with the cache off and on (seconds, not minutes)")


# ---------------------------------------------------------------------------------------------
# Measuring one call
# ---------------------------------------------------------------------------------------------


@dataclass
class CallFigures:
    """What one call cost: tokens, and CPU seconds split by phase (wall seconds for reference)."""

    purpose: str
    prompt_tokens: int
    evaluated: int  # prompt tokens llama.cpp had to evaluate (the rest came from a cached prefix)
    generated: int
    wall_s: float
    cpu_s: float
    prompt_cpu_s: float  # evaluating the prompt (its uncached suffix)
    decode_cpu_s: float  # one forward pass per generated token
    sample_cpu_s: float  # choosing each token under the grammar
    sampled: int = 0  # draws of the grammar-last sampler (the end of text included)
    resampled: int = 0  # of those, drawn again because the grammar refused the first draw
    forced: int = 0  # tokens the grammar forced: accepted without a draw, decoded in a batch


def cpu_seconds() -> float:
    """CPU time of this process, all threads (llama.cpp's workers included)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class PhaseMeter:
    """CPU seconds spent in llama.cpp's prompt evaluation, decoding and sampling, per call.

    Wraps the loaded model's ``eval`` (the first evaluation of a call is its prompt, each later
    one a generated token, or a batch of them when the grammar forced some) and its ``sample``
    for the bench's lifetime only.
    """

    def __init__(self) -> None:
        self.prompt = self.decode = self.sample = 0.0
        self.evals = 0

    def reset(self) -> None:
        self.prompt = self.decode = self.sample = 0.0
        self.evals = 0

    @contextlib.contextmanager
    def installed(self, llama: Any) -> Iterator[None]:
        original_eval = llama.eval
        original_sample = llama.sample
        meter = self

        def eval_(tokens: Any) -> Any:
            started = cpu_seconds()
            try:
                return original_eval(tokens)
            finally:
                spent = cpu_seconds() - started
                if meter.evals == 0:
                    meter.prompt += spent
                else:
                    meter.decode += spent
                meter.evals += 1

        def sample(*args: Any, **kwargs: Any) -> Any:
            started = cpu_seconds()
            try:
                return original_sample(*args, **kwargs)
            finally:
                meter.sample += cpu_seconds() - started

        llama.eval, llama.sample = eval_, sample
        try:
            yield
        finally:
            del llama.eval, llama.sample  # the instance attributes; the class's methods show again


def progress_line(mode: str, index: int, total: int, call: CallFigures) -> str:
    """One line per call while the bench runs."""
    return (f"[kv {mode} {index}/{total}] {call.purpose:<13} prompt {call.prompt_tokens:>4} tok,"
            f" evaluated {call.evaluated:>4}, generated {call.generated:>3} | cpu {call.cpu_s:5.2f} s"
            f" (prompt {call.prompt_cpu_s:.2f}, decode {call.decode_cpu_s:.2f}, sample {call.sample_cpu_s:.2f})"
            f" | forced {call.forced}, redrawn {call.resampled}"
            f" | wall {call.wall_s:5.1f} s")


# ---------------------------------------------------------------------------------------------
# Summaries (pure)
# ---------------------------------------------------------------------------------------------


def _share(part: float, whole: float) -> float:
    return round(part / whole, 3) if whole else 0.0


def summarise(calls: list[CallFigures]) -> dict[str, Any]:
    """Per-call figures of one mode: CPU and wall per call, tokens, prefix reuse, phase shares."""
    if not calls:
        return {"calls": 0}
    cpu = [c.cpu_s for c in calls]
    sent = sum(c.prompt_tokens for c in calls)
    evaluated = sum(c.evaluated for c in calls)
    total_cpu = sum(cpu)
    return {
        "calls": len(calls),
        "cpu_s_per_call": round(statistics.fmean(cpu), 2),
        "cpu_s_p50": round(statistics.median(cpu), 2),
        "cpu_s_total": round(total_cpu, 1),
        "wall_s_per_call": round(statistics.fmean(c.wall_s for c in calls), 2),
        "prompt_tokens_per_call": round(sent / len(calls), 1),
        "evaluated_per_call": round(evaluated / len(calls), 1),
        "prefix_reuse": _share(sent - evaluated, sent),
        "generated_per_call": round(statistics.fmean(c.generated for c in calls), 1),
        "cpu_share_prompt": _share(sum(c.prompt_cpu_s for c in calls), total_cpu),
        "cpu_share_decode": _share(sum(c.decode_cpu_s for c in calls), total_cpu),
        "cpu_share_sample": _share(sum(c.sample_cpu_s for c in calls), total_cpu),
        "forced_share": _share(sum(c.forced for c in calls), sum(c.generated for c in calls)),
        "redrawn_share": _share(sum(c.resampled for c in calls), sum(c.sampled for c in calls)),
        "cpu_ms_per_evaluated_token": round(1000 * sum(c.prompt_cpu_s for c in calls) / evaluated, 1)
        if evaluated else 0.0,
        "cpu_ms_per_generated_token": round(
            1000 * sum(c.decode_cpu_s + c.sample_cpu_s for c in calls) / max(1, sum(c.generated for c in calls)), 1),
    }


def by_purpose(calls: list[CallFigures]) -> dict[str, str]:
    """'n calls, cpu s/call, prompt -> evaluated tokens, generated tokens' for each purpose."""
    out: dict[str, str] = {}
    for purpose in sorted({c.purpose for c in calls}):
        mine = [c for c in calls if c.purpose == purpose]
        n = len(mine)
        out[purpose] = (f"{n} calls, cpu {sum(c.cpu_s for c in mine) / n:.2f} s/call, prompt"
                        f" {sum(c.prompt_tokens for c in mine) // n} -> evaluated {sum(c.evaluated for c in mine) // n}"
                        f" tok, generated {sum(c.generated for c in mine) // n} tok")
    return out


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def prefix_reuse(prompts: list[list[int]]) -> tuple[int, int, int]:
    """(tokens sent, evaluated with the prefix cache off, evaluated with it on) for prompts in order.

    Off, llama-cpp-python keeps only what a prompt shares with the previous one; on, the
    stored state sharing the longest prefix is restored when it beats the live context
    (agents/llm/local.py). The cache is taken as large enough for every prompt (512 MiB holds
    ~20,000 SmolLM2 tokens of states); a prompt never skips its last token (it is decoded again
    to give logits).
    """
    sent = off = on = 0
    previous: list[int] = []
    stored: list[list[int]] = []
    for tokens in prompts:
        sent += len(tokens)
        off += len(tokens) - min(common_prefix(previous, tokens), len(tokens) - 1)
        best = max((common_prefix(state, tokens) for state in stored), default=0)
        on += len(tokens) - min(max(best, common_prefix(previous, tokens)), len(tokens) - 1)
        previous = tokens
        stored.append(tokens)
    return sent, off, on


def prompt_tokens(model: Any, messages: list[Any]) -> list[int]:
    """The tokens llama.cpp is given for ``messages`` (the GGUF's chat template, else completion-style)."""
    template = (getattr(model.llama, "metadata", None) or {}).get("tokenizer.chat_template")
    if model.chat and template:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        llama = model.llama
        eos = llama._model.token_get_text(llama.token_eos())
        bos = llama._model.token_get_text(llama.token_bos())
        text = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)(messages=messages).prompt
        return model.llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)
    return model.llama.tokenize(completion_prompt(messages).encode("utf-8"), add_bos=True, special=True)


def tokens_only(model: Any, requests: list[Any]) -> dict[str, Any]:
    """Prefix reuse of the recorded prompts, overall and per purpose, without generating."""
    prompts = [prompt_tokens(model, r.messages) for r in requests]
    sent, off, on = prefix_reuse(prompts)
    result: dict[str, Any] = {"prompt_tokens_per_call": round(sent / len(prompts), 1),
                              "kv_off_evaluated": off, "kv_on_evaluated": on, "prompt_tokens": sent,
                              "kv_off_prefix_reuse": _share(sent - off, sent),
                              "kv_on_prefix_reuse": _share(sent - on, sent)}
    per: dict[str, list[int]] = {}
    for index, (request, tokens) in enumerate(zip(requests, prompts)):
        # on: what this prompt evaluates given every earlier prompt
        best = max([common_prefix(p, tokens) for p in prompts[:index]] + [0])
        evaluated = len(tokens) - min(best, len(tokens) - 1)
        row = per.setdefault(request.purpose, [0, 0, 0])
        row[0] += 1
        row[1] += len(tokens)
        row[2] += evaluated
    result["by_purpose"] = {purpose: f"{n} calls, prompt {s // n} -> evaluated {e // n} tok (kv on)"
                            for purpose, (n, s, e) in sorted(per.items())}
    return result


def quickstart_estimate(cpu_s_per_call: float, calls: int, threads: int, parallel_efficiency: float = 0.8) -> float:
    """Seconds of model time for ``calls`` calls on an idle machine with ``threads`` cores.

    CPU seconds are what load changes least; on an idle machine llama.cpp's threads share
    one call's work, at about ``parallel_efficiency`` (measured: docs/MODELS.md).
    """
    return round(cpu_s_per_call * calls / max(1.0, threads * parallel_efficiency), 0)


# ---------------------------------------------------------------------------------------------
# The recorded town and the replay
# ---------------------------------------------------------------------------------------------


class _Recording:
    """A backend that hands every request to the scripted one and keeps a copy."""

    def __init__(self, inner: Any):
        self.inner, self.name, self.requests = inner, inner.name, []

    async def generate(self, request: Any) -> Any:
        self.requests.append(request)
        return await self.inner.generate(request)


def town_requests(args: argparse.Namespace) -> list[Any]:
    """The requests a short scripted generative run makes, in order."""
    try:
        duration, start = parse_duration(args.duration), parse_start(args.start)
    except ValueError as exc:
        raise SystemExit(f"townsfolk bench local: {exc}") from None
    with tempfile.TemporaryDirectory(prefix="townsfolk-bench-local-") as tmp:
        options = RunOptions(town="default", agents=args.agents, start=start, duration=duration, seed=args.seed,
                             mind="generative", model="scripted", out=Path(tmp) / "run")
        engine = build_engine(options)
        gateway = engine.context.llm
        recording = _Recording(gateway.backend)
        gateway.backend, gateway.cache = recording, None
        asyncio.run(engine.run(engine.context.until))
        engine.store.close()
    return recording.requests


def _replay(model: Any, requests: list[Any], grammar_for: Callable[[Any], str], generate: Callable[..., Any],
            meter: PhaseMeter, report: Callable[[int, CallFigures], None]) -> tuple[list[CallFigures], list[str]]:
    """Each request in order on ``model``: its figures and its answer."""
    import llama_cpp

    figures, answers = [], []
    for index, request in enumerate(requests, 1):
        grammar = grammar_for(request.schema)
        llama_cpp.llama_perf_context_reset(model.llama.ctx)
        meter.reset()
        wall, cpu = time.perf_counter(), cpu_seconds()
        text, prompt, generated = generate(model.spec.name, request.messages, grammar=grammar,
                                           temperature=request.temperature, max_tokens=request.max_tokens,
                                           seed=request.seed)
        call = CallFigures(
            purpose=request.purpose, prompt_tokens=prompt,
            evaluated=int(llama_cpp.llama_perf_context(model.llama.ctx).n_p_eval), generated=generated,
            wall_s=time.perf_counter() - wall, cpu_s=cpu_seconds() - cpu,
            prompt_cpu_s=meter.prompt, decode_cpu_s=meter.decode, sample_cpu_s=meter.sample,
            **sampler_counts(model.llama),
        )
        figures.append(call)
        answers.append(text)
        report(index, call)
    return figures, answers


def sampler_counts(llama: Any) -> dict[str, int]:
    """Tokens the last call's grammar-last sampler drew, redrew and forced (none: llama-cpp-python's own)."""
    sampler = getattr(llama, "_sampler", None)
    return {"sampled": int(getattr(sampler, "checked", 0)), "resampled": int(getattr(sampler, "resampled", 0)),
            "forced": int(getattr(sampler, "forced", 0))}


def _load_average() -> str:
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def run(args: argparse.Namespace) -> dict[str, Any]:
    name = args.model.split(":", 1)[1] if args.model.startswith("local:") else None
    if args.model != "local" and not name:
        raise SystemExit(f"townsfolk bench local: --model {args.model!r}: expected local or local:<name>")
    try:
        backend = LocalBackend(name)
        model = backend.load()
    except (ValueError, RuntimeError, OSError) as exc:
        raise SystemExit(f"townsfolk bench local: {exc}") from None
    recorded = town_requests(args)
    requests = recorded[: args.calls] if args.calls else recorded
    if not requests:
        raise SystemExit("townsfolk bench local: the recorded run made no model calls")
    quiet = getattr(args, "quiet", False)
    if not quiet:
        print(f"townsfolk bench local: {len(recorded)} requests recorded ({args.agents} residents,"
              f" {args.duration}); replaying {len(requests)} per mode on {backend.name}", file=sys.stderr, flush=True)
    if getattr(args, "tokens_only", False):
        return {"model": backend.name, "recorded_calls": len(recorded), "calls": len(requests),
                **tokens_only(model, requests)}
    generate_local(model.spec.name, requests[0].messages, grammar=None, temperature=0.0, max_tokens=4, seed=0)
    threads = default_threads()
    result: dict[str, Any] = {"model": backend.name, "recorded_calls": len(recorded), "calls": len(requests),
                              "threads": threads, "load_avg_start": _load_average()}
    answers = _replay_modes(model, requests, args.modes, quiet, result)
    result["load_avg_end"] = _load_average()
    if len(args.modes) == 2:
        off, on = result["kv_off_cpu_s_per_call"], result["kv_on_cpu_s_per_call"]
        result["kv_cpu_speedup"] = round(off / on, 2) if on else None
        result["same_answers"] = f"{sum(a == b for a, b in zip(answers['off'], answers['on']))}/{len(requests)}"
    last = args.modes[-1]
    result["estimate_model_s_for_recorded_run_idle"] = quickstart_estimate(
        result[f"kv_{last}_cpu_s_per_call"], len(recorded), threads)
    return result


def _replay_modes(model: Any, requests: list[Any], modes: tuple[str, ...], quiet: bool,
                  result: dict[str, Any]) -> dict[str, list[str]]:
    """Replay the requests once per prefix-cache mode, adding each mode's figures to ``result``
    (and the last mode's per-purpose figures); the answers per mode, to compare them."""
    answers: dict[str, list[str]] = {}
    meter = PhaseMeter()
    with meter.installed(model.llama):
        for mode in modes:
            set_prefix_cache(model, (prefix_cache_bytes() or DEFAULT_KV_CACHE_MB << 20) if mode == "on" else 0)

            def report(index: int, call: CallFigures, mode: str = mode) -> None:
                if not quiet:
                    print(progress_line(mode, index, len(requests), call), file=sys.stderr, flush=True)

            figures, answers[mode] = _replay(model, requests, grammar_for, generate_local, meter, report)
            for key, value in summarise(figures).items():
                if key != "calls":
                    result[f"kv_{mode}_{key}"] = value
            if mode == modes[-1]:
                result["by_purpose"] = by_purpose(figures)
    set_prefix_cache(model, prefix_cache_bytes())
    return answers
