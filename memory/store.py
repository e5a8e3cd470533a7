"""The memory stream: every resident's records in the run's SQLite file, plus a live index.

Tables (all prefixed ``memory_`` so they sit beside the engine's own tables in the run file):

- ``memory_records``: one row per memory — resident, kind, text, the tick and game time it
  was written, last access, importance 1..10, evidence ids (reflections), embedding key.
- ``memory_access``: every refresh of a last-access time, with its tick, so that a fork or
  an interview can see the last-access times *as they were* at an earlier tick.
- ``memory_embeddings``: vectors by (text hash, embedder), the run's embedding cache.
- ``memory_residents``: persona and embedder per resident, so interviews need only the file.

Each :class:`MemoryStore` opens its own connection (WAL) and keeps a
:class:`~memory.retrieval.RetrievalIndex` in memory, rebuilt from the rows on open.
:func:`truncate_after` drops everything written after a tick (resume/fork). The tables
and every statement on them are the run file's (memory.runfile).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from memory import runfile
from memory.embeddings import CachedEmbedder, get_embedder, text_key
from memory.retrieval import RetrievalConfig, RetrievalIndex
from memory.runfile import registered_residents  # noqa: F401 - where interviews find it

MEMORY_KINDS = ("observation", "chat", "plan", "reflection", "thought", "whisper", "encounter")
_EPOCH = datetime(2000, 1, 1)


def game_hours(when: datetime) -> float:
    """Game time as hours on a fixed origin (what recency decays over)."""
    return (when.replace(tzinfo=None) - _EPOCH).total_seconds() / 3600.0


class MemoryRecord(BaseModel):
    """One memory as cognition sees it."""

    id: int
    resident: str
    kind: str
    text: str
    tick: int
    created: datetime
    last_access: datetime
    importance: int = Field(ge=1, le=10)
    evidence: list[int] = Field(default_factory=list)
    embedding_key: str = ""
    triple: tuple[str, str, str] | None = None


class MemoryDraft(BaseModel):
    """A memory about to be written (importance already known)."""

    kind: str
    text: str
    importance: int = Field(ge=1, le=10)
    evidence: list[int] = Field(default_factory=list)
    triple: tuple[str, str, str] | None = None


def connect(db_path: Path | str | None, *, readonly: bool = False) -> sqlite3.Connection:
    """A connection to the run file (WAL), or a private in-memory database."""
    return runfile.connect_memory(db_path, readonly=readonly)


def truncate_after(db_path: Path | str, tick: int) -> None:
    """Forget every memory, access and social tie of a tick after ``tick`` (a memory store
    on its own; a run rolls its whole file back with RunStore.truncate_after). Last-access
    times are recomputed from the surviving access log.
    """
    runfile.truncate_memory_after(db_path, tick)


def _row_to_record(row: sqlite3.Row | tuple) -> MemoryRecord:
    (mid, resident, kind, text, tick, created, last, imp, evidence, key, s, p, o) = row
    triple = (s, p, o) if s is not None else None
    return MemoryRecord(
        id=mid,
        resident=resident,
        kind=kind,
        text=text,
        tick=tick,
        created=datetime.fromisoformat(created),
        last_access=datetime.fromisoformat(last),
        importance=imp,
        evidence=json.loads(evidence),
        embedding_key=key,
        triple=triple,
    )


class MemoryStore:
    """One resident's memory stream: SQLite rows + an in-memory retrieval index.

    ``as_of_tick`` opens a frozen view (for interviews): only rows written up to that tick,
    last access as it was then, and nothing is ever written back.
    """

    def __init__(
        self,
        db_path: Path | str | None,
        resident: str,
        *,
        embedder: CachedEmbedder | None = None,
        config: RetrievalConfig | None = None,
        as_of_tick: int | None = None,
    ):
        self.db_path = Path(db_path) if db_path is not None else None
        self.resident = resident
        self.embedder = embedder or get_embedder()
        self.config = config or RetrievalConfig()
        self.frozen = as_of_tick is not None
        self.as_of_tick = as_of_tick
        self.conn = connect(self.db_path, readonly=self.frozen)
        self.index = RetrievalIndex(self.embedder.dim, self.config)
        self._records: dict[int, MemoryRecord] = {}
        self._order: list[int] = []  # ids in creation order
        self._waiting: list[MemoryRecord] = []  # written, not yet embedded and indexed (see settle)
        self._load()

    # -- loading ----------------------------------------------------------------------------

    def _load(self) -> None:
        rows = runfile.memory_rows(self.conn, self.resident, self.as_of_tick if self.frozen else None)
        access = runfile.memory_access_as_of(self.conn, self.resident, self.as_of_tick) if self.frozen else {}
        records = [_row_to_record(r) for r in rows]
        for rec in records:
            seen = access.get(rec.id)
            if seen is not None:
                rec.last_access = max(rec.created, datetime.fromisoformat(seen))
            elif self.frozen:
                rec.last_access = rec.created
        if records:
            vectors = self._vectors([r.text for r in records], [r.embedding_key for r in records])
            self._index_records(records, vectors)

    def _vectors(self, texts: list[str], keys: list[str]) -> np.ndarray:
        """Vectors from the run's embedding table, computing (and storing) the missing ones."""
        model = self.embedder.name
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        for key, blob in runfile.stored_vectors(self.conn, model, unique):
            vec = np.frombuffer(blob, dtype=np.float32)
            if vec.shape[0] == self.embedder.dim:
                found[key] = vec
        missing = [i for i, key in enumerate(keys) if key not in found]
        if missing:
            fresh = self.embedder.encode([texts[i] for i in missing])
            rows = []
            for i, vec in zip(missing, fresh):
                if keys[i] not in found:
                    found[keys[i]] = vec
                    rows.append((keys[i], model, vec.astype(np.float32).tobytes()))
            if rows and not self.frozen:
                runfile.store_vectors(self.conn, rows)
        return np.stack([found[k] for k in keys]) if keys else np.zeros((0, self.embedder.dim))

    def _index_records(self, records: list[MemoryRecord], vectors: np.ndarray) -> None:
        for rec in records:
            self._records[rec.id] = rec
            self._order.append(rec.id)
        self._add_to_index(records, vectors)

    def _add_to_index(self, records: list[MemoryRecord], vectors: np.ndarray) -> None:
        self.index.add(
            [r.id for r in records],
            vectors,
            [r.importance for r in records],
            [game_hours(r.last_access) for r in records],
        )

    # -- writing ----------------------------------------------------------------------------

    def _check_writable(self) -> None:
        if self.frozen:
            raise PermissionError("this memory view is read-only (an interview writes nothing)")

    def add(self, draft: MemoryDraft, tick: int, when: datetime) -> MemoryRecord:
        return self.add_many([draft], tick, when)[0]

    def add_many(self, drafts: Sequence[MemoryDraft], tick: int, when: datetime) -> list[MemoryRecord]:
        """Write memories (embedded in one batch) and index them."""
        self._check_writable()
        if not drafts:
            return []
        for d in drafts:
            if d.kind not in MEMORY_KINDS:
                raise ValueError(f"memory kind {d.kind!r}: expected one of {', '.join(MEMORY_KINDS)}")
        keys = [text_key(d.text) for d in drafts]
        stamp = when.replace(tzinfo=None).isoformat()
        rows = []
        for d, key in zip(drafts, keys):
            s, p, o = d.triple if d.triple else (None, None, None)
            rows.append((self.resident, d.kind, d.text, tick, stamp, stamp, d.importance,
                         json.dumps(d.evidence), key, s, p, o))
        out = [
            MemoryRecord(
                id=memory_id, resident=self.resident, kind=d.kind, text=d.text,
                tick=tick, created=when.replace(tzinfo=None),
                last_access=when.replace(tzinfo=None), importance=d.importance,
                evidence=list(d.evidence), embedding_key=key, triple=d.triple,
            )
            for memory_id, d, key in zip(runfile.insert_memories(self.conn, rows), drafts, keys)
        ]
        for rec in out:
            self._records[rec.id] = rec
            self._order.append(rec.id)
        self._waiting.extend(out)
        self.embedder.defer(self, [d.text for d in drafts])
        return out

    # -- deferred embedding (one batch across residents: memory.embeddings.CachedEmbedder.settle) --

    def prefetch(self, texts: Sequence[str]) -> None:
        """Texts about to be written: a background embedder starts on them now (changes no result)."""
        self.embedder.prefetch(texts)

    def waiting_texts(self) -> list[str]:
        return [r.text for r in self._waiting]

    def index_waiting(self) -> None:
        """Embed (from the shared cache) and index the memories written since the last settle."""
        waiting, self._waiting = self._waiting, []
        if waiting and self.conn is not None:
            self._add_to_index(waiting, self._vectors([r.text for r in waiting], [r.embedding_key for r in waiting]))

    def settle(self, extra: Sequence[str] = ()) -> None:
        """Index every waiting memory (this store's and every other store's on the same embedder)."""
        self.embedder.settle(extra)
        self.index_waiting()  # in case another settle took our texts but we were not yet indexed

    # -- reading ----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._order)

    def get(self, memory_id: int) -> MemoryRecord | None:
        return self._records.get(memory_id)

    def all(self) -> list[MemoryRecord]:
        return [self._records[i] for i in self._order]

    def recent(self, n: int, kinds: Iterable[str] | None = None) -> list[MemoryRecord]:
        """The n most recently written memories, oldest first."""
        wanted = set(kinds) if kinds else None
        out: list[MemoryRecord] = []
        for memory_id in reversed(self._order):
            rec = self._records[memory_id]
            if wanted is None or rec.kind in wanted:
                out.append(rec)
                if len(out) >= n:
                    break
        return out[::-1]

    def retrieve(
        self,
        queries: str | Sequence[str],
        now: datetime,
        tick: int,
        k: int | None = None,
        *,
        touch: bool = True,
    ) -> list[MemoryRecord]:
        """Best memories for one or more queries (merged, best first); refreshes last access."""
        if not self._order:
            return []
        texts = [queries] if isinstance(queries, str) else list(queries)
        if not self.frozen:
            self.settle(texts)  # an interview's read-only view has nothing waiting
        return self._rank(self.embedder.encode(texts), now, tick, k, touch)

    async def aretrieve(
        self,
        queries: str | Sequence[str],
        now: datetime,
        tick: int,
        k: int | None = None,
        *,
        touch: bool = True,
    ) -> list[MemoryRecord]:
        """:meth:`retrieve` for cognition: the query is embedded in one batch with the queries of
        every resident deciding in the same tick, and everyone's new memories
        (:meth:`CachedEmbedder.aencode`); what it returns is the same as :meth:`retrieve`'s."""
        if not self._order:
            return []
        texts = [queries] if isinstance(queries, str) else list(queries)
        vectors = await self.embedder.aencode(texts)
        if not self.frozen:
            self.index_waiting()  # the flush indexed them; anything left comes from the cache
        return self._rank(vectors, now, tick, k, touch)

    def _rank(self, vectors: np.ndarray, now: datetime, tick: int, k: int | None, touch: bool) -> list[MemoryRecord]:
        now_h = game_hours(now)
        k = k or self.config.top_k
        best: dict[int, float] = {}
        for vec in vectors:
            for hit in self.index.search(vec, now_h, k):
                best[hit.memory_id] = max(best.get(hit.memory_id, -1e9), hit.score)
        ranked = sorted(best, key=lambda i: (-best[i], i))[:k]
        if touch and not self.frozen:
            self._touch(ranked, now, tick)
        return [self._records[i] for i in ranked]

    def _touch(self, ids: list[int], now: datetime, tick: int) -> None:
        stamp = now.replace(tzinfo=None)
        self.index.touch(ids, game_hours(stamp))
        rows = []
        for memory_id in ids:
            rec = self._records[memory_id]
            if stamp > rec.last_access:
                rec.last_access = stamp
                rows.append((memory_id, tick, stamp.isoformat()))
        if rows:
            runfile.log_accesses(self.conn, rows)

    def rollback_to(self, tick: int) -> None:
        """Forget this resident's memories and accesses after ``tick`` and rebuild the index
        (a restore in the same process; a no-op when the engine already truncated the file)."""
        self._check_writable()
        runfile.roll_back_resident(self.conn, self.resident, tick)
        self.index = RetrievalIndex(self.embedder.dim, self.config)
        self._records, self._order, self._waiting = {}, [], []
        self._load()

    # -- resident registry (for interviews) -----------------------------------------------------

    def register_resident(self, persona_json: str, options_json: str = "{}") -> None:
        self._check_writable()
        runfile.register_resident(self.conn, self.resident, persona_json, self.embedder.name, options_json)

    def close(self) -> None:
        if self._waiting and not self.frozen:
            self.settle()  # the run's embedding table keeps every memory's vector
        self.conn.close()
