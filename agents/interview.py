"""Interviews: ask a resident a question and get an answer from its memory as it was.

The resident's memory is opened as a frozen view of the run file (rows written up to the
chosen tick, last-access times as they were then, read-only connection), the question is
embedded and matched with the usual retrieval, and the model answers in character. Nothing
is written anywhere: not a memory, not a last-access time, not a record.
"""

from __future__ import annotations

import re
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

from agents.interfaces import Persona
from agents.prompts.interview import Answer, answer_fallback, interview_prompt
from memory.embeddings import get_embedder
from memory.store import MemoryStore, registered_residents

DB_NAME = "run.db"


class InterviewError(ValueError):
    """The run folder, resident or time cannot be used; the message says which and why."""


def run_db_path(run_dir: Path | str) -> Path:
    path = Path(run_dir)
    db = path if path.suffix == ".db" else path / DB_NAME
    if not db.exists():
        raise InterviewError(f"{path}: no run database here (expected a run folder holding {DB_NAME})")
    return db


def _span(conn: sqlite3.Connection) -> tuple[datetime | None, datetime | None]:
    for sql in ("SELECT MIN(time), MAX(time) FROM ticks", "SELECT MIN(created), MAX(created) FROM memory_records"):
        try:
            lo, hi = conn.execute(sql).fetchone()
        except sqlite3.OperationalError:
            continue
        if lo:
            return datetime.fromisoformat(lo).replace(tzinfo=None), datetime.fromisoformat(hi).replace(tzinfo=None)
    return None, None


def parse_at(text: str, first: datetime | None) -> datetime:
    """'2023-02-13T14:00', '2023-02-13 14:00', '14:00' (first day of the run), 'day 2 14:00'."""
    text = text.strip()
    try:
        return datetime.fromisoformat(text).replace(tzinfo=None)
    except ValueError:
        pass
    match = re.fullmatch(r"(?:d(?:ay)?\s*(\d+)\s+)?(\d{1,2}):(\d{2})", text, re.IGNORECASE)
    if not match:
        raise InterviewError(f"--at {text!r}: expected an ISO time (2023-02-13T14:00), HH:MM, or 'day N HH:MM'")
    if first is None:
        raise InterviewError(f"--at {text!r}: the run has no recorded time to count days from; give a full date")
    day = int(match.group(1) or 1)
    hour, minute = int(match.group(2)), int(match.group(3))
    if day < 1 or hour > 23 or minute > 59:
        raise InterviewError(f"--at {text!r}: day must be >= 1, hour 0-23, minute 0-59")
    base = first.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=day - 1)
    return base.replace(hour=hour, minute=minute)


def _tick_at(conn: sqlite3.Connection, when: datetime | None) -> tuple[int, datetime | None]:
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


def interview(run_dir: Path | str, name: str, question: str, at: str | datetime | None = None,
              model: str = "local", *, llm=None, k: int = 12) -> str:
    """Answer ``question`` as resident ``name`` from its memory at time ``at`` (default: the end).

    Writes nothing to any memory. ``llm`` overrides ``model`` (an existing gateway).
    """
    if not question.strip():
        raise InterviewError("the question is empty")
    db = run_db_path(run_dir)
    residents = registered_residents(db)
    if name not in residents:
        known = ", ".join(sorted(residents)) or "none recorded"
        raise InterviewError(f"{db}: no resident named {name!r} (residents: {known})")
    entry = residents[name]
    persona = Persona.model_validate(entry["persona"])
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        first, last = _span(conn)
        when = parse_at(at, first) if isinstance(at, str) else at
        if when is not None and first is not None and when < first.replace(hour=0, minute=0):
            raise InterviewError(f"--at {when:%Y-%m-%d %H:%M}: before the run started ({first:%Y-%m-%d %H:%M})")
        tick, tick_time = _tick_at(conn, when.replace(tzinfo=None) if when else None)
    finally:
        conn.close()
    now = when or tick_time or last or datetime(2023, 2, 13)
    memory = MemoryStore(db, name, embedder=get_embedder(entry.get("embedder") or None), as_of_tick=tick)
    try:
        hits = memory.retrieve(question, now, tick, k=k, touch=False)
        status = next((m.text for m in reversed(memory.all()) if m.kind == "plan" and m.text.startswith("Currently:")), "")
    finally:
        memory.close()
    if llm is None:
        from agents.llm.gateway import make_llm

        llm = make_llm(model)
    answer = llm.complete(
        "interview",
        interview_prompt(persona.summary(), name, f"{now:%A %H:%M}", status.removeprefix("Currently:").strip(),
                         [m.text for m in hits], question.strip()),
        Answer,
        answer_fallback(),
        max_tokens=300,
    )
    return answer.answer.strip()
