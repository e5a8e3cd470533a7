"""A content-addressed on-disk cache of model answers.

The key covers everything that decides an answer — model, messages, schema, temperature
and seed — so a re-run with the same inputs is free and exact, and a recorded run's
answers let it be re-simulated. One SQLite file; safe for several processes.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from maps.contracts import Message


def cache_key(
    model: str,
    messages: list[Message],
    schema: dict[str, Any],
    temperature: float,
    seed: int,
) -> str:
    blob = json.dumps(
        {"model": model, "messages": messages, "schema": schema, "t": temperature, "seed": seed},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def prompt_hash(messages: list[Message]) -> str:
    """Short hash of a prompt, stored in run records instead of the prompt itself."""
    blob = json.dumps(messages, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class DiskCache:
    """Key -> answer text. Only validated answers are stored."""

    def __init__(self, path: Path):
        path = Path(path)
        if path.suffix != ".sqlite":
            path = path / "llm-cache.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, purpose TEXT, text TEXT)"
        )
        self._conn.commit()

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT text FROM answers WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, purpose: str, text: str) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO answers (key, purpose, text) VALUES (?, ?, ?)",
                (key, purpose, text),
            )
            self._conn.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
