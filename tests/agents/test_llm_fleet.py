"""A fleet of model servers (agents/llm/fleet.py): the fleet file's checks, load balancing and
fail-over against two in-process OpenAI-compatible fakes on 127.0.0.1, and a real run over two
``llama_cpp.server`` processes with one killed mid-run (slow: the run goes on, no tick lost,
the summary names the dead server).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from pydantic import BaseModel

from agents.llm.errors import Unreachable
from agents.llm.fleet import FleetBackend, FleetConfig, FleetFileError, load_fleet
from agents.llm.gateway import Gateway, Request
from tests.agents.test_llm_server import LlamaServer


class Mood(BaseModel):
    mood: str


FALLBACK = Mood(mood="fallback")


class _Answer(BaseHTTPRequestHandler):
    """A chat completion whose mood is the server's tag, after the server's delay."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("content-length", 0)))
        server: FakeServer = self.server  # type: ignore[assignment]
        server.hits += 1
        time.sleep(server.delay_s)
        body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "fake",
                           "choices": [{"index": 0, "finish_reason": "stop", "message": {
                               "role": "assistant", "content": json.dumps({"mood": server.tag})}}],
                           "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, tag: str, delay_s: float = 0.0):
        super().__init__(("127.0.0.1", 0), _Answer)
        self.tag, self.delay_s, self.hits = tag, delay_s, 0
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def kill(self) -> None:
        """Stop answering: the port is closed, so a call is refused at once."""
        if self.thread.is_alive():
            self.shutdown()
        self.server_close()


@pytest.fixture
def fakes() -> Iterator[list[FakeServer]]:
    servers = [FakeServer("a", delay_s=0.2), FakeServer("b", delay_s=0.2)]
    try:
        yield servers
    finally:
        for server in servers:
            server.kill()


def fleet_of(servers: list[FakeServer], **endpoint: object) -> FleetBackend:
    return FleetBackend(FleetConfig.model_validate({"endpoints": [
        {"name": s.tag, "model": "openai/fake", "api_base": s.api_base, "max_parallel": 2, **endpoint}
        for s in servers]}))


def ask(llm: Gateway, n: int) -> list[Mood]:
    async def all_at_once() -> list[Mood]:
        return await asyncio.gather(*[llm.acomplete("mood", [{"role": "user", "content": f"resident {i}"}], Mood,
                                                    FALLBACK, max_tokens=16) for i in range(n)])
    return asyncio.run(all_at_once())


# -- the fleet file ------------------------------------------------------------------------

GOOD = """\
routing: least-busy
cooldown_s: 10
endpoints:
  - {name: gpu-a, model: openai/smollm2, api_base: "http://127.0.0.1:8001/v1", max_parallel: 2}
  - {name: gpu-b, model: openai/smollm2, api_base: "http://127.0.0.1:8002/v1"}
"""


def write(tmp_path: Path, text: str, name: str = "fleet.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def refusal(path: Path) -> str:
    with pytest.raises(FleetFileError) as caught:
        load_fleet(path)
    return str(caught.value)


def test_a_good_fleet_file_in_yaml_or_json(tmp_path: Path) -> None:
    config = load_fleet(write(tmp_path, GOOD))
    assert [e.name for e in config.endpoints] == ["gpu-a", "gpu-b"]
    assert (config.endpoints[0].max_parallel, config.endpoints[1].max_parallel, config.cooldown_s) == (2, 4, 10)
    as_json = write(tmp_path, json.dumps(config.model_dump()), "fleet.json")
    assert load_fleet(as_json) == config
    # A call may try every endpoint to its timeout (60 s each by default) before the gateway's gives up.
    assert Gateway(FleetBackend(config), model="fleet").timeout_s == 125.0


@pytest.mark.parametrize("text, field, expected", [
    (GOOD.replace('"http://127.0.0.1:8002/v1"', "localhost:8002"), "endpoints[1].api_base",
     "should match pattern"),
    (GOOD.replace("max_parallel: 2", "max_parallel: 0"), "endpoints[0].max_parallel", "greater than or equal to 1"),
    (GOOD.replace("least-busy", "round-robin"), "routing", "least-busy"),
    (GOOD.replace("gpu-b", "gpu-a"), "(top level)", "gpu-a is used twice"),
    ("endpoints: []\n", "endpoints", "at least 1 item"),
    (GOOD.replace("cooldown_s", "cooldown"), "cooldown", "Extra inputs are not permitted"),
    (GOOD.replace(", max_parallel: 2", ", api_key: sk-live-abcdefghijkl"), "endpoints[0]",
     "keys are never read from the fleet file"),
])
def test_a_bad_fleet_file_is_refused_naming_the_file_the_field_and_what_was_expected(
        tmp_path: Path, text: str, field: str, expected: str) -> None:
    path = write(tmp_path, text)
    message = refusal(path)
    assert message.startswith(f"{path}: {field}: "), message
    assert expected in message
    assert "sk-live" not in message  # a key put in the file is never echoed


def test_unreadable_or_malformed_files_and_unset_key_variables(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    assert "cannot read the fleet file" in refusal(tmp_path / "missing.yaml")
    assert "not valid YAML (line 3" in refusal(write(tmp_path, "endpoints:\n  - name: a\n   model: b\n"))
    assert "not valid JSON (line 1" in refusal(write(tmp_path, "{endpoints", "fleet.json"))
    assert "expected a mapping with 'endpoints'" in refusal(write(tmp_path, "- a\n- b\n"))
    monkeypatch.delenv("FLEET_TEST_KEY", raising=False)
    keyed = write(tmp_path, GOOD.replace(", max_parallel: 2", ", api_key_env: FLEET_TEST_KEY"))
    assert "endpoints[0].api_key_env: the variable FLEET_TEST_KEY is not set" in refusal(keyed)
    monkeypatch.setenv("FLEET_TEST_KEY", "secret-value-123")
    assert load_fleet(keyed).endpoints[0].api_key_env == "FLEET_TEST_KEY"


def test_the_run_command_refuses_a_bad_fleet_file_before_starting(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("max_parallel: 2", "max_parallel: many"))
    done = subprocess.run([sys.executable, "-m", "world.cli", "run", "--models", str(path), "--out",
                           str(tmp_path / "run"), "--no-control", "--quiet"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert done.returncode == 2
    assert f"argument --models: {path}: endpoints[0].max_parallel: " in done.stderr
    assert not (tmp_path / "run").exists()


# -- balancing and fail-over over two in-process endpoints ------------------------------------

def test_calls_of_a_tick_are_spread_over_the_fleet(fakes: list[FakeServer]) -> None:
    backend = fleet_of(fakes)
    answers = ask(Gateway(backend, model="fleet"), 8)
    moods = [a.mood for a in answers]
    # least-busy: each takes 2 at a time, so both serve (an even split when no answer comes back
    # before the last call is sent; a busy machine may let one come back early).
    assert sorted(set(moods)) == ["a", "b"] and min(moods.count("a"), moods.count("b")) >= 2, moods
    stats = backend.fleet_stats()
    assert {n: s["ok"] for n, s in stats["endpoints"].items()} == {"a": moods.count("a"), "b": moods.count("b")}
    assert sum(s["failures"] for s in stats["endpoints"].values()) == 0 and stats["down"] == []


def test_a_dead_endpoint_fails_over_and_is_named(fakes: list[FakeServer]) -> None:
    backend = fleet_of(fakes)
    llm = Gateway(backend, model="fleet")
    ask(llm, 2)
    fakes[0].kill()
    answers = ask(llm, 6)  # and a second event loop: the fleet makes a Router for it
    assert [a.mood for a in answers] == ["b"] * 6  # none lost, none fell back
    stats = backend.fleet_stats()
    assert stats["down"] == ["a"]
    assert stats["endpoints"]["a"]["failures"] >= 1 and "connection" in stats["endpoints"]["a"]["last_error"].lower()
    assert stats["endpoints"]["b"]["failures"] == 0
    assert llm.stats()["total"]["fallbacks"] == 0 and llm.unavailable is None


def test_a_slow_endpoint_costs_at_most_its_timeout(fakes: list[FakeServer]) -> None:
    slow = FakeServer("slow", delay_s=30.0)
    try:
        backend = FleetBackend(FleetConfig.model_validate({"routing": "least-busy", "endpoints": [
            {"name": "slow", "model": "openai/fake", "api_base": slow.api_base, "timeout_s": 1.0},
            {"name": "b", "model": "openai/fake", "api_base": fakes[1].api_base, "timeout_s": 60.0}]}))
        request = Request("mood", [{"role": "user", "content": "hi"}], Mood, 0.7, 16, 0)
        started = time.monotonic()
        completion = asyncio.run(backend.generate(request))  # the first pick is "slow" (first in the file)
        assert Mood.model_validate_json(completion.text).mood == "b"
        assert time.monotonic() - started < 25.0  # the slow server's 1 s timeout, not its 30 s answer
        assert backend.fleet_stats()["endpoints"]["slow"]["failures"] == 1
    finally:
        slow.kill()


def test_a_fleet_with_every_endpoint_dead_is_unreachable_naming_each(fakes: list[FakeServer]) -> None:
    backend = fleet_of(fakes)
    for server in fakes:
        server.kill()
    with pytest.raises(Unreachable) as caught:
        asyncio.run(backend.generate(Request("mood", [{"role": "user", "content": "hi"}], Mood, 0.7, 16, 0)))
    assert caught.value.retryable  # the gateway backs off, then stops the run (ModelUnavailable)
    assert "every endpoint of the fleet failed (a: " in caught.value.cause and "; b: " in caught.value.cause


# -- two real llama_cpp.server processes, one killed mid-run -------------------------------------

@pytest.fixture
def two_servers(tmp_path: Path) -> Iterator[list[LlamaServer]]:
    servers = [LlamaServer(tmp_path / f"server-{i}.log") for i in range(2)]
    try:
        for server in servers:
            server.start()
        yield servers
    finally:
        for server in servers:
            server.stop()


@pytest.mark.slow
def test_a_run_over_two_servers_goes_on_when_one_is_killed(two_servers: list[LlamaServer], tmp_path: Path) -> None:
    fleet = write(tmp_path, json.dumps({"endpoints": [
        {"name": f"llama-{i}", "model": "openai/smollm2", "api_base": s.api_base, "max_parallel": 1,
         "timeout_s": 240} for i, s in enumerate(two_servers)]}), "fleet.json")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "SDL_VIDEODRIVER": "dummy",
           "SDL_AUDIODRIVER": "dummy"}
    env.pop("OPENAI_API_KEY", None)
    env.pop("TOWNSFOLK_API_BASE", None)
    # Two residents, one tick: 8 calls (plan, schedule, steps, importance each), 4 at a time over the fleet.
    run = subprocess.Popen([sys.executable, "-m", "world.cli", "run", "--models", str(fleet), "--agents", "2",
                            "--duration", "10s", "--out", str(tmp_path / "run"), "--cache-dir",
                            str(tmp_path / "cache"), "--quiet", "--no-control", "--json"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while two_servers[0].served() == 0 and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert run.poll() is None, "the run ended before a server could be killed"
        two_servers[0].stop()
        stdout, stderr = run.communicate(timeout=600)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate(timeout=30)
    summary = json.loads(stdout.strip().splitlines()[-1])
    assert run.returncode == {"ok": 0, "degraded": 4}[summary["health"]["status"]], stderr[-2000:]
    assert (summary["ticks"], summary["missing_ticks"]) == (1, [])  # the tick went on to its end
    assert summary["llm"]["total"]["unreachable"] == 0
    fleet_summary = summary["fleet"]
    assert fleet_summary["down"] == ["llama-0"]
    assert fleet_summary["endpoints"]["llama-0"]["failures"] >= 1
    assert fleet_summary["endpoints"]["llama-1"]["ok"] >= 1 and fleet_summary["endpoints"]["llama-1"]["failures"] == 0
    replayed = subprocess.run([sys.executable, "-m", "world.cli", "replay", str(tmp_path / "run"), "--summary", "--json"],
                              env=env, capture_output=True, text=True, timeout=300, check=True)
    assert json.loads(replayed.stdout.strip().splitlines()[-1])["fleet"] == fleet_summary  # kept with the run
