"""Hiding llama.cpp's chatter on fd 2 from several threads at once gives fd 2 back afterwards."""

import os
import threading

from agents.llm.local import _quiet_stderr


def _fd2() -> tuple[int, int]:
    st = os.fstat(2)
    return st.st_dev, st.st_ino


def test_overlapping_quiet_sections_in_two_threads_restore_stderr() -> None:
    """The order that lost a SmolLM2 bench's stderr for good: A hides it, B comes in (and, on its
    own, saved the hidden fd), A leaves, B leaves last."""
    before = _fd2()
    null = os.stat(os.devnull)
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, tuple[int, int]] = {}

    def a() -> None:
        with _quiet_stderr():
            a_in.set()
            b_in.wait(5)
            seen["both"] = _fd2()
        a_out.set()

    def b() -> None:
        a_in.wait(5)
        with _quiet_stderr():
            b_in.set()
            a_out.wait(5)
            seen["b alone"] = _fd2()

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen["both"] == seen["b alone"] == (null.st_dev, null.st_ino)  # hidden while anyone is inside
    assert _fd2() == before  # and given back once the last one left


def test_many_threads_hiding_at_random_leave_stderr_as_it_was() -> None:
    before = _fd2()

    def work() -> None:
        for _ in range(50):
            with _quiet_stderr():
                pass

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert _fd2() == before
