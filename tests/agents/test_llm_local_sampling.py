"""The grammar-last sampler and forced-token batching on the real embedded model.

A grammar call draws each token from the raw logits, asks the grammar about that one token
and redraws under the full grammar only when it is refused; text the grammar forces (a JSON
key) is evaluated in one batch. These tests hold what local.py promised before: every
answer fits the grammar, a seed gives the same text, cancelling stops decoding.
"""

from __future__ import annotations

import re
import threading

import pytest

from agents.llm import local
from agents.llm.grammar import grammar_for
from agents.llm.local import GenerationCancelled, generate_local
from agents.llm.models import LocalModelError, resolve_local_name
from tests.agents.test_llm_local import MESSAGES, Reaction

pytest.importorskip("llama_cpp")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def loaded() -> local.LoadedModel:
    try:
        return local.load_model(resolve_local_name(None))
    except LocalModelError as exc:
        pytest.skip(str(exc))


def _generate(grammar: str, seed: int, max_tokens: int = 96, temperature: float = 0.7) -> str:
    return generate_local(None, MESSAGES, grammar=grammar, temperature=temperature, max_tokens=max_tokens,
                          seed=seed)[0]


def test_every_answer_fits_the_schema_and_a_seed_repeats_its_text(loaded) -> None:
    grammar = grammar_for(Reaction)
    # llama.cpp's logits for a prompt evaluated whole differ slightly (~0.2) from those of its
    # last token decoded again after a prefix hit, so a seed repeats its text from a warm
    # context: the first call only warms it.
    _generate(grammar, 99)
    answers = {seed: _generate(grammar, seed) for seed in (1, 2, 3, 4)}
    for text in answers.values():
        Reaction.model_validate_json(text)
    sampler = loaded.llama._sampler
    assert type(sampler).__name__ == "GrammarLastSampler" and sampler.checked > 0
    # Other calls in between (the prefix cache restores states): the same seed, the same text.
    assert _generate(grammar, 2) == answers[2] and _generate(grammar, 1) == answers[1]


def test_a_token_the_grammar_refuses_is_drawn_again_under_the_grammar(loaded) -> None:
    grammar = 'root ::= "zq" [0-9] [0-9] [0-9] "!"'  # nothing a model would write unasked
    text = _generate(grammar, seed=5, max_tokens=16)
    assert re.fullmatch(r"zq[0-9]{3}!", text), text
    assert loaded.llama._sampler.resampled >= 1


def test_forced_text_is_batched_and_still_fits_the_grammar(loaded) -> None:
    key = "the_quick_brown_fox_jumps_over_the_lazy_dog"
    grammar = f'root ::= "{{\\"" "{key}" "\\": " [1-9] "}}"'
    text, _, generated = generate_local(None, MESSAGES, grammar=grammar, temperature=0.7, max_tokens=48, seed=1)
    assert re.fullmatch(r'\{"%s": [1-9]\}' % key, text), text
    sampler = loaded.llama._sampler
    assert sampler.forced >= 5 and sampler.checked + sampler.forced >= generated  # the key: not drawn one by one
    prober = local._forced_text(loaded.llama)
    fresh = local._grammar_last_sampler(loaded.llama, {"grammar": local._grammar(grammar), "temp": 0.7})
    try:
        assert prober.after(fresh.grammar) == '{"' + key + '": '
    finally:
        fresh.close()


def test_forcing_and_the_fast_sampler_can_be_turned_off(loaded, monkeypatch: pytest.MonkeyPatch) -> None:
    grammar = grammar_for(Reaction)
    monkeypatch.setenv("TOWNSFOLK_LOCAL_FORCING", "0")
    unforced, _, generated = generate_local(None, MESSAGES, grammar=grammar, temperature=0.7, max_tokens=96, seed=7)
    Reaction.model_validate_json(unforced)
    sampler = loaded.llama._sampler
    assert sampler.forced == 0 and sampler.checked >= generated  # every token drawn (and the end)
    monkeypatch.setenv("TOWNSFOLK_LOCAL_FAST_SAMPLING", "0")
    Reaction.model_validate_json(_generate(grammar, 7))
    assert type(loaded.llama._sampler).__name__ != "GrammarLastSampler"


def test_cancelling_stops_the_grammar_loop_at_the_next_decode(loaded, monkeypatch: pytest.MonkeyPatch) -> None:
    cancel, evals = threading.Event(), []
    real_eval = loaded.llama.eval

    def eval_then_give_up(tokens):  # noqa: ANN001, ANN202
        evals.append(len(tokens))
        if len(evals) == 3:
            cancel.set()  # the caller gives up while the third decode runs
        return real_eval(tokens)

    monkeypatch.setattr(loaded.llama, "eval", eval_then_give_up, raising=False)
    grammar = 'root ::= "[" [a-z ]{200,400} "]"'
    with pytest.raises(GenerationCancelled):
        generate_local(None, MESSAGES, grammar=grammar, temperature=0.7, max_tokens=400, seed=3, cancel=cancel)
    assert len(evals) == 3, "decoding went on after the caller gave up"
    assert loaded.lock.acquire(timeout=1.0), "the model is still held"
    loaded.lock.release()


def test_decoding_uses_one_thread_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOWNSFOLK_LOCAL_DECODE_THREADS", raising=False)
    assert local.decode_threads(2) == 1
    monkeypatch.setenv("TOWNSFOLK_LOCAL_DECODE_THREADS", "4")
    assert local.decode_threads(2) == 2  # never more than the prompt's threads
    monkeypatch.setenv("TOWNSFOLK_LOCAL_DECODE_THREADS", "two")
    with pytest.raises(LocalModelError, match="TOWNSFOLK_LOCAL_DECODE_THREADS"):
        local.decode_threads(2)
