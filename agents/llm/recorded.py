"""A run's own model answers: kept in run.db with their tick, replayed on resume and fork.

Resume and fork restore a snapshot and re-run the committed ticks after it. A real model (or
the disk cache, cleared or shared) may answer those calls differently the second time, and
the run would quietly become another run. An :class:`AnswerLog` sits in the gateway
(``gateway.recorder``, asked by the recording layer, agents/llm/wrappers/recording.py):

- every call's answer (the value the caller got, fallbacks included, with its call id,
  outcome and the reasons of any items the engine replaced in it) is buffered and written by
  the run store in the transaction of the tick that asked it, so run.db holds exactly the
  answers of its committed ticks;
- while committed ticks are re-run, each call gets the answer recorded for the same request
  (purpose, messages, schema), in recorded order, with its original call id and outcome;
  neither the model nor the cache is asked;
- call ids go on from the last recorded one, so a resumed run numbers its calls as the
  uninterrupted run would.

The store's side (the ``llm_answers`` table) is in replays/store.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from maps.contracts import Message


@dataclass(frozen=True)
class Answer:
    """One recorded call: what the caller got and how the call went."""

    call_no: int
    call_id: str
    purpose: str
    request: str  # request_key(): which question this answers
    answer: str  # the returned value as JSON
    info: str  # JSON: ok, fallback, cached, attempts, errors


def request_key(purpose: str, messages: list[Message], schema: type[BaseModel]) -> str:
    """What identifies a question, whatever the model: a fork may change models and still
    replays the parent's answers up to its fork tick."""
    blob = json.dumps([purpose, f"{schema.__module__}.{schema.__qualname__}", messages],
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def call_number(call_id: str) -> int:
    """The gateway's running number in a call id ('plan_day-17' -> 17); 0 if there is none."""
    m = re.search(r"-(\d+)$", call_id)
    return int(m.group(1)) if m else 0


class AnswerLog:
    """The gateway hook (``replay`` / ``record``) and the run store's answer source
    (``take`` / ``discard`` / ``end_replay``) for one gateway, named by ``source``."""

    def __init__(self, source: str = "town") -> None:
        self.source = source
        self._pending: list[Answer] = []
        self._queue: dict[str, deque[Answer]] = defaultdict(deque)
        self._replaying = False
        self._next_no: int | None = None  # the call number to go on from after a re-run
        self._llm: Any = None
        self._lock = threading.Lock()
        self.replayed = 0  # calls answered from the record during the last re-run
        self.unrecorded = 0  # calls of the re-run that the record did not hold
        self.unused = 0  # recorded answers the re-run never asked for

    def attach(self, llm: Any) -> None:
        """Become ``llm``'s recorder (a Gateway: its ``recorder`` hook and call numbering)."""
        llm.recorder = self
        self._llm = llm

    # -- the gateway's side -------------------------------------------------------------

    def replay(self, info: Any, messages: list[Message], schema: type[BaseModel]) -> BaseModel | None:
        """The recorded answer for this call (filling ``info`` as the call went then), or None."""
        with self._lock:
            if not self._replaying:
                return None
            queue = self._queue.get(request_key(info.purpose, messages, schema))
            if not queue:
                self.unrecorded += 1
                return None
            answer = queue.popleft()
            if not queue:
                del self._queue[answer.request]
        try:
            value = schema.model_validate_json(answer.answer)
        except ValidationError:  # the schema changed since it was recorded: ask the model
            with self._lock:
                self.unrecorded += 1
            return None
        how = json.loads(answer.info)
        if how.get("patches") and hasattr(value, "_patches"):
            # the record holds the answer as kept: the items the engine replaced when it was first
            # validated are gone from it, so their reasons come from the record, not a new check
            value._patches = list(how["patches"])
        info.call_id = answer.call_id
        info.ok, info.fallback, info.cached = how["ok"], how["fallback"], how["cached"]
        info.attempts, info.errors = how["attempts"], list(how["errors"])
        with self._lock:
            self.replayed += 1
        return value

    def record(self, info: Any, messages: list[Message], schema: type[BaseModel], value: BaseModel) -> None:
        """Buffer a call's answer; the store writes it with the tick that asked it."""
        how = {"ok": info.ok, "fallback": info.fallback, "cached": info.cached, "attempts": info.attempts,
               "errors": list(info.errors)}
        patches = value.patches() if callable(getattr(value, "patches", None)) else []
        if patches:  # what the engine replaced in it (roles.common.Patched)
            how["patches"] = list(patches)
        answer = Answer(call_number(info.call_id), info.call_id, info.purpose,
                        request_key(info.purpose, messages, schema), value.model_dump_json(),
                        json.dumps(how, separators=(",", ":")))
        with self._lock:
            self._pending.append(answer)

    # -- the run store's side -----------------------------------------------------------

    def take(self) -> list[Answer]:
        """The answers made since the last commit, in call order (the store writes them)."""
        with self._lock:
            out, self._pending = self._pending, []
        return sorted(out, key=lambda a: a.call_no)

    def discard(self) -> None:
        """A tick was re-run, not committed: its (live) answers are not the record's."""
        with self._lock:
            self._pending = []

    def start_replay(self, answers: list[Answer], first_no: int, next_no: int) -> None:
        """Serve these recorded answers (of the ticks about to be re-run) before any model.

        Calls are numbered from ``first_no`` (after the restored tick's last call) during the
        re-run and from ``next_no`` (after the last recorded call) once it is over.
        """
        with self._lock:
            self._queue = defaultdict(deque)
            for a in sorted(answers, key=lambda a: a.call_no):
                self._queue[a.request].append(a)
            self.replayed = self.unrecorded = self.unused = 0
            self._replaying = True
            self._next_no = next_no
        if self._llm is not None:
            continue_call_ids(self._llm, first_no)

    def end_replay(self) -> None:
        """The re-run is over: recorded answers it did not ask for are dropped (and counted)."""
        with self._lock:
            self.unused = sum(len(q) for q in self._queue.values())
            self._queue = defaultdict(deque)
            self._pending = []
            self._replaying = False
            next_no, self._next_no = self._next_no, None
        if self._llm is not None and next_no is not None:
            continue_call_ids(self._llm, next_no)


def continue_call_ids(llm: Any, next_no: int) -> None:
    """Number the gateway's next call ``next_no`` (call ids go on across a resume)."""
    llm.number_calls_from(next_no)  # the gateway's running call number (its accounting layer)
