"""Characters that change how a terminal shows text without being seen: refused in names and
commands, escaped when printed.

The contracts refuse C0/C1 control characters (terminal escapes). These are the others a
reader cannot see: bidirectional overrides and isolates (U+202E makes "txt.exe" read
"exe.txt"), zero-width spaces and marks, line/paragraph separators, the byte-order mark, and
lone surrogates (not text at all: printing one raises UnicodeEncodeError). Zero-width
(non-)joiners are kept: emoji sequences and some scripts need them.
"""

from __future__ import annotations

import re
import unicodedata

INVISIBLE = re.compile("[\u061c\u200b\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")
_ESCAPED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")


def char_label(ch: str) -> str:
    """'U+202E (RIGHT-TO-LEFT OVERRIDE)', 'U+D800 (lone surrogate)'."""
    code = ord(ch)
    name = "lone surrogate" if 0xD800 <= code <= 0xDFFF else unicodedata.name(ch, "")
    return f"U+{code:04X}" + (f" ({name})" if name else "")


def invisible_problem(text: str) -> str | None:
    """Why ``text`` holds a character a reader cannot see (or that is no text), or None.
    (Control characters are the contracts' to refuse: maps.contracts.control_problem.)"""
    found = INVISIBLE.search(text)
    if found is None:
        return None
    return (f"contains the invisible character {char_label(found.group())} at position {found.start()}; "
            "expected plain text")


def escape_invisible(text: str) -> str:
    """``text`` with every such character, and every control character but newline and tab,
    written as an escape (``\\u202e``, ``\\x1b``), for printing."""
    return _ESCAPED.sub(lambda m: m.group().encode("unicode_escape", "backslashreplace").decode("ascii"), text)


def strings_in(value: object, depth: int = 0) -> list[tuple[str, str]]:
    """(field path, text) of every string in a JSON-like value (keys included), for checks."""
    if depth > 32:
        return []
    out: list[tuple[str, str]] = []
    if isinstance(value, str):
        out.append(("", value))
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str):
                out.append((str(k), k))
            out.extend((f"{k}{'' if p.startswith('[') else '.'}{p}" if p else str(k), s) for p, s in strings_in(v, depth + 1))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            out.extend((f"[{i}]{'' if p.startswith('[') else '.'}{p}" if p else f"[{i}]", s) for p, s in strings_in(v, depth + 1))
    return out
