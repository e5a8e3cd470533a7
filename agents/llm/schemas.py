"""JSON schemas of output models, computed once per class.

Every call needs its schema's JSON form (cache key, repair, scripted answers, grammars,
response_format); pydantic rebuilds it on each request, which dominated cheap calls. A
model class's schema never changes, so it is memoised here. The returned dict is shared:
treat it as read-only.
"""

from __future__ import annotations

import threading
from typing import Any

from pydantic import BaseModel

_CACHE: dict[type[BaseModel], dict[str, Any]] = {}
_LOCK = threading.Lock()


def json_schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    """``schema.model_json_schema()``, memoised per class (read-only result)."""
    cached = _CACHE.get(schema)
    if cached is None:
        cached = schema.model_json_schema()
        with _LOCK:
            _CACHE[schema] = cached
    return cached
