"""A generated corpus of hostile inputs against every command's file inputs and options.

The corpus: nesting, size, special files (links to /dev/zero and /dev/urandom, a FIFO, a
folder), encodings (UTF-16, Latin-1, binary, a BOM, encoded surrogates), JSON with lone
surrogates, bidi overrides and zero-width spaces, numbers (NaN, Infinity, -0, 1e308, 1e400, an
integer of 5,000 digits) and the shapes a loader may not expect (null, [], {}, a string).
Each goes to each file input of run, import, eval, judge, replay and interview, and each
option value to run's and inject's options. Every answer: no traceback, no "unexpected
error" (the CLI's last-resort catch of a bug), no hang past the watchdog, and a command
that failed leaves no output behind.
"""

from __future__ import annotations

import faulthandler
import json
import os
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from world.cli import main

REPO = Path(__file__).resolve().parents[2]
DEFAULT_TOWN = REPO / "maps" / "towns" / "default"
WATCHDOG_S = 20.0
RUN = ["--mind", "routine", "--quiet", "--no-control", "--duration", "1m", "--start", "2026-03-01 08:00"]


class Hung(BaseException):
    """The watchdog fired: a command blocked past WATCHDOG_S (not an Exception: the CLI must not catch it)."""


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


# name -> how to make it at a path (content as bytes, or a special file)
CORPUS: dict[str, Callable[[Path], None]] = {
    "empty": lambda p: p.write_bytes(b""),
    "spaces": lambda p: p.write_bytes(b"  \n\t "),
    "null": lambda p: p.write_bytes(b"null"),
    "list": lambda p: p.write_bytes(b"[]"),
    "object": lambda p: p.write_bytes(b"{}"),
    "list-of-null": lambda p: p.write_bytes(b"[null, [], {}, 1]"),
    "string": lambda p: p.write_bytes(b'"a string"'),
    "nested": lambda p: p.write_bytes(b"[" * 100_000 + b"]" * 100_000),
    "nested-objects": lambda p: p.write_bytes(b'{"a":' * 50_000 + b"1" + b"}" * 50_000),
    "torn": lambda p: p.write_bytes(b'[{"name": "Ann", "age": '),
    "nan": lambda p: p.write_bytes(b'[{"name": NaN, "age": Infinity, "x": -Infinity}]'),
    "numbers": lambda p: p.write_bytes(b'[{"name": -0, "age": 1e308, "x": 1e400, "y": -0.0}]'),
    "huge-int": lambda p: p.write_bytes(b'[{"age": ' + b"9" * 5000 + b"}]"),
    "surrogates": lambda p: p.write_bytes(b'[{"name": "\\ud800", "codename": "\\udfff", "contents": ["\\ud83d"]}]'),
    "encoded-surrogate": lambda p: p.write_bytes(b'[{"name": "\xed\xa0\x80"}]'),
    "bidi": lambda p: p.write_bytes(_bytes('[{"name": "Tom \u202eAlvarez", "text": "a\u200bb", "codename": "x\u2066"}]')),
    "utf16": lambda p: p.write_bytes('[{"name": "Ann"}]'.encode("utf-16")),
    "latin1": lambda p: p.write_bytes('[{"name": "Zoë"}]'.encode("latin-1")),
    "bom": lambda p: p.write_bytes(b"\xef\xbb\xbf[]"),
    "binary": lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4),
    "sqlite-like": lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200),
    "big-sparse": lambda p: _sparse(p, 300 * 1024 * 1024),
    "dev-zero": lambda p: p.symlink_to("/dev/zero"),
    "dev-urandom": lambda p: p.symlink_to("/dev/urandom"),
    "fifo": lambda p: os.mkfifo(p),
    "folder": lambda p: p.mkdir(),
    "dangling-link": lambda p: p.symlink_to(p.parent / "nowhere"),
}


def _sparse(path: Path, size: int) -> None:
    with path.open("wb") as handle:
        handle.truncate(size)


def _town_dir(base: Path, make: Callable[[Path], None]) -> list[str]:
    folder = base / "town"
    folder.mkdir()
    make(folder / "town.json")
    shutil.copy(DEFAULT_TOWN / "residents.json", folder / "residents.json")
    return ["run", "--town", str(folder), *RUN, "--out", str(base / "out")]


def _in_dir(base: Path, make: Callable[[Path], None], name: str = "x.json") -> Path:
    folder = base / "in"
    folder.mkdir()
    make(folder / name)
    return folder


def _smallville(base: Path, make: Callable[[Path], None]) -> list[str]:
    person = base / "personas" / "Ann Lee" / "bootstrap_memory"
    person.mkdir(parents=True)
    make(person / "scratch.json")
    return ["import", "smallville", str(base / "personas"), "--out", str(base / "out" / "residents.json")]


def _run_db(base: Path, make: Callable[[Path], None], command: list[str]) -> list[str]:
    folder = base / "in"
    folder.mkdir()
    make(folder / "run.db")
    return [command[0], str(folder), *command[1:]]


# input name -> (argv maker given (tmp folder, corpus maker))
INPUTS: dict[str, Callable[[Path, Callable[[Path], None]], list[str]]] = {
    "run --town": _town_dir,
    "run --residents": lambda b, m: (m(b / "r.json"), ["run", "--residents", str(b / "r.json"), *RUN,
                                                        "--out", str(b / "out")])[1],
    "run --encounters": lambda b, m: (m(b / "e.json"), ["run", "--encounters", str(b / "e.json"), *RUN,
                                                         "--out", str(b / "out")])[1],
    "import haicosystem": lambda b, m: ["import", "haicosystem", str(_in_dir(b, m)), "--out", str(b / "out")],
    "import toolemu": lambda b, m: (m(b / "c.json"), ["import", "toolemu", str(b / "c.json"), str(b / "c.json"),
                                                      "--out", str(b / "out")])[1],
    "import smallville": _smallville,
    "eval": lambda b, m: ["eval", str(_in_dir(b, m)), "--out", str(b / "out"), "--no-progress"],
    "judge": lambda b, m: (m(b / "t.json"), ["judge", str(b / "t.json"), "--out", str(b / "out")])[1],
    "replay --summary": lambda b, m: _run_db(b, m, ["replay", "--summary"]),
    "replay --timeline": lambda b, m: _run_db(b, m, ["replay", "--timeline"]),
    "interview": lambda b, m: _run_db(b, m, ["interview", "Ann Lee", "hello?", "--model", "scripted"]),
}


def _watchdog(signum: int, frame: object) -> None:
    raise Hung()


def _call(argv: list[str], capsys) -> tuple[int, str, str]:
    """Run the CLI in this process under a watchdog; (exit status, stdout, stderr)."""
    previous = signal.signal(signal.SIGALRM, _watchdog)
    signal.setitimer(signal.ITIMER_REAL, WATCHDOG_S)
    # a hang inside C code that retries through signals (SQLite opening a FIFO) ends the test
    # process with every thread's stack instead of blocking CI forever
    faulthandler.dump_traceback_later(2 * WATCHDOG_S, exit=True, file=sys.__stderr__)
    try:
        try:
            code = main(argv)
        except SystemExit as stop:  # argparse's usage errors
            code = stop.code if isinstance(stop.code, int) else 2
    except Hung:
        pytest.fail(f"hung past {WATCHDOG_S:g} s: {argv}")
    finally:
        faulthandler.cancel_dump_traceback_later()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    out, err = capsys.readouterr()
    return code, out, err


def _check(argv: list[str], code: int, out: str, err: str, out_path: Path | None) -> None:
    said = out + err
    assert "Traceback" not in said, (argv, said[-2000:])
    assert "unexpected error" not in said, (argv, said[-2000:])
    if code not in (0,) and out_path is not None:
        assert not out_path.exists(), (argv, "a failed command left", sorted(p.name for p in out_path.rglob("*")))


@pytest.mark.parametrize("command", list(INPUTS))
def test_every_file_input_survives_the_corpus(command: str, tmp_path: Path, capsys) -> None:
    for name, make in CORPUS.items():
        base = tmp_path / name
        base.mkdir()
        argv = INPUTS[command](base, make)
        code, out, err = _call(argv, capsys)
        _check(argv, code, out, err, base / "out")
        shutil.rmtree(base, ignore_errors=True)


# "\udcff": a byte that is not UTF-8 in a real command line arrives as a lone surrogate
NASTY = ["nan", "inf", "-0", "-1", "1e308", "1e400", "9" * 5000, "", " ", "\udcff", "\u202e5m", "5\u200bm",
         "\x1b[2J", "0x10", "١٢"]
PATH_OPTIONS = ("--out", "--cache-dir", "--residents")  # values taken as paths inside the test's folder
PATH_NASTY = ["", " ", "\udcff", "\u202e", "\x1b[2J", "9" * 5000, "a/../../b", "-0"]
RUN_OPTIONS = ["--duration", "--start", "--agents", "--seed", "--pace", "--chaos", "--seconds-per-tick",
               "--snapshot-every", "--model", "--town", "--residents", "--out", "--cache-dir"]


@pytest.mark.parametrize("option", RUN_OPTIONS)
def test_every_run_option_survives_nasty_values(option: str, tmp_path: Path, capsys) -> None:
    for i, value in enumerate(PATH_NASTY if option in PATH_OPTIONS else NASTY):
        out: Path | None = tmp_path / f"out{i}"
        given = str(tmp_path / f"v{i}" / value) if option in PATH_OPTIONS else value
        argv = ["run", *RUN, "--out", str(out), option, given]
        if option == "--out":
            out = None  # a nasty folder name may be a fine folder name
        code, text, err = _call(argv, capsys)
        _check(argv, code, text, err, out)


@pytest.mark.parametrize("option", ["--timeout", "--whisper", "--object", "--announce", "--encounter"])
def test_every_inject_option_survives_nasty_values(option: str, tmp_path: Path, capsys) -> None:
    (tmp_path / "run").mkdir()
    for value in NASTY:
        pairs = {"--whisper": [value, value], "--object": [value, value], "--encounter": [value, value]}
        what = ["--announce", "hi"] if option == "--timeout" else [option, *pairs.get(option, [value])]
        argv = ["inject", str(tmp_path / "run"), *what, "--json"]
        if option == "--timeout":
            argv += ["--timeout", value]
        code, out, err = _call(argv, capsys)
        _check(argv, code, out, err, None)
        assert code in (1, 2), (argv, code)
        if out.strip():
            assert json.loads(out)["ok"] is False
