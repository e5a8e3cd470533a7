"""No function in the project packages is over 50 lines, except a shrinking allow-list.

Long functions hide several jobs behind one name and are hard to test piece by piece
(issue 10). The allow-list names the long functions that are still being split; it may only
shrink: a new long function fails, and so does an entry that is no longer long (remove it).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("world", "agents", "memory", "maps", "replays")
MAX_LINES = 50

# "path::Qualified.name" of the functions still over MAX_LINES. Only remove entries.
ALLOWED: set[str] = set()


def long_functions(source: str, path: str, limit: int = MAX_LINES) -> dict[str, int]:
    """``path::qualname -> lines`` of every function (nested and methods too) longer than ``limit``.

    Lines run from the ``def`` (decorators excluded) to the function's last line."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    lines = (child.end_lineno or child.lineno) - child.lineno + 1
                    if lines > limit:
                        found[f"{path}::{name}"] = lines
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def project_long_functions() -> dict[str, int]:
    found: dict[str, int] = {}
    for package in PACKAGES:
        for file in sorted((ROOT / package).rglob("*.py")):
            rel = file.relative_to(ROOT).as_posix()
            found.update(long_functions(file.read_text(encoding="utf-8"), rel))
    return found


def test_the_check_finds_long_functions_methods_and_nested_ones() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))  # def line + 50 = 51 lines
    short = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES - 1))  # exactly 50 lines
    source = (f"def long():\n{body}\n\ndef short():\n{short}\n\n"
              f"class C:\n    def method(self):\n    {body.replace(chr(10), chr(10) + '    ')}\n\n"
              f"def outer():\n    def inner():\n    {body.replace(chr(10), chr(10) + '    ')}\n    return inner\n")
    found = long_functions(source, "m.py")
    assert found.keys() == {"m.py::long", "m.py::C.method", "m.py::outer", "m.py::outer.inner"}
    assert found["m.py::long"] == MAX_LINES + 1


def test_no_new_function_is_over_50_lines() -> None:
    new = {name: lines for name, lines in project_long_functions().items() if name not in ALLOWED}
    assert not new, ("functions over 50 lines (split them into small named functions): "
                     + ", ".join(f"{name} ({lines})" for name, lines in sorted(new.items())))


def test_the_allow_list_only_names_functions_still_too_long() -> None:
    stale = ALLOWED - project_long_functions().keys()
    assert not stale, ("no longer over 50 lines (or gone): remove from ALLOWED in "
                       f"tests/test_function_length.py: {', '.join(sorted(stale))}")
