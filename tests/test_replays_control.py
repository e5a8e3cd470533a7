"""The control channel: a Unix socket in the run folder speaking JSON lines."""

from __future__ import annotations

import socket
import stat
from pathlib import Path
from typing import Any

import pytest

from replays import control
from replays.control import ControlError, ControlServer


class FakeEngine:
    """Validates like the engine: whisper needs a known resident, announce needs text."""

    def __init__(self) -> None:
        self.applied: list[dict[str, Any]] = []

    def submit(self, command: dict[str, Any]) -> dict[str, Any]:
        kind = command.get("kind")
        if kind == "whisper" and command.get("resident") == "Ada" and command.get("text"):
            self.applied.append(command)
            return {"accepted": True, "message": "queued"}
        if kind == "announce" and command.get("text"):
            self.applied.append(command)
            return {"accepted": True, "message": "queued"}
        raise ValueError(f"unknown or malformed command {command!r}")


def test_inject_round_trip_and_refusal(tmp_path: Path) -> None:
    eng = FakeEngine()
    with ControlServer(tmp_path, eng.submit) as server:
        path = control.socket_path(tmp_path)
        assert path.parent == tmp_path.resolve() and path.exists()
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0  # owner only
        assert control.is_live(tmp_path)
        assert control.ping(tmp_path)["ok"]
        ok = control.inject(tmp_path, {"kind": "whisper", "resident": "Ada", "text": "you love jazz"})
        assert ok["ok"] and ok["accepted"]
        bad = control.inject(tmp_path, {"kind": "whisper", "resident": "Nobody", "text": "x"})
        assert not bad["ok"] and "malformed" in bad["error"]
        # Garbage on the wire gets an error and the server keeps serving.
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(str(server.path))
            s.sendall(b"{not json\n[1,2]\n")
            data = b""
            while data.count(b"\n") < 2:
                data += s.recv(4096)
        assert b"not valid JSON" in data and b"must be a JSON object" in data
        assert control.inject(tmp_path, {"kind": "announce", "text": "Fire drill"})["ok"]
    assert [c["kind"] for c in eng.applied] == ["whisper", "announce"]
    assert not control.socket_path(tmp_path).exists()


def test_dead_or_missing_run_says_so(tmp_path: Path) -> None:
    with pytest.raises(ControlError, match="no run folder"):
        control.inject(tmp_path / "nope", {"kind": "announce", "text": "x"})
    with pytest.raises(ControlError, match="not live"):
        control.inject(tmp_path, {"kind": "announce", "text": "x"})
    # A socket file left behind by a killed run.
    path = control.socket_path(tmp_path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()
    with pytest.raises(ControlError, match="does not answer"):
        control.inject(tmp_path, {"kind": "announce", "text": "x"})
    # A new server replaces the stale file.
    with ControlServer(tmp_path, FakeEngine().submit):
        assert control.is_live(tmp_path)


def test_second_server_on_a_live_folder_is_refused(tmp_path: Path) -> None:
    with ControlServer(tmp_path, FakeEngine().submit):
        with pytest.raises(ControlError, match="already serves"):
            ControlServer(tmp_path, FakeEngine().submit).start()


def test_long_folder_paths_still_work(tmp_path: Path) -> None:
    deep = tmp_path / ("x" * 60) / ("y" * 60)
    deep.mkdir(parents=True)
    with ControlServer(deep, FakeEngine().submit):
        assert control.ping(deep)["ok"]
