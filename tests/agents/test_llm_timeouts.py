"""Each model's per-call timeout comes from its spec: a slow embedded model is not cut off at 120 s."""

from __future__ import annotations

from agents.llm.chaos import ChaosBackend
from agents.llm.gateway import DEFAULT_TIMEOUT_S, Gateway, ScriptedBackend, make_llm
from agents.llm.models import LOCAL_MODELS


def test_each_embedded_model_gets_its_specs_timeout() -> None:
    assert make_llm("local:smollm2", use_cache=False).timeout_s == 120.0
    assert make_llm("local:qwen", use_cache=False).timeout_s == LOCAL_MODELS["qwen"].timeout_s == 900.0
    # through the chaos wrapper too: it changes answers, not how long the model may take
    assert make_llm("local:qwen", use_cache=False, chaos=0.5).timeout_s == 900.0


def test_remote_and_scripted_keep_the_default_and_a_caller_can_override() -> None:
    assert make_llm("scripted").timeout_s == DEFAULT_TIMEOUT_S == 120.0
    assert make_llm("openai/gpt-4o-mini", use_cache=False).timeout_s == 120.0
    assert make_llm("local:qwen", use_cache=False, timeout_s=30).timeout_s == 30
    assert Gateway(ChaosBackend(ScriptedBackend(), rate=0.0)).timeout_s == 120.0
