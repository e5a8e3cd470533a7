"""docs/ARCHITECTURE.md stays true: every file its "where to change what" table names exists, and
every name it places in a file ("`BUILT_IN` in `world/commands.py`") is defined there. Moving a
module or renaming a registry without fixing the table fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "ARCHITECTURE.md"
PATH = re.compile(r"`((?:maps|world|agents|memory|replays|tests|docs)/[\w/.-]*|README\.md)`")
PLACED = re.compile(r"`(\w+)`(?:/`\w+`)? in `((?:maps|world|agents|memory|replays)/[\w/.-]+\.py)`")


def _table(title: str) -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| ---")][1:]


def _defined(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def test_the_change_table_has_the_rows_a_newcomer_needs() -> None:
    rows = " ".join(_table("Where to change what"))
    for change in ("injected command", "new role", "new judge", "model backend", "benchmark", "town format"):
        assert change in rows, f"no row for {change!r}"


def test_every_file_the_change_table_names_exists() -> None:
    missing = [f"{m}" for row in _table("Where to change what") for m in PATH.findall(row)
               if not (REPO / m).exists()]
    assert not missing, f"docs/ARCHITECTURE.md names files that are not there: {missing}"


def test_every_name_the_change_table_places_in_a_file_is_defined_there() -> None:
    wrong = []
    for row in _table("Where to change what"):
        for name, file in PLACED.findall(row):
            if (REPO / file).exists() and name not in _defined(REPO / file):
                wrong.append(f"{name} in {file}")
    assert not wrong, f"docs/ARCHITECTURE.md places names where they are not defined: {wrong}"


def test_the_tree_names_every_package_inside_agents() -> None:
    text = DOC.read_text(encoding="utf-8").split("```", 2)[1]
    packages = sorted(p.name for p in (REPO / "agents").iterdir() if (p / "__init__.py").exists())
    unnamed = [p for p in packages if f"{p}/" not in text]
    assert not unnamed, f"the tree in docs/ARCHITECTURE.md does not show agents/{unnamed}"
