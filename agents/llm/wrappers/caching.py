"""Caching: a validated answer asked again (same model, messages, schema, temperature and
seed) is served from the on-disk cache (agents/llm/cache.py) without asking the layers below.

It sits outside the retries, so a hit costs no attempt and only answers that passed
validation are stored (never a fallback); and inside the recorded answers, so a resumed run
gets its own answers back even when the cache is cleared or shared.
"""

from __future__ import annotations

from pydantic import BaseModel

from agents.llm.cache import DiskCache, cache_key
from agents.llm.repair import RepairError, parse_answer
from agents.llm.schemas import json_schema_of
from agents.llm.wrappers.base import Call, CallLayer


class Caching:
    """The call layer over ``inner`` that reads and fills ``cache`` (None: passes through)."""

    def __init__(self, inner: CallLayer, cache: DiskCache | None, *, model: str, seed: int) -> None:
        self.inner = inner
        self.cache = cache
        self.model = model
        self.seed = seed

    def key(self, call: Call) -> str:
        """The call's cache key. The schema is taken with its grammar-only hints: for the embedded
        model they decide the answer (a decomposed step's state limited to 'in use' gave other
        answers than the free text cached before), so a changed hint must ask again."""
        schema = json_schema_of(call.schema, for_grammar=True)
        return cache_key(self.model, call.messages, schema, call.temperature, self.seed)

    async def answer(self, call: Call) -> BaseModel:
        cache = self.cache
        if cache is None:
            return await self.inner.answer(call)
        key = self.key(call)
        hit = self._lookup(cache, key, call)
        if hit is not None:
            call.info.ok = call.info.cached = True
            return hit
        value = await self.inner.answer(call)
        if call.info.ok and not call.info.fallback:
            cache.put(key, call.purpose, value.model_dump_json())
        return value

    @staticmethod
    def _lookup(cache: DiskCache, key: str, call: Call) -> BaseModel | None:
        text = cache.get(key)
        if text is None:
            return None
        try:
            return parse_answer(text, call.schema)
        except RepairError:  # the schema changed since: ask again
            return None
