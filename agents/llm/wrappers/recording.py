"""Recorded answers: while a resumed or forked run re-runs its committed ticks, each call gets
the answer the run recorded for it (agents/llm/recorded.py's AnswerLog), before the cache or
the model is asked; every other call's answer, fallbacks included, is recorded.

Inside accounting, so a replayed call is counted and heard by the listeners like any other
(with its recorded call id and outcome); outside the cache and the model, so neither is asked.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from agents.llm.wrappers.base import Call, CallLayer


class Recording:
    """The call layer that replays from, and records into, ``recorder`` (None: passes through)."""

    def __init__(self, inner: CallLayer, recorder: Any = None) -> None:
        self.inner = inner
        self.recorder = recorder  # an AnswerLog (AnswerLog.attach sets it)

    async def answer(self, call: Call) -> BaseModel:
        recorder = self.recorder
        if recorder is None:
            return await self.inner.answer(call)
        replayed = recorder.replay(call.info, call.messages, call.schema)
        if replayed is not None:
            return replayed
        value = await self.inner.answer(call)
        recorder.record(call.info, call.messages, call.schema, value)
        return value
