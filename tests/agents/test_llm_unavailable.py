"""A model that cannot answer stops the command with the cause and the fix; transient failures back off.

No network: remote failures come from a tiny HTTP server on 127.0.0.1 (429, 500, 401, 404)
or a port nobody listens on (connection refused).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from pydantic import BaseModel

from agents.llm import gateway as gateway_module
from agents.llm.errors import ModelUnavailable, Unreachable
from agents.llm.gateway import Backoff, Completion, Gateway, Request, make_llm
from world.engine import RunContext


class Mood(BaseModel):
    mood: str


FALLBACK = Mood(mood="fallback")
MESSAGES = [{"role": "user", "content": "How is Isabella today?"}]
FAST = Backoff(tries=3, base_s=0.001, cap_s=0.002)


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real waits are seconds; the policy under test is the same with milliseconds."""
    monkeypatch.setattr(gateway_module, "DEFAULT_BACKOFF", FAST)


class FailingBackend:
    """Raises the given exceptions in turn, then answers; records the seeds it was asked with."""

    name = "stub"

    def __init__(self, *failures: BaseException | None):
        self.failures = list(failures)
        self.seeds: list[int] = []

    async def generate(self, request: Request) -> Completion:
        self.seeds.append(request.seed)
        failure = self.failures.pop(0) if self.failures else None
        if failure is not None:
            raise failure
        return Completion(text='{"mood": "cheerful"}')


def refused() -> Unreachable:
    return Unreachable("connection refused by http://127.0.0.1:9", "start the server", retryable=True)


def no_key() -> Unreachable:
    return Unreachable("missing API key (OPENAI_API_KEY is not set)", "export OPENAI_API_KEY=<your key>",
                       retryable=False)


def test_auth_failures_in_a_row_raise_model_unavailable_with_cause_and_fix() -> None:
    backend = FailingBackend(*[no_key() for _ in range(10)])
    llm = Gateway(backend, model="openai/gpt-4o-mini", max_attempts=3)
    with pytest.raises(ModelUnavailable) as caught:
        llm.complete("mood", MESSAGES, Mood, FALLBACK)
    exc = caught.value
    assert exc.fatal and exc.model == "openai/gpt-4o-mini"
    assert exc.cause == "missing API key (OPENAI_API_KEY is not set)" and "export OPENAI_API_KEY" in exc.fix
    assert len(backend.seeds) == 3  # a permanent failure is not retried with backoff
    # Every later call stops at once, without asking the backend again.
    with pytest.raises(ModelUnavailable):
        llm.complete("mood", MESSAGES, Mood, FALLBACK)
    assert len(backend.seeds) == 3
    assert llm.stats()["total"]["unreachable"] == 3


def test_transient_failures_back_off_and_recover_without_a_reseeded_retry() -> None:
    backend = FailingBackend(refused(), refused())
    llm = Gateway(backend, max_attempts=3)
    infos = []
    llm.add_listener(infos.append)
    answer = llm.complete("mood", MESSAGES, Mood, FALLBACK)
    assert answer.mood == "cheerful" and infos[-1].ok and not infos[-1].fallback
    assert backend.seeds == [0, 0, 0]  # the same question again: backoff, not a reseeded retry
    total = llm.stats()["total"]
    assert total["transport_retries"] == 2 and total["failures"] == 0 and total["unreachable"] == 0


def test_an_answer_in_between_resets_the_count() -> None:
    # Exhausted backoff (3 tries) twice, then an answer, then twice again: never 3 in a row.
    backend = FailingBackend(*([refused()] * 6), None, *([refused()] * 6))
    llm = Gateway(backend, max_attempts=2, unavailable_after=3)
    first = llm.complete("mood", MESSAGES, Mood, FALLBACK)  # 2 unreachable attempts: fallback
    second = llm.complete("mood", MESSAGES, Mood, FALLBACK)  # answered
    third = llm.complete("mood", MESSAGES, Mood, FALLBACK)  # 2 more unreachable attempts: fallback
    assert (first, second.mood, third) == (FALLBACK, "cheerful", FALLBACK)
    assert llm.unavailable is None


def test_bad_answers_are_not_an_unavailable_model() -> None:
    class Garbage:
        name = "garbage"

        async def generate(self, request: Request) -> Completion:
            raise ValueError("not json at all")

    llm = Gateway(Garbage(), max_attempts=3)
    for _ in range(3):
        assert llm.complete("mood", MESSAGES, Mood, FALLBACK) == FALLBACK
    assert llm.unavailable is None and llm.stats()["total"]["fallbacks"] == 3


def test_concurrent_calls_all_stop_once_the_model_is_unavailable() -> None:
    backend = FailingBackend(*[no_key() for _ in range(50)])
    llm = Gateway(backend, max_attempts=3)

    async def many() -> list:
        return await asyncio.gather(
            *(llm.acomplete("mood", MESSAGES, Mood, FALLBACK) for _ in range(8)), return_exceptions=True
        )

    results = asyncio.run(many())
    assert any(isinstance(r, ModelUnavailable) for r in results)
    assert llm.activity()["in_flight"] == 0


# -- the litellm backend against a local HTTP server ------------------------------------------


class Script:
    """Status codes to answer in turn (the last one repeats); 200 is a valid chat completion."""

    def __init__(self, *statuses: int):
        self.statuses = list(statuses)
        self.seen = 0

    def next(self) -> int:
        self.seen += 1
        return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]


def _handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            status = script.next()
            if status == 200:
                body = {"id": "c1", "object": "chat.completion", "created": 0, "model": "test-model",
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": '{"mood": "calm"}'}}],
                        "usage": {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}}
            else:
                body = {"error": {"message": f"test server says {status}", "type": "test", "code": status}}
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """Start a server answering a Script; TOWNSFOLK_API_BASE points at it, with a dummy key."""
    started: list[ThreadingHTTPServer] = []

    def start(*statuses: int) -> Script:
        script = Script(*statuses)
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        started.append(httpd)
        monkeypatch.setenv("TOWNSFOLK_API_BASE", f"http://127.0.0.1:{httpd.server_port}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        return script

    yield start
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_429_then_answer_backs_off_and_succeeds(server) -> None:
    script = server(429, 429, 200)
    llm = make_llm("openai/test-model", use_cache=False)
    answer = llm.complete("mood", MESSAGES, Mood, FALLBACK)
    assert answer.mood == "calm" and script.seen == 3
    assert llm.stats()["total"]["transport_retries"] == 2


@pytest.mark.parametrize(
    ("status", "cause"),
    [(500, "server error (500"), (404, "unknown model"), (401, "API key rejected"), (429, "rate limited")],
)
def test_a_server_that_keeps_failing_is_named(server, status: int, cause: str) -> None:
    server(status)
    llm = make_llm("openai/test-model", use_cache=False)
    with pytest.raises(ModelUnavailable) as caught:
        llm.complete("mood", MESSAGES, Mood, FALLBACK)
    assert caught.value.cause.startswith(cause), caught.value.cause
    assert caught.value.fix


def test_connection_refused_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOWNSFOLK_API_BASE", f"http://127.0.0.1:{closed_port()}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    llm = make_llm("openai/test-model", use_cache=False)
    with pytest.raises(ModelUnavailable) as caught:
        llm.complete("mood", MESSAGES, Mood, FALLBACK)
    assert caught.value.cause.startswith("connection refused by http://127.0.0.1:")
    assert "TOWNSFOLK_API_BASE" in caught.value.fix


def test_missing_api_key_is_named_without_any_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("TOWNSFOLK_API_BASE", raising=False)
    # Any connection attempt would be a bug here: the key is checked before a request goes out.
    monkeypatch.setattr(socket.socket, "connect", lambda *a, **k: (_ for _ in ()).throw(OSError("no network")))
    llm = make_llm("openai/gpt-4o-mini", use_cache=False)
    with pytest.raises(ModelUnavailable) as caught:
        llm.complete("mood", MESSAGES, Mood, FALLBACK)
    assert caught.value.cause == "missing API key (OPENAI_API_KEY is not set)"
    assert "export OPENAI_API_KEY" in caught.value.fix


# -- the commands ------------------------------------------------------------------------------


@pytest.fixture
def refused_model(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("TOWNSFOLK_API_BASE", f"http://127.0.0.1:{closed_port()}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    return "openai/test-model"


def test_run_stops_with_the_cause_and_exit_2_keeping_what_ran(tmp_path: Path, refused_model: str, capsys,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from world.cli import main

    monkeypatch.setenv("TOWNSFOLK_EMBEDDER", "hashing")

    out = tmp_path / "run"
    code = main(["run", "--model", refused_model, "--agents", "2", "--duration", "30m", "--quiet", "--no-control",
                 "--out", str(out), "--cache-dir", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert code == 2
    assert "could not be reached: connection refused by http://127.0.0.1:" in err
    assert "fix:" in err and f"townsfolk run --resume {out}" in err
    assert (out / "run.db").is_file()  # what ran is committed


def test_doctor_says_could_not_reach(refused_model: str, capsys) -> None:
    from world.cli import main

    code = main(["doctor", "--json", "--model", refused_model, "--only", "llm"])
    out = capsys.readouterr().out.strip().splitlines()
    check = json.loads(out[-1])["checks"][0]
    assert code == 1 and not check["ok"]
    assert check["detail"].startswith("could not reach openai/test-model: connection refused")
    assert "answered" not in check["detail"] and "TOWNSFOLK_API_BASE" in check["fix"]


def test_eval_stops_with_the_cause_and_exit_2(tmp_path: Path, refused_model: str, capsys) -> None:
    from world.cli import main

    code = main(["eval", "builtin:town", "--model", refused_model, "--out", str(tmp_path / "eval"),
                 "--no-progress", "--cache-dir", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert code == 2 and "could not be reached: connection refused" in err and "fix:" in err


def test_interview_stops_with_the_cause_and_exit_2(tmp_path: Path, refused_model: str, capsys) -> None:
    from datetime import datetime

    from maps.contracts import MindOptions
    from agents.minds.generative import make_mind
    from agents.minds.conformance import DEMO_PLACES, Sandbox, demo_home, demo_persona
    from memory.embeddings import get_embedder
    from world.cli import main

    persona = demo_persona("Klaus Mueller", "Town Library:reading room", "student")
    places = DEMO_PLACES + demo_home(persona.name)
    mind = make_mind(persona, make_llm("scripted"), tmp_path / "run.db",
                     MindOptions(places=places, start_time=datetime(2023, 2, 13, 9, 0)),
                     embedder=get_embedder("hashing"))
    world = Sandbox({persona.name: mind}, places, datetime(2023, 2, 13, 9, 0),
                    spawn={persona.name: "Town Library:reading room"})
    for _ in range(3):
        asyncio.run(world.step())
    mind.memory.close()
    code = main(["interview", str(tmp_path), persona.name, "How was your morning?", "--model", refused_model])
    err = capsys.readouterr().err
    assert code == 2 and "could not be reached: connection refused" in err and "fix:" in err


class _Clock:
    from datetime import datetime

    next_time = datetime(2026, 2, 13, 7, 0)

    def now(self):  # noqa: ANN201
        return self.next_time


class _Busy:
    unavailable = None

    def activity(self) -> dict[str, int]:
        return {"in_flight": 2, "done": 5}


def test_a_long_first_tick_prints_progress_lines(capsys) -> None:
    from datetime import timedelta

    from world.cli.run import _Progress

    clock = _Clock()
    context = RunContext(llm=_Busy(), until=clock.next_time + timedelta(hours=1))
    engine = type("Engine", (), {"tick": -1, "clock": clock, "context": context})()
    with _Progress(engine, {"llm": 0, "ticks": 0}, quiet=False, heartbeat_s=0.05) as bar:
        bar.progress = None  # plain lines, as on a terminal without rich
        import time

        time.sleep(0.3)
    err = capsys.readouterr().err
    assert "tick 0 (Fri 07:00) running" in err and "LLM calls 2 in flight, 5 done" in err


def test_quiet_prints_no_progress_lines(capsys) -> None:
    from datetime import timedelta

    from world.cli.run import _Progress

    clock = _Clock()
    context = RunContext(llm=_Busy(), until=clock.next_time + timedelta(hours=1))
    engine = type("Engine", (), {"tick": -1, "clock": clock, "context": context})()
    with _Progress(engine, {"llm": 0, "ticks": 0}, quiet=True, heartbeat_s=0.05):
        import time

        time.sleep(0.2)
    assert "in flight" not in capsys.readouterr().err
