"""A backend wrapper that corrupts a chosen share of answers, for reliability tests.

`--chaos 0.3` makes three answers in ten go wrong in one of the ways real models fail:
malformed JSON, empty text, wrong types, an exception, or a timeout. Which attempts are hit,
and how, is decided by a hash of (seed, purpose, prompt, attempt seed), so a run is
reproducible whatever order concurrent calls finish in, and a retry draws afresh.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import random
from typing import Any

from agents.llm.wrappers.base import Backend, Completion, Request

CHAOS_KINDS: tuple[str, ...] = ("malformed_json", "empty", "wrong_types", "exception", "timeout")


class ChaosError(RuntimeError):
    """The exception the chaos wrapper raises in place of a backend error."""


def check_chaos_rate(rate: Any) -> float:
    """A share in [0, 1], or a ValueError that says what was wrong."""
    if isinstance(rate, bool) or not isinstance(rate, (int, float, str)):
        raise ValueError(f"--chaos must be a number between 0 and 1, got {rate!r}")
    try:
        value = float(rate)
    except ValueError:
        raise ValueError(f"--chaos must be a number between 0 and 1, got {rate!r}") from None
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"--chaos must be a number between 0 and 1, got {rate!r}")
    return value


def chaos_arg(text: str) -> float:
    """argparse ``type=`` for --chaos: a clear usage error instead of a traceback."""
    try:
        return check_chaos_rate(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _wrong_types(value: Any) -> Any:
    """Every leaf replaced by a value of another JSON type that no repair can coerce back."""
    if isinstance(value, dict):
        return {k: _wrong_types(v) for k, v in value.items()}
    if isinstance(value, list):
        return {"items": [_wrong_types(v) for v in value]}
    if isinstance(value, str):
        return {"text": value}
    if isinstance(value, bool):
        return [value]
    if isinstance(value, (int, float)):
        return {"n": value}
    return {"unexpected": True}


def _malformed(text: str) -> str:
    """JSON-looking text that no lenient parser accepts (keys without colons, stray braces)."""
    return "Sure! Here it is: {" + text.replace(":", " ").strip("{} ") + " ,, }} ]"


class ChaosBackend:
    """Wraps ``inner``; a share ``rate`` of attempts fail in one of :data:`CHAOS_KINDS`."""

    def __init__(
        self,
        inner: Backend,
        rate: float,
        seed: int = 0,
        *,
        kinds: tuple[str, ...] | list[str] | None = None,
        timeout_sleep_s: float | None = None,
    ):
        self.inner = inner
        self.rate = check_chaos_rate(rate)
        self.seed = seed
        self.kinds = tuple(kinds or CHAOS_KINDS)
        unknown = [k for k in self.kinds if k not in CHAOS_KINDS]
        if unknown:
            raise ValueError(f"unknown chaos kind(s) {unknown}; known: {', '.join(CHAOS_KINDS)}")
        # None: a timeout is raised at once (cheap); a number: sleep that long, so the
        # gateway's own timeout is what fires.
        self.timeout_sleep_s = timeout_sleep_s
        self.name = f"{inner.name}+chaos"
        self.injected: dict[str, int] = {k: 0 for k in CHAOS_KINDS}

    def _draw(self, request: Request) -> str | None:
        blob = json.dumps(
            [self.seed, request.purpose, request.messages, request.seed], sort_keys=True, ensure_ascii=False
        )
        rng = random.Random(int.from_bytes(hashlib.sha256(blob.encode()).digest()[:8], "big"))
        if rng.random() >= self.rate:
            return None
        return rng.choice(self.kinds)

    async def generate(self, request: Request) -> Completion:
        kind = self._draw(request)
        if kind is None:
            return await self.inner.generate(request)
        self.injected[kind] += 1
        if kind == "exception":
            raise ChaosError("chaos: simulated backend failure")
        if kind == "timeout":
            if self.timeout_sleep_s is None:
                raise asyncio.TimeoutError("chaos: simulated timeout")
            await asyncio.sleep(self.timeout_sleep_s)
            raise asyncio.TimeoutError("chaos: simulated timeout")
        if kind == "empty":
            return Completion(text="", prompt_tokens=0, completion_tokens=0)
        real = await self.inner.generate(request)
        if kind == "malformed_json":
            real.text = _malformed(real.text)
        else:  # wrong_types
            try:
                real.text = json.dumps(_wrong_types(json.loads(real.text)))
            except json.JSONDecodeError:
                real.text = json.dumps({"unexpected": [1, 2, 3]})
        return real
