"""SIGINT and SIGTERM stop a run the same way, so `kill`, systemd and Docker stop it cleanly.

The first signal asks the run to stop at the next tick boundary (the tick in progress is
committed, the summary printed, the control socket removed); a second one stops at once
(the tick in progress is dropped; every committed tick is kept). A tick that does not end
within :data:`GRACE_S` of the first signal (a model server that hangs, calls waiting out their
timeouts) is stopped as if the signal had come twice: `kill` and service managers get an exit
in seconds, not after a minute of retries. The process then exits
128 + the signal number: 130 for SIGINT (Ctrl-C), 143 for SIGTERM, as shells report it.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)
GRACE_S = 10.0  # seconds the tick in progress gets after the first signal


class Stopped(KeyboardInterrupt):
    """A stop signal arrived; a KeyboardInterrupt so that every Ctrl-C path also handles SIGTERM."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class StopSignals:
    """Context manager that routes SIGINT and SIGTERM to one handler while a run is built and runs.

    Until :meth:`graceful` is switched on (the engine is running), a signal raises
    :class:`Stopped` at once. Afterwards the first signal only records the request (and
    calls ``on_request``); :meth:`check` raises it between ticks; a second signal raises now.
    """

    def __init__(self, command: str = "run", grace_s: float = GRACE_S) -> None:
        self.command = command
        self.grace_s = grace_s
        self.signum: int | None = None
        self.is_graceful = False
        self.on_request: Callable[[], None] | None = None
        self._previous: dict[int, Any] = {}
        self._timer: threading.Timer | None = None

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for sig, old in self._previous.items():
            # None: a handler installed outside Python (SDL's); the default is the safe fallback
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
        self._previous.clear()

    def graceful(self, on_request: Callable[[], None] | None = None) -> None:
        """From now on the first signal asks for a stop at the next tick boundary."""
        self.is_graceful = True
        self.on_request = on_request

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def exit_code(self) -> int:
        return 128 + (self.signum or signal.SIGINT)

    def check(self) -> None:
        """Raise :class:`Stopped` if a stop was requested (call it between ticks)."""
        if self.signum is not None:
            raise Stopped(self.signum)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        first = self.signum is None
        if first:
            self.signum = signum
        if first and self.is_graceful:
            name = signal.Signals(signum).name
            print(f"\ntownsfolk {self.command}: {name}: stopping after the tick in progress, at most "
                  f"{self.grace_s:g} s (send it again to stop at once)", file=sys.stderr, flush=True)
            if self.on_request is not None:
                self.on_request()
            if self._previous:  # handlers installed: the same signal, again, stops at once
                self._timer = threading.Timer(self.grace_s, self._overdue, args=(signum,))
                self._timer.daemon = True
                self._timer.start()
            return
        raise Stopped(signum)

    def _overdue(self, signum: int) -> None:
        """The tick in progress outlived the grace period: stop now, as a second signal would."""
        if self._previous:
            print(f"townsfolk {self.command}: the tick in progress did not end within {self.grace_s:g} s; "
                  "stopping at once (committed ticks are kept)", file=sys.stderr, flush=True)
            signal.raise_signal(signum)
