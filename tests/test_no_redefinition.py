"""No module defines the same top-level function or class twice. The later definition silently
wins at import, so an earlier copy is dead code that still reads as live (trajectory_judge.py
carried a stale second judge_offline and judge_with_model above the real ones, 2026-11-27)."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("world", "replays", "agents", "memory", "maps")


def _twice(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = Counter(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
    return [f"{path.relative_to(root)}: {name} defined {count} times" for name, count in names.items() if count > 1]


def test_no_module_defines_a_function_or_class_twice() -> None:
    found = [line for pkg in PACKAGES for path in sorted((ROOT / pkg).rglob("*.py")) for line in _twice(path)]
    assert not found, "\n".join(found)


def test_the_check_sees_a_second_definition(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text("def f():\n    return 1\n\n\nclass C:\n    pass\n\n\ndef f():\n    return 2\n", encoding="utf-8")
    assert _twice(module, tmp_path) == ["probe.py: f defined 2 times"]
