"""argparse value types shared by the agents' commands, so their errors read alike."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

from agents.llm.fleet import FLEET_PREFIX, FleetFileError, load_fleet


def whole_number(text: str, least: int, meaning: str) -> int:
    """A whole number of at least ``least``; ``meaning`` says what the bound is for in the error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"expected {meaning}, got {value}")
    return value


def positive_int(text: str) -> int:
    """A whole number of at least 1 (counts of seeds, workers, episodes)."""
    return whole_number(text, 1, "a number of at least 1")


def episode_turns(text: str) -> int:
    """Turns of an encounter: at least 2, so the assistant speaks (the human always goes first;
    with 1 the judges would score an assistant that never acted)."""
    return whole_number(text, 2, "at least 2 (the human speaks, then the assistant replies)")


def count_or_all(text: str) -> int:
    """A whole number of at least 0, where 0 means all (of the requests, the items...)."""
    return whole_number(text, 0, "0 (all) or more")


def window_size(text: str, least: tuple[int, int] = (320, 240), most: tuple[int, int] = (7680, 4320)) -> tuple[int, int]:
    """'WIDTHxHEIGHT' -> (w, h) within ``least`` .. ``most`` (a ValueError says which bound and why)."""
    try:
        w, h = (int(v) for v in str(text).lower().split("x"))
    except ValueError:
        raise ValueError(f"expected WIDTHxHEIGHT such as 1920x1080, got {text!r}") from None
    if w < least[0] or h < least[1] or w > most[0] or h > most[1]:
        raise ValueError(f"size {text} is outside {least[0]}x{least[1]} .. {most[0]}x{most[1]}")
    return w, h


def size_type(text: str) -> tuple[int, int]:
    """``window_size`` as an argparse type, so a bad --size is a usage error naming the option."""
    try:
        return window_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def seconds(text: str, most: float = 86400.0) -> float:
    """A finite number of seconds above 0 and at most ``most`` (a day): refuses nan, inf, -1, 1e308."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got '{text}'") from None
    if not math.isfinite(value) or value <= 0 or value > most:
        raise argparse.ArgumentTypeError(f"expected seconds above 0 and at most {most:g}, got '{text}'")
    return value


def folder_problem(path: Path, option: str = "--out") -> str | None:
    """Why ``path`` cannot be an output folder (made with its parents if missing), or None:
    a file there or above it, or a folder we cannot write in."""
    probe = path.absolute()
    if probe.exists() and not probe.is_dir():
        return f"{option} {path}: is a file (or a device); expected a folder (created if missing)"
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        return f"{option} {path}: {probe} is a file, not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{option} {path}: cannot write in {probe} (permission denied)"
    return None


def fleet_model(text: str) -> str:
    """``--models FILE`` as the model string ``fleet:<absolute path>``, the file checked now so a bad
    one is a usage error naming the file, the field and what was expected (agents/llm/fleet.py)."""
    try:
        load_fleet(text)
    except FleetFileError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return FLEET_PREFIX + str(Path(text).absolute())
