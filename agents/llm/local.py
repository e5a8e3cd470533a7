"""`local`: the embedded model, llama-cpp-python behind litellm as a custom provider.

The GGUF ships inside a registry package (see agents/llm/models.py), so this works offline
after install. Going through litellm like every other model keeps one call path: the
gateway asks litellm for ``townsfolk-local/<name>`` and litellm hands the call to
:class:`LocalProvider`. Decoding runs under a GBNF grammar derived from the call's pydantic
schema (agents/llm/grammar.py), so even a 135M model writes JSON of the right shape.

llama.cpp is not thread-safe: each model is loaded once per process (lazily, under a lock)
and its calls are serialised; they run in a worker thread so the event loop keeps going.
A thread cannot be killed, so a call whose caller gave up (the gateway's timeout) would go
on decoding and hold the model while later calls queue behind discarded work. Each call
therefore carries a cancel flag: llama.cpp's abort callback reads it while it computes
(every token, and within a long prompt), and a call still waiting for the model checks it
before it starts.

Calls of one resident in one role share a long prompt prefix (the system line and the
persona summary open every prompt). The model keeps a prefix cache of llama.cpp states
(:func:`prefix_cache_bytes`): before a call, the stored state sharing the longest token
prefix with the new prompt is restored when it shares more than the live context does, so
only the new suffix is evaluated, even when other residents' calls came in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import itertools
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from maps.contracts import Message
from agents.llm import local_sampling
from agents.llm.errors import Unreachable, short
from agents.llm.wrappers.base import Completion, Request
from agents.llm.grammar import grammar_for
from agents.llm.litellm_setup import load_litellm
from agents.llm.models import LocalModelError, LocalModelSpec, gguf_path, models_cache_dir, resolve_local_name

PROVIDER = "townsfolk-local"
DEFAULT_CTX = 4096
DEFAULT_KV_CACHE_MB = 512

# llama.cpp's CPU threads sync through OpenMP, whose default is to spin while waiting. On a
# small machine shared with the engine, tests or a second run, a spinning thread steals the
# core its partner needs: measured on 2 busy cores, 3.4 tokens/s with spinning against 19
# with passive waiting (docs/MODELS.md). libgomp reads this once, when llama_cpp is loaded,
# so agents/llm/__init__.py sets it before anything here imports llama_cpp; this line only
# documents the dependency.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def default_threads() -> int:
    """All cores this process may use, or TOWNSFOLK_LOCAL_THREADS."""
    configured = os.environ.get("TOWNSFOLK_LOCAL_THREADS")
    if configured:
        try:
            return max(1, int(configured))
        except ValueError:
            raise LocalModelError(
                f"TOWNSFOLK_LOCAL_THREADS must be a whole number, got {configured!r}"
            ) from None
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def decode_threads(threads: int) -> int:
    """Threads for decoding one token: TOWNSFOLK_LOCAL_DECODE_THREADS, else 1.

    One token of a small model is too little work to share: with 2 threads on 2 busy cores each
    token cost ~23 ms of CPU (a third of it the kernel waking and parking the second thread)
    against ~8 ms with one, and took longer in wall time too (docs/MODELS.md). Prompts and
    forced-token batches still use all ``threads``.
    """
    configured = os.environ.get("TOWNSFOLK_LOCAL_DECODE_THREADS", "").strip()
    if not configured:
        return 1
    try:
        return max(1, min(threads, int(configured)))
    except ValueError:
        raise LocalModelError(
            f"TOWNSFOLK_LOCAL_DECODE_THREADS must be a whole number, got {configured!r}") from None


def prefix_cache_bytes() -> int:
    """The prefix cache's budget: TOWNSFOLK_LOCAL_KV_CACHE_MB (0 turns it off), else 512 MiB."""
    configured = os.environ.get("TOWNSFOLK_LOCAL_KV_CACHE_MB", "").strip()
    if not configured:
        return DEFAULT_KV_CACHE_MB << 20
    try:
        megabytes = int(configured)
    except ValueError:
        megabytes = -1
    if megabytes < 0:
        raise LocalModelError(
            f"TOWNSFOLK_LOCAL_KV_CACHE_MB must be a whole number of MiB (0 turns the cache off), "
            f"got {configured!r}")
    return megabytes << 20


@lru_cache(maxsize=1)
def _lean_state_llama() -> type:
    """llama_cpp.Llama whose saved states hold the KV cache but not the logits matrix.

    Llama.save_state copies its whole logits buffer (n_batch x vocabulary floats: 100 MB for
    SmolLM2, 311 MB for Qwen) on every call once a cache is set, which costs more than the
    prefix it saves. The logits are not needed: a restored state is marked for evaluation,
    so llama-cpp-python decodes at least the prompt's last token again before sampling.
    """
    import ctypes

    import numpy as np
    import llama_cpp
    from llama_cpp import Llama, LlamaState

    class LeanStateLlama(Llama):
        def save_state(self) -> LlamaState:
            size = llama_cpp.llama_state_get_size(self._ctx.ctx)
            buffer = (ctypes.c_uint8 * int(size))()
            written = int(llama_cpp.llama_state_get_data(self._ctx.ctx, buffer, size))
            if written > int(size):
                raise RuntimeError("llama.cpp wrote more state than it reported")
            return LlamaState(
                input_ids=self.input_ids[: self.n_tokens].copy(),
                scores=np.empty((0, self._n_vocab), dtype=np.single),
                n_tokens=self.n_tokens,
                llama_state=bytes(buffer[:written]),
                llama_state_size=written,
                seed=self._seed,
            )

        def load_state(self, state: LlamaState) -> None:
            data = (ctypes.c_uint8 * state.llama_state_size).from_buffer_copy(state.llama_state)
            if llama_cpp.llama_state_set_data(self._ctx.ctx, data, state.llama_state_size) \
                    != state.llama_state_size:
                raise RuntimeError("llama.cpp refused a cached state")
            self.input_ids[: state.n_tokens] = state.input_ids
            self.n_tokens = state.n_tokens
            self._requires_eval = True  # sample only after decoding again (no logits kept)
            # The call's own seed stays: a cache hit must not change what is sampled.

        _init_sampler = _grammar_aware_init_sampler(Llama)
        generate = _grammar_aware_generate(Llama)

    return LeanStateLlama


def _grammar_aware_init_sampler(base: type) -> Any:
    """``Llama._init_sampler`` giving grammar calls the grammar-last sampler (agents/llm/local_sampling.py)."""
    def _init_sampler(self: Any, **options: Any) -> Any:
        if not _fast_grammar_call(options):
            return base._init_sampler(self, **options)
        return _grammar_last_sampler(self, options)
    return _init_sampler


def _grammar_aware_generate(base: type) -> Any:
    """``Llama.generate`` sending grammar calls through the forcing loop, the rest to ``base``."""
    def generate(self: Any, tokens: Any, **options: Any) -> Any:
        if not _fast_grammar_call(options) or not options.get("reset", True) or self.draft_model is not None:
            return base.generate(self, tokens, **options)
        options.pop("reset", None)
        stop = options.pop("stopping_criteria", None)
        return local_sampling.generate_with_forcing(
            self, tokens, _forced_text(self) if forcing_enabled() else None, stop, **options)
    return generate


def _fast_grammar_call(options: dict[str, Any]) -> bool:
    """Whether a call's sampling options suit the grammar-last sampler (a grammar, plain sampling)."""
    return options.get("grammar") is not None and fast_sampling_enabled() \
        and not options.get("mirostat_mode") and options.get("logits_processor") is None


def fast_sampling_enabled() -> bool:
    """TOWNSFOLK_LOCAL_FAST_SAMPLING=0 samples as llama-cpp-python does (the grammar over the whole
    vocabulary for every token); the bench compares the two this way."""
    return os.environ.get("TOWNSFOLK_LOCAL_FAST_SAMPLING", "1").strip() not in ("0", "false", "no", "off")


def forcing_enabled() -> bool:
    """TOWNSFOLK_LOCAL_FORCING=0 samples every token, even those the grammar forces."""
    return os.environ.get("TOWNSFOLK_LOCAL_FORCING", "1").strip() not in ("0", "false", "no", "off")


def _grammar_last_sampler(llama: Any, options: dict[str, Any]) -> Any:
    """A :class:`local_sampling.GrammarLastSampler` with ``Llama._init_sampler``'s defaults."""
    chain = local_sampling.build_chain(
        temp=float(options.get("temp", 0.8)), top_k=int(options.get("top_k", 40)),
        top_p=float(options.get("top_p", 0.95)), min_p=float(options.get("min_p", 0.05)),
        typical_p=float(options.get("typical_p", 1.0)), seed=int(llama._seed), n_vocab=llama._n_vocab,
        last_n=llama.last_n_tokens_size, repeat_penalty=float(options.get("repeat_penalty", 1.0)),
        frequency_penalty=float(options.get("frequency_penalty", 0.0)),
        presence_penalty=float(options.get("presence_penalty", 0.0)))
    grammar = local_sampling.grammar_sampler(llama._model.vocab, options["grammar"])
    return local_sampling.GrammarLastSampler(chain, grammar, llama._n_vocab,
                                             no_repeat=getattr(llama, "_townsfolk_no_repeat", None))


def _forced_text(llama: Any) -> Any:
    """The model's forced-text prober (built once: it tokenizes each probe character)."""
    prober = getattr(llama, "_townsfolk_forced", None)
    if prober is None:
        import llama_cpp

        eog = int(llama_cpp.llama_vocab_eos(llama._model.vocab))
        prober = local_sampling.ForcedText(local_sampling.single_char_tokens(llama), eog)
        llama._townsfolk_forced = prober
    return prober


def transcode_enabled() -> bool:
    """TOWNSFOLK_LOCAL_TRANSCODE=0 loads a packaged Q4_1 file as it is (see :func:`fast_gguf`)."""
    return os.environ.get("TOWNSFOLK_LOCAL_TRANSCODE", "1").strip() not in ("0", "false", "no", "off")


def fast_gguf(spec: LocalModelSpec, path: Path) -> Path:
    """The file llama.cpp loads for ``spec``: a packaged Q4_1 model transcoded once to Q8_0.

    Why: this build of llama.cpp has no fast (repacked) CPU kernels for Q4_1, so SmolLM2's
    prompts were evaluated at ~90 tokens per CPU second against ~150 as Q8_0 (docs/MODELS.md),
    and prompt evaluation is half of an embedded call. Q8_0 holds Q4_1's values almost exactly
    (one 4-bit step spans ~17 8-bit steps). The copy (~145 MB for SmolLM2) goes to the models
    cache through a temporary file; a user's own file (``local:/path``) is never rewritten.
    """
    if spec.path is not None or ".Q4_1." not in path.name or not transcode_enabled():
        return path
    import ctypes

    import llama_cpp

    stat = path.stat()
    target = models_cache_dir() / f"{path.name.replace('.Q4_1.', '.Q8_0.')[:-5]}-{stat.st_size}.gguf"
    if target.is_file():
        return target
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
    params.allow_requantize = True
    params.nthread = default_threads()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with _quiet_stderr():
            failed = llama_cpp.llama_model_quantize(str(path).encode(), str(partial).encode(), ctypes.byref(params))
        if failed:
            raise OSError(f"llama.cpp's quantiser returned {failed}")
        os.replace(partial, target)
    except OSError as exc:  # a full or read-only cache: the packaged file works, only slower
        warnings.warn(f"townsfolk: could not make a Q8_0 copy of {path} in {target.parent} ({exc}); "
                      "loading the Q4_1 file as it is (slower prompts; docs/MODELS.md)", stacklevel=2)
        return path
    finally:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
    return target


_quiet = threading.Lock()
_quiet_state = {"depth": 0, "saved": -1}  # how many threads are inside, and the real fd 2 they hid


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """llama.cpp prints load chatter on fd 2 even with verbose=False; hide it while loading.

    fd 2 is the process's, and residents compile grammars from several threads at once: each
    saving and restoring it on its own, a thread that came in second saved /dev/null and put it
    back last, and a resumed SmolLM2 society bench lost its stderr (progress lines, warnings) for
    good minutes after it went on (2026-11-28). The first thread in hides it, the last one out restores it.
    """
    with _quiet:
        if _quiet_state["depth"] == 0:
            try:
                _quiet_state["saved"] = os.dup(2)
                with open(os.devnull, "w") as devnull:
                    os.dup2(devnull.fileno(), 2)
            except OSError:
                _quiet_state["saved"] = -1
        _quiet_state["depth"] += 1
    try:
        yield
    finally:
        with _quiet:
            _quiet_state["depth"] -= 1
            if _quiet_state["depth"] == 0 and _quiet_state["saved"] >= 0:
                os.dup2(_quiet_state["saved"], 2)
                os.close(_quiet_state["saved"])
                _quiet_state["saved"] = -1


@dataclass
class LoadedModel:
    spec: LocalModelSpec
    llama: Any  # llama_cpp.Llama
    lock: threading.Lock
    load_s: float
    chat: bool = True  # chat template (the spec's, or the file's own) or completion-style
    cancel: threading.Event | None = None  # the flag of the call holding the lock
    abort_callback: Any = None  # the ctypes callback, kept alive as long as the model

    def should_abort(self) -> bool:
        """llama.cpp's abort callback: true once the running call's caller gave up."""
        cancel = self.cancel
        return cancel is not None and cancel.is_set()


def _install_abort_callback(loaded: LoadedModel) -> None:
    """Let llama_decode stop mid-computation when the running call is cancelled."""
    import llama_cpp

    callback = llama_cpp.ggml_abort_callback(lambda _data: loaded.should_abort())
    llama_cpp.llama_set_abort_callback(loaded.llama.ctx, callback, None)
    loaded.abort_callback = callback


_models: dict[str, LoadedModel] = {}
_models_lock = threading.Lock()


def load_model(spec: LocalModelSpec) -> LoadedModel:
    """The process-wide instance of ``spec`` (loaded on first use)."""
    loaded = _models.get(spec.name)
    if loaded is not None:
        return loaded
    with _models_lock:
        loaded = _models.get(spec.name)
        if loaded is not None:
            return loaded
        try:
            from llama_cpp import LlamaRAMCache
            Llama = _lean_state_llama()
        except ImportError as exc:
            raise LocalModelError(
                f"llama-cpp-python is not importable ({exc}); fix: "
                'pip install -c constraints.txt -e ".[dev]"'
            ) from None
        path = fast_gguf(spec, gguf_path(spec))
        try:
            n_ctx = int(os.environ.get("TOWNSFOLK_LOCAL_CTX", DEFAULT_CTX))
        except ValueError:
            raise LocalModelError("TOWNSFOLK_LOCAL_CTX must be a whole number of tokens") from None
        threads = default_threads()
        cache_bytes = prefix_cache_bytes()
        started = time.perf_counter()
        with _quiet_stderr():
            llama = Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=decode_threads(threads),
                n_threads_batch=threads,
                verbose=False,
            )
        # llama-cpp-python maps ggml's WARN (3) to logging.ERROR, so with verbose=False it still
        # printed decode chatter ('decode: removing memory module entries ...') on every run.
        logging.getLogger("llama-cpp-python").setLevel(logging.CRITICAL)
        if cache_bytes:
            llama.set_cache(LlamaRAMCache(capacity_bytes=cache_bytes))
        # A user's GGUF file is chatted with through the template in its own metadata (which
        # llama-cpp-python applies); a file without one is prompted completion-style.
        chat = spec.chat if spec.chat is not None else bool(
            (getattr(llama, "metadata", None) or {}).get("tokenizer.chat_template"))
        loaded = LoadedModel(spec, llama, threading.Lock(), time.perf_counter() - started, chat=chat)
        _install_abort_callback(loaded)
        _models[spec.name] = loaded
        return loaded


def set_prefix_cache(model: LoadedModel, capacity_bytes: int) -> None:
    """Replace ``model``'s prefix cache with an empty one of ``capacity_bytes`` (0: none) and
    clear its context, so the next call starts cold (the bench compares off and on this way)."""
    from llama_cpp import LlamaRAMCache

    with model.lock:
        model.llama.set_cache(LlamaRAMCache(capacity_bytes=capacity_bytes) if capacity_bytes > 0 else None)
        model.llama.reset()


class GenerationCancelled(Exception):
    """The caller gave up on this call before it started; llama.cpp was not run."""


# Cancel flags of the calls in progress, by key: the key, not the Event, travels through
# litellm's optional params (which it may copy or log).
_cancels: dict[str, threading.Event] = {}
_cancel_ids = itertools.count(1)
LOCK_POLL_S = 0.05


def _cancel_for(key: Any) -> threading.Event | None:
    """The flag of call ``key``; a key no longer registered means its caller is already gone."""
    if key is None:
        return None
    found = _cancels.get(str(key))
    if found is None:
        found = threading.Event()
        found.set()
    return found


@contextlib.contextmanager
def _model_lock(model: LoadedModel, cancel: threading.Event | None) -> Iterator[None]:
    """Hold the model for one call, giving up (GenerationCancelled) if it is cancelled meanwhile.

    While held, ``cancel`` is the model's abort flag: llama.cpp stops computing once it is
    set and the call raises GenerationCancelled.
    """
    while not model.lock.acquire(timeout=LOCK_POLL_S):
        if cancel is not None and cancel.is_set():
            raise GenerationCancelled("cancelled while waiting for the model")
    model.cancel = cancel
    try:
        if cancel is not None and cancel.is_set():
            raise GenerationCancelled("cancelled before decoding started")
        try:
            yield
        except RuntimeError:
            if cancel is not None and cancel.is_set():  # llama_decode returned 2: aborted
                raise GenerationCancelled("cancelled while decoding: the caller gave up") from None
            raise
    finally:
        model.cancel = None
        model.lock.release()


@lru_cache(maxsize=256)
def _grammar(gbnf: str) -> Any:
    from llama_cpp import LlamaGrammar

    with _quiet_stderr():
        return LlamaGrammar.from_string(gbnf, verbose=False)


def completion_prompt(messages: list[Message]) -> str:
    """A chat rendered for a base model: instructions, then Input/Output turns.

    Earlier user/assistant pairs read as worked examples (few-shot); the text ends on an open
    ``### Output:`` so the model continues with the answer.
    """
    parts: list[str] = []
    for message in messages:
        role, content = message.get("role", "user"), message.get("content", "").strip()
        if role == "system":
            parts.append(content + "\n")
        elif role == "assistant":
            parts.append(f"### Output:\n{content}\n")
        else:
            parts.append(f"### Input:\n{content}\n")
    parts.append("### Output:\n")
    return "\n".join(parts)


def generate_local(
    name: str | None,
    messages: list[Message],
    *,
    grammar: str | None,
    temperature: float,
    max_tokens: int,
    seed: int,
    cancel: threading.Event | None = None,
    sampling: dict[str, float] | None = None,
    no_repeat: tuple[str, ...] | None = None,
) -> tuple[str, int, int]:
    """Blocking generation on the embedded model: (text, prompt tokens, completion tokens).

    ``sampling`` adds llama.cpp sampling options (``frequency_penalty``: :func:`sampling_for`).
    ``no_repeat`` are texts the answer may not say again, nor may it say itself twice (a grammar
    call on the grammar-last sampler blocks every run of their tokens: local_sampling.RepeatTable);
    None samples freely.
    Setting ``cancel`` stops decoding at the next token or, if the call is still queued,
    keeps it from starting; either way :class:`GenerationCancelled` is raised.
    """
    model = load_model(resolve_local_name(name))
    options: dict[str, Any] = {
        "temperature": float(temperature),
        "max_tokens": int(max_tokens),
        "seed": int(seed) & 0x7FFFFFFF,
        **{key: float(value) for key, value in (sampling or {}).items()
           if key in ("frequency_penalty", "presence_penalty", "repeat_penalty")},
    }
    if grammar:
        options["grammar"] = _grammar(grammar)
    with _model_lock(model, cancel):
        # read by the sampler this call builds (_grammar_last_sampler); only under the model's lock
        model.llama._townsfolk_no_repeat = None if no_repeat is None else local_sampling.repeat_table(
            model.llama, no_repeat)
        try:
            if model.chat:
                out = model.llama.create_chat_completion(messages=messages, **options)
                text = out["choices"][0]["message"]["content"] or ""
            else:
                out = model.llama.create_completion(prompt=completion_prompt(messages), **options)
                text = out["choices"][0]["text"] or ""
        finally:
            model.llama._townsfolk_no_repeat = None
    usage = out.get("usage") or {}
    return text, int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))


def _provider_class() -> type:
    litellm = load_litellm()
    from litellm import CustomLLM

    class LocalProvider(CustomLLM):
        """litellm's view of the embedded model: ``townsfolk-local/<name>``."""

        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            params = dict(kwargs.get("optional_params") or {})
            response = kwargs.get("model_response") or litellm.ModelResponse()
            text, prompt_tokens, completion_tokens = generate_local(
                model or None,
                messages,
                grammar=params.get("grammar"),
                temperature=params.get("temperature", 0.7),
                max_tokens=params.get("max_tokens", 512),
                seed=params.get("seed", 0),
                cancel=_cancel_for(params.get("townsfolk_cancel")),
                sampling=params.get("townsfolk_sampling") or {},
                no_repeat=None if params.get("townsfolk_no_repeat") is None else tuple(params["townsfolk_no_repeat"]),
            )
            response.choices[0].message.content = text
            response.choices[0].finish_reason = "stop"
            response.model = f"{PROVIDER}/{model}"
            response.usage = litellm.Usage(
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                total_tokens=prompt_tokens + completion_tokens,
            )
            return response

        async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(self.completion, model, messages, *args, **kwargs)

    return LocalProvider


_register_lock = threading.Lock()


def register_local_provider() -> None:
    """Make ``townsfolk-local/<name>`` a litellm model (once per process)."""
    litellm = load_litellm()
    with _register_lock:
        if any(item.get("provider") == PROVIDER for item in litellm.custom_provider_map):
            return
        handler = _provider_class()()
        litellm.custom_provider_map = [
            *litellm.custom_provider_map,
            {"provider": PROVIDER, "custom_handler": handler},
        ]
        from litellm.utils import custom_llm_setup

        custom_llm_setup()


# A frequency penalty where the answer is free prose about the resident's own day. A small model
# loops there: SmolLM2 answered an interview with 'I am curious about the life of my family.'
# five times, and summed up a talk the same way. Measured on bench seed 2's town (2026-11-26):
# - interview answers accepted by the checks: 7 of 30 without, 13 of 30 with 0.5 (14 with 1.0,
#   13 with a presence penalty of 0.6, 12 with 0.5 and a repeat penalty of 1.1);
# - chat summaries accepted: 11 of 18 without, 13 of 18 with 0.5.
# Conversation lines are left out: 36 replies to three openers were accepted 22 times either way
# and answered the opener 17 times without, 16 with. Structured purposes (plans, ratings, steps)
# keep plain sampling too: their words are short, and a penalty only pushes the model off them.
FREE_TEXT_PENALTY = {"interview": 0.5, "chat_summary": 0.5}


def sampling_for(purpose: str) -> dict[str, float]:
    """Extra sampling options for a purpose (a frequency penalty for free speech, else none)."""
    penalty = FREE_TEXT_PENALTY.get(purpose)
    return {"frequency_penalty": penalty} if penalty else {}


def no_repeat_of(schema: Any) -> tuple[str, ...] | None:
    """Texts an answer of ``schema`` may not say again: its ``no_repeat`` (a conversation line's
    earlier lines of the talk, agents/roles/conversation.py; () for an opener, which still may
    not say itself twice); None for any other schema."""
    texts = getattr(schema, "no_repeat", None)
    if not isinstance(texts, tuple):
        return None
    return tuple(t for t in texts if isinstance(t, str) and t.strip())


class LocalBackend:
    """The gateway backend for ``local`` / ``local:<name>``."""

    def __init__(self, name: str | None = None, *, grammar: bool = True):
        self.spec = resolve_local_name(name)  # unknown names fail here, before any call
        self.name = f"local:{self.spec.name}"
        self.grammar = grammar  # off only to measure what the grammar buys (agents.model_quality)

    def load(self) -> LoadedModel:
        """Load the weights now (the doctor and the quality check time this)."""
        return load_model(self.spec)

    async def generate(self, request: Request) -> Completion:
        try:
            await asyncio.to_thread(self.load)
        except LocalModelError as exc:
            raise Unreachable(f"{self.name} is not available", self.spec.install_hint,
                              retryable=False, detail=short(exc)) from exc
        except (ValueError, OSError) as exc:  # llama.cpp refused the file
            raise Unreachable(f"{self.name} does not load", self.spec.install_hint,
                              retryable=False, detail=short(exc)) from exc
        register_local_provider()
        litellm = load_litellm()
        key = str(next(_cancel_ids))
        _cancels[key] = threading.Event()
        try:
            response = await litellm.acompletion(
                model=f"{PROVIDER}/{self.spec.name}",
                messages=request.messages,
                temperature=request.temperature,
                max_tokens=request.max_tokens,
                seed=request.seed,
                grammar=grammar_for(request.schema) if self.grammar else None,
                townsfolk_cancel=key,
                townsfolk_sampling=sampling_for(request.purpose),
                townsfolk_no_repeat=no_repeat_of(request.schema),
                num_retries=0,
            )
        finally:
            # Done, failed, or given up on (the gateway's timeout cancels this task): in each
            # case the worker thread must stop decoding and let the next call have the model.
            _cancels.pop(key).set()
        usage = getattr(response, "usage", None)
        return Completion(
            text=response.choices[0].message.content or "",
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost=0.0,
        )
