"""What it means when a model cannot answer, as opposed to answering badly.

A bad answer (wrong JSON, a refusal, a timeout of a slow local model) is the model's normal
unreliability: the gateway retries it with another seed and ends on a typed fallback. A model
that cannot be reached at all (no API key, connection refused, unknown model, a server that
keeps failing) is different: every call would fall back, and a run would look fine while
nothing in it came from the model. Backends report such failures as :class:`Unreachable`;
the gateway retries the transient ones with backoff and, after a few in a row, raises
:class:`ModelUnavailable`, which stops the command with the cause and the fix.
"""

from __future__ import annotations

import os
import re


class ModelUnavailable(RuntimeError):
    """The model cannot answer at all; the command must stop (exit 2), not fall back.

    ``fatal`` tells the engine and the batch runners to re-raise it instead of recording it
    as one resident's or one episode's error.
    """

    fatal = True

    def __init__(self, model: str, cause: str, fix: str, *, detail: str = ""):
        self.model = model
        self.cause = cause
        self.fix = fix
        self.detail = detail
        super().__init__(f"model {model} could not be reached: {cause}")

    def explain(self) -> str:
        """The lines a command prints: what happened, the error seen, and what to do."""
        lines = [str(self)]
        if self.detail:
            lines.append(f"  last error: {self.detail}")
        lines.append(f"  fix: {self.fix}")
        return "\n".join(lines)


class Unreachable(Exception):
    """A backend could not get an answer from its model (transport, auth, missing model).

    ``retryable`` failures (rate limits, server errors, timeouts, a dropped connection) are
    retried with exponential backoff; the others (a missing or rejected key, an unknown model,
    a missing model file) are not, because asking again cannot help.
    """

    def __init__(self, cause: str, fix: str, *, retryable: bool, detail: str = ""):
        super().__init__(f"{cause}: {detail}" if detail else cause)
        self.cause = cause
        self.fix = fix
        self.retryable = retryable
        self.detail = detail


# Key-like tokens (sk-..., sk-proj-..., gsk_..., hf_...) that providers quote back in errors.
_KEY_LIKE = re.compile(r"\b(?:sk|pk|rk|gsk|xai|hf)[-_][A-Za-z0-9_\-]{8,}")
_SECRET_VARS = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")


def redact(text: str) -> str:
    """``text`` with API keys hidden: the values of *_KEY/*_TOKEN variables and key-like tokens."""
    for name, value in os.environ.items():
        if len(value) >= 8 and name.upper().endswith(_SECRET_VARS):
            text = text.replace(value, "***")
    return _KEY_LIKE.sub("***", text)


def short(text: object, limit: int = 300) -> str:
    """One line of an error message, keys redacted and bounded (errors can carry whole pages)."""
    line = redact(" ".join(str(text).split()))
    return line if len(line) <= limit else line[: limit - 3] + "..."
