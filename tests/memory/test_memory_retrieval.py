"""Memory stream and retrieval: the paper's score, the FAISS path against a full scan,
persistence in the run file, truncation for forks, and read-only views for interviews."""

from __future__ import annotations

from datetime import datetime, timedelta

import threading

import numpy as np
import pytest

from memory.embeddings import CachedEmbedder, HashingEmbedder, get_embedder
from memory.retrieval import RetrievalConfig, RetrievalIndex
from memory.spatial import SpatialMemory
from memory.store import MemoryDraft, MemoryStore, truncate_after

T0 = datetime(2023, 2, 13, 8, 0)


@pytest.fixture
def hashing() -> CachedEmbedder:
    return get_embedder("hashing")


def test_recent_important_relevant_memory_ranks_first(hashing):
    store = MemoryStore(None, "Ann", embedder=hashing)
    # each rival wins on one term only
    store.add(MemoryDraft(kind="observation", text="Isabella invited me to the Valentine party", importance=3), 1, T0)
    store.add(MemoryDraft(kind="thought", text="My father was taken to hospital", importance=9), 2, T0 + timedelta(hours=1))
    for i in range(20):
        store.add(MemoryDraft(kind="observation", text=f"the kettle is boiling water {i}", importance=1), 3 + i,
                  T0 + timedelta(hours=30))
    target = store.add(
        MemoryDraft(kind="chat", text="Isabella says the Valentine party is at Hobbs Cafe tonight", importance=8),
        30, T0 + timedelta(hours=30),
    )
    hits = store.retrieve("Valentine party", T0 + timedelta(hours=31), 40, k=5)
    assert hits[0].id == target.id
    assert hits[0].last_access == T0 + timedelta(hours=31)  # retrieval refreshes last access


def test_index_path_matches_full_scan_and_loop_on_clustered_vectors():
    rng = np.random.default_rng(1)
    n, dim = 6000, 64
    centres = rng.normal(size=(40, dim))
    vecs = centres[rng.integers(0, 40, n)] + 0.6 * rng.normal(size=(n, dim))
    vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
    index = RetrievalIndex(dim, RetrievalConfig(hnsw_threshold=2000, ef_search=128))
    index.add(np.arange(n), vecs, rng.integers(1, 11, n), np.sort(rng.uniform(0, 500, n)))
    recalls = []
    for _ in range(10):
        q = vecs[rng.integers(n)] + 0.3 * rng.normal(size=dim).astype(np.float32)
        q /= np.linalg.norm(q)
        fast = {h.memory_id for h in index.search(q, 500.0, 20)}
        exact = [h.memory_id for h in index.full_scan(q, 500.0, 20)]
        recalls.append(len(fast & set(exact)) / 20)
    assert np.mean(recalls) >= 0.95
    small = RetrievalIndex(dim)
    small.add(np.arange(300), vecs[:300], rng.integers(1, 11, 300), rng.uniform(0, 50, 300))
    q = vecs[7]
    assert [h.memory_id for h in small.loop_scan(q, 60.0, 10)] == [h.memory_id for h in small.full_scan(q, 60.0, 10)]
    assert [h.memory_id for h in small.search(q, 60.0, 10)] == [h.memory_id for h in small.full_scan(q, 60.0, 10)]


def test_a_small_stream_is_scored_whole_and_exactly_even_as_memories_are_touched_and_added():
    """Up to ``scan_below`` memories (a resident's first weeks) search scores every memory: it must
    give the full scan's answer, with its cached recency and importance following every touch
    and write."""
    rng = np.random.default_rng(9)
    dim = 48
    vecs = rng.normal(size=(3200, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    index = RetrievalIndex(dim)
    index.add(np.arange(3000), vecs[:3000], rng.integers(1, 11, 3000), np.sort(rng.uniform(0, 300, 3000)))
    now = 301.0
    for step in range(20):
        q = vecs[rng.integers(3000)]
        fast = index.search(q, now, 10)
        assert [h.memory_id for h in fast] == [h.memory_id for h in index.full_scan(q, now, 10)]
        index.touch([h.memory_id for h in fast[:3]], now)
        if step % 5 == 4:
            new = 3000 + step * 10
            index.add(np.arange(new, new + 10), vecs[new:new + 10], [9] * 10, [now] * 10)
        if step % 4 == 3:  # mostly several retrievals in one game minute, as in a conversation
            now += 0.5


def test_the_ivf_path_finds_the_lowest_relevance_closer_than_a_sample_and_never_below_it():
    """Min-max normalisation needs the least relevant memory of all; past 2,048 memories the IVF
    path looks for it in the lists least like the query. It is a real memory's relevance (never
    below the true minimum) and nearer to it than the minimum over a random sample, which is
    what keeps recall at 6 probes."""
    rng = np.random.default_rng(5)
    n, dim = 20_000, 64
    centres = rng.normal(size=(200, dim))
    vecs = centres[rng.integers(0, 200, n)] + 0.8 * rng.normal(size=(n, dim))
    vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
    index = RetrievalIndex(dim, RetrievalConfig(hnsw_threshold=4096))
    index.add(np.arange(n), vecs, rng.integers(1, 11, n), np.sort(rng.uniform(0, 2000, n)))
    listed, sampled = [], []
    for _ in range(20):
        q = vecs[rng.integers(n)]
        true_min = float((vecs @ q).min())
        _, _, floor = index._search(q, 30)
        assert floor is not None and floor >= true_min - 1e-5
        listed.append(floor - true_min)
        sampled.append(index._relevance_floor(q) - true_min)
    assert np.mean(listed) < 0.5 * np.mean(sampled)


def test_weights_and_decay_are_configurable():
    cfg = RetrievalConfig.released_code()
    assert (cfg.w_recency, cfg.w_relevance, cfg.w_importance) == (0.5, 3.0, 2.0)
    with pytest.raises(ValueError):
        RetrievalConfig(decay=1.5)


def test_store_persists_truncates_and_freezes(tmp_path, hashing):
    db = tmp_path / "run.db"
    store = MemoryStore(db, "Ann", embedder=hashing)
    store.add(MemoryDraft(kind="observation", text="the stove is idle", importance=1), 10, T0)
    store.add(MemoryDraft(kind="observation", text="Bob painted the fence", importance=4), 20, T0 + timedelta(minutes=5))
    store.retrieve("fence", T0 + timedelta(hours=2), 100, k=1)
    store.add(MemoryDraft(kind="thought", text="I want to run for mayor", importance=8), 200, T0 + timedelta(hours=3))
    store.close()

    frozen = MemoryStore(db, "Ann", embedder=hashing, as_of_tick=50)
    assert [m.text for m in frozen.all()] == ["the stove is idle", "Bob painted the fence"]
    assert all(m.last_access == m.created for m in frozen.all())  # the access at tick 100 is later
    with pytest.raises(PermissionError):
        frozen.add(MemoryDraft(kind="thought", text="x", importance=1), 51, T0)
    frozen.retrieve("fence", T0 + timedelta(hours=9), 999)  # reading writes nothing
    frozen.close()

    truncate_after(db, 150)
    again = MemoryStore(db, "Ann", embedder=hashing)
    assert len(again) == 2
    fence = [m for m in again.all() if "fence" in m.text][0]
    assert fence.last_access == T0 + timedelta(hours=2)  # the access at tick 100 survives
    truncate_after(db, 15)
    assert len(MemoryStore(db, "Ann", embedder=hashing)) == 1


def test_bad_memory_kind_is_refused(hashing):
    store = MemoryStore(None, "Ann", embedder=hashing)
    with pytest.raises(ValueError, match="memory kind 'dream'"):
        store.add(MemoryDraft(kind="dream", text="flying", importance=2), 1, T0)
    assert len(store) == 0


def test_embedding_cache_embeds_each_text_once():
    cached = CachedEmbedder(HashingEmbedder())
    cached.encode(["a cat", "a dog", "a cat"])
    cached.encode(["a dog"])
    assert cached.misses == 2 and cached.hits == 1
    v = cached.encode(["a cat"])[0]
    assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-5


def test_spatial_memory_offers_only_known_arenas():
    town = ["Cafe", "Cafe:kitchen", "Cafe:kitchen:stove", "Home", "Home:bedroom", "Home:bedroom:bed", "Bank", "Bank:hall"]
    spatial = SpatialMemory(town, ["Home"])
    assert spatial.arenas() == ["Home", "Home:bedroom"]
    assert spatial.learn_sectors_named_in("meet me at the Cafe at noon") == ["Cafe", "Cafe:kitchen"]
    assert spatial.best_object("Home:bedroom", "going to bed") == "Home:bedroom:bed"
    spatial.learn(["Nowhere:at all"])  # not in the town: ignored
    assert "Nowhere:at all" not in spatial.arenas()


class _CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the batches it is asked for."""

    def __init__(self):
        super().__init__()
        self.calls: list[int] = []

    def encode(self, texts):
        self.calls.append(len(texts))
        return super().encode(texts)


def test_memories_of_many_residents_are_embedded_in_one_batch_before_anyone_retrieves(tmp_path):
    inner = _CountingEmbedder()
    shared = CachedEmbedder(inner)
    stores = [MemoryStore(tmp_path / "run.db", name, embedder=shared) for name in ("Ann", "Ben", "Cy")]
    for i, store in enumerate(stores):
        store.add_many([MemoryDraft(kind="observation", text=f"{store.resident} sees the stove {j}", importance=2)
                        for j in range(3)], i, T0)
        store.add(MemoryDraft(kind="thought", text=f"{store.resident} wants to bake bread", importance=5), i, T0)
    assert inner.calls == []  # written (and readable) but not yet embedded
    assert len(stores[2]) == 4 and stores[2].recent(1)[0].text == "Cy wants to bake bread"
    hits = stores[1].retrieve("baking bread", T0 + timedelta(hours=1), 5, k=2)
    assert inner.calls == [13]  # 12 memories of three residents + the query: one batch
    assert hits[0].text == "Ben wants to bake bread"
    assert stores[0].retrieve("bread", T0 + timedelta(hours=1), 6, k=1)[0].text == "Ann wants to bake bread"
    assert inner.calls == [13, 1]  # the others were indexed from the shared batch; only the new query
    for store in stores:
        store.close()
    # every vector reached the run's embedding table: a reopened store needs no model call
    reopened = MemoryStore(tmp_path / "run.db", "Cy", embedder=shared)
    assert len(reopened.index) == 4 and inner.calls == [13, 1]


def test_cached_recency_and_importance_follow_every_write_and_touch():
    rng = np.random.default_rng(3)
    vecs = rng.normal(size=(6000, 32)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    # a flat index with the bound test on: a stale cached prior would miss the touched memories
    index = RetrievalIndex(32, RetrievalConfig(prior_candidates=64, candidates=64, max_rounds=8,
                                               hnsw_threshold=10_000))
    index.add(np.arange(6000), vecs, rng.integers(1, 11, 6000), np.sort(rng.uniform(0, 500, 6000)))
    q = vecs[7]
    before = [h.memory_id for h in index.search(q, 600.0, 10)]
    assert before == [h.memory_id for h in index.search(q, 600.0, 10)]
    old = [i for i in range(100) if i not in before][:10]
    index.touch(old, 599.0)  # ten old memories become the most recent: they must show up now
    after = [h.memory_id for h in index.search(q, 600.0, 10)]
    exact = [h.memory_id for h in index.full_scan(q, 600.0, 10)]
    touched_in_exact = set(exact) & set(old)
    assert touched_in_exact and touched_in_exact <= set(after)
    assert len(set(after) & set(exact)) >= 9  # the floor of relevance is sampled past 2,048 memories
    index.add([6000], vecs[7:8] * 1.0, [10], [600.0])  # a new twin of the query, very important and new
    assert index.search(q, 600.0, 1)[0].memory_id == 6000


def test_memories_that_tie_within_float_noise_come_out_oldest_first_on_every_path():
    """Two memories equal under the formula (up to float32 rounding) are ordered by position,
    the same way by the index path and the scans: which one is retrieved is touched and stays
    recent, so noise must not pick it."""
    rng = np.random.default_rng(3)
    base = rng.standard_normal(384).astype(np.float32)
    base /= np.linalg.norm(base)
    twin = base + 1e-6 * rng.standard_normal(384).astype(np.float32)
    twin /= np.linalg.norm(twin)
    others = rng.standard_normal((6, 384)).astype(np.float32)
    others /= np.linalg.norm(others, axis=1, keepdims=True)
    index = RetrievalIndex(384)
    index.add([1, 2], np.stack([base, twin]), [3, 3], [10.0, 10.0])
    index.add(list(range(3, 9)), others, [1, 2, 5, 1, 2, 4], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert float(twin @ twin) > float(base @ twin)  # the later memory is (by noise) the more relevant
    for path in (index.search, index.full_scan, index.loop_scan):
        ids = [h.memory_id for h in path(twin, now=12.0, k=3)]
        assert ids.index(1) < ids.index(2), (path.__name__, ids)


def test_queries_of_residents_deciding_together_are_embedded_in_one_batch(tmp_path):
    """The engine gathers every slow mind's decide(): their retrievals share one model call,
    with the memories everyone wrote since, and return what the one-at-a-time path returns."""
    import asyncio

    inner = _CountingEmbedder()
    shared = CachedEmbedder(inner)
    stores = [MemoryStore(tmp_path / "run.db", name, embedder=shared) for name in ("Ann", "Ben", "Cy")]
    for i, store in enumerate(stores):
        store.add(MemoryDraft(kind="thought", text=f"{store.resident} wants to bake bread", importance=5), i, T0)
        store.add(MemoryDraft(kind="observation", text=f"{store.resident} sees the river", importance=5), i, T0)

    async def decide(store: MemoryStore, query: str) -> list[str]:
        await asyncio.sleep(0)  # residents reach their retrieval at different turns of the loop
        return [r.text for r in await store.aretrieve(query, T0 + timedelta(hours=1), 5, k=1)]

    async def tick() -> list[list[str]]:
        return await asyncio.gather(*(decide(s, q) for s, q in zip(stores, ["bread", "the river", "baking"])))

    got = asyncio.run(tick())
    assert inner.calls == [9]  # 6 memories + 3 queries, one batch
    assert got == [["Ann wants to bake bread"], ["Ben sees the river"], ["Cy wants to bake bread"]]
    plain = MemoryStore(None, "Ben", embedder=get_embedder("hashing"))
    plain.add(MemoryDraft(kind="thought", text="Ben wants to bake bread", importance=5), 1, T0)
    plain.add(MemoryDraft(kind="observation", text="Ben sees the river", importance=5), 1, T0)
    assert [r.text for r in plain.retrieve("the river", T0 + timedelta(hours=1), 5, k=1)] == got[1]
    for store in stores:
        store.close()


def _minilm_installed() -> bool:
    from memory.embeddings import minilm_path

    try:
        minilm_path()
    except RuntimeError:
        return False
    return True


@pytest.mark.skipif(not _minilm_installed(), reason="the packaged MiniLM model is not installed")
def test_a_minilm_vector_does_not_depend_on_what_it_was_batched_with():
    """Padding to a batch's longest text and the batch's row count moved MiniLM's last bits, so a
    resumed run (other batches) retrieved differently from the uninterrupted one."""
    from memory.embeddings import MiniLMEmbedder

    minilm = MiniLMEmbedder()
    texts = ["the pub", "Maria is cooking breakfast in the kitchen", "sleeping", "bed is idle",
             "John Lin is talking to Mei about the upcoming election and his son's school project",
             "Isabella is planning a Valentine's day party at Hobbs Cafe on February 14th from 5pm"]
    together = minilm.encode(texts)
    alone = np.stack([minilm.encode([t])[0] for t in texts])
    shuffled = minilm.encode(texts[::-1])[::-1]
    assert together.tobytes() == alone.tobytes() == shuffled.tobytes()
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    # whatever the precision chosen here (bfloat16 on CPUs with its matrix instructions), the
    # vectors are the model's: sentence-transformers' own float32 encoding, to cosine >= 0.999
    reference = MiniLMEmbedder.model().encode(texts, normalize_embeddings=True)
    assert ((together * reference).sum(axis=1) >= 0.999).all(), minilm.mode


def test_a_bad_minilm_precision_setting_is_a_clear_error(monkeypatch):
    from memory.embeddings import MiniLMEmbedder, _build_encoder

    with pytest.raises(ValueError, match="TOWNSFOLK_MINILM_PRECISION='half': expected auto, float32 or bfloat16"):
        _build_encoder(object(), "half", 8)


class _BackgroundEmbedder(HashingEmbedder):
    """The hashing embedder run as a background one: records the threads it ran on, can hold the
    worker (``gate``) and fails on texts containing 'boom'."""

    background = True

    def __init__(self):
        super().__init__()
        self.threads: list[str] = []
        self.gate = threading.Event()
        self.gate.set()

    def encode(self, texts):
        if threading.current_thread().name.startswith("embedder-"):
            self.gate.wait(timeout=10)  # only the worker is held
        self.threads.append(threading.current_thread().name)
        if any("boom" in t for t in texts):
            raise RuntimeError("model failed")
        return super().encode(texts)


def test_a_background_embedder_embeds_new_memories_while_the_town_goes_on(tmp_path):
    """MiniLM embeds new memories ahead, on a worker thread, while the main thread carries on;
    a retrieval then finds them embedded, and gives exactly what the synchronous path gives."""
    import time

    inner = _BackgroundEmbedder()
    shared = CachedEmbedder(inner)
    store = MemoryStore(tmp_path / "run.db", "Ann", embedder=shared)
    inner.gate.clear()  # the worker is busy: writing must not wait for it
    texts = [f"Ann sees the stove {j}" for j in range(3)] + ["Ann wants to bake bread"]
    store.prefetch(texts[:1])  # perceived now, written later
    store.add_many([MemoryDraft(kind="observation", text=t, importance=3) for t in texts], 1, T0)
    assert len(store) == 4 and inner.threads == []
    inner.gate.set()
    deadline = time.monotonic() + 10
    while shared.misses < len(texts) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert set(inner.threads) == {"embedder-hashing"}  # all four embedded by the worker
    hits = store.retrieve("baking bread", T0 + timedelta(hours=1), 2, k=2)
    assert inner.threads.count("MainThread") == 1  # only the query, on the caller's own thread
    plain = MemoryStore(None, "Ann", embedder=CachedEmbedder(HashingEmbedder()))
    plain.add_many([MemoryDraft(kind="observation", text=t, importance=3) for t in texts], 1, T0)
    assert [h.id for h in hits] == [h.id for h in plain.retrieve("baking bread", T0 + timedelta(hours=1), 2, k=2)]
    assert shared.encode(texts).tobytes() == HashingEmbedder().encode(texts).tobytes()
    store.close()


def test_a_failed_prefetch_is_embedded_again_when_needed_and_fails_there():
    inner = _BackgroundEmbedder()
    shared = CachedEmbedder(inner)
    shared.prefetch(["a boom in the kitchen"])  # nobody waits for a prefetch: its failure is not lost ...
    with pytest.raises(RuntimeError, match="model failed"):
        shared.encode(["a boom in the kitchen"])  # ... the text is embedded again when needed, and fails there
    shared.prefetch(["a quiet kitchen"])
    assert shared.encode(["a quiet kitchen"]).shape == (1, shared.dim)  # the worker still runs


def test_a_caller_waits_for_a_text_the_worker_is_embedding_rather_than_embedding_it_again():
    import time

    from memory.embeddings import text_key

    inner = _BackgroundEmbedder()
    shared = CachedEmbedder(inner)
    inner.gate.clear()
    shared.prefetch(["Ann sees the stove"])
    deadline = time.monotonic() + 10
    while text_key("Ann sees the stove") not in shared._worker().inflight and time.monotonic() < deadline:
        time.sleep(0.005)
    got: list[np.ndarray] = []
    caller = threading.Thread(target=lambda: got.append(shared.encode(["Ann sees the stove", "a new query"])),
                              name="caller")
    caller.start()
    caller.join(timeout=0.2)
    assert caller.is_alive()  # its own text is done; the stove waits for the worker
    assert inner.threads == ["caller"]
    inner.gate.set()
    caller.join(timeout=10)
    assert inner.threads == ["caller", "embedder-hashing"]  # the stove embedded once, by the worker
    assert got[0].tobytes() == HashingEmbedder().encode(["Ann sees the stove", "a new query"]).tobytes()


def test_the_embedding_worker_ends_before_the_interpreter_does():
    """At exit the worker finishes its call and ends: a run that exited while it was inside
    torch aborted with 'terminate called without an active exception' (exit -6, not its own)."""
    from memory import embeddings

    inner = _BackgroundEmbedder()
    shared = CachedEmbedder(inner)
    inner.gate.clear()
    shared.prefetch(["a text", "another text"])
    worker = shared._worker()
    threading.Timer(0.1, inner.gate.set).start()  # the call in progress ends a moment later
    embeddings._stop_workers()  # what atexit runs
    assert not worker.thread.is_alive()
