"""The control channel: a private Unix socket per run, speaking JSON lines."""

from __future__ import annotations

import os
import socket
import stat
import tempfile
import threading
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
        assert path == server.path and path.exists()
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0  # owner only
        folder = path.parent.stat()
        assert folder.st_uid == os.getuid() and stat.S_IMODE(folder.st_mode) == 0o700
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
    path = control.socket_path(tmp_path, create=True)
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


def test_long_folder_paths_still_work_and_stay_private(tmp_path: Path) -> None:
    deep = tmp_path / ("x" * 60) / ("y" * 60)
    deep.mkdir(parents=True)
    with ControlServer(deep, FakeEngine().submit) as server:
        assert control.ping(deep)["ok"]
        # never a predictable name in the shared temp folder: a 0700 folder of ours
        assert server.path.parent != Path(tempfile.gettempdir())
        assert stat.S_IMODE(server.path.parent.stat().st_mode) == 0o700


@pytest.fixture
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private, short $XDG_RUNTIME_DIR for this test (the socket folder goes inside it)."""
    folder = Path(tempfile.mkdtemp(prefix="tf"))  # mode 0700, ours
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    yield folder
    for p in sorted(folder.rglob("*"), reverse=True):
        p.unlink() if not p.is_dir() or p.is_symlink() else p.rmdir()
    folder.rmdir()


def test_sockets_go_in_xdg_runtime_dir(tmp_path: Path, runtime_dir: Path) -> None:
    with ControlServer(tmp_path, FakeEngine().submit) as server:
        assert server.path.parent == runtime_dir / "townsfolk"
        assert control.inject(tmp_path, {"kind": "announce", "text": "hello"})["ok"]


def test_a_socket_folder_that_is_not_private_is_refused(tmp_path: Path, runtime_dir: Path) -> None:
    folder = runtime_dir / "townsfolk"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    with pytest.raises(ControlError, match=r"mode 0755.*--no-control"):
        ControlServer(tmp_path, FakeEngine().submit).start()
    folder.rmdir()
    # a link planted in place of the folder is refused too
    elsewhere = runtime_dir / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    folder.symlink_to(elsewhere)
    with pytest.raises(ControlError, match="not a directory"):
        ControlServer(tmp_path, FakeEngine().submit).start()
    # and a folder of another user (what a local attacker pre-creates in /tmp)
    folder.unlink()
    folder.mkdir(mode=0o700)
    with pytest.raises(ControlError, match=r"belongs to uid \d+, not to you"):
        control.check_private_dir(folder, uid=os.getuid() + 1)
    if os.getuid() == 0:  # root can make the real thing: a folder owned by 'nobody'
        os.chown(folder, 65534, 65534)
        with pytest.raises(ControlError, match="belongs to uid 65534"):
            ControlServer(tmp_path, FakeEngine().submit).start()
        os.chown(folder, 0, 0)


def test_a_socket_path_taken_by_someone_else_is_refused(tmp_path: Path, runtime_dir: Path) -> None:
    path = control.socket_path(tmp_path, create=True)
    path.write_text("not a socket")
    with pytest.raises(ControlError, match=r"not a socket.*--no-control"):
        ControlServer(tmp_path, FakeEngine().submit).start()
    assert path.read_text() == "not a socket"  # nothing of theirs is removed
    path.unlink()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()
    with pytest.raises(ControlError, match=r"belongs to uid \d+, not to you"):
        control.check_socket_owner(path, uid=os.getuid() + 1)
    if os.getuid() == 0:
        os.chown(path, 65534, 65534)
        with pytest.raises(ControlError, match="belongs to uid 65534"):
            ControlServer(tmp_path, FakeEngine().submit).start()
        with pytest.raises(ControlError, match="belongs to uid 65534"):  # the client will not send to it
            control.inject(tmp_path, {"kind": "announce", "text": "secret"})
        assert not control.is_live(tmp_path)


def test_the_server_refuses_peers_of_another_uid(tmp_path: Path) -> None:
    eng = FakeEngine()
    with ControlServer(tmp_path, eng.submit) as server:
        server.owner_uid = os.getuid() + 1  # as if the run belonged to someone else
        reply = control.inject(tmp_path, {"kind": "announce", "text": "let me in"})
        assert not reply["ok"] and "permission denied" in reply["error"]
        server.owner_uid = os.getuid()
        assert control.inject(tmp_path, {"kind": "announce", "text": "mine"})["ok"]
    assert [c["text"] for c in eng.applied] == ["mine"]


def _raw(path: Path, payload: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(path))
        s.sendall(payload)
        data = b""
        while b"\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return data


def test_deep_long_and_binary_requests_get_an_error_and_the_server_keeps_serving(tmp_path: Path) -> None:
    eng = FakeEngine()
    with ControlServer(tmp_path, eng.submit) as server:
        assert b"nests deeper than 16 levels" in _raw(server.path, b"[" * 50_000 + b"\n")
        assert b"nests deeper than 16 levels" in _raw(server.path, b'{"op": "inject", "command": ' + b"{\"a\": " * 40 + b"\n")
        too_long = b'{"kind": "announce", "text": "' + b"x" * control.MAX_REQUEST_BYTES + b'"}\n'
        assert b"longer than 65536 bytes" in _raw(server.path, too_long)
        assert b"not UTF-8" in _raw(server.path, b"\xff\xfe{}\n")
        # brackets inside strings are text, not nesting
        ok = _raw(server.path, b'{"kind": "announce", "text": "' + b"[" * 100 + b'"}\n')
        assert b'"ok": true' in ok
        assert control.ping(tmp_path)["ok"]
    assert len(eng.applied) == 1


def test_a_burst_of_simultaneous_injects_is_queued_not_refused(tmp_path: Path) -> None:
    eng = FakeEngine()
    lock = threading.Lock()
    replies: list[dict[str, Any]] = []
    errors: list[str] = []

    def submit(command: dict[str, Any]) -> dict[str, Any]:
        with lock:
            return eng.submit(command)

    n = 100
    start = threading.Barrier(n)

    def one(i: int) -> None:
        start.wait()
        try:
            reply = control.inject(tmp_path, {"kind": "announce", "text": f"burst {i}"}, timeout=30)
            with lock:
                replies.append(reply)
        except ControlError as exc:
            with lock:
                errors.append(str(exc))

    with ControlServer(tmp_path, submit):
        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    assert sum(1 for r in replies if r["ok"]) == n
    assert sorted(c["text"] for c in eng.applied) == sorted(f"burst {i}" for i in range(n))


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another local user")
def test_another_local_user_cannot_reach_the_socket(tmp_path: Path) -> None:
    import subprocess
    import sys

    with ControlServer(tmp_path, FakeEngine().submit) as server:
        probe = ("import socket, sys\n"
                 "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
                 "try:\n    s.connect(sys.argv[1])\nexcept OSError as e:\n    print(type(e).__name__)\n"
                 "else:\n    print('connected')\n")
        python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
        try:
            out = subprocess.run([python, "-I", "-c", probe, str(server.path)], user=65534, group=65534,
                                 capture_output=True, text=True, timeout=30, cwd="/")
        except PermissionError:
            pytest.skip(f"user nobody cannot run {python}")
        assert out.stdout.strip() == "PermissionError", out.stdout + out.stderr


def test_a_run_refuses_to_start_when_its_channel_is_not_private(tmp_path: Path, runtime_dir: Path, capsys) -> None:
    from world.cli import main

    folder = runtime_dir / "townsfolk"
    folder.mkdir()
    folder.chmod(0o755)
    argv = ["run", "--mind", "routine", "--agents", "2", "--duration", "1m", "--quiet", "--json"]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert f"socket directory {folder} has mode 0755" in err and "--no-control" in err
    assert main([*argv, "--out", str(tmp_path / "b"), "--no-control"]) == 0  # the hint works


def test_the_socket_of_a_killed_run_is_cleaned_up(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    script = ("import sys, time\n"
              "from replays.control import ControlServer\n"
              "ControlServer(sys.argv[1], lambda c: None).start()\n"
              "print('ready', flush=True)\n"
              "time.sleep(60)\n")
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], cwd=repo, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        assert control.is_live(tmp_path)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert control.socket_path(tmp_path).exists() and not control.is_live(tmp_path)  # left behind
    with ControlServer(tmp_path, FakeEngine().submit):
        assert control.ping(tmp_path)["ok"]
    assert not control.socket_path(tmp_path).exists()
