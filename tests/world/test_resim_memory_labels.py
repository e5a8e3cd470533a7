"""A re-run tick is exact when the same memories were written, whatever ids the store gave them."""

from datetime import datetime

from maps.contracts import Record, TickRecords
from world.resim import MemoryLabels

WHEN = datetime(2026, 2, 13, 9, 0)


def tick(n: int, *memories: tuple[str, int, str, list[int]]) -> TickRecords:
    records = [Record(kind="memory", resident=who, data={"memory_id": mid, "kind": "observation", "text": text,
                                                         "importance": 2, "evidence": ev})
               for who, mid, text, ev in memories]
    return TickRecords(tick=n, time=WHEN, records=[Record(kind="move", resident="Ana", data={"tile": [1, 2]}), *records])


def test_ids_handed_out_in_another_order_compare_equal_and_so_does_evidence_citing_them():
    recorded, produced = MemoryLabels(), MemoryLabels()
    # the recorded run numbered Tom's memories first; the re-run numbered Ana's first
    r1 = tick(5, ("Ana", 12, "Tom is setting the table", []), ("Tom", 10, "Ana is reading", []),
              ("Tom", 11, "Ana is talking with Tom", []))
    p1 = tick(5, ("Ana", 10, "Tom is setting the table", []), ("Tom", 11, "Ana is reading", []),
              ("Tom", 12, "Ana is talking with Tom", []))
    assert recorded.view(r1) == produced.view(p1)
    # a later reflection cites them by id (and one memory from before the re-run, id 3)
    r2 = tick(6, ("Tom", 13, "Ana likes to read", [10, 3]))
    p2 = tick(6, ("Tom", 13, "Ana likes to read", [11, 3]))
    assert recorded.view(r2) == produced.view(p2)


def test_a_different_memory_or_a_different_citation_still_differs():
    recorded, produced = MemoryLabels(), MemoryLabels()
    r1 = tick(5, ("Tom", 10, "Ana is reading", []), ("Tom", 11, "Ana is talking with Tom", []))
    p1 = tick(5, ("Tom", 10, "Ana is reading", []), ("Tom", 11, "Ana is talking with Lucy", []))
    assert recorded.view(r1) != produced.view(p1)
    recorded, produced = MemoryLabels(), MemoryLabels()
    same = [("Tom", 10, "Ana is reading", []), ("Tom", 11, "Ana is talking with Tom", [])]
    assert recorded.view(tick(5, *same)) == produced.view(tick(5, *same))
    # the reflection cites Tom's first memory in the record and his second in the re-run
    assert recorded.view(tick(6, ("Tom", 12, "Ana reads", [10]))) != produced.view(tick(6, ("Tom", 12, "Ana reads", [11])))


def test_the_same_memory_written_by_another_resident_differs():
    recorded, produced = MemoryLabels(), MemoryLabels()
    assert (recorded.view(tick(5, ("Tom", 10, "Ana is reading", [])))
            != produced.view(tick(5, ("Lucy", 10, "Ana is reading", []))))
