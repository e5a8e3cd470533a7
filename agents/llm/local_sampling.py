"""Cheaper grammar-constrained sampling for the embedded model (agents/llm/local.py).

llama-cpp-python puts the grammar first in its sampler chain, so every generated token runs
the grammar over the whole vocabulary (~49k tokens for SmolLM2) before top-k keeps 40 of
them. :class:`GrammarLastSampler` does what llama.cpp's own ``common_sampler`` does: sample
from the raw logits with the usual chain (top-k, typical, top-p, min-p, temperature, the
seeded draw), then ask the grammar about the one chosen token; only when the grammar
rejects it is the grammar applied to the full vocabulary and the token drawn again. The
grammar still decides every token, so the output keeps its JSON shape, and the draw is
seeded, so a seed gives the same text every time.

A conversation line is also kept from saying the talk's earlier lines again, or itself twice
(:class:`RepeatTable`: the first token of any word that would complete a run already said is
blocked before the draw).

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

    def __init__(self, chain: Any, grammar: Any, n_vocab: int, no_repeat: "RepeatTable | None" = None) -> None:
        import llama_cpp

        self._llama_cpp = llama_cpp
        self.chain = chain
        self.grammar = grammar
        self.n_vocab = n_vocab
        self.no_repeat = no_repeat
        self.no_repeat_self = NO_REPEAT_SELF
        self.history: list[int] = []  # every token accepted so far (sampled or forced)
        self.checked = self.resampled = self.forced = self.blocked = 0
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
        banned = self.no_repeat.banned(self.history) if self.no_repeat is not None else []
        saved = logits[banned].copy() if banned else None
        if banned:  # this step's logits only: the buffer is rewritten by the next decode
            logits[banned] = -np.inf
            self.blocked += 1
        try:
            token = self._draw_allowed(logits)
        except RuntimeError:
            if saved is None:
                raise
            logits[banned] = saved  # the grammar allowed only what would repeat: let it
            token = self._draw_allowed(logits)
        self.accept(token)
        return token

    def _draw_allowed(self, logits: np.ndarray) -> int:
        token = self._draw(logits, grammar_first=False)
        if math.isinf(float(logits[token])) or not self.allows(token, float(logits[token])):
            self.resampled += 1
            token = self._draw(logits, grammar_first=True)
            if math.isinf(float(logits[token])):
                raise RuntimeError("every token the grammar allows is blocked")
        return token

    def accept(self, token: int) -> None:
        """Advance the grammar and the chain past ``token`` (sampled or forced)."""
        self._llama_cpp.llama_sampler_accept(self.grammar, token)
        self._llama_cpp.llama_sampler_accept(self.chain.sampler, token)
        self.history.append(token)
        if self.no_repeat is not None and self.no_repeat_self:  # nor may the answer say itself twice
            self.no_repeat.add(self.history[-self.no_repeat.n:])

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


# Tokens in a row that may not be said again: with 4, the fourth token of any run of four from
# an earlier line of the talk is blocked (see RepeatTable). On 22 next-line prompts rebuilt from
# the talks of 13 SmolLM2 runs, two seeds each (2026-11-26), the line checks accepted 6 of 44
# lines without it (31 of the 38 refusals: a line said again or echoed) and 33 of 44 with it
# (earlier lines only: 34; with a run of 6 tokens: 6 of 9 on a smaller set, as with 4); 87 s of
# decoding against 116 s.
NO_REPEAT_TOKENS = 4
# ... and, while it writes, none of its own runs either ('I am going to sleep at 13:00. I am going
# to sleep at 13:00.' was refused as the same sentence twice)
NO_REPEAT_SELF = True


class RepeatTable:
    """Runs of :data:`NO_REPEAT_TOKENS` tokens from texts already said, keyed by their first
    tokens: after those, their last token is blocked. SmolLM2 answered a line by saying it
    again, word for word or with its own name swapped in (quickstart, 2026-11-26), and the line
    checks refused it on every attempt; blocking the copy leaves it the rest of its words."""

    def __init__(self, token_lists: list[list[int]], n: int = NO_REPEAT_TOKENS,
                 word_starts: np.ndarray | None = None) -> None:
        self.n = n
        self.word_starts = word_starts
        self._next: dict[tuple[int, ...], set[int]] = {}
        for tokens in token_lists:
            for i in range(len(tokens) - n + 1):
                self.add(tokens[i:i + n])

    def __len__(self) -> int:
        return len(self._next)

    def add(self, run: list[int]) -> None:
        """Block ``run`` (also the answer's own words as it is written: see GrammarLastSampler).
        Only a token that starts a word is ever blocked (``word_starts``, when given): blocking
        the rest of a word made SmolLM2 write 'Tom Alvender' for a name said before."""
        if len(run) == self.n and (self.word_starts is None or bool(self.word_starts[run[-1]])):
            self._next.setdefault(tuple(run[:-1]), set()).add(run[-1])

    def banned(self, history: list[int]) -> list[int]:
        """The tokens that would complete a run already said, after ``history``."""
        if len(history) < self.n - 1:
            return []
        return sorted(self._next.get(tuple(history[-(self.n - 1):]), ()))


def repeat_table(llama: Any, texts: tuple[str, ...]) -> RepeatTable:
    """A :class:`RepeatTable` of ``texts`` as the model spells them, alone and as the start of a
    JSON string (``"I am ...`` tokenizes apart from ``I am ...``); empty for no texts (the
    answer's own runs are added as it is written)."""
    import json

    lists = []
    for text in texts:
        for spelling in (text, json.dumps(text)[:-1], " " + text):
            lists.append(llama.tokenize(spelling.encode("utf-8"), add_bos=False, special=False))
    return RepeatTable(lists, NO_REPEAT_TOKENS, word_starts(llama))


def word_starts(llama: Any) -> np.ndarray:
    """For each token of the vocabulary, whether it starts a word (its text does not begin with a
    letter or digit: ' Alvarez' does, 'varez' does not); built once per model."""
    flags = getattr(llama, "_townsfolk_word_starts", None)
    if flags is None:
        n_vocab = int(llama.n_vocab()) if callable(getattr(llama, "n_vocab", None)) else int(llama._n_vocab)
        flags = np.ones(n_vocab, dtype=bool)
        for token in range(n_vocab):
            head = llama.detokenize([token])[:1]
            flags[token] = not (head.isalpha() or head.isdigit())
        llama._townsfolk_word_starts = flags
    return flags


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
