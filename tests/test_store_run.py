"""The run database: atomic gap-free ticks, snapshots, versions, damage, concurrent reading."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from replays.records import Record, TickRecords
from replays.store import RunStore, Snapshot, StoreError

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
    s = store.summary()
    assert (s["ticks"], s["first_tick"], s["last_tick"], s["missing_ticks"]) == (3, 0, 2, [])
    assert s["conversations"] == 1 and s["residents"] == 2 and s["resident_names"] == ["A", "B"]
    assert s["start_time"] == T0.isoformat()
    for key in ("events", "injected", "llm_calls", "end_time"):
        assert key in s


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
    s = store.summary()
    assert (s["injected"], s["injected_refused"], s["llm_calls"], s["events"]) == (1, 1, 1, 3)
    json.dumps(s)
