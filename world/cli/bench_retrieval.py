"""`townsfolk bench retrieval [--sizes 1000,10000,100000]`: the FAISS retrieval path against a
vectorised numpy full scan (same formula, same run), and the original's Python loop at 10k.

Memories look like real ones: embeddings are clustered (topics, each a Gaussian cloud around
a centre, with intra-topic cosines like sentence embeddings'), or, with
``--embeddings sentences``, MiniLM embeddings of generated memory sentences. Importance is
skewed towards the mundane, and times spread over the days a busy resident would need to
write that many memories. Reported per size: p50/p99 latency of each path, speedup
(numpy p50 / FAISS p50), the same from CPU time (steadier on a shared machine) and recall@k of
the FAISS path against the exact full scan.
"""

from __future__ import annotations

import argparse
import os
import random
import time

import numpy as np

from memory.embeddings import get_embedder
from memory.retrieval import RetrievalConfig, RetrievalIndex

_IMPORTANCE_P = np.array([25, 20, 15, 12, 9, 7, 5, 3, 2, 2], dtype=float)
_SUBJECTS = ["Maria", "Tom", "Lucy", "Hannah", "George", "Arthur", "Priya", "Ben", "the stove", "the bed",
             "the cafe", "the library", "the bank", "the clinic", "the pub"]
_VERBS = ["is cooking", "is talking about", "is worried about", "is planning", "is reading about", "is laughing at",
          "is cleaning", "is arguing about", "is writing about", "is thinking of"]
_OBJECTS = ["breakfast", "the election", "a party", "the harvest", "a loan", "exams", "a new recipe", "the weather",
            "a broken window", "the river", "a secret", "the mayor", "a patient", "taxes", "a painting"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", default="1000,10000,100000", help="memory counts, comma-separated")
    parser.add_argument("--queries", type=int, default=200, help="queries per size (default 200)")
    parser.add_argument("--k", type=int, default=30, help="memories retrieved per query (default 30)")
    parser.add_argument("--loop-size", type=int, default=10000, help="size at which the Python loop is timed")
    parser.add_argument("--embeddings", choices=["clustered", "sentences"], default="clustered")
    parser.add_argument("--per-day", type=int, default=200, help="memories a resident writes per game day")
    parser.add_argument("--seed", type=int, default=0)


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise SystemExit(f"--sizes {text!r}: expected comma-separated integers, e.g. 1000,10000") from None
    if not sizes or any(s < 1 for s in sizes):
        raise SystemExit(f"--sizes {text!r}: every size must be a positive integer")
    return sizes


def clustered(n: int, dim: int, rng: np.random.Generator, topics: int = 512) -> tuple[np.ndarray, np.ndarray]:
    """Topic clouds: pairwise cosine ~0.5-0.7 inside a topic, ~0 across, like sentence embeddings."""
    centres = rng.normal(size=(topics, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    sizes = rng.zipf(1.6, size=topics).astype(float)  # a few topics dominate, as in a life
    topic = rng.choice(topics, size=n, p=sizes / sizes.sum())
    vecs = centres[topic] + 0.9 * rng.normal(size=(n, dim)).astype(np.float32) / np.sqrt(dim)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs.astype(np.float32), centres


def sentences(n: int, rng: random.Random) -> list[str]:
    return [f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} ({rng.randrange(50)})"
            for _ in range(n)]


def _pcts(samples: list[float]) -> tuple[float, float]:
    arr = np.array(samples) * 1000.0
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 99))


def memory_pool(args: argparse.Namespace, n: int, dim: int, rng: np.random.Generator,
                prng: random.Random) -> tuple[np.ndarray, np.ndarray]:
    """``n`` memory embeddings and the queries, both unit rows: clustered, or MiniLM sentences."""
    if args.embeddings == "sentences":
        embedder = get_embedder("minilm")
        return embedder.encode(sentences(n, prng)), embedder.encode(sentences(args.queries, prng))
    pool, _centres = clustered(n, dim, rng)
    picks = rng.integers(0, n, args.queries)
    queries = pool[picks] + 0.9 * rng.normal(size=(args.queries, dim)).astype(np.float32) / np.sqrt(dim)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    return pool, queries


def _timed(fn, queries: np.ndarray) -> tuple[list, list[float], list[float]]:
    """fn(q) for every query, with its wall and CPU seconds. Each path is timed in its own pass:
    BLAS threads left spinning by a full scan would otherwise slow down the query after it, and
    CPU time is what each path costs on a shared machine (wall time counts other people's work)."""
    results, wall, cpu = [], [], []
    for q in queries:
        t, c = time.perf_counter(), time.process_time()
        results.append(fn(q))
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - t)
    return results, wall, cpu


def measure_size(n: int, pool: np.ndarray, queries: np.ndarray, importance: np.ndarray, config: RetrievalConfig,
                 args: argparse.Namespace, rng: np.random.Generator) -> dict:
    """One size: build the index, time the index path and the full scan, and the recall@k."""
    hours = np.sort(rng.uniform(0, n / args.per_day * 24.0, n))
    now = float(hours[-1]) + 1.0
    index = RetrievalIndex(pool.shape[1], config)
    built, built_cpu = time.perf_counter(), time.process_time()
    index.add(np.arange(n), pool[:n], importance[:n], hours)
    built, built_cpu = time.perf_counter() - built, time.process_time() - built_cpu
    fast, fast_t, fast_c = _timed(lambda q: {h.memory_id for h in index.search(q, now, args.k)}, queries)
    exact, scan_t, scan_c = _timed(lambda q: {h.memory_id for h in index.full_scan(q, now, args.k)}, queries)
    recall = float(np.mean([len(got & want) / len(want) for got, want in zip(fast, exact)]))
    f50, f99 = _pcts(fast_t)
    s50, s99 = _pcts(scan_t)
    fc50, _ = _pcts(fast_c)
    sc50, _ = _pcts(scan_c)
    row = {
        "faiss_p50_ms": round(f50, 3), "faiss_p99_ms": round(f99, 3),
        "numpy_p50_ms": round(s50, 3), "numpy_p99_ms": round(s99, 3),
        "speedup": round(s50 / f50, 2), "recall": round(recall, 4),
        "faiss_cpu_p50_ms": round(fc50, 3), "numpy_cpu_p50_ms": round(sc50, 3),
        "speedup_cpu": round(sc50 / fc50, 2) if fc50 > 0 else None,
        "build_s": round(built, 2), "build_cpu_s": round(built_cpu, 2),
    }
    if n == args.loop_size:
        _, loop_t, _ = _timed(lambda q: index.loop_scan(q, now, args.k), queries[:5])
        l50, _ = _pcts(loop_t)
        row["python_loop_p50_ms"] = round(l50, 1)
        row["loop_vs_faiss"] = round(l50 / f50, 1)
    return row


def describe(config: RetrievalConfig, args: argparse.Namespace) -> dict:
    return {"k": args.k, "queries": args.queries, "embeddings": args.embeddings,
            "weights": [config.w_recency, config.w_importance, config.w_relevance], "decay": config.decay,
            "index": f"flat below {config.hnsw_threshold}, else {config.ann} (nprobe {config.nprobe}, floor lists "
                     f"{config.floor_lists} / HNSW M "
                     f"{config.hnsw_m} efSearch {config.ef_search}); candidates {config.candidates} + "
                     f"{config.prior_candidates}",
            "sizes": {}}


def run(args: argparse.Namespace) -> dict:
    sizes = parse_sizes(args.sizes)
    rng = np.random.default_rng(args.seed)
    prng = random.Random(args.seed)
    biggest = max(sizes + [args.loop_size])
    pool, queries = memory_pool(args, biggest, 384, rng, prng)
    importance = rng.choice(np.arange(1, 11), size=biggest, p=_IMPORTANCE_P / _IMPORTANCE_P.sum())
    config = RetrievalConfig()
    out = describe(config, args)
    for n in sorted(set(sizes) | {args.loop_size}):
        row = measure_size(n, pool, queries, importance, config, args, rng)
        if n in sizes:
            out["sizes"][str(n)] = row
        else:
            out["loop"] = {str(n): row}
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return out
