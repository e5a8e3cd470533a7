"""The run database: atomic gap-free ticks, snapshots, versions, damage, concurrent reading."""

from __future__ import annotations

import json
import os
import sqlite3
import zlib
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from maps.contracts import Record, TickRecords
from memory.runfile import RunStore, Snapshot, StoreError

T0 = datetime(2026, 2, 13, 7, 0)


def tick(n: int, *records: Record) -> TickRecords:
    return TickRecords(tick=n, time=T0 + timedelta(seconds=10 * n), records=list(records))


def test_ticks_round_trip_in_order(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, {"town": "default", "resident_names": ["A", "B"]})
    store.commit_tick(tick(0, Record(kind="move", resident="A", data={"tile": [1, 2], "address": ""})))
    store.commit_tick(tick(1, Record(kind="chat", resident="A", data={"speaker": "A", "listener": "B", "text": "hi",
                                                                        "conversation_id": "c1"}),
                           Record(kind="chat", resident="B", data={"speaker": "B", "listener": "A", "text": "yo",
                                                                   "conversation_id": "c1"})))
    store.commit_tick(tick(2))
    got = list(store.iter_ticks())
    assert [t.tick for t in got] == [0, 1, 2]
    assert [r.data["text"] for r in got[1].records] == ["hi", "yo"]
    assert got[2].records == [] and got[2].time == T0 + timedelta(seconds=20)
    assert [t.tick for t in store.iter_ticks(1, 1)] == [1]
    s = store.counts()
    assert (s["ticks"], s["first_tick"], s["last_tick"], s["missing_ticks"]) == (3, 0, 2, [])
    assert s["conversations"] == 1 and s["residents"] == 2 and s["resident_names"] == ["A", "B"]
    assert s["start_time"] == T0.isoformat()
    for key in ("events", "injected", "llm_calls", "end_time"):
        assert key in s


def test_ticks_can_be_read_with_only_some_kinds_of_record(tmp_path: Path) -> None:
    """The run summary reads a routine day without its moves (nine in ten of its records): every
    tick is still there, with only the records asked for; none asked for, none given."""
    store = RunStore.create(tmp_path, {"resident_names": ["A"]})
    store.commit_tick(tick(0, Record(kind="move", resident="A", data={"tile": [1, 2], "address": "x"}),
                           Record(kind="action", resident="A", data={"description": "reading", "address": "x"})))
    store.commit_tick(tick(1, Record(kind="move", resident="A", data={"tile": [1, 3], "address": "x"})))
    got = list(store.iter_ticks(kinds=["action"]))
    assert [t.tick for t in got] == [0, 1]
    assert [[r.kind for r in t.records] for t in got] == [["action"], []]
    assert [len(t.records) for t in store.iter_ticks(kinds=[])] == [0, 0]
    assert [[r.data["tile"] for r in t.records] for t in store.iter_ticks(kinds=("move",))] == [[[1, 2]], [[1, 3]]]
    assert store.resident_names() == ["A"]


def test_gaps_and_duplicates_are_refused(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, {})
    store.commit_tick(tick(0))
    with pytest.raises(StoreError, match="does not follow"):
        store.commit_tick(tick(2))
    with pytest.raises(StoreError, match="does not follow"):
        store.commit_tick(tick(0))
    assert store.last_tick() == 0 and store.missing_ticks() == []


def test_snapshots_are_found_at_or_before(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, {})
    for n in range(5):
        snap = Snapshot(n, T0, {"tick": n, "residents": {}}, {"A": {"n": n}}) if n % 2 == 0 else None
        store.commit_tick(tick(n), snap)
    assert store.snapshot_at_or_before(3).tick == 2
    assert store.snapshot_at_or_before(4).minds == {"A": {"n": 4}}
    assert store.snapshot_ticks() == [0, 2, 4]
    store.truncate_after(2)
    assert store.last_tick() == 2 and store.snapshot_ticks() == [0, 2]


def test_snapshots_written_with_zlib_still_read_and_a_damaged_one_is_named(tmp_path: Path) -> None:
    """Snapshots are zstd now; a run.db written before (zlib) resumes and forks as it did."""
    store = RunStore.create(tmp_path, {})
    store.commit_tick(tick(0), Snapshot(0, T0, {"tick": 0, "residents": {"A": {"seen": {"B": ["is", "idle"]}}}}, {"A": {}}))
    store.commit_tick(tick(1), Snapshot(1, T0, {"tick": 1, "residents": {}}, {"A": {"n": 1}}))
    conn = sqlite3.connect(tmp_path / "run.db")
    (blob,) = conn.execute("SELECT state FROM snapshots WHERE tick = 0").fetchone()
    assert blob[:4] == b"\x28\xb5\x2f\xfd"  # a zstd frame
    old = zlib.compress(json.dumps({"tick": 0, "residents": {"A": {"seen": [["B", "is", "idle"]]}}}).encode(), 1)
    conn.execute("UPDATE snapshots SET state = ? WHERE tick = 0", (old,))
    conn.execute("UPDATE snapshots SET minds = ? WHERE tick = 1", (b"\x28\xb5\x2f\xfd" + b"not zstd",))
    conn.commit()
    conn.close()
    assert store.snapshot_at_or_before(0).state == {"tick": 0, "residents": {"A": {"seen": [["B", "is", "idle"]]}}}
    with pytest.raises(StoreError, match="snapshot of tick 1 is damaged"):
        store.snapshot_at_or_before(1)


@pytest.mark.parametrize("data", [
    {"tile": (3, 4), "address": "Willow Cafe:kitchen"}, {"x": 0.1, "tiny": 1e-05, "huge": 1e16, "nan": float("nan")},
    {"when": datetime(2026, 2, 13, 7, 0)}, {"emoji": "💬 talking"}, {"big": 2 ** 70, "list": [1, "a", None, True]},
    {"controls": "".join(chr(i) for i in range(128))}, {"nested": {"a": [1, 2]}}, {"s": [2 ** 64 - 1, -2 ** 63]},
])
def test_a_records_payload_is_stored_as_json_wrote_it(tmp_path: Path, data: dict) -> None:
    """The records digest hashes the stored text: the fast encoder must write json's bytes."""
    store = RunStore.create(tmp_path, {})
    store.commit_tick(tick(0, Record(kind="note", resident="A", data=data)))
    (text,) = sqlite3.connect(tmp_path / "run.db").execute("SELECT data FROM records").fetchone()
    assert text == json.dumps(data, separators=(",", ":"), default=str)


def test_readable_while_writing(tmp_path: Path) -> None:
    writer = RunStore.create(tmp_path, {"town": "x"})
    writer.commit_tick(tick(0))
    reader = RunStore.open(tmp_path)  # read-only
    assert reader.last_tick() == 0
    writer.commit_tick(tick(1))
    assert reader.last_tick() == 1
    with pytest.raises(StoreError, match="read-only"):
        reader.commit_tick(tick(2))


def test_an_existing_run_is_not_overwritten(tmp_path: Path) -> None:
    RunStore.create(tmp_path, {}).commit_tick(tick(0))
    with pytest.raises(StoreError, match="already exists"):
        RunStore.create(tmp_path, {})


def test_unknown_schema_version_is_refused(tmp_path: Path) -> None:
    RunStore.create(tmp_path, {}).close()
    conn = sqlite3.connect(tmp_path / "run.db")
    with conn:
        conn.execute("UPDATE run_meta SET value = '99' WHERE key = 'store_schema'")
    conn.close()
    with pytest.raises(StoreError, match="schema version 99 is not supported"):
        RunStore.open(tmp_path)


def test_damaged_or_foreign_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "run.db").write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError, match="damaged or not a SQLite database"):
        RunStore.open(tmp_path / "a")
    (tmp_path / "b").mkdir()
    sqlite3.connect(tmp_path / "b" / "run.db").execute("CREATE TABLE x(y)").connection.close()
    with pytest.raises(StoreError, match="not a townsfolk run database"):
        RunStore.open(tmp_path / "b")
    with pytest.raises(StoreError, match="no run database here"):
        RunStore.open(tmp_path / "c")


def test_api_keys_are_never_stored(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, {"model": "gpt-x", "api_key": "sk-secret", "llm": {"OPENAI_API_KEY": "sk-2", "base": "u"}})
    store.set_meta(token="abc", note="fine")
    raw = (tmp_path / "run.db").read_bytes()
    assert b"sk-secret" not in raw and b"sk-2" not in raw and b'"abc"' not in raw
    meta = store.meta()
    assert meta["model"] == "gpt-x" and meta["llm"] == {"base": "u"} and meta["note"] == "fine"


def test_summary_counts_injections_and_llm_calls(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, {})
    store.commit_tick(tick(0,
                           Record(kind="inject", data={"command": {"kind": "announce", "text": "x"}, "accepted": True}),
                           Record(kind="inject", data={"command": {}, "accepted": False, "message": "bad"}),
                           Record(kind="llm", resident="A", data={"purpose": "plan_day", "call_id": "1", "prompt_hash": "h", "ok": True}),
                           Record(kind="action", resident="A", data={"description": "x"})))
    s = store.counts()
    assert (s["injected"], s["injected_refused"], s["llm_calls"], s["events"]) == (1, 1, 1, 3)
    json.dumps(s)


class FixedAnswers:
    """The store-facing side of agents.llm.recorded.AnswerLog, holding given call numbers."""

    source = "town"

    def __init__(self, *numbers: int) -> None:
        self.pending: list = []
        self.give(*numbers)

    def give(self, *numbers: int) -> None:
        from agents.llm.recorded import Answer

        self.pending = [Answer(n, f"p-{n}", "p", "req", '{"x":1}', "{}") for n in numbers]

    def take(self) -> list:
        out, self.pending = self.pending, []
        return out


def test_truncate_rolls_back_every_table_in_one_place(tmp_path: Path) -> None:
    from memory.store import MemoryDraft, MemoryStore
    from memory.embeddings import get_embedder

    store = RunStore.create(tmp_path, {})
    mem = MemoryStore(tmp_path / "run.db", "A", embedder=get_embedder("hashing"))
    store.conn.execute("CREATE TABLE plugin_rows (tick INTEGER, x TEXT)")
    log = FixedAnswers()
    store.add_answer_log(log)
    for n in range(6):
        log.give(2 * n + 1, 2 * n + 2)
        mem.add(MemoryDraft(kind="observation", text=f"saw {n}", importance=3), n, T0 + timedelta(seconds=10 * n))
        if n == 3:  # written at tick 3 about tick 1 (a memory rated late): gone with tick 3
            mem.add(MemoryDraft(kind="observation", text="late", importance=3), 1, T0 + timedelta(seconds=10))
        store.conn.execute("INSERT INTO plugin_rows VALUES (?, 'x')", (n,))
        store.commit_tick(tick(n, Record(kind="note", data={"text": str(n)})),
                          Snapshot(n, T0, {"tick": n}, {}) if n % 2 == 0 else None)
    mem.retrieve("saw", T0 + timedelta(minutes=5), 5)  # an access at tick 5

    store.truncate_after(4, state_tick=2)
    q = lambda sql: store.conn.execute(sql).fetchone()[0]  # noqa: E731
    assert store.last_tick() == 4 and q("SELECT MAX(tick) FROM records") == 4 and store.snapshot_ticks() == [0, 2, 4]
    assert q("SELECT MAX(call_no) FROM llm_answers") == 10 and store.last_call_no("town", 2) == 6
    assert q("SELECT MAX(tick) FROM memory_records") == 2 and q("SELECT COUNT(*) FROM memory_access") == 0
    assert q("SELECT COUNT(*) FROM memory_records WHERE text = 'late'") == 0
    assert q("SELECT MAX(tick) FROM plugin_rows") == 2
    assert q("SELECT COUNT(*) FROM memory_embeddings") == 7  # keyed by text: kept
    assert q("SELECT MAX(last_access) FROM memory_records") < (T0 + timedelta(minutes=5)).isoformat()
    assert [a["call_no"] for a in store.recorded_answers("town", 2, 4)] == [7, 8, 9, 10]

    store.truncate_after(-1)  # killed before the first committed tick: nothing is left
    assert store.last_tick() is None and q("SELECT COUNT(*) FROM memory_records") == 0
    assert q("SELECT COUNT(*) FROM llm_answers") == 0 and q("SELECT COUNT(*) FROM plugin_rows") == 0


def test_records_digest_ignores_latencies_only(tmp_path: Path) -> None:
    def run(folder: str, latency: float, text: str = "hi") -> str:
        store = RunStore.create(tmp_path / folder, {})
        store.commit_tick(tick(0, Record(kind="llm", resident="A", data={"purpose": "p", "call_id": "p-1",
                                                                          "prompt_hash": "h", "ok": True,
                                                                          "latency_s": latency})))
        store.commit_tick(tick(1, Record(kind="note", data={"text": text})))
        return store.records_digest()

    same = run("a", 0.5)
    assert run("b", 12.25) == same
    assert run("c", 0.5, "ho") != same
    empty = RunStore.create(tmp_path / "d", {})
    assert empty.records_digest() != same


def test_answers_are_committed_with_their_tick(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, {})
    store.add_answer_log(FixedAnswers(1, 2))
    store.commit_tick(tick(0))
    with pytest.raises(StoreError):
        store.commit_tick(tick(0))  # refused: nothing of it is written
    assert store.conn.execute("SELECT tick, call_no FROM llm_answers").fetchall() == [(0, 1), (0, 2)]


def test_one_writer_per_run_folder(tmp_path: Path) -> None:
    from replays.lock import RunFolderBusy, RunLock

    lock = RunLock.acquire(tmp_path / "run")
    with pytest.raises(RunFolderBusy, match=rf"{tmp_path / 'run'}: another townsfolk process \(pid {os.getpid()}\)"):
        RunLock.acquire(tmp_path / "run")
    reader_can_read = RunStore.create(tmp_path / "run", {"seed": 1})  # the store itself does not lock
    reader_can_read.close()
    lock.release()
    lock.release()  # idempotent
    with RunLock.acquire(tmp_path / "run") as again:
        assert again.held
