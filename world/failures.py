"""Errors a command did not foresee, said in words: the real cause where the system knows it.

A run of 10,000 residents once died saying "the run database could not be read or written
(unable to open database file)": SQLite's words for a process out of open files. Here such an
error is named for what it is (too many open files: how many are open, the limit, the fix), as
are running out of memory and input nested too deeply; anything else is named with its type
and how to see the traceback, never as a raw traceback.
"""

from __future__ import annotations

import errno
import os
import re
import sqlite3
from pathlib import Path

TRACEBACK_ENV = "TOWNSFOLK_TRACEBACK"
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s'\"]+@")


def redact(text: str) -> str:
    """``text`` with the user and password of every URL hidden ('http://u:KEY@host' ->
    'http://***@host'): TOWNSFOLK_API_BASE may carry a key, and errors quote the URL."""
    return _URL_CREDENTIALS.sub(r"\1***@", text)


def open_files() -> int | None:
    """How many files this process has open (None where the OS cannot say)."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(folder))
        except OSError:
            continue
    return None


def open_file_limit() -> int | None:
    """The process's soft limit on open files (ulimit -n), None where unknown or unlimited."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, ValueError, OSError):
        return None
    return None if soft == resource.RLIM_INFINITY else int(soft)


def out_of_files(exc: BaseException) -> bool:
    """True when ``exc`` comes from the process (or system) running out of open files."""
    if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE):
        return True
    if isinstance(exc, sqlite3.OperationalError) and "unable to open" in str(exc):
        used, limit = open_files(), open_file_limit()
        return used is not None and limit is not None and used >= limit - 32
    return False


def too_many_files_message() -> str:
    """What a user reads when the process ran out of open files, with the figures and the fix."""
    used, limit = open_files(), open_file_limit()
    figures = f" ({used} open, limit {limit})" if used is not None and limit is not None else ""
    return (f"too many open files{figures}: the process reached its open-file limit (EMFILE). "
            "Raise it (`ulimit -n 65536`, or LimitNOFILE= for a service) or run fewer residents (--agents N)")


FILES_NEEDED = 24  # a run's own: the run file and its WAL (twice), the lock, sockets, the event loop's pipe


def files_headroom_problem(needed: int = FILES_NEEDED) -> str | None:
    """Why this process cannot start a run with its open-file limit, or None: said before the
    run folder is made, so a run never dies half-way for want of files."""
    used, limit = open_files(), open_file_limit()
    if used is None or limit is None or limit - used >= needed:
        return None
    return too_many_files_message()


def describe_failure(exc: BaseException) -> str:
    """One line for an error no command handled: the cause and the fix where known."""
    if out_of_files(exc):
        return too_many_files_message()
    if isinstance(exc, MemoryError):
        return "out of memory; run fewer residents (--agents N), a shorter --duration, or on a machine with more memory"
    if isinstance(exc, RecursionError):
        return "input nested too deeply to read (a file or value with thousands of nested brackets)"
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename}: {exc.strerror or exc}"
    text = redact(str(exc).splitlines()[0][:300]) if str(exc) else ""
    return (f"unexpected error {type(exc).__name__}{': ' + text if text else ''} "
            f"(a bug: set {TRACEBACK_ENV}=1 to see where, and report it)")


def describe_path(path: Path | str) -> str:
    """What is at ``path`` in words ('a folder', 'a FIFO', 'missing'), for an error message."""
    p = Path(path)
    if not os.path.lexists(p):
        return "missing"
    if p.is_dir():
        return "a folder"
    if p.is_file():
        return "a file"
    return "not a regular file (a device, FIFO or socket)"
