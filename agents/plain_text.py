"""Text that crosses a boundary into the town: bounded in length, free of control characters.

Names, addresses, persona fields, whispers, announcements and object states go into every
prompt (a 10 MB lifestyle is a real bill on a paid model) and onto terminals (an ESC in a
whisper is a terminal escape when a timeline is printed). The pydantic types here are used
by the models at the boundaries (residents files, town maps, injected commands), so bad text
is refused with the field's name and the limit, before anything is applied.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated

from pydantic import AfterValidator, StringConstraints

# Limits, in characters. The built-in towns use a fraction of each (longest lifestyle: 74).
NAME_MAX = 80  # a resident, sector, room, object or spawn name
ADDRESS_MAX = 250  # 'sector:arena:object'
SHORT_MAX = 200  # an occupation, a relation, a trait, an object's state, a scenario id
MEMORY_MAX = 500  # one seed memory
LIFESTYLE_MAX = 2000  # a persona's lifestyle paragraph
MESSAGE_MAX = 1000  # a whisper or an announcement
LIST_MAX = 50  # traits, relationships, seed memories of one persona

# C0 controls, DEL and C1 controls: what a terminal may read as an escape sequence.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_CONTROL_IN_PARAGRAPH = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # tabs and newlines allowed


_CONTROL_NAMES = {0x00: "NUL", 0x07: "BEL", 0x08: "BACKSPACE", 0x09: "TAB", 0x0A: "NEWLINE", 0x0D: "CARRIAGE RETURN",
                  0x1B: "ESC", 0x7F: "DEL", 0x9B: "CSI"}


def char_name(ch: str) -> str:
    """'U+001B (ESC)': how an error names a character it refuses."""
    name = _CONTROL_NAMES.get(ord(ch)) or unicodedata.name(ch, "")
    return f"U+{ord(ch):04X}" + (f" ({name})" if name else "")


def _refuse(pattern: re.Pattern[str]) -> AfterValidator:
    def check(value: str) -> str:
        found = pattern.search(value)
        if found is not None:
            raise ValueError(
                f"contains the control character {char_name(found.group())} at position {found.start()}; "
                "control characters (terminal escapes) are not allowed"
            )
        return value

    return AfterValidator(check)


def escape_controls(text: str) -> str:
    """Show control characters (except newlines) as ``\\x1b``-style escapes, for output of
    text that was recorded before the boundary checked it."""
    return _CONTROL.sub(lambda m: m.group() if m.group() == "\n" else m.group().encode("unicode_escape").decode(), text)


_LINE = _refuse(_CONTROL)  # one line: no control characters at all
_PARAGRAPH = _refuse(_CONTROL_IN_PARAGRAPH)  # free text: tabs and newlines allowed

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=NAME_MAX), _LINE]
Address = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=ADDRESS_MAX), _LINE]
Short = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=SHORT_MAX), _LINE]
Memory = Annotated[str, StringConstraints(strip_whitespace=True, max_length=MEMORY_MAX), _PARAGRAPH]
Lifestyle = Annotated[str, StringConstraints(strip_whitespace=True, max_length=LIFESTYLE_MAX), _PARAGRAPH]
Message = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MESSAGE_MAX), _PARAGRAPH]


def control_problem(text: str) -> str | None:
    """Why ``text`` is not a plain line (a control character), or None when it is."""
    found = _CONTROL.search(text)
    if found is None:
        return None
    return f"contains the control character {char_name(found.group())} at position {found.start()}"
