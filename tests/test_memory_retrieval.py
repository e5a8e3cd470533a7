"""Memory stream and retrieval: the paper's score, the FAISS path against a full scan,
persistence in the run file, truncation for forks, and read-only views for interviews."""

from __future__ import annotations

from datetime import datetime, timedelta

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
