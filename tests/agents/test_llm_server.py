"""``--model openai/<name>`` against a real OpenAI-compatible server: llama-cpp-python's own.

One server (``python -m llama_cpp.server``, the ``server`` extra) serves the embedded SmolLM2
GGUF on a free loopback port for the whole module; no network. It gets our schema inside JSON
mode and decodes under a grammar built from it (agents/llm/server_schema.py). It is killed
mid-run and started again to prove the ModelUnavailable contract (exit 2, the server named,
``--resume`` finishes the tick once). The runs are kept small (one resident, one tick; one
episode of one turn) so the module takes a few minutes on 2 busy cores. A 429 with backoff is tested against a stub in test_llm_unavailable.py
(test_429_then_answer_backs_off_and_succeeds); it is not repeated here.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from agents.llm.gateway import Request, make_backend, make_llm
from agents.llm.models import gguf_path, resolve_local_name
from agents.llm.remote import API_BASE_ENV, LiteLLMBackend

MODEL = "openai/smollm2"
READY_WITHIN_S = 90.0


class Mood(BaseModel):
    mood: str


FALLBACK = Mood(mood="fallback")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LlamaServer:
    """llama_cpp.server as a child process: started, stopped (killed) and started again."""

    def __init__(self, log: Path):
        self.port = free_port()
        self.log = log
        self.process: subprocess.Popen | None = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        model = gguf_path(resolve_local_name("smollm2"))
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model),
                   "--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(self.port),
                   "--n_ctx", "2048", "--verbose", "False",
                   # One thread each: on a busy 2-core machine two threads wait on each other (measured
                   # 0.3-0.6 tokens/s with 2 against ~10 with 1; prompt evaluation likewise).
                   "--n_threads", "1", "--n_threads_batch", "1"]
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + READY_WITHIN_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stop()
                pytest.fail(f"llama_cpp.server exited with {self.process.returncode}:\n{self.tail()}\n"
                            'install its extra: pip install -c constraints.txt -e ".[dev,server]"')
            try:
                with urllib.request.urlopen(f"{self.api_base}/models", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        self.stop()
        pytest.fail(f"llama_cpp.server not ready within {READY_WITHIN_S:g} s:\n{self.tail()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)

    def served(self) -> int:
        """Chat completions answered so far (from the server's access log)."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text.count('"POST /v1/chat/completions HTTP/1.1" 200')

    def tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-15:])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    running = LlamaServer(tmp_path_factory.mktemp("llama-server") / "server.log")
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def remote(server: LlamaServer, monkeypatch: pytest.MonkeyPatch) -> LlamaServer:
    """The server, running (a test before may have killed it), named by TOWNSFOLK_API_BASE."""
    if server.process is None or server.process.poll() is not None:
        server.start()
    monkeypatch.setenv(API_BASE_ENV, server.api_base)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a server of one's own needs none
    return server


def cli(*args: str, api_base: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, API_BASE_ENV: api_base, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"}
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "world.cli", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


class Errand(BaseModel):
    place: Literal["cafe", "park", "library"]
    minutes: int = Field(ge=5, le=15)
    why: str = Field(max_length=60)


def test_the_server_gets_our_schema_and_its_answer_fits_it(remote: LlamaServer) -> None:
    backend = make_backend(MODEL)
    assert isinstance(backend, LiteLLMBackend)
    # litellm knows no schema support for openai/<own name>; llama_cpp.server takes the schema
    # inside JSON mode (it refuses response_format json_schema with a 500).
    assert backend.schema_mode == "json_object_schema"
    request = Request("errand", [{"role": "user", "content": "Where does Isabella go this morning?"}],
                      Errand, 0.7, 64, 0)
    completion = asyncio.run(backend.generate(request))
    Errand.model_validate_json(completion.text)  # the grammar held: choice, range, length, every key
    assert completion.prompt_tokens > 0 and completion.completion_tokens > 0


def test_concurrent_residents_all_get_an_answer_or_the_typed_fallback(remote: LlamaServer) -> None:
    llm = make_llm(MODEL, use_cache=False)
    names = ["Isabella", "Klaus", "Maria", "Tom"]

    async def four() -> list[Mood]:
        return await asyncio.gather(*[
            llm.acomplete("mood", [{"role": "user", "content": f"How is {name} today?"}], Mood, FALLBACK,
                          max_tokens=48)
            for name in names])

    answers = asyncio.run(four())
    assert all(isinstance(a, Mood) for a in answers)
    total = llm.stats()["total"]
    assert total["calls"] == 4 and total["unreachable"] == 0
    assert llm.unavailable is None


def _env(api_base: str) -> dict[str, str]:
    env = {**os.environ, API_BASE_ENV: api_base, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"}
    env.pop("OPENAI_API_KEY", None)
    return env


def _summary(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_server_killed_mid_run_stops_with_exit_2_and_resume_finishes(remote: LlamaServer,
                                                                       tmp_path: Path) -> None:
    out, cache = tmp_path / "run", tmp_path / "cache"
    served_before = remote.served()
    # One resident, one tick: its first tick asks the model 4 times (plan, schedule, steps, importance).
    run = subprocess.Popen(
        [sys.executable, "-m", "world.cli", "run", "--model", MODEL, "--agents", "1", "--duration", "10s",
         "--out", str(out), "--cache-dir", str(cache), "--quiet", "--no-control", "--json"],
        env=_env(remote.api_base), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while remote.served() == served_before and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert run.poll() is None, "the run ended before the server could be killed"
        remote.stop()
        stdout, stderr = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 2, stderr[-2000:]
    assert f"model {MODEL} could not be reached: connection refused by {remote.api_base}" in stderr
    assert f"--resume {out}" in stderr

    remote.start()
    resumed = subprocess.run([sys.executable, "-m", "world.cli", "run", "--resume", str(out), "--quiet",
                              "--no-control", "--json"], env=_env(remote.api_base), capture_output=True,
                             text=True, timeout=600)
    summary = _summary(resumed.stdout)
    # The tick the kill interrupted is run once, to its end: none lost, none twice.
    assert (summary["ticks"], summary["first_tick"], summary["last_tick"], summary["missing_ticks"]) == (1, 0, 0, [])
    assert summary["llm"]["total"]["unreachable"] == 0
    # Whether SmolLM2's answers were good enough is the health verdict, and the exit code says it.
    assert resumed.returncode == {"ok": 0, "degraded": 4}[summary["health"]["status"]], resumed.stderr[-2000:]
    assert not any("unreach" in reason for reason in summary["health"]["reasons"])


@pytest.mark.slow
def test_a_small_eval_through_the_server(remote: LlamaServer, tmp_path: Path) -> None:
    # The assistant under test is the server's model; the simulated human, tools and judges are
    # scripted, so the episode costs a few calls (the judges' rubric prompts are the long ones).
    served_before = remote.served()
    done = cli("eval", "builtin:town", "--limit", "1", "--model", MODEL, "--max-turns", "2",
               "--env-model", "scripted", "--judge-model", "scripted",
               "--out", str(tmp_path / "eval"), "--cache-dir", str(tmp_path / "cache"), "--no-progress",
               api_base=remote.api_base, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "episodes 1 (ran 1, already finished 0, errors 0)" in done.stdout
    assert (tmp_path / "eval" / "report.md").is_file()
    record = json.loads((tmp_path / "eval" / "results.jsonl").read_text().splitlines()[-1])
    assert record["model"] == MODEL and not record.get("error")
    assert remote.served() > served_before  # the assistant's turns went through the server


def test_a_server_that_refuses_json_schema_gets_the_schema_inside_json_mode(remote: LlamaServer) -> None:
    # As for a model litellm thinks takes a schema (an alias such as openai/gpt-4o on one's own server).
    backend = make_backend(MODEL)
    backend.schema_mode = "schema"
    request = Request("mood", [{"role": "user", "content": "How is Klaus today?"}], Mood, 0.7, 32, 0)
    completion = asyncio.run(backend.generate(request))  # the server's 500 is not "unreachable"
    assert backend.schema_mode == "json_object_schema"  # the next way down, which this server takes
    Mood.model_validate_json(completion.text)
