"""The layers in docs/ARCHITECTURE.md hold: import-linter checks pyproject's contracts.

world (engine, runner, CLI) > replays | agents > memory > maps, with maps.contracts at the
floor importing nothing of the project. A new import that reaches up or sideways fails here,
in CI, with the offending line named.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("world", "replays", "agents", "memory", "maps")


def test_import_linter_contracts_are_kept() -> None:
    pytest.importorskip("importlinter.cli", reason="import-linter is a dev dependency (constraints.txt)")
    # in a process of its own: its logging set-up disables every logger already made (world.engine's)
    code = "import sys; from importlinter.cli import lint_imports; " \
           "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_contracts_module_imports_only_the_standard_library_and_pydantic() -> None:
    tree = ast.parse((REPO / "maps" / "contracts.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & set(PACKAGES), imported & set(PACKAGES)
    assert imported <= {"__future__", "re", "unicodedata", "datetime", "pathlib", "typing", "pydantic", "hashlib", "json", "zlib"}


def test_no_in_tree_import_is_hidden_behind_a_module_not_found_guard() -> None:
    """A guard around an import of our own code turns a broken layer into a silent feature loss."""
    offenders = []
    for pkg in PACKAGES:
        for path in (REPO / pkg).rglob("*.py"):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if not isinstance(node, ast.Try):
                    continue
                guards = [h for h in node.handlers if isinstance(h.type, ast.Name) and h.type.id in ("ModuleNotFoundError", "ImportError")]
                if not guards:
                    continue
                for stmt in ast.walk(ast.Module(body=node.body, type_ignores=[])):
                    mod = None
                    if isinstance(stmt, ast.ImportFrom) and stmt.module:
                        mod = stmt.module
                    elif isinstance(stmt, ast.Import):
                        mod = stmt.names[0].name
                    elif isinstance(stmt, ast.Call) and getattr(stmt.func, "attr", "") == "import_module" and stmt.args \
                            and isinstance(stmt.args[0], ast.Constant):
                        mod = str(stmt.args[0].value)
                    if mod and mod.split(".")[0] in PACKAGES:
                        offenders.append(f"{path.relative_to(REPO)}:{node.lineno} guards {mod}")
    assert not offenders, offenders


def test_only_the_run_file_speaks_sql() -> None:
    """memory/runfile.py owns every table of run.db; the LLM disk cache is a database of its own."""
    own_databases = {Path("memory/runfile.py"), Path("agents/llm/cache.py")}
    offenders = []
    for pkg in PACKAGES:
        for path in (REPO / pkg).rglob("*.py"):
            rel = path.relative_to(REPO)
            if rel in own_databases:
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if any(s in line for s in (".execute(", ".executemany(", ".executescript(", "CREATE TABLE", "sqlite3.connect(")):
                    offenders.append(f"{rel}:{n}: {line.strip()}")
    assert not offenders, offenders


def _type_checking_imports(tree: ast.Module) -> list[tuple[int, str, list[str]]]:
    found = []
    for node in ast.walk(tree):
        test = getattr(node, "test", None)
        if isinstance(node, ast.If) and (getattr(test, "id", None) == "TYPE_CHECKING" or getattr(test, "attr", None) == "TYPE_CHECKING"):
            found += [(s.lineno, s.module or "", [a.asname or a.name for a in s.names])
                      for s in node.body if isinstance(s, ast.ImportFrom)]
    return found


def _annotation_nodes(tree: ast.Module) -> set[int]:
    """ids of every node inside an annotation (parameters, returns, annotated assignments)."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            roots += [a.annotation for a in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs,
                                             node.args.vararg, node.args.kwarg] if a is not None and a.annotation]
            roots += [node.returns] if node.returns else []
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(n) for root in roots for n in ast.walk(root)}


def test_imports_left_out_of_the_layer_check_are_only_types() -> None:
    """pyproject sets exclude_type_checking_imports: an import under `if TYPE_CHECKING:` is no edge
    because it never runs. That holds only while the names it brings are used in annotations alone
    (a cognition step's `mind: "Resident"`); a use at run time would be a hidden edge (and a NameError)."""
    wrong = []
    for path in sorted(p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        guarded = {name: (line, module) for line, module, names in _type_checking_imports(tree) for name in names}
        if not guarded:
            continue
        in_annotations = _annotation_nodes(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in guarded and id(node) not in in_annotations:
                wrong.append(f"{path.relative_to(REPO)}:{node.lineno} uses {node.id} at run time "
                             f"(imported under TYPE_CHECKING at line {guarded[node.id][0]})")
    assert not wrong, "\n".join(wrong)
