"""Cheaper grammar-constrained sampling for the embedded model (agents/llm/local.py).

llama-cpp-python puts the grammar first in its sampler chain, so every generated token runs
the grammar over the whole vocabulary (~49k tokens for SmolLM2) before top-k keeps 40 of
them. :class:`GrammarLastSampler` does what llama.cpp's own ``common_sampler`` does: sample
from the raw logits with the usual chain (top-k, typical, top-p, min-p, temperature, the
seeded draw), then ask the grammar about the one chosen token; only when the grammar
rejects it is the grammar applied to the full vocabulary and the token drawn again. The
grammar still decides every token, so the output keeps its JSON shape, and the draw is
seeded, so a seed gives the same text every time.

:func:`forced_text` reads, from the grammar's state, the characters it allows next when
there is only one choice (a JSON key, ``":``, a closing brace); the generation loop
(local.py) evaluates their tokens in one batch instead of one decode per token.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np

# Printable ASCII: what a JSON grammar's literals (keys, punctuation) are made of.
PROBE_CHARS = "".join(chr(c) for c in range(32, 127)) + "\n\t"
MAX_FORCED_CHARS = 96


class GrammarLastSampler:
    """A llama-cpp-python sampler (``sample(ctx, idx)``) that checks the grammar last.

    ``chain`` is a ``llama_cpp._internals.LlamaSampler`` without a grammar; ``grammar`` a
    ``llama_sampler`` pointer this object owns. ``checked`` counts draws, ``resampled`` those
    the grammar refused (they needed the full-vocabulary pass), ``forced`` tokens accepted
    without a draw (the bench reports all three).
    """

    def __init__(self, chain: Any, grammar: Any, n_vocab: int) -> None:
        import llama_cpp

        self._llama_cpp = llama_cpp
        self.chain = chain
        self.grammar = grammar
        self.n_vocab = n_vocab
        self.checked = self.resampled = self.forced = 0
        dtype = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)
        if dtype.itemsize != ctypes.sizeof(llama_cpp.llama_token_data):
            raise RuntimeError("llama_token_data's layout changed; update agents/llm/local_sampling.py")
        self._ids = np.arange(n_vocab, dtype=np.int32)
        self._cells = np.zeros(n_vocab, dtype=dtype)
        self._full = llama_cpp.llama_token_data_array(
            data=ctypes.cast(self._cells.ctypes.data, llama_cpp.llama_token_data_p), size=n_vocab,
            selected=-1, sorted=False)
        self._one_cell = (llama_cpp.llama_token_data * 1)()
        self._one = llama_cpp.llama_token_data_array(
            data=ctypes.cast(self._one_cell, llama_cpp.llama_token_data_p), size=1, selected=-1, sorted=False)

    def close(self) -> None:
        """Free the grammar sampler and the chain (llama-cpp-python drops samplers per call)."""
        if self.grammar is not None:
            self._llama_cpp.llama_sampler_free(self.grammar)
            self.grammar = None
        self.chain.close()

    def __del__(self) -> None:
        self.close()

    def sample(self, ctx: Any, idx: int = -1) -> int:
        """The next token: drawn from the raw logits, redrawn under the grammar if it rejects it."""
        pointer = self._llama_cpp.llama_get_logits_ith(ctx.ctx, idx)
        logits = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))
        self.checked += 1
        token = self._draw(logits, grammar_first=False)
        if not self.allows(token, float(logits[token])):
            self.resampled += 1
            token = self._draw(logits, grammar_first=True)
        self.accept(token)
        return token

    def accept(self, token: int) -> None:
        """Advance the grammar and the chain past ``token`` (sampled or forced)."""
        self._llama_cpp.llama_sampler_accept(self.grammar, token)
        self._llama_cpp.llama_sampler_accept(self.chain.sampler, token)

    def allows(self, token: int, logit: float = 0.0) -> bool:
        """Whether the grammar, in its current state, accepts ``token`` next."""
        cell = self._one_cell[0]
        cell.id, cell.logit, cell.p = token, logit, 0.0
        self._one.size, self._one.selected, self._one.sorted = 1, -1, False
        self._llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(self._one))
        return not math.isinf(self._one_cell[0].logit)

    def _draw(self, logits: np.ndarray, *, grammar_first: bool) -> int:
        """One draw of the chain over the whole vocabulary (after the grammar if asked)."""
        cells, full = self._cells, self._full
        cells["id"] = self._ids
        cells["logit"] = logits
        cells["p"] = 0.0
        full.data = ctypes.cast(cells.ctypes.data, self._llama_cpp.llama_token_data_p)
        full.size, full.selected, full.sorted = self.n_vocab, -1, False
        if grammar_first:
            self._llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(full))
        self._llama_cpp.llama_sampler_apply(self.chain.sampler, ctypes.byref(full))
        if not 0 <= full.selected < full.size:
            raise RuntimeError("llama.cpp's sampler chain selected no token")
        return int(full.data[full.selected].id)


def build_chain(*, temp: float, top_k: int, top_p: float, min_p: float, typical_p: float, seed: int,
                n_vocab: int, last_n: int, repeat_penalty: float, frequency_penalty: float,
                presence_penalty: float) -> Any:
    """llama-cpp-python's default chain (``Llama._init_sampler``) without the grammar."""
    from llama_cpp import _internals

    chain = _internals.LlamaSampler()
    chain.add_penalties(n_vocab=n_vocab, penalty_last_n=last_n, penalty_repeat=repeat_penalty,
                        penalty_freq=frequency_penalty, penalty_present=presence_penalty)
    if temp < 0.0:
        chain.add_dist(seed)
    elif temp == 0.0:
        chain.add_greedy()
    else:
        chain.add_top_k(top_k)
        chain.add_typical(typical_p, 1)
        chain.add_top_p(top_p, 1)
        chain.add_min_p(min_p, 1)
        chain.add_temp(temp)
        chain.add_dist(seed)
    return chain


def grammar_sampler(vocab: Any, grammar: Any) -> Any:
    """A fresh llama.cpp grammar sampler for a ``LlamaGrammar`` (its state starts at the root)."""
    import llama_cpp

    pointer = llama_cpp.llama_sampler_init_grammar(
        vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8"))
    if not pointer:
        raise ValueError("llama.cpp refused the grammar")
    return pointer


class ForcedText:
    """Finds the text a grammar forces next, probing it with single-character tokens.

    ``probes`` maps each probe character to the vocabulary's token for exactly that
    character (characters without one are left out); the end-of-generation token is probed
    too, since a grammar that may end forces nothing.
    """

    def __init__(self, probes: dict[str, int], eog: int) -> None:
        import llama_cpp

        self._llama_cpp = llama_cpp
        self.chars = list(probes)
        tokens = [*probes.values(), eog]
        self._size = len(tokens)
        self._cells = (llama_cpp.llama_token_data * self._size)()
        self._tokens = tokens
        self._array = llama_cpp.llama_token_data_array(
            data=ctypes.cast(self._cells, llama_cpp.llama_token_data_p), size=self._size, selected=-1, sorted=False)

    def _only_choice(self, grammar: Any) -> int | None:
        """The index of the one probe the grammar allows (the end counts as a probe), else None."""
        for cell, token in zip(self._cells, self._tokens):
            cell.id, cell.logit, cell.p = token, 0.0, 0.0
        self._array.size, self._array.selected, self._array.sorted = self._size, -1, False
        self._llama_cpp.llama_sampler_apply(grammar, ctypes.byref(self._array))
        allowed = [i for i, cell in enumerate(self._cells) if not math.isinf(cell.logit)]
        return allowed[0] if len(allowed) == 1 else None

    def after(self, grammar: Any) -> str:
        """The characters ``grammar`` forces from its current state (its state is left as it was).

        A character counts as forced when it is the only probe the grammar allows; a grammar
        that also allows some non-ASCII character there is rare in JSON, and forcing the ASCII
        one still yields text the grammar accepts.
        """
        choice = self._only_choice(grammar)
        if choice is None or choice == self._size - 1:
            return ""
        clone = self._llama_cpp.llama_sampler_clone(grammar)
        try:
            text = ""
            while choice is not None and choice < self._size - 1 and len(text) < MAX_FORCED_CHARS:
                text += self.chars[choice]
                self._llama_cpp.llama_sampler_accept(clone, self._tokens[choice])
                choice = self._only_choice(clone)
            return text
        finally:
            self._llama_cpp.llama_sampler_free(clone)


def single_char_tokens(llama: Any) -> dict[str, int]:
    """The vocabulary's token for each probe character, where one token is exactly it."""
    found: dict[str, int] = {}
    for char in PROBE_CHARS:
        tokens = llama.tokenize(char.encode("utf-8"), add_bos=False, special=False)
        if len(tokens) == 1 and llama.detokenize(tokens) == char.encode("utf-8"):
            found[char] = tokens[0]
    return found


def reuse_prefix(llama: Any, tokens: list[int]) -> list[int]:
    """The prompt tokens still to evaluate after keeping the prefix the context already holds.

    llama-cpp-python's ``Llama.generate`` prefix reuse, kept as it is: an exact hit samples
    at once only from live logits; otherwise at least the last prompt token is decoded again.
    """
    if llama.n_tokens > 0:
        longest = 0
        for a, b in zip(llama._input_ids, tokens):
            if a != b:
                break
            longest += 1
        consumed = longest == len(tokens)
        if consumed and llama.n_tokens == len(tokens) and not llama._requires_eval:
            return []
        keep = longest - 1 if consumed else longest
        if keep > 0 and llama._ctx.kv_cache_seq_rm(-1, keep, -1):
            llama.n_tokens = keep
            llama._requires_eval = True
            return tokens[keep:]
    llama.reset()
    return tokens


def generate_with_forcing(llama: Any, tokens: list[int], forced: ForcedText | None, stop: Any,
                          **sampling: Any) -> Any:
    """``Llama.generate`` for a grammar call: each sampled token is followed by the tokens of
    the text the grammar forces after it, yielded without sampling and evaluated together
    with the sampled token in one batch (one decode instead of one per token).

    ``stop`` is llama-cpp-python's stopping criteria (the chat template's stop tokens),
    asked as ``Llama.generate`` asks it: after sampling, about the tokens evaluated so far.
    """
    llama._sampler = sampler = llama._init_sampler(**sampling)
    pending = reuse_prefix(llama, list(tokens))
    while True:
        if pending:
            llama.eval(pending)
        token = llama.sample(**sampling, idx=llama.n_tokens - 1)
        if stop is not None and stop(llama._input_ids[: llama.n_tokens], llama._scores[-1, :]):
            return
        yield token
        pending = [token]
        if forced is None or not isinstance(sampler, GrammarLastSampler) or sampler.grammar is None:
            continue
        for extra in forced_tokens(llama, sampler, forced):
            sampler.accept(extra)
            sampler.forced += 1
            yield extra
            pending.append(extra)


def forced_tokens(llama: Any, sampler: GrammarLastSampler, forced: ForcedText) -> list[int]:
    """Tokens spelling the text the grammar forces now, cut where the grammar would refuse one.

    The last token is left to the model: the vocabulary often has a token that joins the end
    of the forced text to what comes next (``":`` after a key), and forcing the split
    spelling would push the model off the spellings it learned.
    """
    text = forced.after(sampler.grammar)
    if not text:
        return []
    tokens = llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)
    if len(tokens) < 2 or llama.detokenize(tokens) != text.encode("utf-8"):
        return []
    tokens = tokens[:-1]
    clone = llama_cpp_module().llama_sampler_clone(sampler.grammar)
    try:
        kept: list[int] = []
        for token in tokens:
            if not allowed_by(clone, token):
                break
            llama_cpp_module().llama_sampler_accept(clone, token)
            kept.append(token)
        return kept
    finally:
        llama_cpp_module().llama_sampler_free(clone)


def llama_cpp_module() -> Any:
    import llama_cpp

    return llama_cpp


def allowed_by(grammar: Any, token: int) -> bool:
    """Whether the grammar sampler ``grammar`` accepts ``token`` next."""
    llama_cpp = llama_cpp_module()
    cell = (llama_cpp.llama_token_data * 1)()
    cell[0].id, cell[0].logit, cell[0].p = token, 0.0, 0.0
    array = llama_cpp.llama_token_data_array(
        data=ctypes.cast(cell, llama_cpp.llama_token_data_p), size=1, selected=-1, sorted=False)
    llama_cpp.llama_sampler_apply(grammar, ctypes.byref(array))
    return not math.isinf(cell[0].logit)
