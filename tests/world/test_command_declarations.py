"""A command is declared once: a toy command declared in this module only (its model with its
one-line form, help line and viewer mode, and the plugin that serves it) reaches the text parser,
`townsfolk inject`, the control socket, the viewer's input box, the help and the docs, with no
edit anywhere else."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

import pygame
import pytest

from maps.contracts import (
    COMMAND_HELP, Command, InputMode, Intent, Name, Perception, Record, Short, TextArg, command_help, command_reference,
)
from maps.town import load_town
from replays import commands as wire
from replays.control import ControlServer
from replays.export import init_headless
from replays.feeds import LiveFeed
from replays.frames import FrameState
from replays.mapview import grid_map
from replays.viewer import Viewer, input_modes, mode_label, slash_aliases
from world import commands
from world.cli import inject
from world.engine import Engine

T0 = datetime(2024, 2, 13, 9, 0)


class ToyPlugin:
    """Serves ``wave``: a resident is waved at (a whisper they hear next tick); a rude wave is refused."""

    def __init__(self, model: type[Command]) -> None:
        self.commands = {"wave": model}
        self.pending: list[Any] = []

    async def on_tick(self, view: Any) -> list[Record]:
        for cmd in self.pending:
            view.deliver_whisper(cmd.resident, f"someone waves at you{' ' + cmd.gesture if cmd.gesture else ''}")
        self.pending = []
        return []

    def check_command(self, cmd: Any) -> str | None:
        return "wave: no rude waves" if cmd.gesture == "rudely" else None

    def handle_command(self, cmd: Any) -> None:
        self.pending.append(cmd)

    def snapshot(self) -> dict:
        return {}

    def restore(self, state: dict) -> None:
        self.pending = []


@pytest.fixture
def wave() -> Iterator[type[Command]]:
    """The toy declaration. Defining it registers it (Command.kinds); it is taken out again after
    the test, so other tests see the built-in commands only."""

    class WaveCommand(Command):
        """Wave at a resident from afar."""

        kind: Literal["wave"] = "wave"
        served_by: ClassVar[str] = "start it with the toy plugin"
        resident: Name
        gesture: Short | None = None
        text_args: ClassVar = (TextArg("resident", "NAME", among="names"), TextArg("gesture", "gesture", optional=True))
        help_line: ClassVar = "wave at a resident, who hears of it as a thought"
        input_mode: ClassVar = InputMode("Wave", "wave at {target}", text_field="gesture", target="resident",
                                         target_field="resident", missing="select a resident to wave at", aliases=("wv",))

        def describe(self) -> str:
            return f"wave at {self.resident}" + (f" {self.gesture}" if self.gesture else "")

    yield WaveCommand
    del Command.kinds["wave"]


class EarMind:
    """Keeps doing what it does; remembers every whisper it hears."""

    def __init__(self) -> None:
        self.whispers: list[str] = []

    def decide_fast(self, perception: Perception) -> Intent | None:
        self.whispers.extend(perception.whispers)
        return Intent(kind="continue")

    async def decide(self, perception: Perception) -> Intent:
        return Intent(kind="continue")

    def drain_records(self) -> list:
        return []

    def snapshot(self) -> dict:
        return {}

    def restore(self, state: dict) -> None:
        pass


def _engine(tmp_path: Path, plugin: ToyPlugin | None) -> tuple[Engine, dict[str, EarMind]]:
    town = load_town("default")
    personas = town.residents[:2]
    minds = {p.name: EarMind() for p in personas}
    engine = Engine(town, personas, minds, start=T0)
    if plugin is not None:
        engine.add_plugin(plugin)
    asyncio.run(engine.step())
    return engine, minds


def _inject(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    inject.add_arguments(parser)
    return inject.main(parser.parse_args(list(argv)))


def test_the_one_line_form_and_the_help_come_from_the_declaration(wave) -> None:
    cmd = commands.parse("wave Maria Alvarez cheerfully", names=["Maria Alvarez"])
    assert isinstance(cmd, wave) and (cmd.resident, cmd.gesture) == ("Maria Alvarez", "cheerfully")
    assert commands.parse("WAVE 'Bob Li'", names=[]).model_dump() == {"kind": "wave", "resident": "Bob Li", "gesture": None}
    assert wave.text_form() == "wave NAME [gesture]"
    assert command_help() == COMMAND_HELP.removesuffix(" or 'encounter NAME SERVICE [SCENARIO]'") + (
        ", 'encounter NAME SERVICE [SCENARIO]' or 'wave NAME [gesture]'")
    with pytest.raises(ValueError, match=r"unknown command 'wink'; .*'wave NAME \[gesture\]'"):
        commands.parse("wink Ada", names=["Ada"])
    with pytest.raises(ValueError, match=r"wave.resident: .*'wave NAME \[gesture\]'"):
        commands.parse({"kind": "wave"})
    assert ("- `wave NAME [gesture]` (`inject --wave NAME`, viewer mode 'Wave'): wave at a resident, who hears of it "
            "as a thought (start it with the toy plugin)") in command_reference()


def test_the_built_in_help_is_what_it_was() -> None:
    assert COMMAND_HELP == command_help() == ("expected 'whisper NAME text', 'object ADDRESS state', 'announce text' "
                                              "or 'encounter NAME SERVICE [SCENARIO]'")
    assert "wave" not in Command.kinds


def test_the_engine_serves_it_through_its_plugin_and_refuses_it_without(wave, tmp_path: Path) -> None:
    engine, minds = _engine(tmp_path, ToyPlugin(wave))
    name = engine.resident_names[0]
    result = engine.submit(f"wave {name} warmly")
    assert result.accepted and result.text == f"wave at {name} warmly"
    refused = engine.submit({"kind": "wave", "resident": name, "gesture": "rudely"})
    assert not refused.accepted and refused.message == "wave: no rude waves"
    asyncio.run(engine.step())
    asyncio.run(engine.step())
    assert minds[name].whispers == ["someone waves at you warmly"]
    bare, _ = _engine(tmp_path, None)
    assert bare.submit(f"wave {name}").message == "wave: not served in this run (start it with the toy plugin)"


def test_inject_has_its_flag_and_sends_it_over_the_socket(wave, tmp_path: Path, capsys) -> None:
    parser = argparse.ArgumentParser()
    inject.add_arguments(parser)
    assert "--wave NAME" in parser.format_usage() and "wave at a resident, who hears" in parser.format_help()
    assert "- `wave NAME [gesture]` (`inject --wave NAME`, viewer mode 'Wave')" in parser.format_help()  # its docs line
    assert inject.build(parser.parse_args(["d", "--wave", "Ada"])) == {"kind": "wave", "resident": "Ada", "gesture": None}
    engine, minds = _engine(tmp_path, ToyPlugin(wave))
    name = engine.resident_names[1]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with ControlServer(run_dir, engine.submit):
        assert _inject(str(run_dir), "--wave", name) == 0
        assert f"accepted: wave at {name}" in capsys.readouterr().out
        assert _inject(str(run_dir), "--wave", "Nobody Atall") == 1
        assert "no resident named 'Nobody Atall'" in capsys.readouterr().err
    assert _inject(str(run_dir), "--wave", "") == 2  # refused before sending: the shape is wrong
    assert "wave.resident" in capsys.readouterr().err
    asyncio.run(engine.step())
    asyncio.run(engine.step())
    assert minds[name].whispers == ["someone waves at you"]


def test_the_viewer_has_its_mode(wave) -> None:
    init_headless()
    sent: list[dict] = []
    feed = LiveFeed(submit=lambda cmd: sent.append(cmd) or {"accepted": True, "message": "queued"}, pace=60.0)
    v = Viewer(grid_map(2, 1), feed, size=(1280, 720), frame=FrameState())
    assert input_modes() == ("whisper", "object", "announce", "wave", "ask") and v.modes == input_modes()
    assert mode_label("wave") == "Wave" and slash_aliases()["wv"] == "wave"
    v.mode = "wave"
    assert v._placeholder() == "Enter: wave at (click a resident)"
    v.text = "cheerfully"
    v.submit_text()  # nobody selected: the declared 'missing' words, nothing sent
    assert not sent and v.notices[-1].text == "select a resident to wave at" and v.text == "cheerfully"
    v.select("Ada")
    assert v._placeholder() == "Enter: wave at Ada"
    v.submit_text()
    v.text = "/wv shyly"
    v.submit_text()
    assert sent == [{"kind": "wave", "resident": "Ada", "gesture": "cheerfully"},
                    {"kind": "wave", "resident": "Ada", "gesture": "shyly"}]
    v.text = "/nod"
    v.submit_text()
    assert v.notices[-1].text == "unknown command /nod: use /whisper, /object, /announce, /wave or /ask"
    v.draw(pygame.Surface((1280, 720)))  # its button is drawn with its label


def test_a_declaration_naming_a_field_it_lacks_is_refused_and_not_registered() -> None:
    with pytest.raises(TypeError, match=r"command NodCommand: text_args/input_mode name 'who', not among its fields"):
        class NodCommand(Command):
            kind: Literal["nod"] = "nod"
            resident: Name
            text_args: ClassVar = (TextArg("who", "NAME", among="names"),)
    with pytest.raises(TypeError, match="only the last of text_args may be optional"):
        class ShrugCommand(Command):
            kind: Literal["shrug"] = "shrug"
            resident: Name | None = None
            why: Short
            text_args: ClassVar = (TextArg("resident", "NAME", optional=True), TextArg("why", "why"))
    assert "nod" not in Command.kinds and "shrug" not in Command.kinds
