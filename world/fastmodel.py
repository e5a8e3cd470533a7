"""Building trusted pydantic models without validation, cheaply.

The engine makes a Perception per resident per tick and a Record per change; the data is
its own, already valid, so validation is skipped. ``BaseModel.model_construct`` walks every
field and alias on each call (~20 µs); :func:`build` sets the same internals directly
(~1 µs). All fields must be passed; the result behaves as a normally built model.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)
_set = object.__setattr__


def build(cls: type[M], fields: dict[str, Any]) -> M:
    m = cls.__new__(cls)
    _set(m, "__dict__", fields)
    _set(m, "__pydantic_fields_set__", set(fields))
    _set(m, "__pydantic_extra__", None)
    _set(m, "__pydantic_private__", None)
    return m
