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
import random
import time

import numpy as np

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


def run(args: argparse.Namespace) -> dict:
    sizes = parse_sizes(args.sizes)
    rng = np.random.default_rng(args.seed)
    prng = random.Random(args.seed)
    dim = 384
    biggest = max(sizes + [args.loop_size])
    if args.embeddings == "sentences":
        from memory.embeddings import get_embedder

        texts = sentences(biggest, prng)
        pool = get_embedder("minilm").encode(texts)
        queries_pool = get_embedder("minilm").encode(sentences(args.queries, prng))
    else:
        pool, centres = clustered(biggest, dim, rng)
        picks = rng.integers(0, biggest, args.queries)
        queries_pool = pool[picks] + 0.9 * rng.normal(size=(args.queries, dim)).astype(np.float32) / np.sqrt(dim)
        queries_pool /= np.linalg.norm(queries_pool, axis=1, keepdims=True)
    importance = rng.choice(np.arange(1, 11), size=biggest, p=_IMPORTANCE_P / _IMPORTANCE_P.sum())
    config = RetrievalConfig()
    out: dict = {"k": args.k, "queries": args.queries, "embeddings": args.embeddings,
                 "weights": [config.w_recency, config.w_importance, config.w_relevance], "decay": config.decay,
                 "index": f"flat below {config.hnsw_threshold}, else {config.ann} (nprobe {config.nprobe} / HNSW M {config.hnsw_m} efSearch {config.ef_search}); candidates {config.candidates} + {config.prior_candidates}",
                 "sizes": {}}
    for n in sorted(set(sizes) | {args.loop_size}):
        hours = np.sort(rng.uniform(0, n / args.per_day * 24.0, n))
        now = float(hours[-1]) + 1.0
        index = RetrievalIndex(dim, config)
        built = time.perf_counter()
        index.add(np.arange(n), pool[:n], importance[:n], hours)
        built = time.perf_counter() - built
        # each path in its own pass: BLAS threads left spinning by a full scan would
        # otherwise slow down the FAISS query that follows it
        # CPU time too: on a shared machine wall time counts other people's work, and a long
        # scan is pre-empted far more often than a short query; CPU time is what each path costs
        fast_t, scan_t, fast_c, scan_c, fast_ids = [], [], [], [], []
        for q in queries_pool:
            t, c = time.perf_counter(), time.process_time()
            fast = index.search(q, now, args.k)
            fast_c.append(time.process_time() - c)
            fast_t.append(time.perf_counter() - t)
            fast_ids.append({h.memory_id for h in fast})
        recalls = []
        for q, got in zip(queries_pool, fast_ids):
            t, c = time.perf_counter(), time.process_time()
            exact = index.full_scan(q, now, args.k)
            scan_c.append(time.process_time() - c)
            scan_t.append(time.perf_counter() - t)
            recalls.append(len(got & {h.memory_id for h in exact}) / len(exact))
        f50, f99 = _pcts(fast_t)
        s50, s99 = _pcts(scan_t)
        fc50, _ = _pcts(fast_c)
        sc50, _ = _pcts(scan_c)
        row = {
            "faiss_p50_ms": round(f50, 3), "faiss_p99_ms": round(f99, 3),
            "numpy_p50_ms": round(s50, 3), "numpy_p99_ms": round(s99, 3),
            "speedup": round(s50 / f50, 2), "recall": round(float(np.mean(recalls)), 4),
            "faiss_cpu_p50_ms": round(fc50, 3), "numpy_cpu_p50_ms": round(sc50, 3),
            "speedup_cpu": round(sc50 / fc50, 2) if fc50 > 0 else None,
            "build_s": round(built, 2),
        }
        if n == args.loop_size:
            loop_t = []
            for q in queries_pool[:5]:
                t = time.perf_counter()
                index.loop_scan(q, now, args.k)
                loop_t.append(time.perf_counter() - t)
            l50, _ = _pcts(loop_t)
            row["python_loop_p50_ms"] = round(l50, 1)
            row["loop_vs_faiss"] = round(l50 / f50, 1)
        if n in sizes:
            out["sizes"][str(n)] = row
        else:
            out["loop"] = {str(n): row}
    return out
