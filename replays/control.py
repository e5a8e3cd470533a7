"""The local control channel of a live run: a private Unix socket, JSON lines.

A live run (``townsfolk run``/``watch``) starts a :class:`ControlServer` with the engine's
thread-safe ``submit``; another terminal (``townsfolk inject``) or a replay viewer
attached to a live folder talks to it with :func:`send` / :func:`inject`. There is no
network listener.

The channel is private to the user who started the run. Sockets live in a per-user
directory of mode 0700 (``$XDG_RUNTIME_DIR/townsfolk`` when that is a private folder of
ours, else ``<tmp>/townsfolk-<uid>``), named after a hash of the run folder, so that the
name is short whatever the folder's path. A directory there with another owner or a wider
mode is refused (someone may be waiting to receive the run's whispers), the server checks
each peer's uid (SO_PEERCRED) and the client checks the socket's owner before sending.

Protocol: one JSON object per line each way, at most :data:`MAX_REQUEST_BYTES` bytes and
:data:`MAX_DEPTH` levels of nesting. Requests are ``{"op": "ping"}`` or
``{"op": "inject", "command": {...}}`` (a bare command object is taken as an inject);
replies are ``{"ok": true|false, ...}`` with ``error`` or ``message`` in words.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import socket
import socketserver
import stat
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from maps.files import json_depth

MAX_REQUEST_BYTES = 64 * 1024  # a command is a few hundred bytes; this is generous
MAX_DEPTH = 16  # a command nests two levels; deeper JSON is refused before parsing
BACKLOG = 1024  # connections queued while the server is busy (the kernel may cap it)
MAX_CONNECTIONS = 64  # connections served at once; more are told the run is busy
MAX_PER_PEER = 8  # of those, from one client process
IDLE_S = 10.0  # a connection that starts no request for this long is closed
REQUEST_S = 5.0  # a request line must be complete this long after its first byte
ACCEPT_WAIT_S = 5.0  # at capacity, a new connection waits this long for a slot, then is told the run is busy
_UNIX_PATH_MAX = 100  # AF_UNIX paths are limited to ~107 bytes; keep a margin
NO_CONTROL_HINT = "or start the run with --no-control (no live commands)"


class ControlError(RuntimeError):
    """The control channel could not be used; the message says why in plain words."""


# ---------------------------------------------------------------------------
# Where sockets live
# ---------------------------------------------------------------------------


def _uid() -> int:
    return os.getuid()


def _is_private_dir(path: Path, uid: int) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == uid and not st.st_mode & 0o077


def socket_dirs() -> list[Path]:
    """The per-user socket directories, preferred first (the server binds in the first)."""
    uid = _uid()
    dirs: list[Path] = []
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and Path(xdg).is_absolute() and _is_private_dir(Path(xdg), uid):
        dirs.append(Path(xdg) / "townsfolk")
    dirs.append(Path(tempfile.gettempdir()) / f"townsfolk-{uid}")
    if Path(tempfile.gettempdir()) != Path("/tmp"):
        dirs.append(Path("/tmp") / f"townsfolk-{uid}")  # when TMPDIR is too long for AF_UNIX
    return dirs


def check_private_dir(path: Path, uid: int | None = None) -> None:
    """Raise :class:`ControlError` unless ``path`` is a real directory of ours with mode 0700."""
    uid = _uid() if uid is None else uid
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise ControlError(f"control channel: no socket directory {path}") from None
    why = ""
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        why = "is not a directory (a link or a file)"
    elif st.st_uid != uid:
        why = f"belongs to uid {st.st_uid}, not to you (uid {uid})"
    elif st.st_mode & 0o077:
        why = f"has mode {stat.S_IMODE(st.st_mode):04o}; expected 0700 (private to you)"
    if why:
        raise ControlError(
            f"control channel refused: the socket directory {path} {why}; someone else could receive "
            f"this run's commands. Remove it (or set XDG_RUNTIME_DIR to a private folder), {NO_CONTROL_HINT}"
        )


def _make_private_dir(path: Path) -> None:
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise ControlError(f"control channel: cannot create {path}: {exc.strerror}; {NO_CONTROL_HINT}") from None
    check_private_dir(path)


def _name(run_dir: str | os.PathLike[str]) -> str:
    run = Path(run_dir).resolve()
    return hashlib.sha256(os.fsencode(str(run))).hexdigest()[:24] + ".sock"


def socket_path(run_dir: str | os.PathLike[str], *, create: bool = False) -> Path:
    """Where a run's control socket lives (or would live): the first per-user directory
    whose socket path fits AF_UNIX. With ``create`` the directory is made and checked
    (:class:`ControlError` when it is not private); without, an existing socket in any of
    the directories wins, so a client finds a server whose environment differed."""
    name = _name(run_dir)
    fitting = [d / name for d in socket_dirs() if len(os.fsencode(str(d / name))) <= _UNIX_PATH_MAX]
    if not fitting:
        raise ControlError(f"control channel: no socket directory with a short enough path; {NO_CONTROL_HINT}")
    if create:
        _make_private_dir(fitting[0].parent)
        return fitting[0]
    for path in fitting:
        if os.path.lexists(path):
            return path
    return fitting[0]


def check_channel() -> Path:
    """Make and check the socket directory a run would serve in, before the run folder is
    touched: a refused channel must not leave a run.db behind. ControlError says why."""
    fitting = [d for d in socket_dirs() if len(os.fsencode(str(d / ("0" * 24 + ".sock")))) <= _UNIX_PATH_MAX]
    if not fitting:
        raise ControlError(f"control channel: no socket directory with a short enough path; {NO_CONTROL_HINT}")
    _make_private_dir(fitting[0])
    return fitting[0]


def check_socket_owner(path: Path, uid: int | None = None) -> None:
    """Raise :class:`ControlError` unless ``path`` is a socket owned by ``uid`` (default: us)."""
    uid = _uid() if uid is None else uid
    st = os.lstat(path)
    if not stat.S_ISSOCK(st.st_mode):
        raise ControlError(f"control channel refused: {path} is not a socket; remove it, {NO_CONTROL_HINT}")
    if st.st_uid != uid:
        raise ControlError(
            f"control channel refused: {path} belongs to uid {st.st_uid}, not to you (uid {uid}); "
            f"someone else may be trying to receive this run's commands. Remove it, {NO_CONTROL_HINT}"
        )


def peer_ids(conn: socket.socket) -> tuple[int | None, int | None]:
    """(uid, pid) of the process at the other end of a Unix socket; None where the OS cannot say."""
    try:
        if hasattr(socket, "SO_PEERCRED"):  # Linux: struct ucred {pid, uid, gid}
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            pid, uid, _gid = struct.unpack("3i", creds)
            return uid, pid
        if sys.platform == "darwin":  # LOCAL_PEERCRED -> struct xucred {version, uid, ngroups, groups[16]}
            creds = conn.getsockopt(0, 0x001, struct.calcsize("IIh16I"))
            return struct.unpack_from("II", creds)[1], None
    except OSError:
        return None, None
    return None, None


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket; None where the OS cannot say."""
    return peer_ids(conn)[0]


# ---------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------


def parse_request(line: bytes | str) -> dict[str, Any] | str:
    """One request line -> its JSON object, or an error in words."""
    if isinstance(line, bytes):
        if len(line) > MAX_REQUEST_BYTES:
            return f"request longer than {MAX_REQUEST_BYTES} bytes"
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            return f"request is not UTF-8 text: {exc.reason} at byte {exc.start}"
    elif len(line.encode("utf-8", "replace")) > MAX_REQUEST_BYTES:
        return f"request longer than {MAX_REQUEST_BYTES} bytes"
    if json_depth(line, MAX_DEPTH) > MAX_DEPTH:
        return f"request nests deeper than {MAX_DEPTH} levels"
    try:
        msg = json.loads(line)
    except RecursionError:  # pragma: no cover - json_depth refuses these first
        return f"request nests deeper than {MAX_DEPTH} levels"
    except ValueError as exc:
        return f"request is not valid JSON: {exc}"
    if not isinstance(msg, dict):
        return f"request must be a JSON object, got {type(msg).__name__}"
    return msg


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


def _encode(reply: dict[str, Any]) -> bytes:
    return (json.dumps(reply, default=str) + "\n").encode("utf-8")


# ---------------------------------------------------------------------------
# Server
# ---------------------------------------------------------------------------


class _Handler(socketserver.BaseRequestHandler):
    """One connection: answer request lines until the client closes or goes quiet.

    A client gets :data:`IDLE_S` to start a request and :data:`REQUEST_S` to finish it: one that
    trickles a byte at a time is cut off, so slow clients cannot hold the server's slots."""

    def handle(self) -> None:
        owner: ControlServer = self.server.owner  # type: ignore[attr-defined]
        sock: socket.socket = self.request
        buf = bytearray()
        try:
            while not owner._stopping.is_set():
                line = _read_line(sock, buf)
                if line is None:
                    return
                if len(line) > MAX_REQUEST_BYTES:
                    sock.sendall(_encode({"ok": False, "error": f"request longer than {MAX_REQUEST_BYTES} bytes"}))
                    return  # the rest of the line is not read: close the connection
                if line.strip():
                    sock.sendall(_encode(owner.handle_line(line)))
        except TimeoutError:
            try:
                sock.sendall(_encode({"ok": False, "error": f"request not complete within {REQUEST_S:g} s; closed"}))
            except OSError:
                pass
        except OSError:  # a client that went away
            return


def _read_line(sock: socket.socket, buf: bytearray) -> bytes | None:
    """The next request line (with its newline) from ``sock``; None at the end. TimeoutError
    when none starts within IDLE_S or one started does not end within REQUEST_S."""
    started: float | None = None
    while True:
        end = buf.find(b"\n")
        if end >= 0 or len(buf) > MAX_REQUEST_BYTES:
            cut = end + 1 if end >= 0 else len(buf)
            line = bytes(buf[:cut])
            del buf[:cut]
            return line
        now = time.monotonic()
        if buf and started is None:
            started = now
        left = (started + REQUEST_S - now) if started is not None else IDLE_S
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            if not buf:
                return None  # quiet between requests: close without a word
            raise TimeoutError from None
        if not chunk:
            return bytes(buf) if buf else None
        if started is None:
            started = time.monotonic()
        buf += chunk


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = BACKLOG

    def __init__(self, path: str, owner: "ControlServer") -> None:
        self.owner = owner
        self._open: dict[int, int] = {}  # id(socket) -> peer pid, of connections being served
        self._slots = threading.Condition()
        super().__init__(path, _Handler, bind_and_activate=False)

    def server_bind(self) -> None:
        old_umask = os.umask(0o177)  # the socket file is rw for its owner only
        try:
            super().server_bind()
        finally:
            os.umask(old_umask)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        uid, pid = peer_ids(request)
        if uid is not None and uid != self.owner.owner_uid:
            return _refuse(request, f"permission denied: this run belongs to uid {self.owner.owner_uid}, you are uid {uid}")
        # At capacity, stop accepting for a while (later clients wait in the listen backlog: a
        # burst is queued, not refused); a slot frees when a request ends or a slow one is cut off.
        deadline = time.monotonic() + ACCEPT_WAIT_S
        with self._slots:
            while (why := self._full(pid)) and not self.owner._stopping.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._slots.wait(left)
            if not why:
                self._open[id(request)] = pid if pid is not None else -1
                return True
        return _refuse(request, f"busy: {why}; send one request per connection and close it, or try again")

    def _full(self, pid: int | None) -> str:
        """Why one more connection from ``pid`` cannot be served now ('' when it can)."""
        if len(self._open) >= MAX_CONNECTIONS:
            return f"{MAX_CONNECTIONS} connections open"
        if pid is not None and sum(1 for p in self._open.values() if p == pid) >= MAX_PER_PEER:
            return f"process {pid} already has {MAX_PER_PEER} connections open"
        return ""

    def shutdown_request(self, request: Any) -> None:
        with self._slots:
            self._open.pop(id(request), None)
            self._slots.notify_all()
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that failed is that client's problem; the server keeps serving quietly."""


def _refuse(request: socket.socket, error: str) -> bool:
    """Tell a client why it is not served (verify_request's False)."""
    try:
        request.settimeout(1.0)
        request.sendall(_encode({"ok": False, "error": error}))
    except OSError:
        pass
    return False


class ControlServer:
    """Serves a run's control socket on background threads until :meth:`stop`.

    ``owner_uid`` is the only uid whose connections are served (the server's own)."""

    def __init__(self, run_dir: str | os.PathLike[str], submit: Callable[[dict[str, Any]], Any],
                 *, info: dict[str, Any] | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.submit = submit
        self.info = dict(info or {})
        self.owner_uid = _uid()
        self.path = socket_path(run_dir)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._inode: int | None = None

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> "ControlServer":
        """Bind and serve; :class:`ControlError` (with a ``--no-control`` hint) when the
        socket directory is not private, the path is taken, or another run serves it."""
        if not self.run_dir.is_dir():
            raise ControlError(f"cannot open a control channel: no run folder at {self.run_dir}")
        self.path = socket_path(self.run_dir, create=True)
        self._clear_stale()
        server = _Server(str(self.path), self)
        try:
            server.server_bind()
            server.server_activate()
        except OSError as exc:
            server.server_close()
            if exc.errno == errno.EADDRINUSE:
                raise ControlError(f"control channel refused: {self.path} is taken; {NO_CONTROL_HINT}") from None
            raise ControlError(f"control channel: cannot listen on {self.path}: {exc.strerror}; {NO_CONTROL_HINT}") from None
        self._inode = os.lstat(self.path).st_ino
        self._server = server
        self._stopping.clear()
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="townsfolk-control", daemon=True)
        self._thread.start()
        return self

    def _clear_stale(self) -> None:
        """Remove our own socket left by a killed run; refuse anything else at the path."""
        if not os.path.lexists(self.path):
            return
        check_socket_owner(self.path, self.owner_uid)
        if _answers(self.path):
            raise ControlError(f"another live run already serves {self.path} for {self.run_dir.resolve()}; "
                               f"stop it first, {NO_CONTROL_HINT}")
        self.path.unlink()

    def stop(self) -> None:
        self._stopping.set()
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        try:  # only our own socket: never one a later server put at the same path
            if self._inode is not None and os.lstat(self.path).st_ino == self._inode:
                self.path.unlink()
        except FileNotFoundError:
            pass
        self._inode = None

    def __enter__(self) -> "ControlServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- serving -----------------------------------------------------------

    def handle_line(self, line: bytes | str) -> dict[str, Any]:
        """Answer one request line; never raises (a bad request gets an error reply)."""
        msg = parse_request(line)
        if isinstance(msg, str):
            return {"ok": False, "error": msg}
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


def _connect(path: Path, timeout: float) -> socket.socket:
    """Connect, waiting while the server's queue is full (EAGAIN) until ``timeout``."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            s.connect(str(path))
            return s
        except BlockingIOError:
            s.close()
            if time.monotonic() + delay > deadline:
                raise socket.timeout() from None
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
        except BaseException:
            s.close()
            raise


def _answers(path: Path) -> bool:
    try:
        with _connect(path, 1.0):
            return True
    except OSError:
        return False


def is_live(run_dir: str | os.PathLike[str]) -> bool:
    """True when a run of ours is serving its control channel for ``run_dir``."""
    try:
        path = socket_path(run_dir)
        if not os.path.lexists(path):
            return False
        check_private_dir(path.parent)
        check_socket_owner(path)
    except (ControlError, OSError):
        return False
    return _answers(path)


def send(run_dir: str | os.PathLike[str], message: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """Send one request to a live run and return its reply; :class:`ControlError` if none."""
    run = Path(run_dir)
    if not run.is_dir():
        raise ControlError(f"no run folder at {run}")
    path = socket_path(run)
    if not os.path.lexists(path):
        raise ControlError(
            f"the run in {run} is not live: no control socket at {path} "
            "(the run has finished, was killed, was started with --no-control, or is not a live run)"
        )
    check_private_dir(path.parent)
    check_socket_owner(path)
    data = (json.dumps(message) + "\n").encode("utf-8")
    if len(data) > MAX_REQUEST_BYTES:
        raise ControlError(f"the request is {len(data)} bytes; the control channel takes at most {MAX_REQUEST_BYTES}")
    try:
        with _connect(path, timeout) as s:
            try:
                s.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server refused us and hung up; its reason is still there to read
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
