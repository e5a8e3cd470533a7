"""The local control channel of a live run: a Unix socket in the run folder, JSON lines.

A live run (``townsfolk run``/``watch``) starts a :class:`ControlServer` with the engine's
thread-safe ``submit``; another terminal (``townsfolk inject``) or a replay viewer
attached to a live folder talks to it with :func:`send` / :func:`inject`. There is no
network listener: the socket is a file readable only by its owner.

Protocol: one JSON object per line each way. Requests are ``{"op": "ping"}`` or
``{"op": "inject", "command": {...}}`` (a bare command object is taken as an inject);
replies are ``{"ok": true|false, ...}`` with ``error`` or ``message`` in words.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

SOCKET_NAME = "control.sock"
MAX_LINE = 64 * 1024
_UNIX_PATH_MAX = 100  # AF_UNIX paths are limited to ~107 bytes; keep a margin


class ControlError(RuntimeError):
    """The control channel could not be used; the message says why in plain words."""


def socket_path(run_dir: str | os.PathLike[str]) -> Path:
    """Where a run's control socket lives: in the run folder, or (for very long folder
    paths, which AF_UNIX cannot bind) in the temp folder under a name derived from it."""
    run = Path(run_dir).resolve()
    path = run / SOCKET_NAME
    if len(os.fsencode(str(path))) <= _UNIX_PATH_MAX:
        return path
    digest = hashlib.sha1(os.fsencode(str(run))).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"townsfolk-{digest}.sock"


def _result_to_reply(result: Any) -> dict[str, Any]:
    """Turn whatever ``submit`` returned (InjectResult, dict, bool, None) into a reply."""
    if result is None:
        return {"ok": True, "accepted": True, "message": "queued"}
    if hasattr(result, "model_dump"):
        result = result.model_dump(mode="json")
    if isinstance(result, bool):
        return {"ok": result, "accepted": result, "message": "" if result else "refused"}
    if isinstance(result, dict):
        accepted = bool(result.get("accepted", result.get("ok", True)))
        reply = {k: v for k, v in result.items()}
        reply["ok"] = accepted
        reply["accepted"] = accepted
        if not accepted and "error" not in reply:
            reply["error"] = str(reply.get("message") or "refused")
        return reply
    accepted = bool(getattr(result, "accepted", True))
    message = str(getattr(result, "message", ""))
    reply = {"ok": accepted, "accepted": accepted, "message": message}
    if not accepted:
        reply["error"] = message or "refused"
    return reply


class ControlServer:
    """Serves a run's control socket on a background thread until :meth:`stop`."""

    def __init__(self, run_dir: str | os.PathLike[str], submit: Callable[[dict[str, Any]], Any],
                 *, info: dict[str, Any] | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.submit = submit
        self.info = dict(info or {})
        self.path = socket_path(run_dir)
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._clients: set[socket.socket] = set()
        self._lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> "ControlServer":
        if not self.run_dir.is_dir():
            raise ControlError(f"cannot open a control channel: no run folder at {self.run_dir}")
        if self.path.exists():
            if _answers(self.path):
                raise ControlError(f"another live run already serves {self.path}")
            self.path.unlink()  # left behind by a run that was killed
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            sock.bind(str(self.path))
        finally:
            os.umask(old_umask)
        sock.listen(8)
        sock.settimeout(0.2)
        self._sock = sock
        self._stopping.clear()
        self._thread = threading.Thread(target=self._serve, name="townsfolk-control", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        with self._lock:
            for c in list(self._clients):
                try:
                    c.close()
                except OSError:
                    pass
            self._clients.clear()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    def __enter__(self) -> "ControlServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- serving -----------------------------------------------------------

    def _serve(self) -> None:
        assert self._sock is not None
        while not self._stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            with self._lock:
                self._clients.add(conn)
            threading.Thread(target=self._client, args=(conn,), daemon=True).start()

    def _client(self, conn: socket.socket) -> None:
        buf = b""
        try:
            conn.settimeout(30.0)
            while not self._stopping.is_set():
                try:
                    chunk = conn.recv(4096)
                except socket.timeout:
                    break
                if not chunk:
                    break
                buf += chunk
                if len(buf) > MAX_LINE and b"\n" not in buf:
                    self._reply(conn, {"ok": False, "error": f"request longer than {MAX_LINE} bytes"})
                    break
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        self._reply(conn, self.handle_line(line))
        except OSError:
            pass
        finally:
            with self._lock:
                self._clients.discard(conn)
            conn.close()

    @staticmethod
    def _reply(conn: socket.socket, reply: dict[str, Any]) -> None:
        conn.sendall((json.dumps(reply, default=str) + "\n").encode("utf-8"))

    def handle_line(self, line: bytes | str) -> dict[str, Any]:
        """Answer one request line; never raises (a bad request gets an error reply)."""
        try:
            msg = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            return {"ok": False, "error": f"request is not valid JSON: {exc}"}
        if not isinstance(msg, dict):
            return {"ok": False, "error": f"request must be a JSON object, got {type(msg).__name__}"}
        op = msg.get("op", "inject")
        if op == "ping":
            return {"ok": True, "pid": os.getpid(), "run_dir": str(self.run_dir), **self.info}
        if op != "inject":
            return {"ok": False, "error": f"unknown op {op!r}; expected 'ping' or 'inject'"}
        command = msg.get("command", None if "op" in msg else msg)
        if not isinstance(command, dict):
            return {"ok": False, "error": "inject needs a 'command' object, e.g. "
                                          '{"kind": "announce", "text": "..."}'}
        try:
            return _result_to_reply(self.submit(command))
        except Exception as exc:  # the engine refused it: report, keep serving
            return {"ok": False, "accepted": False, "error": str(exc) or type(exc).__name__}


# ---------------------------------------------------------------------------
# Client
# ---------------------------------------------------------------------------


def _answers(path: Path) -> bool:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(1.0)
            s.connect(str(path))
            return True
    except OSError:
        return False


def is_live(run_dir: str | os.PathLike[str]) -> bool:
    """True when a run is serving its control channel in ``run_dir``."""
    path = socket_path(run_dir)
    return path.exists() and _answers(path)


def send(run_dir: str | os.PathLike[str], message: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """Send one request to a live run and return its reply; :class:`ControlError` if none."""
    run = Path(run_dir)
    if not run.is_dir():
        raise ControlError(f"no run folder at {run}")
    path = socket_path(run)
    if not path.exists():
        raise ControlError(
            f"the run in {run} is not live: no control socket at {path} "
            "(the run has finished, was killed, or is not a live run)"
        )
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(path))
            s.sendall((json.dumps(message) + "\n").encode("utf-8"))
            buf = b""
            while b"\n" not in buf:
                chunk = s.recv(4096)
                if not chunk:
                    break
                buf += chunk
    except (ConnectionRefusedError, FileNotFoundError):
        raise ControlError(
            f"the run in {run} is not live: its control socket {path} does not answer "
            "(the run was probably killed)"
        ) from None
    except socket.timeout:
        raise ControlError(f"the run in {run} did not answer within {timeout:g} s") from None
    except OSError as exc:
        raise ControlError(f"could not reach the run in {run}: {exc}") from None
    if not buf.strip():
        raise ControlError(f"the run in {run} closed the control channel without answering")
    try:
        reply = json.loads(buf.split(b"\n", 1)[0])
    except ValueError:
        raise ControlError(f"the run in {run} sent a reply that is not JSON: {buf[:200]!r}") from None
    if not isinstance(reply, dict):
        raise ControlError(f"the run in {run} sent an unexpected reply: {reply!r}")
    return reply


def inject(run_dir: str | os.PathLike[str], command: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """Submit one injected command to a live run; the reply says whether it was accepted."""
    return send(run_dir, {"op": "inject", "command": command}, timeout=timeout)


def ping(run_dir: str | os.PathLike[str], timeout: float = 3.0) -> dict[str, Any]:
    return send(run_dir, {"op": "ping"}, timeout=timeout)
