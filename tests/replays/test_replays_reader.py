"""Reading run folders: exact seeking, reading while a run writes, clear errors on bad files."""

from __future__ import annotations

import argparse
import random
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from world.cli import replay as replay_command
from replays.frames import FrameState, apply_in_place
from replays.reader import ReaderError, RunReader
from maps.contracts import Record, TickRecords
from memory.runfile import RunStore, Snapshot

T0 = datetime(2024, 2, 13, 7, 0)
NAMES = ["Ada", "Bob", "Cy"]


def synthetic_ticks(n: int, seed: int = 1) -> list[TickRecords]:
    rng = random.Random(seed)
    pos = {name: (i * 3, 2) for i, name in enumerate(NAMES)}
    out = []
    for k in range(n):
        recs = []
        for name in NAMES:
            x, y = pos[name]
            pos[name] = (max(0, min(20, x + rng.choice((-1, 0, 1)))), max(0, min(20, y + rng.choice((-1, 0, 1)))))
            recs.append(Record(kind="move", resident=name, data={"tile": list(pos[name]), "address": f"Cafe:room{x % 3}"}))
            if rng.random() < 0.1:
                recs.append(Record(kind="action", resident=name, data={"description": f"task {k}", "emoji": "☕"}))
            if rng.random() < 0.05:
                other = rng.choice([o for o in NAMES if o != name])
                recs.append(Record(kind="chat", resident=name, data={"speaker": name, "listener": other, "text": f"line {k}"}))
            if rng.random() < 0.05:
                recs.append(Record(kind="memory", resident=name,
                                   data={"memory_id": k, "kind": "observation", "text": f"saw {k}", "importance": 3}))
        if k % 17 == 0:
            recs.append(Record(kind="object", data={"address": "Cafe:kitchen:stove", "old_state": "idle",
                                                    "new_state": f"state {k}", "by": "Ada"}))
        if k % 23 == 0:
            who = rng.choice(NAMES)
            level = "day" if k % 3 == 0 else "hourly"
            recs.append(Record(kind="plan", resident=who, data={"level": level, "items": [f"{level} plan {k}"]}))
        if k % 41 == 0:
            recs.append(Record(kind="inject", data={"command": {"kind": "announce", "text": f"news {k}"},
                                                    "accepted": k % 2 == 0, "message": "" if k % 2 == 0 else "no"}))
        if k % 29 == 0:
            recs.append(Record(kind="note", data={"text": f"town note {k}"}))
        if k % 60 == 5:
            eid = f"e{k}"
            recs.append(Record(kind="encounter", resident="Cy", data={"encounter_id": eid, "step": "start", "data": {}}))
        if k % 60 == 25:
            eid = f"e{k - 20}"
            recs.append(Record(kind="encounter", resident="Cy", data={"encounter_id": eid, "step": "score",
                                                                      "data": {"scores": {"safety": k % 4}}}))
        out.append(TickRecords(tick=k, time=T0 + timedelta(seconds=10 * k), records=recs))
    return out


def snapshot_of(frame: FrameState) -> dict:
    """What the engine stores: positions, actions, emojis, object states, time."""
    return {
        "time": frame.time.isoformat(),
        "residents": {n: {"tile": list(r.tile), "address": r.address, "action": r.action, "emoji": r.emoji}
                      for n, r in frame.residents.items()},
        "objects": dict(frame.objects),
    }


def write_run(run_dir: Path, ticks: list[TickRecords], snapshot_every: int = 50) -> list[FrameState]:
    """Commit ``ticks`` like a live run does; return the frame after each tick (the live view)."""
    store = RunStore.create(run_dir, {"town": "default", "resident_names": NAMES, "seed": 1})
    frame = FrameState()
    frames = []
    for tr in ticks:
        apply_in_place(frame, tr)
        frames.append(frame.copy())
        snap = None
        if tr.tick % snapshot_every == 0 and tr.tick:
            snap = Snapshot(tick=tr.tick, time=tr.time, state=snapshot_of(frame), minds={})
        store.commit_tick(tr, snap)
    store.close()
    return frames


def test_seek_is_exact(tmp_path: Path) -> None:
    ticks = synthetic_ticks(400)
    live = write_run(tmp_path, ticks)
    reader = RunReader.open(tmp_path)
    # Before the index exists, seeks start from the engine's snapshots (which hold no panel
    # history): still exact, memories, plans and bubbles included.
    for t in (0, 49, 50, 51, 137, 250, 399):
        f = reader.frame_at(t)
        assert f.tick == t and f.time == live[t].time
        assert f.signature() == live[t].signature()
    assert any(r.memories for r in live[399].residents.values())
    assert any(r.day_plan for r in live[399].residents.values()) and live[399].notes
    assert any(live[t].encounters for t in range(400)) and any(live[t].toasts for t in range(400))
    for t in range(0, 400, 7):
        assert reader.frame_at(t).signature() == live[t].signature(), t
    # With the keyframe index, every field (panel history included) is exact.
    assert reader.index() == 399
    rng = random.Random(3)
    for t in [0, 399] + rng.sample(range(400), 25):
        assert reader.frame_at(t).signature() == live[t].signature()
    # Backwards and forwards, in any order.
    assert reader.frame_at(10).signature() == live[10].signature()
    reader.close()


def test_time_lookup(tmp_path: Path) -> None:
    write_run(tmp_path, synthetic_ticks(100))
    reader = RunReader.open(tmp_path)
    assert reader.tick_at_time(T0 + timedelta(seconds=305)) == 30
    assert reader.time_of(42) == T0 + timedelta(seconds=420)
    reader.close()


def test_reads_a_run_while_it_is_written(tmp_path: Path) -> None:
    ticks = synthetic_ticks(60)
    store = RunStore.create(tmp_path, {"resident_names": NAMES})
    for tr in ticks[:30]:
        store.commit_tick(tr)
    reader = RunReader.open(tmp_path)
    assert reader.last_tick() == 29
    reader.index()
    for tr in ticks[30:]:
        store.commit_tick(tr)
    assert reader.last_tick() == 59
    assert reader.index() == 59
    assert reader.frame_at(59).residents["Ada"].tile == tuple(ticks[59].records[0].data["tile"])
    store.close()
    reader.close()


def _replay(capsys, *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    replay_command.add_arguments(parser)
    code = replay_command.main(parser.parse_args(list(argv)))
    out, err = capsys.readouterr()
    return code, out, err


def test_summary_json_last_line(tmp_path: Path, capsys) -> None:
    import json

    write_run(tmp_path, synthetic_ticks(20))
    code, out, _ = _replay(capsys, str(tmp_path), "--summary", "--json")
    assert code == 0
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["ticks"] == 20 and summary["missing_ticks"] == [] and summary["residents"] == 3


def test_damaged_or_unknown_run_db_is_refused_clearly(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "nothing"
    code, _, err = _replay(capsys, str(missing), "--summary")
    assert code == 2 and "no run folder" in err

    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "run.db").write_bytes(b"this is not a database at all" * 100)
    code, _, err = _replay(capsys, str(damaged), "--summary")
    assert code == 2 and "damaged" in err and "run.db" in err

    future = tmp_path / "future"
    write_run(future, synthetic_ticks(3))
    with sqlite3.connect(future / "run.db") as conn:
        conn.execute("UPDATE run_meta SET value='99' WHERE key='store_schema'")
    code, _, err = _replay(capsys, str(future), "--timeline")
    assert code == 2 and "version" in err and "99" in err
    with pytest.raises(ReaderError, match="version"):
        RunReader.open(future)


def test_damaged_pages_are_reported_not_read_as_a_shorter_run(tmp_path: Path, capsys) -> None:
    write_run(tmp_path, synthetic_ticks(400))
    db = tmp_path / "run.db"
    with sqlite3.connect(db) as conn:
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
    data = bytearray(db.read_bytes())
    k = pages // 2
    data[k * page:(k + 1) * page] = bytes(range(256)) * (page // 256)  # one page of the records overwritten
    db.write_bytes(bytes(data))
    code, out, err = _replay(capsys, str(tmp_path), "--summary")
    assert code == 2 and "damaged" in err and str(db) in err and "missing_ticks" not in out
    with pytest.raises(ReaderError, match="damaged"):
        RunReader.open(tmp_path)


def test_a_record_damaged_in_place_is_reported(tmp_path: Path, capsys) -> None:
    write_run(tmp_path, synthetic_ticks(50))
    with sqlite3.connect(tmp_path / "run.db") as conn:  # structure intact, one record's bytes garbled
        tick, seq = conn.execute("SELECT tick, seq FROM records WHERE kind = 'chat' LIMIT 1").fetchone()
        conn.execute("UPDATE records SET data = ? WHERE tick = ? AND seq = ?", ('{"speaker": "Ada", \x01', tick, seq))
    code, _, err = _replay(capsys, str(tmp_path), "--summary")
    assert code == 2 and "damaged" in err and "run.db" in err
