"""Scoring and ranking memories: recency + importance + relevance (Park et al. 2023).

score = w_rec * recency + w_imp * importance + w_rel * relevance, each term min-max
normalised to [0, 1] over *all* of a resident's memories; recency is decay ** (game hours
since last access); relevance is the cosine of normalised embeddings.

Three ways to find the top k, all with exactly that formula:

- :meth:`RetrievalIndex.search` — the one the town uses. Up to ``scan_below`` memories (a
  resident's first weeks) it scores every memory, exactly: faster there than any index. Past
  that, candidates are the index's nearest
  memories by relevance (faiss: exact flat index for small streams, IVF-Flat — or HNSW with
  ``ann="hnsw"`` — past ``hnsw_threshold``) plus the memories with the best query-independent part
  (recency + importance, read off per-importance lists kept in last-access order, so the
  "most recent and most important few" come out merged by their combined score). Scoring
  the candidates gives a k-th best score; no memory outside the candidates can beat
  ``w_rel * rel(C-th neighbour) + prior(F+1-th)``; with ``max_rounds > 1``, C and F double
  until the k-th best reaches that bound (exact up to the index's own recall). The default
  is one round: recall@30 >= 0.95 against the full scan at 100k (see docs/BENCHMARKS.md).
  Min-max normalisation needs the lowest relevance over *all* memories: exact up to
  :data:`EXACT_FLOOR` memories; past it, under IVF, the best match for -q in the lists least
  like the query (found with the same centroid product that picks the lists to probe), else
  the minimum over a fixed sample.
- :meth:`RetrievalIndex.full_scan` — vectorised numpy over every memory (the baseline).
- :meth:`RetrievalIndex.loop_scan` — one memory at a time in Python, as the original did.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    import faiss


@cache
def _faiss() -> ModuleType:
    """faiss, imported when the first index is made: its ~50-150 ms are no part of the start-up of
    a command that retrieves nothing (every CLI command imports this module).

    One query at a time: faiss's OpenMP threads only add start-up cost and, spinning after a
    call, slow down numpy next to them. (Bulk index builds are still fast single-threaded.)"""
    import faiss

    faiss.omp_set_num_threads(1)
    return faiss


class RetrievalConfig(BaseModel):
    """Weights and decay of the score, and the candidate budget of the index path.

    Defaults are the paper's (all weights 1, recency decay 0.995 per game hour since last
    access); the released code's set is :meth:`released_code`. ``top_k`` 30 is the released
    code's retrieval count.
    """

    model_config = ConfigDict(extra="forbid")

    w_recency: float = Field(default=1.0, ge=0.0)
    w_importance: float = Field(default=1.0, ge=0.0)
    w_relevance: float = Field(default=1.0, ge=0.0)
    decay: float = Field(default=0.995, gt=0.0, le=1.0, description="per game hour")
    top_k: int = Field(default=30, ge=1)
    candidates: int = Field(default=96, ge=1, description="neighbours by relevance")
    prior_candidates: int = Field(default=384, ge=1, description="best by recency+importance")
    ann: Literal["ivf", "hnsw"] = Field(default="ivf", description="approximate index past the threshold")
    hnsw_threshold: int = Field(default=4096, ge=1, description="switch flat -> approximate index above")
    nprobe: int = Field(default=6, ge=1, description="IVF lists searched per query")
    floor_lists: int = Field(default=4, ge=1, description="IVF lists least like the query, searched for its lowest relevance")
    hnsw_m: int = Field(default=32, ge=4)
    ef_construction: int = Field(default=80, ge=8)
    ef_search: int = Field(default=96, ge=8)
    max_rounds: int = Field(default=1, ge=1, description=">1: double the candidates until the bound certifies the top k")
    scan_below: int = Field(default=4096, ge=0, description="up to this many memories, score every one (exact, and faster than the index)")

    @classmethod
    def released_code(cls) -> "RetrievalConfig":
        """The weights of the authors' released code (recency 0.5, relevance 3, importance 2)."""
        return cls(w_recency=0.5, w_relevance=3.0, w_importance=2.0)


@dataclass(slots=True)
class Hit:
    memory_id: int
    score: float
    recency: float
    importance: float
    relevance: float


def _norm(value: float, low: float, high: float) -> float:
    return (value - low) / (high - low) if high > low else 0.0


class RetrievalIndex:
    """One resident's memories as vectors plus importance and last-access time.

    Times are game hours (float) on any fixed origin. Positions are dense; ``memory_id`` is
    the store's id. Not thread-safe: one mind owns one index.
    """

    def __init__(self, dim: int, config: RetrievalConfig | None = None):
        self.dim = dim
        self.config = config or RetrievalConfig()
        self._cap = 0
        self._n = 0
        self._emb = np.zeros((0, dim), dtype=np.float32)
        self._imp = np.zeros(0, dtype=np.float32)
        self._last = np.zeros(0, dtype=np.float64)
        self._ids = np.zeros(0, dtype=np.int64)
        self._pos: dict[int, int] = {}
        # importance level -> positions in ascending last-access order
        self._levels: dict[int, OrderedDict[int, None]] = {}
        self._level_arrays: dict[int, np.ndarray] = {}  # cache of each level's order, as arrays
        self._index: faiss.Index = _faiss().IndexFlatIP(dim)
        self._hnsw = False  # an approximate index (IVF or HNSW) is in use
        self._built_at = 0
        self._version = 0  # bumped by every write: keys the cached query-independent part
        self._prior_cache: tuple | None = None  # (now, version, f) -> best prior positions, bound, ranges
        self._ranges_cache: tuple | None = None  # (now, version) -> recency and importance ranges
        self._scan_cache: tuple | None = None  # ((now, version), recency, importance, partial score of every memory)

    # -- building ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._n

    def __contains__(self, memory_id: int) -> bool:
        return memory_id in self._pos

    def _grow(self, extra: int) -> None:
        need = self._n + extra
        if need <= self._cap:
            return
        cap = max(need, self._cap * 2, 64)
        for name in ("_emb", "_imp", "_last", "_ids"):
            old = getattr(self, name)
            new = np.zeros((cap,) + old.shape[1:], dtype=old.dtype)
            new[: self._n] = old[: self._n]
            setattr(self, name, new)
        self._cap = cap

    def add(self, memory_ids, vectors, importance, last_access) -> None:
        """Add memories (vectors L2-normalised). Keeps per-level recency order."""
        ids = np.atleast_1d(np.asarray(memory_ids, dtype=np.int64))
        vecs = np.asarray(vectors, dtype=np.float32).reshape(len(ids), self.dim)
        imps = np.atleast_1d(np.asarray(importance, dtype=np.float32))
        lasts = np.atleast_1d(np.asarray(last_access, dtype=np.float64))
        if not (len(ids) == len(imps) == len(lasts)):
            raise ValueError("add: ids, importance and last_access must have the same length")
        for memory_id in ids.tolist():
            if memory_id in self._pos:
                raise ValueError(f"memory {memory_id} is already indexed")
        self._grow(len(ids))
        start = self._n
        stop = start + len(ids)
        self._emb[start:stop] = vecs
        self._imp[start:stop] = imps
        self._last[start:stop] = lasts
        self._ids[start:stop] = ids
        self._n = stop
        for offset, memory_id in enumerate(ids.tolist()):
            self._pos[memory_id] = start + offset
        self._version += 1
        order = np.argsort(lasts, kind="stable")
        for offset in order.tolist():
            self._place_in_level(start + offset)
        if self._n > self.config.hnsw_threshold and (not self._hnsw or self._n > 4 * self._built_at):
            self._to_ann()  # first time past the threshold, or grown 4x since the IVF was trained
        else:
            self._index.add(vecs)

    def _place_in_level(self, pos: int) -> None:
        key = int(round(float(self._imp[pos])))
        self._level_arrays.pop(key, None)
        level = self._levels.setdefault(key, OrderedDict())
        last = self._last[pos]
        if level and self._last[next(reversed(level))] > last:
            # out-of-order time (a bulk load of old memories): re-sort this level once
            level[pos] = None
            ordered = sorted(level, key=lambda p: self._last[p])
            level.clear()
            level.update((p, None) for p in ordered)
        else:
            level[pos] = None
            level.move_to_end(pos)

    def _to_ann(self) -> None:
        cfg = self.config
        data = self._emb[: self._n]
        faiss = _faiss()
        if cfg.ann == "hnsw":
            if self._hnsw:
                return  # HNSW grows in place
            index = faiss.IndexHNSWFlat(self.dim, cfg.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = cfg.ef_construction
        else:
            nlist = int(min(4096, max(64, 4 * math.sqrt(self._n))))
            quantizer = faiss.IndexFlatIP(self.dim)
            index = faiss.IndexIVFFlat(quantizer, self.dim, nlist, faiss.METRIC_INNER_PRODUCT)
            sample = data if self._n <= nlist * 50 else data[np.random.default_rng(self._n).choice(self._n, nlist * 50, replace=False)]
            index.train(sample)
            self._quantizer = quantizer  # the IVF index does not own its quantizer: keep it alive
            self._centroids = np.ascontiguousarray(quantizer.reconstruct_n(0, nlist), dtype=np.float32)
        index.add(data)
        self._index = index
        self._hnsw = True
        self._built_at = self._n

    def touch(self, memory_ids, now: float) -> None:
        """Refresh last access (retrieval does this for what it returns).

        A level stays ordered by (last access, position), whatever order the touches came
        in: the order a rebuild from the stored rows gives, so a resumed run retrieves
        exactly what the uninterrupted one did.
        """
        touched: set[int] = set()
        self._version += 1
        for memory_id in memory_ids:
            pos = self._pos.get(int(memory_id))
            if pos is None or now < self._last[pos]:
                continue
            self._last[pos] = now
            key = int(round(float(self._imp[pos])))
            self._levels[key].move_to_end(pos)
            touched.add(key)
        for key in touched:
            self._level_arrays.pop(key, None)
            level = self._levels[key]
            tail = self._last[next(reversed(level))]
            ties = []
            while level and self._last[next(reversed(level))] == tail:
                ties.append(level.popitem()[0])
            level.update((p, None) for p in sorted(ties))

    def set_last_access(self, memory_id: int, when: float) -> None:
        self._version += 1
        pos = self._pos[memory_id]
        self._last[pos] = when
        level = self._levels[int(round(float(self._imp[pos])))]
        level.pop(pos, None)
        self._place_in_level(pos)

    # -- global normalisation -----------------------------------------------------------------

    def _cached_ranges(self, now: float) -> tuple[float, float, float, float]:
        """:meth:`_ranges`, computed once per (time, state): every query until the next write or
        touch shares it."""
        key = (now, self._version)
        if self._ranges_cache is None or self._ranges_cache[0] != key:
            self._ranges_cache = (key, self._ranges(now))
        return self._ranges_cache[1]

    def _ranges(self, now: float) -> tuple[float, float, float, float]:
        decay = self.config.decay
        heads = [next(iter(level)) for level in self._levels.values() if level]
        tails = [next(reversed(level)) for level in self._levels.values() if level]
        oldest = min(self._last[p] for p in heads)
        newest = max(self._last[p] for p in tails)
        levels = [k for k, level in self._levels.items() if level]
        return (
            decay ** (now - oldest),
            decay ** (now - newest),
            float(min(levels)),
            float(max(levels)),
        )

    def _search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, float | None]:
        """The k nearest memories by relevance (inner products, best first), and the lowest
        relevance over all memories where the search found it on the way (else None)."""
        if self._hnsw and self.config.ann == "ivf":
            return self._ivf_search(query, k)
        if self._hnsw:
            self._index.hnsw.efSearch = max(self.config.ef_search, k)
        scores, positions = self._index.search(query.reshape(1, -1), min(k, self._n))
        keep = positions[0] >= 0
        return scores[0][keep], positions[0][keep], None

    def _ivf_search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, float | None]:
        """IVF search with the coarse step done here: one product with the centroids picks the
        ``nprobe`` lists most like the query (for its neighbours) and the ``floor_lists`` least
        like it, whose best match for -q is the lowest relevance. That floor is far closer to the
        true minimum than a random sample's (recall@30 at 100k: 0.957 against 0.951 with a
        1,024-memory sample and 10 probes), which is what lets 6 probes do the work of 10."""
        cfg = self.config
        cent = self._centroids
        nlist = len(cent)
        probe, low = min(cfg.nprobe, nlist), min(cfg.floor_lists, nlist)
        cs = _dot_rows(cent, q)
        part = np.argpartition(cs, sorted({low - 1, nlist - probe}))
        top, bottom = part[nlist - probe:].reshape(1, -1), part[:low].reshape(1, -1)
        q1 = q.reshape(1, -1)
        index = self._index
        index.nprobe = probe
        scores, positions = index.search_preassigned(q1, min(k, self._n), top, cs[top])
        index.nprobe = low
        worst, found = index.search_preassigned(-q1, 1, bottom, -cs[bottom])
        floor = -float(worst[0][0]) if found[0][0] >= 0 else None
        keep = positions[0] >= 0
        return scores[0][keep], positions[0][keep], floor

    # -- the index path -------------------------------------------------------------------------

    def search(self, query: np.ndarray, now: float, k: int | None = None) -> list[Hit]:
        """Top k by the full formula, from index candidates plus the recent/important few."""
        n = self._n
        if n == 0:
            return []
        cfg = self.config
        k = min(k or cfg.top_k, n)
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        if n <= cfg.scan_below:
            return self._small_scan(q, now, k)
        ranges = self._cached_ranges(now)
        c = max(cfg.candidates, 2 * k)
        f = max(cfg.prior_candidates, k)
        for _round in range(cfg.max_rounds):
            rel, positions, floor = self._search(q, c)
            rel_lo = floor if floor is not None else self._relevance_floor(q)
            prior = self._cached_prior(f, now, *ranges)
            hits, rel_lo = self._score(positions, rel, prior, q, now, (*ranges, rel_lo, float(rel[0])), k)
            if len(positions) >= n or len(hits) < k:
                break
            rel_c = cfg.w_relevance * _norm(float(rel[-1]), rel_lo, float(rel[0]))
            if hits[-1].score >= rel_c + prior.bound - 1e-9:
                break
            c *= 2
            f *= 2
        return hits

    def _small_scan(self, q: np.ndarray, now: float, k: int) -> list[Hit]:
        """:meth:`full_scan` for a stream small enough that scoring everyone beats any index (a
        resident's first weeks): exact, with the query-independent part computed once per (time,
        state) and the product on faiss's single-threaded kernel (at 1,000 memories 0.05 ms
        against 0.16 ms through the index and the pool)."""
        n, cfg = self._n, self.config
        key = (now, self._version)
        if self._scan_cache is None or self._scan_cache[0] != key:
            self._scan_cache = (key, *self._whole_part(now))
        _, rec, imp, part = self._scan_cache
        rel = _dot_rows(self._emb[:n], q).astype(np.float64)
        score = part + cfg.w_relevance * _norm_vec(rel, rel.min(), rel.max())
        order = _top_order(score, k)
        return [Hit(i, s, r, m, v) for i, s, r, m, v in zip(self._ids[order].tolist(), score[order].tolist(),
                                                            rec[order].tolist(), imp[order].tolist(), rel[order].tolist())]

    def _whole_part(self, now: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every memory's recency, importance and weighted partial score, normalised over all of
        them (the scans' query-independent part)."""
        n, cfg = self._n, self.config
        rec = cfg.decay ** (now - self._last[:n])
        imp = self._imp[:n].astype(np.float64)
        return rec, imp, _weighted(cfg, rec, imp, rec.min(), rec.max(), imp.min(), imp.max())

    def _relevance_floor(self, q: np.ndarray) -> float:
        """The lowest relevance over all memories (the min of min-max normalisation), where the
        index search did not find it: exact for small streams; past that, the minimum over a
        fixed sample of 1024 memories (the HNSW index and flat indexes up to the threshold)."""
        n = self._n
        if n <= EXACT_FLOOR:
            return float(_dot_rows(self._emb[:n], q).min())
        cached = getattr(self, "_floor", None)
        if cached is None or n > 2 * cached[0]:
            picks = np.random.default_rng(n).choice(n, 1024, replace=False)
            cached = self._floor = (n, np.ascontiguousarray(self._emb[picks]))
        return float(_dot_rows(cached[1], q).min())

    def _cached_prior(self, f: int, now: float, *ranges: float) -> "_Prior":
        """:meth:`_best_prior` with its rows and partial score, computed once per (time, state):
        the queries of one retrieval (and every query until the next write or touch) share it,
        and score it with one product over contiguous rows."""
        key = (now, self._version, f, ranges)
        if self._prior_cache is None or self._prior_cache[0] != key:
            positions, part, bound = self._best_prior(f, now, *ranges)
            member = np.zeros(self._n, dtype=bool)
            member[positions] = True
            prior = _Prior(positions, bound, np.ascontiguousarray(self._emb[positions]), part, member)
            self._prior_cache = (key, prior)
        return self._prior_cache[1]

    def _partial(self, positions: np.ndarray, now: float, rec_lo, rec_hi, imp_lo, imp_hi) -> np.ndarray:
        """The weighted normalised recency + importance of ``positions`` (the query-independent score)."""
        cfg = self.config
        rec = cfg.decay ** (now - self._last[positions])
        return _weighted(cfg, rec, self._imp[positions].astype(np.float64), rec_lo, rec_hi, imp_lo, imp_hi)

    def _best_prior(self, f: int, now, *ranges: float) -> tuple[np.ndarray, np.ndarray, float]:
        """The f positions with the best recency+importance, their partial scores, and a bound on
        everyone else's.

        Within one importance level the order by last access is the order by prior, so the
        best f overall are among each level's f+1 most recent; anything outside that pool is
        bounded by its level's (f+1)-th, which is in the pool but not chosen.
        """
        parts = []
        for key, order in sorted(self._levels.items()):  # one order, however the levels came about
            arr = self._level_arrays.get(key)
            if arr is None:
                arr = self._level_arrays[key] = np.fromiter(order, dtype=np.int64, count=len(order))
            parts.append(arr[-(f + 1):])
        positions = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        prior = self._partial(positions, now, *ranges)
        if len(positions) <= f:
            return positions, prior, -math.inf
        part = np.argpartition(-prior, f - 1)
        return positions[part[:f]], prior[part[:f]], float(prior[part[f:]].max())

    def _score(self, near: np.ndarray, near_rel: np.ndarray, prior: "_Prior", q: np.ndarray, now: float,
               ranges, k: int) -> tuple[list[Hit], float]:
        """Score the index's neighbours (relevance as the index computed it: exact inner products)
        and the prior pool (one product over its cached rows); a neighbour already in the pool is
        scored once, from the pool. Returns the hits and the relevance floor used: past
        :data:`EXACT_FLOOR` memories the floor is an estimate from above, and any candidate's own
        relevance lower than it is a better one."""
        cfg = self.config
        rec_lo, rec_hi, imp_lo, imp_hi, rel_lo, rel_hi = ranges
        fresh = ~prior.member[near]
        near = near[fresh]
        part_a = self._partial(near, now, rec_lo, rec_hi, imp_lo, imp_hi)
        positions = np.concatenate([near, prior.positions])
        rel = np.concatenate([near_rel[fresh], _dot_rows(prior.rows, q)]).astype(np.float64)
        if self._n > EXACT_FLOOR and len(rel):
            rel_lo = min(rel_lo, float(rel.min()))
        score = np.concatenate([part_a, prior.part]) + cfg.w_relevance * _norm_vec(rel, rel_lo, rel_hi)
        order = _top_order(score, min(len(score), k), positions)
        chosen = positions[order]
        rec = cfg.decay ** (now - self._last[chosen])
        imp = self._imp[chosen].astype(np.float64)
        hits = [Hit(i, s, r, m, v) for i, s, r, m, v in zip(self._ids[chosen].tolist(), score[order].tolist(),
                                                             rec.tolist(), imp.tolist(), rel[order].tolist())]
        return hits, rel_lo

    # -- baselines ------------------------------------------------------------------------------

    def full_scan(self, query: np.ndarray, now: float, k: int | None = None) -> list[Hit]:
        """Score every memory with the formula, vectorised; exact."""
        n = self._n
        if n == 0:
            return []
        cfg = self.config
        k = min(k or cfg.top_k, n)
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        rel = (self._emb[:n] @ q).astype(np.float64)
        rec, imp, part = self._whole_part(now)
        score = part + cfg.w_relevance * _norm_vec(rel, rel.min(), rel.max())
        order = _top_order(score, k)
        return [
            Hit(int(self._ids[i]), float(score[i]), float(rec[i]), float(imp[i]), float(rel[i]))
            for i in order
        ]

    def loop_scan(self, query: np.ndarray, now: float, k: int | None = None) -> list[Hit]:
        """The original's way: a Python loop scoring one memory at a time (two passes)."""
        n = self._n
        if n == 0:
            return []
        cfg = self.config
        k = min(k or cfg.top_k, n)
        q = [float(x) for x in np.asarray(query).reshape(-1)]
        raw = []
        for i in range(n):
            vec = self._emb[i]
            dot = sum(a * float(b) for a, b in zip(q, vec))
            raw.append((cfg.decay ** (now - float(self._last[i])), float(self._imp[i]), dot))
        lo = [min(r[j] for r in raw) for j in range(3)]
        hi = [max(r[j] for r in raw) for j in range(3)]
        weights = (cfg.w_recency, cfg.w_importance, cfg.w_relevance)
        scored = []
        for i, r in enumerate(raw):
            s = sum(w * _norm(v, a, b) for w, v, a, b in zip(weights, r, lo, hi))
            scored.append((s, i))
        scored.sort(key=lambda t: (-round(t[0] / TIE), t[1]))  # ties as _top_order breaks them
        return [
            Hit(int(self._ids[i]), s, raw[i][0], raw[i][1], raw[i][2]) for s, i in scored[:k]
        ]


@dataclass
class _Prior:
    """The memories with the best recency+importance at one time, ready to score against a query."""

    positions: np.ndarray
    bound: float  # the best recency+importance of any memory outside the pool
    rows: np.ndarray  # their embeddings, contiguous
    part: np.ndarray  # weighted, normalised recency + importance
    member: np.ndarray  # position -> in the pool (bool over every position)


def _dot_rows(rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """rows @ q (both float32, C-contiguous) with faiss's single-threaded SIMD kernel, the one its
    flat index uses: for a few hundred rows BLAS's thread start-up costs more than the product,
    and on a busy machine far more (the full scan keeps BLAS, as numpy users would); numpy's
    einsum does not vectorise it (23 us against 11 us for 384 x 384)."""
    out = np.empty(len(rows), dtype=np.float32)
    rows, q = np.ascontiguousarray(rows, dtype=np.float32), np.ascontiguousarray(q, dtype=np.float32)
    if len(rows):
        faiss = _faiss()
        faiss.fvec_inner_products_ny(faiss.swig_ptr(out), faiss.swig_ptr(q), faiss.swig_ptr(rows), rows.shape[1], len(rows))
    return out


def _weighted(cfg: RetrievalConfig, rec: np.ndarray, imp: np.ndarray, rec_lo, rec_hi, imp_lo, imp_hi) -> np.ndarray:
    """w_rec * normalised recency + w_imp * normalised importance: the query-independent score."""
    return cfg.w_recency * _norm_vec(rec, rec_lo, rec_hi) + cfg.w_importance * _norm_vec(imp, imp_lo, imp_hi)


def _norm_vec(values: np.ndarray, low: float, high: float) -> np.ndarray:
    if high > low:
        return (values - low) / (high - low)
    return np.zeros_like(values)


EXACT_FLOOR = 2048  # up to this many memories the relevance floor is the exact minimum
TIE = 1e-6  # scores closer than this are equal: float32 inner products differ by ~1e-7 between paths


def _top_order(score: np.ndarray, k: int, positions: np.ndarray | None = None) -> np.ndarray:
    """Indices of the k best scores, best first; ties (within :data:`TIE`) by memory position.

    Why the tolerance: the index path's relevance (faiss) and the scans' (numpy) round
    differently, so two memories that tie exactly under the formula (two residents "getting
    ready for work" at the same time and importance) came out in float-noise order, and in a
    different order on each path. Which one is retrieved is touched and stays recent, so that
    noise steered the rest of a town's day (it lost the gossip test's news).
    """
    key = np.round(score / TIE) if len(score) else score
    where = np.arange(len(score)) if positions is None else np.asarray(positions)
    if k < len(score):
        part = np.argpartition(-key, k - 1)[:k]
        cut = key[part].min()
        part = np.flatnonzero(key >= cut)  # every tie at the cut, not just the ones argpartition kept
    else:
        part = np.arange(len(score))
    return part[np.lexsort((part, where[part], -key[part]))][:k]
