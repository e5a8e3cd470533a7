"""The run folder's one database: ``run.db`` (SQLite, WAL).

It holds the run's metadata, every committed tick and its records, and full state snapshots
every N ticks (the engine's state plus each mind's ``snapshot()``). Each tick is committed in
one transaction, so a run killed at any moment leaves a gap-free prefix of ticks. Readers
(the viewer, ``replay --summary``) open their own connection and can read while the run is
writing. The minds' tables (memory stream, access log, embeddings, resident registry, social
ties) live in the same file: this module defines them and holds every statement on them;
memory.store and memory.social call its functions.
Every model answer of a committed tick is kept in ``llm_answers`` (written in that tick's
transaction by the answer logs of agents/llm/recorded.py), so resume and fork re-run
ticks with the run's own answers. One process writes a run folder (replays/lock.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import stat
import threading
import zlib
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import zstandard

from maps.contracts import SCHEMA_VERSION as RECORD_SCHEMA_VERSION
from maps.contracts import Record, TickRecords
from maps.contracts import build  # stored data was valid when written: no re-validation

STORE_SCHEMA_VERSION = 1

DB_NAME = "run.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS run_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ticks (
    tick INTEGER PRIMARY KEY,
    time TEXT NOT NULL,
    n_records INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS records (
    tick INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    resident TEXT,
    data TEXT NOT NULL,
    PRIMARY KEY (tick, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS records_kind ON records(kind, tick);
CREATE TABLE IF NOT EXISTS snapshots (
    tick INTEGER PRIMARY KEY,
    time TEXT NOT NULL,
    state BLOB NOT NULL,
    minds BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS llm_answers (
    tick INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    source TEXT NOT NULL,
    call_no INTEGER NOT NULL,
    call_id TEXT NOT NULL,
    purpose TEXT NOT NULL,
    request TEXT NOT NULL,
    answer TEXT NOT NULL,
    info TEXT NOT NULL,
    PRIMARY KEY (tick, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pending_commands (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    applies_at INTEGER NOT NULL,
    command TEXT NOT NULL,
    submitted TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshot_marks (
    tick INTEGER NOT NULL,
    name TEXT NOT NULL,
    max_rowid INTEGER NOT NULL,
    PRIMARY KEY (tick, name)
) WITHOUT ROWID;
"""

# the run's own tables, cut back to the last kept tick; every other table with a ``tick``
# column holds minds' state (memory, its access log, social ties, ...) and is cut back to
# the restored snapshot: to the rows it held then (snapshot_marks: the highest rowid of each
# such table when the snapshot was taken; a memory written later may carry an older tick)
_RUN_TABLES = ("ticks", "records", "snapshots", "llm_answers", "snapshot_marks")
# wall-clock measurements inside record payloads: not part of what a run did
TIMING_KEYS = frozenset({"latency_s", "duration_s", "wall_s", "elapsed_s"})

# metadata keys that must never be written (API keys and the like)
_SECRET = re.compile(r"(api[_-]?key|secret|token|password|credential|authorization)", re.I)


class StoreError(RuntimeError):
    """The run database is missing, damaged, of another version, or misused."""


def check_regular(path: Path) -> None:
    """StoreError unless ``path`` is missing or a regular file: SQLite opening a FIFO blocks
    forever (retrying through signals), and a device is no database."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        what = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
        raise StoreError(f"{path}: is {what}; expected the run database file ({DB_NAME})")


# (path, size, mtime) of files that passed the check: a viewer opens one file several times
_SOUND: set[tuple[str, int, int]] = set()


def check_integrity(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a run database whose pages are damaged (SQLite's quick_check), naming the file.

    A damaged page otherwise shows up late as a traceback, or silently as missing rows."""
    try:
        st = path.stat()
        key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    except OSError:
        key = None
    if key is not None and key in _SOUND:
        return
    try:
        problems = [r[0] for r in conn.execute("PRAGMA quick_check(5)")]
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: damaged or not a SQLite database ({exc})") from None
    if problems != ["ok"]:
        shown = "; ".join(problems[:3])
        raise StoreError(f"{path}: the run database is damaged ({shown}); restore it from a copy, or "
                         f"recover what is readable with `sqlite3 {path} .recover`")
    if key is not None:
        _SOUND.add(key)


@dataclass
class Snapshot:
    """A full state snapshot: ``state`` is the engine's (a superset of Engine.state()),
    ``minds`` maps resident name -> that mind's ``snapshot()``."""

    tick: int
    time: datetime
    state: dict[str, Any]
    minds: dict[str, Any]


@dataclass
class ResumePoint:
    """Where a resumed or forked run goes on from (:meth:`RunStore.resume_point`); the run
    file is already cut back to it."""

    meta: dict[str, Any]  # the run's metadata, its planned end moved when the run was extended
    last: int | None  # the last committed tick, kept (None: the run has none yet)
    snapshot: Snapshot | None  # the snapshot to restore: the nearest at or before ``last``
    ticks: list[TickRecords]  # the recorded ticks after the snapshot up to ``last``, to re-run
    pending: list[dict[str, Any]]  # commands accepted for a tick never committed, now due right after ``last``

    @property
    def kept(self) -> int:
        """The last tick kept (-1: none)."""
        return self.last if self.last is not None else -1

    @property
    def restored(self) -> int:
        """The tick of the snapshot restored (-1: none, the run starts from its beginning)."""
        return self.snapshot.tick if self.snapshot is not None else -1


@dataclass
class ForkPoint:
    """The committed tick a fork would branch after (:meth:`RunStore.fork_point`), with the
    run's span to say why a time outside it is refused."""

    tick: int | None  # at or before the time asked; None: before the first tick; last + 1: after the run's end
    time: datetime | None  # that tick's time (None when it is not a committed tick)
    first: int | None  # the run's first and last committed ticks (None: none yet)
    first_time: datetime | None
    last: int | None
    last_time: datetime | None

    @property
    def inside(self) -> bool:
        """The tick is one of the run's committed ticks' range."""
        return self.tick is not None and self.last is not None and (self.first or 0) <= self.tick <= self.last


@dataclass
class AnswerReplay:
    """The recorded model answers of the ticks a resume re-runs, for one answer log
    (:meth:`RunStore.answer_replay`; agents/llm/recorded.py AnswerLog.start_replay)."""

    rows: list[dict[str, Any]]  # call_no, call_id, purpose, request, answer, info; in call order
    first_no: int  # the number of the re-run's first call (after the restored tick's last)
    next_no: int  # the number of the first live call once the re-run is over


_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # a zstd frame's first bytes; zlib's first byte is 0x78


def _pack(obj: Any) -> bytes:
    """A snapshot's state as compressed JSON. orjson, told to hand datetimes and dataclasses to
    ``str`` as the json module's ``default=str`` did, writes the values json wrote in a tenth
    of the time (a float NaN, which no state holds, would come back as null); what it cannot
    encode (an int past 64 bits) goes through json as before. zstd at level 1 compresses a
    1,000-resident snapshot (6 MB of JSON) in 9 ms to 0.67 MB, where zlib at level 1 took 29 ms
    for 0.96 MB; snapshots written with zlib still read back (:func:`_unpack`)."""
    try:
        text = orjson.dumps(obj, default=str, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        text = json.dumps(obj, separators=(",", ":"), default=str).encode()
    return zstandard.ZstdCompressor(level=1).compress(text)


_PLAIN = (str, int, bool, type(None))


def _record_json(data: dict[str, Any]) -> str:
    """A record's payload as stored: the text ``json.dumps(data, separators=(",", ":"),
    default=str)`` writes, which the records digest hashes. A 1,000-resident day writes 400,000
    records, nine in ten of them steps (a tile and an address); orjson writes the same text for
    a payload of strings and integers (lists of them too) in ASCII, at a fraction of the cost.
    Anything else (a float, which the two write differently past 1e16 or below 1e-4; NaN; a
    nested object; an emoji, which json escapes) goes through json as before."""
    for v in data.values():
        if type(v) in (list, tuple):
            if not all(type(e) in _PLAIN for e in v):
                break
        elif type(v) not in _PLAIN:
            break
    else:
        try:
            text = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:  # an int past 64 bits
            text = b"\x80"
        if text.isascii() and b"\x7f" not in text:  # json escapes DEL too
            return text.decode()
    return json.dumps(data, separators=(",", ":"), default=str)


def _loads(text: str | bytes) -> Any:
    """A record's JSON: orjson reads it in about a third of json's time (a 10,000-resident day's
    run summary reads four million); json for NaN / Infinity, which orjson does not read."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _unpack(blob: bytes) -> Any:
    return _loads(zstandard.ZstdDecompressor().decompress(blob) if blob[:4] == ZSTD_MAGIC else zlib.decompress(blob))


def scrub(meta: dict[str, Any]) -> dict[str, Any]:
    """Drop anything that looks like a credential, at any depth."""
    out: dict[str, Any] = {}
    for k, v in meta.items():
        if _SECRET.search(str(k)):
            continue
        out[k] = scrub(v) if isinstance(v, dict) else v
    return out


class RunStore:
    """Read and write one run's database. Use :meth:`create` or :meth:`open`."""

    def __init__(self, path: Path, conn: sqlite3.Connection, readonly: bool) -> None:
        self.path = path
        self.conn = conn
        self.readonly = readonly
        self._last_tick: int | None = None
        self._last_known = False
        self._answer_logs: list[Any] = []  # agents.llm.recorded.AnswerLog, one per gateway
        self.lock: Any = None  # replays.lock.RunLock of a writer, released on close
        self._journal: sqlite3.Connection | None = None  # the control channel's own (journal_command)
        self._journal_lock = threading.Lock()

    # -- opening ----------------------------------------------------------------

    @staticmethod
    def db_path(run_dir: str | Path) -> Path:
        p = Path(run_dir)
        return p if p.suffix == ".db" else p / DB_NAME

    @classmethod
    def create(cls, run_dir: str | Path, meta: dict[str, Any]) -> "RunStore":
        """Make a new run database; refuses to overwrite one that already holds ticks."""
        path = cls.db_path(run_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            existing = cls.open(path, readonly=False)
            if existing.last_tick() is not None:
                existing.close()
                raise StoreError(f"{path}: a run already exists here (use --resume to continue it, or another --out)")
            existing.close()
        conn = cls._connect(path, readonly=False)
        with conn:
            conn.executescript(_SCHEMA)
            rows = {
                "store_schema": STORE_SCHEMA_VERSION,
                "record_schema": RECORD_SCHEMA_VERSION,
                **scrub(meta),
            }
            conn.executemany(
                "INSERT OR REPLACE INTO run_meta(key, value) VALUES (?, ?)",
                [(k, json.dumps(v, default=str)) for k, v in rows.items()],
            )
        return cls(path, conn, readonly=False)

    @classmethod
    def open(cls, run_dir: str | Path, readonly: bool = True) -> "RunStore":
        """Open an existing run database, checking that it is one and of a known version."""
        path = cls.db_path(run_dir)
        check_regular(path)
        if not path.exists():
            raise StoreError(f"{path}: no run database here (expected a run folder holding {DB_NAME})")
        conn = cls._connect(path, readonly=readonly)
        try:
            check_integrity(conn, path)
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "run_meta" not in tables or "ticks" not in tables or "records" not in tables:
                raise StoreError(f"{path}: not a townsfolk run database (tables run_meta/ticks/records missing)")
            row = conn.execute("SELECT value FROM run_meta WHERE key='store_schema'").fetchone()
            version = json.loads(row[0]) if row else None
            if version != STORE_SCHEMA_VERSION:
                raise StoreError(
                    f"{path}: run database schema version {version!r} is not supported by this townsfolk "
                    f"(expected {STORE_SCHEMA_VERSION}); use a matching townsfolk version to read it"
                )
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"{path}: damaged or not a SQLite database ({exc})") from None
        except StoreError:
            conn.close()
            raise
        return cls(path, conn, readonly=readonly)

    @staticmethod
    def _connect(path: Path, readonly: bool) -> sqlite3.Connection:
        check_regular(path)
        if not readonly:
            for p, what in ((path.parent, "folder"), (path, "file")):
                if p.exists() and not os.access(p, os.W_OK):
                    raise StoreError(f"{path}: the run {what} {p} is read-only; a run is continued in place, so "
                                     f"make it writable, or branch it elsewhere with --fork {path.parent} --at T --out NEW")
        try:
            if readonly:
                conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False, timeout=10.0)
            else:
                conn = sqlite3.connect(str(path), check_same_thread=False, timeout=10.0)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=10000")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path}: damaged or not a SQLite database ({exc})") from None
        return conn

    def copy_to(self, path: Path) -> None:
        """Copy the whole file, consistent while it is being written, to ``path`` (a fork)."""
        dst = sqlite3.connect(str(path))
        try:
            self.conn.backup(dst)
        finally:
            dst.close()

    def close(self) -> None:
        with self._journal_lock:
            journal, self._journal = self._journal, None
            self._closed = True
        for conn in (journal, self.conn):
            try:
                if conn is not None:
                    conn.close()
            except sqlite3.Error:  # pragma: no cover
                pass
        if self.lock is not None:
            self.lock.release()

    # -- accepted commands, durable before they are acknowledged ------------------------------

    _closed = False

    def journal_command(self, applies_at: int, command: dict[str, Any]) -> bool:
        """Keep a command the run accepted until the tick that applies it is committed, so a
        run killed before then applies it when resumed. Called by the control channel's
        threads on their own connection (the tick's transaction is never split); False when
        it could not be written (the acknowledgement then says it is not kept)."""
        if self.readonly:
            return False
        try:
            with self._journal_lock:
                if self._closed:
                    return False
                if self._journal is None:
                    self._journal = sqlite3.connect(str(self.path), timeout=10.0, check_same_thread=False)
                    self._journal.execute("PRAGMA busy_timeout=10000")
                with self._journal:
                    self._journal.execute(
                        "INSERT INTO pending_commands(applies_at, command, submitted) VALUES (?, ?, ?)",
                        (applies_at, json.dumps(command, default=str), datetime.now().isoformat(timespec="seconds")))
            return True
        except (sqlite3.Error, OSError):
            return False

    def pending_commands(self, after_tick: int) -> list[dict[str, Any]]:
        """Commands accepted for a tick after ``after_tick`` (never committed), in the order accepted."""
        if not self._has_table("pending_commands"):
            return []
        rows = self.conn.execute("SELECT command FROM pending_commands WHERE applies_at > ? ORDER BY seq",
                                 (after_tick,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def reschedule_pending(self, after_tick: int, applies_at: int) -> None:
        """The pending commands (after ``after_tick``) now apply at ``applies_at``; those of
        committed ticks are forgotten (their records hold them)."""
        self._check_writable()
        with self.conn:
            self.conn.execute("DELETE FROM pending_commands WHERE applies_at <= ?", (after_tick,))
            self.conn.execute("UPDATE pending_commands SET applies_at = ? WHERE applies_at > ?", (applies_at, after_tick))

    def drop_pending(self) -> None:
        """Forget every pending command (a fork: they belong to the run it came from)."""
        self._check_writable()
        with self.conn:
            self.conn.execute("DELETE FROM pending_commands")

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- metadata ---------------------------------------------------------------

    def meta(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self.conn.execute("SELECT key, value FROM run_meta")}

    def set_meta(self, **values: Any) -> None:
        self._check_writable()
        with self.conn:
            self.conn.executemany(
                "INSERT OR REPLACE INTO run_meta(key, value) VALUES (?, ?)",
                [(k, json.dumps(v, default=str)) for k, v in scrub(values).items()],
            )

    # -- writing ----------------------------------------------------------------

    def _check_writable(self) -> None:
        if self.readonly:
            raise StoreError(f"{self.path}: opened read-only")

    def commit_tick(self, tick_records: TickRecords, snapshot: Snapshot | None = None) -> None:
        """Write one tick (and optionally a snapshot of the state after it) atomically.

        Ticks must follow one another without gaps; a tick already stored is refused.
        """
        self._check_writable()
        tick = tick_records.tick
        last = self.last_tick()
        if last is not None and tick != last + 1:
            raise StoreError(f"{self.path}: tick {tick} does not follow the last committed tick {last}")
        rows = [(tick, seq, r.kind, r.resident, _record_json(r.data)) for seq, r in enumerate(tick_records.records)]
        answers = [
            (tick, seq, log.source, a.call_no, a.call_id, a.purpose, a.request, a.answer, a.info)
            for seq, (log, a) in enumerate((log, a) for log in self._answer_logs for a in log.take())
        ]
        try:
            with self.conn:
                self.conn.execute(
                    "INSERT INTO ticks(tick, time, n_records) VALUES (?, ?, ?)",
                    (tick, tick_records.time.isoformat(), len(rows)),
                )
                if rows:
                    self.conn.executemany(
                        "INSERT INTO records(tick, seq, kind, resident, data) VALUES (?, ?, ?, ?, ?)", rows
                    )
                if answers:
                    self.conn.executemany(
                        "INSERT INTO llm_answers(tick, seq, source, call_no, call_id, purpose, request, answer, info)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", answers,
                    )
                if snapshot is not None:
                    self._write_snapshot(snapshot)
        except sqlite3.IntegrityError:
            raise StoreError(f"{self.path}: tick {tick} is already committed") from None
        self._last_tick = tick
        self._last_known = True

    def save_snapshot(self, snapshot: Snapshot) -> None:
        """Store (or replace) a snapshot of an already committed tick."""
        self._check_writable()
        with self.conn:
            self._write_snapshot(snapshot)

    def _write_snapshot(self, s: Snapshot) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO snapshots(tick, time, state, minds) VALUES (?, ?, ?, ?)",
            (s.tick, s.time.isoformat(), _pack(s.state), _pack(s.minds)),
        )
        if self._has_table("snapshot_marks"):
            marks = [(s.tick, t, self.conn.execute(f'SELECT COALESCE(MAX(rowid), 0) FROM "{t}"').fetchone()[0])
                     for t in _state_tables(self.conn)]
            self.conn.execute("DELETE FROM snapshot_marks WHERE tick = ?", (s.tick,))
            self.conn.executemany("INSERT INTO snapshot_marks(tick, name, max_rowid) VALUES (?, ?, ?)", marks)

    def ensure_tables(self) -> None:
        """Add tables a run database of this schema version may lack (made by an older townsfolk)."""
        self._check_writable()
        self.conn.executescript(_SCHEMA)

    def truncate_after(self, tick: int, state_tick: int | None = None) -> None:
        """Roll the whole file back, in one transaction: every tick, record, snapshot and
        recorded model answer after ``tick``, and every row of the minds' tables (memory,
        its access log, social ties: any other table with a ``tick`` column) after
        ``state_tick`` (default ``tick``). A resume restores the snapshot of ``state_tick``
        and re-runs the ticks up to ``tick``, which write those rows again. Content-keyed
        caches (embeddings) and the resident registry are kept: they hold no tick's state.
        """
        self._check_writable()
        truncate_file_after(self.conn, tick, state_tick)
        self._last_known = False

    # -- resume and fork ------------------------------------------------------------------

    def resume_point(self, extend_by: timedelta | None = None) -> ResumePoint:
        """Cut this run back to where it goes on from, in one operation: its last committed
        tick, the minds' rows to the nearest snapshot at or before it (the re-run writes them
        again), commands accepted for ticks it never committed due right after it; with
        ``extend_by``, the planned end moved to that long after the last tick.

        The opened file is checked first (a run without a snapshot to restore is refused
        before anything changes)."""
        self.ensure_tables()
        last = self.last_tick()
        snap = self.snapshot_at_or_before(last) if last is not None else None
        if last is not None and snap is None:
            raise StoreError(f"{self.path}: no snapshot at or before tick {last}; cannot restore the run")
        meta = self.meta()
        last_time = self.tick_time(last) if last is not None else None
        if last_time is not None and extend_by is not None:
            meta["planned_end"] = (last_time + timedelta(seconds=meta["seconds_per_tick"]) + extend_by).isoformat()
            self.set_meta(planned_end=meta["planned_end"])
        point = ResumePoint(meta=meta, last=last, snapshot=snap, ticks=[], pending=[])
        self.truncate_after(point.kept, point.restored)  # past the kept ticks; minds' rows past the snapshot
        if point.kept > point.restored:
            point.ticks = list(self.iter_ticks(point.restored + 1, point.kept))
        point.pending = self.pending_commands(point.kept)
        self.reschedule_pending(point.kept, point.kept + 1)
        return point

    def mark_resumed(self, after_tick: int) -> None:
        """Note in the metadata that the run was continued after ``after_tick`` (now)."""
        resumes = list(self.meta().get("resumed", []))
        resumes.append({"after_tick": after_tick, "at": datetime.now().isoformat(timespec="seconds")})
        self.set_meta(resumed=resumes)

    def note_rerun(self, after_tick: int, ticks: int, diverged: int) -> None:
        """Note in the metadata how a resume's (or fork's) re-run of ``ticks`` recorded ticks after
        ``after_tick`` went: ``diverged`` of them differed from the record (its world state was
        imposed). Kept with the run, so every later summary of it says so, whoever resumed it."""
        reruns = list(self.meta().get("reruns", []))
        reruns.append({"after_tick": after_tick, "ticks": ticks, "diverged": diverged})
        self.set_meta(reruns=reruns)

    def diverged_ticks(self) -> int:
        """Re-run ticks of this run's resumes and fork that differed from the record (:meth:`note_rerun`)."""
        return sum(int(r.get("diverged", 0)) for r in self.meta().get("reruns", []) if isinstance(r, dict))

    def fork_point(self, at: datetime | int, seconds_per_tick: float) -> ForkPoint:
        """Where a fork ``at`` a time (or a tick number) branches: the last committed tick at
        or before it; a time past the run's end (its last tick plus one step) gives the tick
        after the last, so that it is refused rather than taken as the last."""
        first, last = self.first_tick(), self.last_tick()
        first_time = self.tick_time(first) if first is not None else None
        last_time = self.tick_time(last) if last is not None else None
        if isinstance(at, int):
            tick: int | None = at
        elif last is not None and last_time is not None and at > last_time + timedelta(seconds=seconds_per_tick):
            tick = last + 1
        else:
            tick = self.tick_at_time(at)
        time = self.tick_time(tick) if tick is not None else None
        return ForkPoint(tick=tick, time=time, first=first, first_time=first_time, last=last, last_time=last_time)

    def fork_to(self, run_dir: str | Path, tick: int, changes: dict[str, Any]) -> Path:
        """A new run file in ``run_dir`` branching this run after ``tick``, in one operation:
        a consistent copy of the file, cut after ``tick``, without this run's pending
        commands, its metadata updated with ``changes``. The new file's path.

        The caller holds ``run_dir``'s lock (replays/lock.py) and resumes the fork from it."""
        path = self.db_path(run_dir)
        if path.exists():
            raise StoreError(f"{path}: a run already exists there; choose another folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.copy_to(path)
        fork = RunStore.open(path, readonly=False)
        try:
            fork.ensure_tables()
            fork.truncate_after(tick)
            fork.drop_pending()
            fork.set_meta(**changes)
        finally:
            fork.close()
        return path

    # -- recorded model answers (agents/llm/recorded.py) ------------------------------------

    def answer_replay(self, source: str, after: int, upto: int) -> AnswerReplay:
        """What ``source``'s answer log serves while ticks ``after+1..upto`` are re-run."""
        return AnswerReplay(rows=self.recorded_answers(source, after, upto),
                            first_no=self.last_call_no(source, after) + 1, next_no=self.last_call_no(source, upto) + 1)

    def add_answer_log(self, log: Any) -> None:
        """Write this log's answers with every committed tick (it has ``source`` and ``take()``)."""
        self._answer_logs.append(log)

    @property
    def answer_logs(self) -> list[Any]:
        return list(self._answer_logs)

    def discard_pending(self) -> None:
        """A tick was re-run without being committed: drop the answers it made."""
        for log in self._answer_logs:
            log.discard()

    def end_replay(self) -> None:
        """The re-run after a restore is over: answer logs go back to asking the model."""
        for log in self._answer_logs:
            log.end_replay()

    def recorded_answers(self, source: str, after: int, upto: int) -> list[dict[str, Any]]:
        """Answers of ticks ``after+1..upto`` made through ``source``, in call order."""
        if not self._has_table("llm_answers"):
            return []
        cur = self.conn.execute(
            "SELECT call_no, call_id, purpose, request, answer, info FROM llm_answers"
            " WHERE source = ? AND tick > ? AND tick <= ? ORDER BY tick, seq", (source, after, upto))
        keys = ("call_no", "call_id", "purpose", "request", "answer", "info")
        return [dict(zip(keys, row)) for row in cur]

    def last_call_no(self, source: str, upto: int) -> int:
        """The highest call number ``source`` recorded up to tick ``upto`` (0: none)."""
        if not self._has_table("llm_answers"):
            return 0
        row = self.conn.execute(
            "SELECT MAX(call_no) FROM llm_answers WHERE source = ? AND tick <= ?", (source, upto)).fetchone()
        return int(row[0] or 0)

    def _has_table(self, name: str) -> bool:
        return self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone() is not None

    # -- reading ----------------------------------------------------------------

    def last_tick(self) -> int | None:
        if self._last_known and not self.readonly:
            return self._last_tick
        row = self.conn.execute("SELECT MAX(tick) FROM ticks").fetchone()
        self._last_tick = row[0] if row else None
        self._last_known = True
        return self._last_tick

    def first_tick(self) -> int | None:
        row = self.conn.execute("SELECT MIN(tick) FROM ticks").fetchone()
        return row[0] if row else None

    def tick_time(self, tick: int) -> datetime | None:
        row = self.conn.execute("SELECT time FROM ticks WHERE tick = ?", (tick,)).fetchone()
        return datetime.fromisoformat(row[0]) if row else None

    def tick_at_time(self, when: datetime) -> int | None:
        """The last committed tick whose time is at or before ``when``."""
        row = self.conn.execute(
            "SELECT tick FROM ticks WHERE time <= ? ORDER BY tick DESC LIMIT 1", (when.isoformat(),)
        ).fetchone()
        return row[0] if row else None

    def iter_ticks(self, start: int = 0, end: int | None = None,
                   kinds: Collection[str] | None = None) -> Iterator[TickRecords]:
        """Committed ticks ``start..end`` (inclusive), in order, with their records (only those
        of ``kinds`` when given: every tick is still yielded, with fewer records)."""
        hi = end if end is not None else (1 << 62)
        ticks = self.conn.execute(
            "SELECT tick, time FROM ticks WHERE tick BETWEEN ? AND ? ORDER BY tick", (start, hi)
        ).fetchall()
        if not ticks:
            return
        only = sorted(set(kinds)) if kinds is not None else None
        where = f" AND kind IN ({','.join('?' * len(only))})" if only else (" AND 0" if only is not None else "")
        cur = self.conn.execute(
            f"SELECT tick, kind, resident, data FROM records WHERE tick BETWEEN ? AND ?{where} ORDER BY tick, seq",
            (ticks[0][0], ticks[-1][0], *(only or ())),
        )
        pending = cur.fetchone()
        for tick, time in ticks:
            recs: list[Record] = []
            while pending is not None and pending[0] < tick:
                pending = cur.fetchone()
            while pending is not None and pending[0] == tick:
                recs.append(build(Record, {"kind": pending[1], "resident": pending[2], "data": _loads(pending[3])}))
                pending = cur.fetchone()
            yield build(TickRecords, {"tick": tick, "time": datetime.fromisoformat(time), "records": recs})

    def resident_names(self) -> list[str]:
        """The run's residents: as its meta lists them, else everyone named by a record."""
        return list(self.meta().get("resident_names") or []) or sorted(
            r[0] for r in self.conn.execute("SELECT DISTINCT resident FROM records WHERE resident IS NOT NULL"))

    def snapshot_ticks(self) -> list[int]:
        return [r[0] for r in self.conn.execute("SELECT tick FROM snapshots ORDER BY tick")]

    def snapshot_at_or_before(self, tick: int) -> Snapshot | None:
        row = self.conn.execute(
            "SELECT tick, time, state, minds FROM snapshots WHERE tick <= ? ORDER BY tick DESC LIMIT 1", (tick,)
        ).fetchone()
        if row is None:
            return None
        try:
            return Snapshot(tick=row[0], time=datetime.fromisoformat(row[1]), state=_unpack(row[2]), minds=_unpack(row[3]))
        except (zlib.error, zstandard.ZstdError, ValueError) as exc:
            raise StoreError(f"{self.path}: snapshot of tick {row[0]} is damaged ({exc})") from None

    def missing_ticks(self) -> list[int]:
        """Tick numbers absent between the first and the last committed tick."""
        out: list[int] = []
        prev: int | None = None
        for (t,) in self.conn.execute("SELECT tick FROM ticks ORDER BY tick"):
            if prev is not None and t != prev + 1:
                out.extend(range(prev + 1, t))
            prev = t
        return out

    def count(self, kind: str) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM records WHERE kind = ?", (kind,)).fetchone()[0]

    def records_digest(self) -> str:
        """A hash of the ordered committed records (tick, game time, kind, resident, payload)
        without wall-clock measurements (latencies): two runs that did the same have the
        same digest, however long their calls took or however often they were resumed."""
        h = hashlib.sha256()
        cur = self.conn.execute(
            "SELECT t.tick, t.time, r.kind, r.resident, r.data FROM ticks t"
            " LEFT JOIN records r ON r.tick = t.tick ORDER BY t.tick, r.seq")
        for tick, time, kind, resident, data in cur:
            if data is not None and any(k in data for k in TIMING_KEYS):
                data = json.dumps(_untimed(json.loads(data)), sort_keys=True, separators=(",", ":"))
            h.update(f"{tick}\x1f{time}\x1f{kind}\x1f{resident}\x1f{data}\x1e".encode())
        return h.hexdigest()

    def records_between(self, kinds: tuple[str, ...], lo: int, hi: int,
                        newest_first: bool = False) -> Iterator[tuple[int, str, str | None, str]]:
        """(tick, kind, resident, data JSON) of records of ``kinds`` in ticks ``lo+1..hi``."""
        marks = ",".join("?" * len(kinds))
        order = "DESC" if newest_first else "ASC"
        yield from self.conn.execute(
            f"SELECT tick, kind, resident, data FROM records WHERE kind IN ({marks}) AND tick > ? AND tick <= ? "
            f"ORDER BY tick {order}, seq {order}", (*kinds, lo, hi))

    def chat_pair_counts(self, lo: int, hi: int) -> list[tuple[str, str, int]]:
        """(speaker, listener, lines) of chat records in ticks ``lo+1..hi``."""
        return self.conn.execute(
            "SELECT COALESCE(NULLIF(json_extract(data, '$.speaker'), ''), resident, ''), "
            "COALESCE(json_extract(data, '$.listener'), ''), COUNT(*) FROM records "
            "WHERE kind = 'chat' AND tick > ? AND tick <= ? GROUP BY 1, 2", (lo, hi)).fetchall()

    def town_note_rows(self, lo: int, hi: int) -> Iterator[tuple[str, str]]:
        """(kind, data JSON) of town-level notes and injections in ticks ``lo+1..hi``, newest first."""
        yield from self.conn.execute(
            "SELECT kind, data FROM records WHERE tick > ? AND tick <= ? AND "
            "((kind = 'note' AND resident IS NULL) OR kind = 'inject') ORDER BY tick DESC, seq DESC", (lo, hi))

    def counts(self) -> dict[str, Any]:
        """What a run holds, counted from the file (world.summary adds mind errors and
        health, the digest, believability and leaks for ``replay --summary``).

        events counts world events (actions, object changes, chat lines, injections,
        encounter steps, notes); conversations counts distinct conversation ids; injected
        counts accepted injected commands (refused ones are under injected_refused).
        """
        meta = self.meta()
        n, first, last = self.conn.execute("SELECT COUNT(*), MIN(tick), MAX(tick) FROM ticks").fetchone()
        start_time = self.tick_time(first) if first is not None else None
        end_time = self.tick_time(last) if last is not None else None
        by_kind = dict(self.conn.execute("SELECT kind, COUNT(*) FROM records GROUP BY kind").fetchall())
        conversations, injected, refused = self._talk_counts()
        names = self.resident_names()
        return {
            "run": str(self.path.parent),
            "town": meta.get("town_name", meta.get("town")),
            "model": meta.get("model"),
            "seed": meta.get("seed"),
            "forked_from": meta.get("forked_from"),
            "ticks": n,
            "first_tick": first,
            "last_tick": last,
            "missing_ticks": self.missing_ticks(),
            "start_time": start_time.isoformat() if start_time else None,
            "end_time": end_time.isoformat() if end_time else None,
            "residents": len(names),
            "resident_names": names,
            "events": sum(by_kind.get(k, 0) for k in ("action", "object", "chat", "inject", "encounter", "note")),
            "conversations": conversations,
            "chat_lines": by_kind.get("chat", 0),
            "injected": injected,
            "injected_refused": refused,
            "llm_calls": by_kind.get("llm", 0),
            "memories": by_kind.get("memory", 0),
            "records_by_kind": by_kind,
            "snapshots": len(self.snapshot_ticks()),
        }

    def _talk_counts(self) -> tuple[int, int, int]:
        """(distinct conversations, accepted injected commands, refused ones)."""
        conv_ids: set[str] = set()
        injected = refused = 0
        for kind, data in self.conn.execute("SELECT kind, data FROM records WHERE kind IN ('chat', 'inject')"):
            d = json.loads(data)
            if kind == "chat":
                conv_ids.add(d.get("conversation_id") or f"{min(d.get('speaker',''), d.get('listener',''))}|{max(d.get('speaker',''), d.get('listener',''))}")
            elif d.get("accepted"):
                injected += 1
            else:
                refused += 1
        return len(conv_ids), injected, refused

    def mind_error_rows(self) -> Iterator[tuple[str, str | None, str]]:
        """(kind, resident, data JSON) of every model call and mind error record (replays.health)."""
        yield from self.conn.execute("SELECT kind, resident, data FROM records WHERE kind IN ('llm', 'mind_error')")

    def fact_notes(self) -> list[tuple[int, str, str | None, dict[str, Any]]]:
        """(tick, game time, resident, payload) of every note about a fact, in order (replays.leaks)."""
        rows = self.conn.execute(
            "SELECT r.tick, t.time, r.resident, r.data FROM records r JOIN ticks t ON t.tick = r.tick "
            "WHERE r.kind = 'note' AND r.data LIKE '%fact_id%' ORDER BY r.tick, r.seq")
        return [(tick, time, who, json.loads(data)) for tick, time, who, data in rows]



def _state_tables(conn: sqlite3.Connection) -> list[str]:
    """Tables of the minds' state in this file: every table with a ``tick`` column (and
    rowids) that is not one of the run's own."""
    out = []
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name").fetchall():
        if table in _RUN_TABLES:
            continue
        if "tick" in {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}:
            try:
                conn.execute(f'SELECT rowid FROM "{table}" LIMIT 1')
            except sqlite3.OperationalError:  # WITHOUT ROWID: cut back by tick only
                continue
            out.append(table)
    return out


def truncate_file_after(conn: sqlite3.Connection, tick: int, state_tick: int | None = None) -> None:
    """The one roll-back of a run file (RunStore.truncate_after; a minds-only file through
    memory.store.truncate_after), in one transaction: the run's own tables after ``tick``,
    every other table with a ``tick`` column (memory, access log, social ties) after
    ``state_tick`` (default ``tick``), or to the rows it held at that snapshot where
    snapshot_marks has them; then last-access times from the surviving access log."""
    state_tick = tick if state_tick is None else state_tick
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    marks: dict[str, int] | None = None
    if "snapshot_marks" in tables and state_tick >= 0:
        found = dict(conn.execute("SELECT name, max_rowid FROM snapshot_marks WHERE tick = ?", (state_tick,)))
        marks = found or None  # a snapshot of an older townsfolk: cut back by tick
    state = _state_tables(conn)
    with conn:
        for table in tables:
            columns = {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}
            if "tick" not in columns:
                continue
            if table in _RUN_TABLES:
                conn.execute(f'DELETE FROM "{table}" WHERE tick > ?', (tick,))
            elif table in state and marks is not None:  # a table made after the snapshot held nothing then
                conn.execute(f'DELETE FROM "{table}" WHERE rowid > ?', (marks.get(table, 0),))
            else:
                conn.execute(f'DELETE FROM "{table}" WHERE tick > ?', (state_tick,))
        if "memory_records" in tables:
            recompute_last_access(conn)


def _untimed(value: Any) -> Any:
    """``value`` without wall-clock keys (see TIMING_KEYS), at any depth."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


# -- the minds' tables: memory stream, its access log, embeddings, resident registry (memory.store) --

MEMORY_SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_records (
    id INTEGER PRIMARY KEY,
    resident TEXT NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    tick INTEGER NOT NULL,
    created TEXT NOT NULL,
    last_access TEXT NOT NULL,
    importance INTEGER NOT NULL,
    evidence TEXT NOT NULL DEFAULT '[]',
    embedding_key TEXT NOT NULL,
    subject TEXT, predicate TEXT, object TEXT
);
CREATE INDEX IF NOT EXISTS memory_records_resident ON memory_records(resident, tick);
CREATE TABLE IF NOT EXISTS memory_access (
    memory_id INTEGER NOT NULL,
    tick INTEGER NOT NULL,
    time TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_access_memory ON memory_access(memory_id);
CREATE TABLE IF NOT EXISTS memory_embeddings (
    key TEXT NOT NULL,
    model TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (key, model)
);
CREATE TABLE IF NOT EXISTS memory_residents (
    name TEXT PRIMARY KEY,
    persona TEXT NOT NULL,
    embedder TEXT NOT NULL,
    options TEXT NOT NULL DEFAULT '{}'
);
"""

# a memory row as memory.store reads and writes it
MEMORY_COLUMNS = (
    "id, resident, kind, text, tick, created, last_access, importance, evidence, "
    "embedding_key, subject, predicate, object"
)


def connect_readonly(db_path: Path | str) -> sqlite3.Connection:
    """A plain read-only connection to a run file, for the module-level readers below."""
    check_regular(Path(db_path))
    return sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)


class SharedConnection(sqlite3.Connection):
    """One writing connection to a run file, shared by every resident's memory store in a process.

    Why: each connection holds two open files (the database and its WAL), so a town of 10,000
    residents opened 20,000 files and died at the process's open-file limit ('unable to open
    database file'). The minds run on one thread and each write is its own transaction, so
    one connection serves them all; :meth:`close` only closes it when its last user lets go."""

    users: int = 0
    key: tuple[str, int, int, int] | None = None

    def close(self) -> None:
        if self.key is not None:
            with _SHARED_LOCK:
                self.users -= 1
                if self.users > 0:
                    return
                if _SHARED.get(self.key) is self:
                    del _SHARED[self.key]
        super().close()


_SHARED: dict[tuple[str, int, int, int], SharedConnection] = {}
_SHARED_LOCK = threading.Lock()


def _file_key(path: Path) -> tuple[str, int, int, int] | None:
    """(path, device, inode, pid): a file deleted and made again is another file."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path.resolve()), st.st_dev, st.st_ino, os.getpid())


def _shared_writer(db_path: Path | str) -> SharedConnection:
    """The process's writing connection to ``db_path`` (made on first use), one user more."""
    path = Path(db_path)
    with _SHARED_LOCK:
        key = _file_key(path)
        conn = _SHARED.get(key) if key is not None else None
        if conn is None:
            conn = sqlite3.connect(str(path), timeout=10.0, check_same_thread=False, factory=SharedConnection)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=10000")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(MEMORY_SCHEMA)
            conn.key = _file_key(path)
            if conn.key is not None:
                _SHARED[conn.key] = conn
        conn.users += 1
        return conn


def connect_memory(db_path: Path | str | None, *, readonly: bool = False) -> sqlite3.Connection:
    """A connection to the run file's memory tables (WAL), or a private in-memory database.

    Writers of one file in one process share a connection (:class:`SharedConnection`)."""
    if db_path is not None:
        check_regular(Path(db_path))
    if db_path is None:
        conn = sqlite3.connect(":memory:", check_same_thread=False)
    elif readonly:
        path = Path(db_path)
        if not path.exists():
            raise FileNotFoundError(f"run database not found: {path}")
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=5000")
        return conn
    else:
        return _shared_writer(db_path)
    conn.executescript(MEMORY_SCHEMA)
    return conn


def memory_rows(conn: sqlite3.Connection, resident: str, as_of_tick: int | None = None) -> list[tuple]:
    """``resident``'s memory rows (MEMORY_COLUMNS) in creation order, up to ``as_of_tick`` if given."""
    if as_of_tick is None:
        return conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memory_records WHERE resident = ? ORDER BY id",
                            (resident,)).fetchall()
    return conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memory_records WHERE resident = ? AND tick <= ? ORDER BY id",
                        (resident, as_of_tick)).fetchall()


def memory_access_as_of(conn: sqlite3.Connection, resident: str, as_of_tick: int) -> dict[int, str]:
    """memory id -> its last access time (ISO) as logged up to ``as_of_tick``."""
    return dict(conn.execute(
        """SELECT a.memory_id, MAX(a.time) FROM memory_access a
           JOIN memory_records r ON r.id = a.memory_id
           WHERE r.resident = ? AND a.tick <= ? GROUP BY a.memory_id""",
        (resident, as_of_tick),
    ).fetchall())


def stored_vectors(conn: sqlite3.Connection, model: str, keys: list[str]) -> Iterator[tuple[str, bytes]]:
    """(text key, vector bytes) of ``keys`` already embedded by ``model``."""
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        marks = ",".join("?" * len(chunk))
        yield from conn.execute(
            f"SELECT key, vector FROM memory_embeddings WHERE model = ? AND key IN ({marks})", (model, *chunk))


def store_vectors(conn: sqlite3.Connection, rows: list[tuple[str, str, bytes]]) -> None:
    """Keep (key, model, vector bytes) in the run's embedding cache (first one wins)."""
    with conn:
        conn.executemany("INSERT OR IGNORE INTO memory_embeddings (key, model, vector) VALUES (?, ?, ?)", rows)


def insert_memories(conn: sqlite3.Connection, rows: list[tuple]) -> list[int]:
    """Write memory rows (MEMORY_COLUMNS less ``id``) in one transaction; their new ids."""
    ids = []
    with conn:
        for row in rows:
            cur = conn.execute(f"INSERT INTO memory_records ({MEMORY_COLUMNS}) VALUES (NULL,?,?,?,?,?,?,?,?,?,?,?,?)", row)
            ids.append(int(cur.lastrowid))
    return ids


def log_accesses(conn: sqlite3.Connection, rows: list[tuple[int, int, str]]) -> None:
    """(memory id, tick, time): log each refresh and set the memory's last access."""
    with conn:
        conn.executemany("INSERT INTO memory_access (memory_id, tick, time) VALUES (?, ?, ?)", rows)
        conn.executemany("UPDATE memory_records SET last_access = ? WHERE id = ?", [(t, m) for m, _tick, t in rows])


def roll_back_resident(conn: sqlite3.Connection, resident: str, tick: int) -> None:
    """Forget ``resident``'s memories and accesses after ``tick``; recompute its last accesses."""
    mine = "(SELECT id FROM memory_records WHERE resident = ?)"
    with conn:
        conn.execute(f"DELETE FROM memory_access WHERE tick > ? AND memory_id IN {mine}", (tick, resident))
        conn.execute("DELETE FROM memory_records WHERE resident = ? AND tick > ?", (resident, tick))
        conn.execute(
            """UPDATE memory_records SET last_access = COALESCE(
                   (SELECT MAX(a.time) FROM memory_access a WHERE a.memory_id = memory_records.id
                    AND a.time > memory_records.created), memory_records.created)
               WHERE resident = ?""",
            (resident,),
        )


def recompute_last_access(conn: sqlite3.Connection) -> None:
    """After rows were cut: drop accesses of forgotten memories, and set each memory's last
    access from the accesses that remain."""
    conn.execute("DELETE FROM memory_access WHERE memory_id NOT IN (SELECT id FROM memory_records)")
    conn.execute(
        """UPDATE memory_records SET last_access = COALESCE(
               (SELECT MAX(a.time) FROM memory_access a WHERE a.memory_id = memory_records.id
                AND a.time > memory_records.created), memory_records.created)"""
    )


def truncate_memory_after(db_path: Path | str, tick: int) -> None:
    """Forget every memory, access and social tie of a tick after ``tick`` in a file of
    minds' tables alone (the sandbox, tests): the run file's one roll-back."""
    conn = connect_memory(db_path)
    try:
        truncate_file_after(conn, tick)
    finally:
        conn.close()


def register_resident(conn: sqlite3.Connection, name: str, persona_json: str, embedder: str,
                      options_json: str = "{}") -> None:
    """Keep a resident's persona and embedder in the file, so interviews need only the file."""
    with conn:
        conn.execute("INSERT OR REPLACE INTO memory_residents (name, persona, embedder, options) VALUES (?,?,?,?)",
                     (name, persona_json, embedder, options_json))


def registered_residents(db_path: Path | str) -> dict[str, dict]:
    """name -> {persona, embedder, options} for every resident whose memory is in the file."""
    conn = connect_memory(db_path, readonly=True)
    try:
        try:
            rows = conn.execute("SELECT name, persona, embedder, options FROM memory_residents").fetchall()
        except sqlite3.OperationalError:
            return {}
        return {
            name: {"persona": json.loads(p), "embedder": e, "options": json.loads(o)}
            for name, p, e, o in rows
        }
    finally:
        conn.close()


def resident_personas(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    """(name, persona JSON, embedder) of every registered resident (none if the table is absent)."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "memory_residents" not in tables:
        return []
    return conn.execute("SELECT name, persona, embedder FROM memory_residents").fetchall()


def text_records(conn: sqlite3.Connection) -> Iterator[tuple[str, str | None, str, str]]:
    """(kind, resident, data JSON, game time) of every plan, action, chat and memory record, in order."""
    yield from conn.execute(
        "SELECT r.kind, r.resident, r.data, t.time FROM records r JOIN ticks t ON t.tick = r.tick "
        "WHERE r.kind IN ('plan', 'action', 'chat', 'memory') ORDER BY r.tick, r.seq")


# -- times of a run file, falling back to the memory tables (a memory store without ticks) --

def time_span(conn: sqlite3.Connection) -> tuple[datetime | None, datetime | None]:
    """The first and last recorded game time (naive)."""
    for sql in ("SELECT MIN(time), MAX(time) FROM ticks", "SELECT MIN(created), MAX(created) FROM memory_records"):
        try:
            lo, hi = conn.execute(sql).fetchone()
        except sqlite3.OperationalError:
            continue
        if lo:
            return datetime.fromisoformat(lo).replace(tzinfo=None), datetime.fromisoformat(hi).replace(tzinfo=None)
    return None, None


def last_recorded_tick(conn: sqlite3.Connection) -> int | None:
    for sql in ("SELECT MAX(tick) FROM ticks", "SELECT MAX(tick) FROM memory_records"):
        try:
            row = conn.execute(sql).fetchone()
        except sqlite3.OperationalError:
            continue
        if row and row[0] is not None:
            return int(row[0])
    return None


def recorded_time_of(conn: sqlite3.Connection, tick: int) -> datetime | None:
    """The game time of the last tick at or before ``tick``."""
    for sql in ("SELECT time FROM ticks WHERE tick <= ? ORDER BY tick DESC LIMIT 1",
                "SELECT created FROM memory_records WHERE tick <= ? ORDER BY tick DESC LIMIT 1"):
        try:
            row = conn.execute(sql, (tick,)).fetchone()
        except sqlite3.OperationalError:
            continue
        if row:
            return datetime.fromisoformat(row[0]).replace(tzinfo=None)
    return None


def recorded_tick_at(conn: sqlite3.Connection, when: datetime | None) -> tuple[int, datetime | None]:
    """The last tick at or before ``when`` (or the last tick), and its time."""
    big = 2**62
    for table, col in (("ticks", "time"), ("memory_records", "created")):
        try:
            if when is None:
                row = conn.execute(f"SELECT tick, {col} FROM {table} ORDER BY tick DESC LIMIT 1").fetchone()
            else:
                row = conn.execute(
                    f"SELECT tick, {col} FROM {table} WHERE {col} <= ? ORDER BY tick DESC LIMIT 1",
                    (when.isoformat(),),
                ).fetchone()
        except sqlite3.OperationalError:
            continue
        if row:
            return int(row[0]), datetime.fromisoformat(row[1]).replace(tzinfo=None)
    return (big if when is None else -1), when


# -- social ties (memory.social) ----------------------------------------------------------------

SOCIAL_SCHEMA = """
CREATE TABLE IF NOT EXISTS social_edges (
    resident TEXT NOT NULL,
    other TEXT NOT NULL,
    tick INTEGER NOT NULL,
    relation TEXT NOT NULL,
    closeness REAL NOT NULL,
    interactions INTEGER NOT NULL,
    note TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS social_edges_pair ON social_edges(resident, other, tick);
"""


def ensure_social_table(conn: sqlite3.Connection) -> None:
    conn.executescript(SOCIAL_SCHEMA)


def log_tie(conn: sqlite3.Connection, resident: str, other: str, tick: int, relation: str, closeness: float,
            interactions: int, note: str) -> None:
    """Append one change of ``resident``'s tie to ``other``."""
    with conn:
        conn.execute(
            "INSERT INTO social_edges (resident, other, tick, relation, closeness, interactions, note)"
            " VALUES (?,?,?,?,?,?,?)",
            (resident, other, tick, relation, closeness, interactions, note),
        )


def social_rows(db_path: Path | str, at_tick: int | None = None) -> tuple[list[tuple], list[str]]:
    """Every tie change up to ``at_tick`` (resident, other, tick, relation, closeness,
    interactions, note; in order) and the registered residents' names."""
    path = Path(db_path)
    if not path.exists():
        raise FileNotFoundError(f"run database not found: {path}")
    check_regular(path)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        try:
            rows = conn.execute(
                "SELECT resident, other, tick, relation, closeness, interactions, note FROM social_edges"
                " WHERE tick <= ? ORDER BY tick, rowid",
                (at_tick if at_tick is not None else 2**62,),
            ).fetchall()
        except sqlite3.OperationalError:
            rows = []
        try:
            names = [r[0] for r in conn.execute("SELECT name FROM memory_residents")]
        except sqlite3.OperationalError:
            names = []
    finally:
        conn.close()
    return rows, names


def copy_file(source: Path, target: Path) -> None:
    """A consistent copy of a run file that another connection may still be writing."""
    with sqlite3.connect(str(source)) as src, sqlite3.connect(str(target)) as dst:
        src.backup(dst)
