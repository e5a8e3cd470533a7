"""One writer per run folder: an exclusive lock held for the whole life of a run.

Two `townsfolk run` processes on one folder would interleave ticks in one run.db. A writer
(a fresh run, ``--resume``, the new folder of a ``--fork``, ``watch``) takes an exclusive
``flock`` on ``run.lock`` in the folder before touching anything and keeps it until its
store is closed; the kernel drops it when the process dies, so a killed run never leaves a
stale lock. Readers (replay, timeline, interview, the viewer) never take it.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

LOCK_NAME = "run.lock"


class RunFolderBusy(RuntimeError):
    """Another process is writing this run folder."""


class RunLock:
    """An exclusive lock on a run folder (see the module docstring)."""

    def __init__(self, folder: Path, fd: int) -> None:
        self.folder = folder
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, folder: str | Path) -> "RunLock":
        """Lock ``folder`` (created if missing) or raise RunFolderBusy naming the holder.

        Raises OSError when the folder or its lock file cannot be created or opened.
        """
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_pid(fd)
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            who = f"pid {holder}" if holder else "another process"
            raise RunFolderBusy(
                f"{folder}: another townsfolk process ({who}) is writing this run folder; "
                "wait for it to finish (or stop it), or choose another folder"
            ) from None
        # the holder's pid, for the message a second writer gets (never trusted for locking)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(folder, fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Let go (idempotent). The file stays: removing it would race with a new writer."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
        except OSError:  # pragma: no cover - a read-only or vanished folder
            pass
        os.close(fd)

    def __enter__(self) -> "RunLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode(errors="replace").strip()
        return int(text) if text.isdigit() else None
    except OSError:
        return None


def is_held(folder: str | Path) -> bool:
    """True while a writer holds ``folder``'s lock (a run starting or running); never blocks,
    never creates the lock file."""
    path = Path(folder) / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
    finally:
        os.close(fd)  # closing drops a lock we took
    return False
