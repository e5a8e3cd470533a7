"""`--model local:/path/to/model.gguf`: any GGUF file, with a clear error for a bad one."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from agents.llm.errors import ModelUnavailable
from agents.llm.gateway import make_llm
from agents.llm.models import LOCAL_MODELS, LocalModelError, gguf_path


class Mood(BaseModel):
    mood: str


FALLBACK = Mood(mood="fallback")
MESSAGES = [{"role": "user", "content": "Isabella opened the cafe this morning. Her mood in one word?"}]


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"local:.*nope\.gguf: no such file"):
        make_llm(f"local:{tmp_path / 'nope.gguf'}")


def test_a_file_that_is_not_gguf_is_named(tmp_path: Path) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_text("<html>not a model</html>")
    with pytest.raises(ValueError, match="is not a GGUF model file"):
        make_llm(f"local:{fake}")
    with pytest.raises(ValueError, match="is not a file"):
        make_llm(f"local:{tmp_path}/")


def test_run_refuses_a_bad_file_before_it_starts(tmp_path: Path, capsys) -> None:
    from world.cli import main

    code = main(["run", "--model", f"local:{tmp_path / 'nope.gguf'}", "--quiet", "--no-control",
                 "--out", str(tmp_path / "run")])
    assert code == 2 and "no such file" in capsys.readouterr().err


def test_a_damaged_gguf_stops_with_model_unavailable(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 64)
    llm = make_llm(f"local:{broken}", use_cache=False)
    with pytest.raises(ModelUnavailable) as caught:
        llm.complete("mood", MESSAGES, Mood, FALLBACK)
    assert "does not load" in caught.value.cause and str(broken) in caught.value.fix


@pytest.mark.slow
def test_any_gguf_file_runs_with_its_own_chat_template(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    try:
        path = gguf_path(LOCAL_MODELS["smollm2"])
    except LocalModelError as exc:
        pytest.skip(str(exc))
    llm = make_llm(f"local:{path}", cache_dir=tmp_path, max_attempts=2)
    infos = []
    llm.add_listener(infos.append)
    answer = llm.complete("mood", MESSAGES, Mood, FALLBACK, max_tokens=24)
    assert infos[-1].ok and answer.mood.strip()
    assert llm.model.startswith("local:SmolLM2-135M-Instruct.Q4_1-")
