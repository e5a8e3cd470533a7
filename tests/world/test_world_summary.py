"""The run summary (world/summary.py) keeps every key, in the order `replay --summary` prints them."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

from maps.contracts import Record, TickRecords
from memory.runfile import RunStore
from replays.society import collect, society_summary
from world.summary import run_society, run_summary

KEYS = ["run", "town", "model", "seed", "forked_from", "ticks", "first_tick", "last_tick", "missing_ticks",
        "start_time", "end_time", "residents", "resident_names", "events", "conversations", "chat_lines",
        "injected", "injected_refused", "llm_calls", "memories", "records_by_kind", "snapshots", "mind_errors",
        "health", "records_digest", "believability", "leaks", "society"]


def test_summary_keys_and_counts(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, {"resident_names": ["A"]})
    store.commit_tick(TickRecords(tick=0, time=datetime(2023, 2, 13, 8), records=[
        Record(kind="mind_error", resident="A", data={"error": "Broken: no plan"}),
        Record(kind="action", resident="A", data={"description": "x", "address": "a"}),
    ]))
    summary = run_summary(store)
    assert list(summary) == KEYS
    assert summary["events"] == 1 and summary["leaks"] == [] and summary["mind_errors"]["errors"] == 1
    assert summary["health"]["status"] != "ok"
    assert summary["records_digest"] == store.records_digest()
    json.dumps(summary)


def test_a_resume_that_was_not_exact_says_so_in_every_later_summary(tmp_path: Path) -> None:
    """A resume whose re-run ticks differ from the record goes on from the recorded world; only
    the resuming process logged it, so a bench resumed twice, or `replay --summary`, never said."""
    store = RunStore.create(tmp_path, {"resident_names": ["A"]})
    store.commit_tick(TickRecords(tick=0, time=datetime(2023, 2, 13, 8), records=[]))
    store.note_rerun(0, 4, 0)
    assert "resume_diverged_ticks" not in run_summary(store)  # an exact re-run is no news
    store.note_rerun(30, 31, 16)
    store.note_rerun(60, 2, 1)
    assert run_summary(store)["resume_diverged_ticks"] == 17
    assert RunStore.open(tmp_path).meta()["reruns"][1] == {"after_tick": 30, "ticks": 31, "diverged": 16}


def test_a_fleets_accounting_is_kept_with_the_run(tmp_path: Path) -> None:
    """`run --models` printed which server went down, but `replay --summary` of the same run said
    nothing of it: the fleet's figures are kept in the run's meta and read back."""
    store = RunStore.create(tmp_path, {"resident_names": ["A"]})
    store.commit_tick(TickRecords(tick=0, time=datetime(2023, 2, 13, 8), records=[]))
    assert "fleet" not in run_summary(store)
    fleet = {"endpoints": {"llama-0": {"ok": 3, "failures": 2}, "llama-1": {"ok": 9, "failures": 0}}, "down": ["llama-0"]}
    store.set_meta(fleet=fleet)
    store.close()
    again = RunStore.open(tmp_path)
    summary = run_summary(again)
    assert summary["fleet"] == fleet and list(summary)[:len(KEYS)] == KEYS


def test_the_society_block_reads_moves_only_where_a_gathering_can_be(tmp_path: Path) -> None:
    """The summary's society block skips the moves of a run with no memories, whispers or events
    (routine minds: their moves were most of a 10,000-resident summary's time) and reads them
    where a gathering can be: there, the same block as from every record."""
    plain = RunStore.create(tmp_path / "plain", {"resident_names": ["A", "B"]})
    plain.commit_tick(TickRecords(tick=0, time=datetime(2026, 2, 14, 16, 50), records=[
        Record(kind="move", resident="A", data={"tile": [1, 1], "address": "Cafe:room"}),
        Record(kind="move", resident="B", data={"tile": [2, 2], "address": "Home:room"})]))
    assert run_society(plain) == {"events": [], "new_acquaintances": 0, "density_before": 0.0,
                                  "density_from_memory": 0.0}

    party = RunStore.create(tmp_path / "party", {"resident_names": ["Ann Lee", "Bo Park"]})
    start = datetime(2026, 2, 14, 16, 50)
    party.commit_tick(TickRecords(tick=0, time=start, records=[
        Record(kind="memory", resident="Ann Lee", data={
            "kind": "thought", "text": "I am hosting a birthday party at the Cafe on February 14 from 5pm to 7pm."}),
        Record(kind="move", resident="Ann Lee", data={"tile": [1, 1], "address": "Cafe:room"}),
        Record(kind="move", resident="Bo Park", data={"tile": [2, 2], "address": "Cafe:room"})]))
    for n in range(1, 60):
        party.commit_tick(TickRecords(tick=n, time=start + timedelta(minutes=n), records=[]))
    everything = society_summary(collect(party.iter_ticks(0, None)), [], ["Cafe", "Home"])
    got = run_society(party)
    assert got["events"] and got["events"][0]["at_place"] == 2  # who was where: the moves were read
    assert got == everything
