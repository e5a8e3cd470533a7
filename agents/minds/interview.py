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

from pydantic import BaseModel

from maps.contracts import Persona
from agents.llm.gateway import make_llm
from agents.roles.interview import (answer_from_memories, answer_schema, days_named, interview_prompt, mentions,
                                   names_person, never_met, question_subject, who_did, worth_telling)
from memory.embeddings import get_embedder
from memory.runfile import connect_readonly
from memory.runfile import last_recorded_tick as _last_tick
from memory.runfile import recorded_tick_at as _tick_at
from memory.runfile import recorded_time_of as _time_of
from memory.runfile import time_span as _span
from memory.runfile import DB_NAME, RunStore, StoreError, check_integrity
from memory.store import MemoryStore, registered_residents
from maps.contracts import TimeError
from maps.contracts import parse_at as parse_when

_FULL_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")

class InterviewError(ValueError):
    """The run folder, resident or time cannot be used; the message says which and why."""


def run_db_path(run_dir: Path | str) -> Path:
    path = Path(run_dir)
    db = RunStore.db_path(path)
    if not db.exists():
        raise InterviewError(f"{path}: no run database here (expected a run folder holding {DB_NAME})")
    return db


def parse_at(text: str, first: datetime | None) -> datetime | int:
    """--at as every command reads it (maps.contracts): '14:00', 'day 2 14:00', '2023-02-13 14:00',
    '+2h' (after the run's start) or 'tick:N' (an int). ``first`` is the run's first recorded time."""
    try:
        when = parse_when(text, first or datetime(2000, 1, 1))
    except TimeError as exc:
        raise InterviewError(f"--at {text.strip()!r}: {exc}") from None
    if first is None and not (isinstance(when, int) or _FULL_DATE.match(text.strip())):
        raise InterviewError(f"--at {text.strip()!r}: the run has no recorded time to count from; give a full date")
    return when if isinstance(when, int) else when.replace(tzinfo=None)


def check_run_db(db: Path) -> None:
    """Refuse a run database whose pages are damaged, naming the file (not a traceback later)."""
    try:
        conn = connect_readonly(db)
    except sqlite3.Error as exc:
        raise InterviewError(f"{db}: cannot open the run database ({exc})") from None
    try:
        check_integrity(conn, db)
    except StoreError as exc:
        raise InterviewError(str(exc)) from None
    finally:
        conn.close()


def interview(run_dir: Path | str, name: str, question: str, at: str | datetime | None = None,
              model: str = "local", *, llm=None, k: int = 12) -> str:
    """Answer ``question`` as resident ``name`` from its memory at time ``at`` (default: the end).

    Writes nothing to any memory. ``llm`` overrides ``model`` (an existing gateway).
    """
    return interview_answer(run_dir, name, question, at, model, llm=llm, k=k).text


class InterviewAnswer(BaseModel):
    """An interview's answer and whose words it is: the model's, or the engine's fallback
    composed from the retrieved memories (a bench must not score that as the model's)."""

    text: str
    from_fallback: bool = False


def interview_answer(run_dir: Path | str, name: str, question: str, at: str | datetime | None = None,
                     model: str = "local", *, llm=None, k: int = 12) -> InterviewAnswer:
    """:func:`interview`, also saying whether the answer is the engine's memory-built fallback."""
    if not question.strip():
        raise InterviewError("the question is empty")
    db = run_db_path(run_dir)
    check_run_db(db)
    try:
        return _interview(db, name, question, at, model, llm=llm, k=k)
    except sqlite3.DatabaseError as exc:  # damage that the quick check did not see
        raise InterviewError(f"{db}: the run database is damaged or unreadable ({exc})") from None


def _interview(db: Path, name: str, question: str, at: str | datetime | None, model: str, *, llm,
               k: int) -> InterviewAnswer:
    persona, embedder = _resident(db, name)
    if llm is None:  # before any work: a model that cannot be built is the user's to fix
        try:
            llm = make_llm(model)
        except Exception as exc:
            raise InterviewError(f"--model {model}: {exc}") from None
    tick, now = _moment(db, at)
    memory = MemoryStore(db, name, embedder=get_embedder(embedder or None), as_of_tick=tick)
    try:
        hits = memory.retrieve(question, now, tick, k=2 * k, touch=False)  # room for what worth_telling drops
        rows = memory.all()
        status = next((m.text for m in reversed(rows) if m.kind == "plan" and m.text.startswith("Currently:")), "")
    finally:
        memory.close()
    residents = list(registered_residents(db))
    unknown = strangers(question, name, persona, [m.text for m in rows], residents)
    subject = question_subject(question.strip(), tuple(residents))
    about = _about(rows, residents, name, question, subject, k // 2)
    texts = [] if unknown else worth_telling(list(dict.fromkeys(about + [m.text for m in hits])), name)[:k]
    # an echo is refused, retried, then this; about a stranger: 'I don't know them'
    doers = who_did(question.strip(), subject, texts, tuple(residents), name)
    town, unmet = tuple(residents), tuple(unknown)
    fallback = (answer_schema(name, question.strip(), (), subject, (), now.year, town, unmet)(
                    answer=never_met(unknown).answer) if unknown
                else answer_from_memories(texts, name, question.strip(), subject, doers, now.year, town))
    before = _fallbacks(llm)
    answer = llm.complete(
        "interview",
        interview_prompt(persona.summary(), name, f"{now:%A %H:%M}", status.removeprefix("Currently:").strip(),
                         texts, question.strip(), unknown, subject),
        answer_schema(name, question.strip(), tuple(texts), subject, doers, now.year, town, unmet),
        fallback,
        max_tokens=300,
    )
    after = _fallbacks(llm)
    # the gateway's own count says whether its fallback answered; a model that said the fallback's
    # words (the 'never met' answer) answered itself
    used = after > before if before is not None and after is not None else answer.answer == fallback.answer
    return InterviewAnswer(text=answer.answer.strip(), from_fallback=used)


def _about(rows: list, residents: list[str], name: str, question: str, subject: tuple[str, ...],
           n: int) -> list[str]:
    """The memories an answer leads with. Asked about someone by name: what memory holds of them (a
    lookup by name is the most relevant retrieval there is; by embedding alone a day-old talk with
    them fell out of k). Asked whether one knows of something: the memories naming all its words
    (asked who runs for mayor, a scripted bench's Grace Kim recalled nine memories of Eleanor's
    re-election, closer by embedding and newer, and not Ben's candidacy, which she had been told),
    those that say when first (after the party, its host's newest memories of it were sights of
    guests, 'Omar Haddad is attending a Valentine's Day party', not her plan)."""
    about = [m.text for m in reversed(rows) for r in residents
             if r != name and r in question and names_person(m.text, r)][:n]
    if subject and not about:
        about = sorted((m.text for m in reversed(rows) if all(mentions(m.text, t) for t in subject)),
                       key=lambda text: not days_named(text))[:n]
    return about


def _fallbacks(llm) -> int | None:
    """How many interview calls of this gateway ended in their fallback (None: it does not say)."""
    stats = getattr(llm, "stats", None)
    if not callable(stats):
        return None
    try:
        return int(stats()["by_purpose"].get("interview", {}).get("fallbacks", 0))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def strangers(question: str, name: str, persona: Persona, memories: list[str], residents: list[str]) -> list[str]:
    """Residents the question names by their full name whom ``name`` never met or heard of: not
    among the persona's relationships, named in no memory (first name or full)."""
    ties = {r.name for r in persona.relationships}
    asked = [r for r in residents if r != name and r in question]
    return [r for r in asked if r not in ties and not any(names_person(m, r) for m in memories)]


def _resident(db: Path, name: str) -> tuple[Persona, str | None]:
    """The persona and embedder name registered for ``name`` in the run, or why there is none."""
    residents = registered_residents(db)
    if not residents:
        raise InterviewError(f"{db}: the run holds no resident memories to answer from (a run with "
                             "--mind routine keeps none; interviews need the generative mind)")
    if name not in residents:
        known = ", ".join(sorted(residents))
        raise InterviewError(f"{db}: no resident named {name!r} (residents: {known})")
    entry = residents[name]
    return Persona.model_validate(entry["persona"]), entry.get("embedder")


def _moment(db: Path, at: str | datetime | None) -> tuple[int, datetime]:
    """The tick and game time to answer at: ``at`` read against the run's recorded span."""
    conn = connect_readonly(db)
    try:
        first, last = _span(conn)
        when = parse_at(at, first) if isinstance(at, str) else at
        if isinstance(when, int):  # tick:N
            final = _last_tick(conn)
            if final is None or when > final:
                raise InterviewError(f"--at {at}: after the run's last tick ({final})")
            tick, when = when, _time_of(conn, when)
            tick_time = when
        else:
            typed = f"{at} ({when:%Y-%m-%d %H:%M})" if isinstance(at, str) and when is not None else f"{when}"
            if when is not None and first is not None and when < first.replace(hour=0, minute=0):
                raise InterviewError(f"--at {typed}: before the run started ({first:%Y-%m-%d %H:%M})")
            if when is not None and last is not None and when > last + timedelta(hours=1):
                raise InterviewError(f"--at {typed}: after the run's end ({last:%Y-%m-%d %H:%M}); "
                                     "memories exist only up to then")
            tick, tick_time = _tick_at(conn, when.replace(tzinfo=None) if when else None)
    finally:
        conn.close()
    return tick, when or tick_time or last or datetime(2023, 2, 13)
