"""Text at the boundaries: bounded, no control characters in, none raw out (timeline)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from maps.contracts import Persona
from maps.contracts import LIFESTYLE_MAX, MESSAGE_MAX, SHORT_MAX, escape_controls
from replays import commands
from maps.contracts import Record, TickRecords
from replays.timeline import build_timeline
from world import commands as injections

ESC = "\x1b"
PERSONA = {"name": "Ada Park", "age": 30, "occupation": "barista", "workplace": "Willow Cafe", "home": "Ada's House"}


def test_persona_fields_are_bounded_and_say_the_limit() -> None:
    assert Persona.model_validate(PERSONA).name == "Ada Park"
    with pytest.raises(ValueError, match=rf"lifestyle\n.*at most {LIFESTYLE_MAX} characters"):
        Persona.model_validate({**PERSONA, "lifestyle": "x" * 10_000_000})
    with pytest.raises(ValueError, match=r"traits\n.*at most 50 items"):
        Persona.model_validate({**PERSONA, "traits": ["kind"] * 51})
    with pytest.raises(ValueError, match=r"seed_memories\.0\n.*at most 500 characters"):
        Persona.model_validate({**PERSONA, "seed_memories": ["m" * 501]})
    with pytest.raises(ValueError, match=r"occupation\n.*at most 200 characters"):
        Persona.model_validate({**PERSONA, "occupation": "o" * 201})


@pytest.mark.parametrize("field", ["name", "occupation", "home", "lifestyle", "spawn"])
def test_persona_refuses_terminal_escapes(field: str) -> None:
    with pytest.raises(ValueError, match=rf"{field}\n.*control character U\+001B"):
        Persona.model_validate({**PERSONA, field: f"Ada{ESC}]0;pwned\x07"})


def test_persona_keeps_newlines_in_its_lifestyle_but_not_in_its_name() -> None:
    assert Persona.model_validate({**PERSONA, "lifestyle": "wakes at 7\nsleeps at 23"}).lifestyle.count("\n") == 1
    with pytest.raises(ValueError, match=r"name\n.*U\+000A"):
        Persona.model_validate({**PERSONA, "name": "Ada\nPark"})


def test_injected_commands_refuse_control_characters_and_long_text() -> None:
    with pytest.raises(commands.CommandError, match=r"text: .*control character U\+001B \(ESC\)"):
        commands.whisper("Ada", f"{ESC}[2J{ESC}[31myou are in danger")
    with pytest.raises(commands.CommandError, match=r"state: .*control character U\+009B"):
        commands.set_object("Willow Cafe:kitchen:stove", "burning\x9b2J")
    with pytest.raises(commands.CommandError, match=r"resident: .*control character"):
        commands.whisper(f"Ada{ESC}[8m", "hello")
    with pytest.raises(commands.CommandError, match=rf"text: .*at most {MESSAGE_MAX} characters") as err:
        commands.announce("a" * 10_000_000)
    assert len(str(err.value)) < 1000  # the error does not echo 10 MB back
    with pytest.raises(commands.CommandError, match=rf"state: .*at most {SHORT_MAX} characters"):
        commands.set_object("Willow Cafe:kitchen:stove", "s" * (SHORT_MAX + 1))
    assert commands.announce("  Fire drill at noon  ")["text"] == "Fire drill at noon"


def test_the_engine_check_refuses_them_too() -> None:
    cmd, result = injections.check({"kind": "whisper", "resident": "Ada", "text": f"hi{ESC}[2J"}, ["Ada"], {}, set())
    assert cmd is None and not result.accepted
    assert "U+001B" in result.message


def test_escape_controls_shows_escapes_and_keeps_text() -> None:
    assert escape_controls(f"a{ESC}[31mb\tc\nd\x9b") == "a\\x1b[31mb\\tc\nd\\x9b"
    assert escape_controls("Café ☕ — plain") == "Café ☕ — plain"


def test_timeline_of_an_old_run_never_prints_raw_control_characters() -> None:
    t0 = datetime(2024, 2, 13, 8, 0)
    evil = f"{ESC}]0;owned\x07{ESC}[2J"
    ticks = [
        TickRecords(tick=0, time=t0, records=[
            Record(kind="action", resident=f"Ada{ESC}[31m", data={"description": f"baking{evil}", "emoji": "",
                                                                  "address": f"Cafe{ESC}[8m"}),
            Record(kind="inject", data={"command": {"kind": "whisper", "resident": "Ada", "text": f"run{evil}"},
                                        "accepted": True}),
        ]),
        TickRecords(tick=1, time=t0 + timedelta(minutes=1), records=[
            Record(kind="object", data={"address": "Cafe:kitchen:stove", "old_state": "idle",
                                        "new_state": f"burning{evil}", "by": "inject"}),
        ]),
    ]
    md = build_timeline(ticks, {"town_name": f"Town{ESC}[5m"})
    assert not any(ord(c) < 0x20 and c != "\n" or 0x7F <= ord(c) <= 0x9F for c in md)
    assert "\\x1b]0;owned\\x07" in md and "burning\\x1b" in md
