"""The one safe reader of user-given files: regular files only, size capped before reading.

Every loader of a file a user names (a town map, a residents file, a Smallville persona,
scenario and trajectory files) reads it through :func:`read_text` or :func:`read_json`, so
that a link to ``/dev/zero`` (endless), ``/dev/urandom``, a FIFO (blocks until a writer
comes) or a 20 GB file is refused with its name and the reason before a byte is read, a
JSON file nested 100,000 deep is refused before the parser recurses, and ``NaN``,
``Infinity`` or ``1e400`` (a float that is not finite) are refused like any other bad value.

Why ``O_NONBLOCK``: opening a FIFO for reading blocks until someone opens it for writing;
with the flag the open returns at once and ``fstat`` says what the file is.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
from pathlib import Path
from typing import Any

DEFAULT_MAX_BYTES = 64 * 1024 * 1024  # a 25-resident file is ~20 KB and the default map ~1 MB
DEFAULT_MAX_DEPTH = 64  # the deepest of our formats nests under 10 levels


class FileReadError(ValueError):
    """A file cannot be read as asked; ``str()`` is '<path>: <problem>'."""

    def __init__(self, path: Path | str, problem: str, syntax: tuple[int, int, str] | None = None) -> None:
        self.path = str(path)
        self.problem = problem
        self.syntax = syntax  # (line, column, message) of a JSON syntax error
        super().__init__(f"{path}: {problem}")


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _open_regular(path: Path) -> int:
    """An fd of ``path`` opened for reading, after checking it is a regular file (links followed)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise FileReadError(path, "no such file") from None
    except IsADirectoryError:
        raise FileReadError(path, "is a folder; expected a file") from None
    except OSError as exc:
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            raise FileReadError(path, f"cannot open: too many open files ({exc.strerror})") from None
        raise FileReadError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:  # pragma: no cover - fstat of an open fd
        os.close(fd)
        raise FileReadError(path, f"cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise FileReadError(path, f"is {_kind(mode)}; expected a regular file")
    return fd


def read_bytes(path: Path | str, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``; FileReadError otherwise."""
    path = Path(path)
    fd = _open_regular(path)
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise FileReadError(path, f"file is {size} bytes; expected a file of at most {max_bytes} bytes")
        chunks, total = [], 0
        while True:  # read to the end, never past the cap (a file that grows while read)
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise FileReadError(path, f"file grew past {max_bytes} bytes while being read")
        return b"".join(chunks)
    except OSError as exc:
        raise FileReadError(path, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_text(path: Path | str, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """A regular UTF-8 text file (a BOM is dropped); FileReadError naming the byte otherwise."""
    data = read_bytes(path, max_bytes)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileReadError(path, f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})") from None


def json_depth(text: str, limit: int) -> int:
    """How deeply ``text`` nests arrays/objects, counting no further than ``limit + 1``.

    A plain scan (strings skipped), so that 50,000 ``[`` are refused without recursing."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif ch in "]}":
            depth -= 1
    return deepest


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows; expected a finite number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large for a number (not finite)")
    return value


def parse_json(text: str, where: Path | str, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """JSON text as data; FileReadError for bad JSON, nesting past ``max_depth``, NaN or infinity."""
    if json_depth(text, max_depth) > max_depth:
        raise FileReadError(where, f"JSON nested too deeply (over {max_depth} levels); expected the file's own structure")
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise FileReadError(where, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
                            (exc.lineno, exc.colno, exc.msg)) from None
    except RecursionError:  # pragma: no cover - refused by the depth scan first
        raise FileReadError(where, f"JSON nested too deeply (over {max_depth} levels)") from None
    except ValueError as exc:  # NaN, 1e400, an integer of over 4,300 digits
        raise FileReadError(where, f"not valid JSON: {exc}") from None


def read_json(path: Path | str, max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """A regular UTF-8 JSON file as data (see :func:`read_text` and :func:`parse_json`)."""
    return parse_json(read_text(path, max_bytes), path, max_depth)


def read_json_lines(path: Path | str, max_bytes: int = DEFAULT_MAX_BYTES,
                    max_depth: int = DEFAULT_MAX_DEPTH) -> list[Any]:
    """A JSON-lines file: one value per non-empty line; an error names the line."""
    out = []
    for n, line in enumerate(read_text(path, max_bytes).splitlines(), 1):
        if line.strip():
            try:
                out.append(parse_json(line, path, max_depth))
            except FileReadError as exc:
                raise FileReadError(path, f"line {n}: {exc.problem}") from None
    return out
