"""The KV prefix cache: a resident's next call evaluates only what is new, and answers the same."""

from __future__ import annotations

import pytest

from agents.llm.local import generate_local, load_model, prefix_cache_bytes, set_prefix_cache
from agents.llm.models import DEFAULT_LOCAL_MODEL, LOCAL_MODELS, LocalModelError, gguf_path

SYSTEM = {"role": "system", "content": "You are the mind of a resident of a small town simulation."}


def _persona(name: str, job: str) -> str:
    return (f"{name} is a {job} who lives in the town. " * 12) + f"\nName: {name}\nWorkplace: {job}\n"


def _prompt(name: str, job: str, ask: str) -> list[dict[str, str]]:
    return [SYSTEM, {"role": "user", "content": _persona(name, job) + ask}]


def test_the_cache_budget_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOWNSFOLK_LOCAL_KV_CACHE_MB", raising=False)
    assert prefix_cache_bytes() == 512 << 20
    monkeypatch.setenv("TOWNSFOLK_LOCAL_KV_CACHE_MB", "0")
    assert prefix_cache_bytes() == 0
    monkeypatch.setenv("TOWNSFOLK_LOCAL_KV_CACHE_MB", "lots")
    with pytest.raises(LocalModelError, match="TOWNSFOLK_LOCAL_KV_CACHE_MB must be a whole number of MiB.*'lots'"):
        prefix_cache_bytes()


@pytest.mark.slow
def test_a_residents_prefix_is_reused_after_other_residents_calls() -> None:
    pytest.importorskip("llama_cpp")
    import llama_cpp

    try:
        gguf_path(LOCAL_MODELS[DEFAULT_LOCAL_MODEL])
    except LocalModelError as exc:
        pytest.skip(str(exc))
    model = load_model(LOCAL_MODELS[DEFAULT_LOCAL_MODEL])
    calls = [
        _prompt("Isabella Rodriguez", "cafe owner", "What does Isabella do at 9:00?"),
        _prompt("Klaus Mueller", "student", "What does Klaus do at 9:00?"),
        _prompt("Isabella Rodriguez", "cafe owner", "Rate how poignant: the cafe burned down."),
    ]

    def replay(capacity: int) -> tuple[list[str], int, int]:
        set_prefix_cache(model, capacity)
        answers = []
        for messages in calls:
            llama_cpp.llama_perf_context_reset(model.llama.ctx)
            text, prompt_tokens, _ = generate_local(DEFAULT_LOCAL_MODEL, messages, grammar=None,
                                                    temperature=0.7, max_tokens=6, seed=3)
            answers.append(text)
        return answers, int(llama_cpp.llama_perf_context(model.llama.ctx).n_p_eval), prompt_tokens

    try:
        cold, cold_evaluated, prompt_tokens = replay(0)
        warm, warm_evaluated, _ = replay(64 << 20)
    finally:
        set_prefix_cache(model, prefix_cache_bytes())
    assert warm == cold  # the cache changes the work, never the answer
    assert cold_evaluated > prompt_tokens // 2  # without it: only the system line is shared with Klaus's call
    assert warm_evaluated < prompt_tokens // 4  # with it: Isabella's persona comes back from her first call


def test_a_users_own_file_and_other_quantisations_are_loaded_as_they_are(tmp_path, monkeypatch) -> None:
    from agents.llm.local import fast_gguf
    from agents.llm.models import file_spec

    monkeypatch.setenv("TOWNSFOLK_CACHE", str(tmp_path / "cache"))
    own = tmp_path / "mine.Q4_1.gguf"
    own.write_bytes(b"GGUF")
    assert fast_gguf(file_spec(str(own)), own) == own  # a user's file is never rewritten
    other = tmp_path / "SmolLM2.Q8_0.gguf"
    assert fast_gguf(LOCAL_MODELS[DEFAULT_LOCAL_MODEL], other) == other
    monkeypatch.setenv("TOWNSFOLK_LOCAL_TRANSCODE", "0")
    packaged = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert fast_gguf(LOCAL_MODELS[DEFAULT_LOCAL_MODEL], packaged) == packaged
    assert not (tmp_path / "cache").exists()


@pytest.mark.slow
def test_the_packaged_q4_1_model_is_transcoded_once_to_q8_0(tmp_path, monkeypatch) -> None:
    pytest.importorskip("llama_cpp")
    from agents.llm.local import fast_gguf

    spec = LOCAL_MODELS[DEFAULT_LOCAL_MODEL]
    try:
        source = gguf_path(spec)
    except LocalModelError as exc:
        pytest.skip(str(exc))
    if ".Q4_1." not in source.name:
        pytest.skip("the packaged model is not Q4_1")
    monkeypatch.setenv("TOWNSFOLK_CACHE", str(tmp_path))
    target = fast_gguf(spec, source)
    assert target.parent == tmp_path / "models" and ".Q8_0-" in target.name
    assert target.read_bytes()[:4] == b"GGUF" and not list(target.parent.glob("*.part"))
    stamp = target.stat().st_mtime_ns
    assert fast_gguf(spec, source) == target and target.stat().st_mtime_ns == stamp  # once, then reused


def test_a_cache_that_cannot_be_written_loads_the_packaged_file_with_a_warning(tmp_path, monkeypatch) -> None:
    pytest.importorskip("llama_cpp")
    from agents.llm.local import fast_gguf

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("TOWNSFOLK_CACHE", str(blocker))
    packaged = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    packaged.write_bytes(b"GGUF")
    with pytest.warns(UserWarning, match="could not make a Q8_0 copy"):
        assert fast_gguf(LOCAL_MODELS[DEFAULT_LOCAL_MODEL], packaged) == packaged
