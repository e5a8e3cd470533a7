"""A pydantic base whose JSON schema is computed once per class.

The gateway asks every call's schema for its JSON schema (for the cache key, for repair,
for grammars); for the small fixed schemas of the encounter roles that generation was
three quarters of a scripted episode's time. The schema of a class never changes, so it is
memoised; callers get a deep copy, so none can alter another's.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

_CACHE: dict[tuple, dict[str, Any]] = {}


class CachedSchemaModel(BaseModel):
    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        key = (cls, args, tuple(sorted(kwargs.items())))
        try:
            cached = _CACHE.get(key)
        except TypeError:  # unhashable option: no memo
            return super().model_json_schema(*args, **kwargs)
        if cached is None:
            cached = _CACHE[key] = super().model_json_schema(*args, **kwargs)
        return copy.deepcopy(cached)
