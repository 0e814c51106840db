"""One template per result (``jaxwb.sims.core.contract``), and the code-base rules that keep it readable: no
import cycles, no private name imported across modules, no function longer than ~120 lines."""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

import pytest

from jaxwb.sims.core import contract, registry
from jaxwb.sims.core.paths import REPO_ROOT

PACKAGES = ("theory", "models", "pallas_kernels", "sims")
MAX_FUNCTION_LINES = 120


@pytest.mark.parametrize("name", registry.result_names())
def test_every_result_follows_the_template(name):
    folder = REPO_ROOT / "sims" / name
    assert folder.is_dir(), f"sims/{name} must be a package"
    for part in contract.TEMPLATE:
        assert (folder / f"{part}.py").is_file(), f"sims/{name}/{part}.py is missing"
    module = importlib.import_module(f"jaxwb.sims.{name}")
    assert contract.contract_problems(module) == []
    # the committed outputs were made by committed code: their manifest names a clean revision
    revision = json.loads((REPO_ROOT / "figures" / name / "manifest.json").read_text())["git_revision"]
    assert not revision.endswith("-dirty"), f"figures/{name} was made by uncommitted code ({revision})"


def _sources():
    for pkg in PACKAGES:
        yield from sorted((REPO_ROOT / pkg).rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return "jaxwb." + ".".join(parts)


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")[: -node.level] if not module.endswith("__init__") else module.split(".")
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path: Path, *, top_level_only: bool):
    """(imported module, imported names) of a file; ``top_level_only`` skips imports inside functions."""
    tree = ast.parse(path.read_text(), str(path))
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            yield _resolve(_module_name(path), node), [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, []
        elif top_level_only and isinstance(node, (ast.If, ast.Try)):
            for sub in ast.walk(node):
                if isinstance(sub, ast.ImportFrom):
                    yield _resolve(_module_name(path), sub), [a.name for a in sub.names]


def test_no_private_name_is_imported_across_modules():
    bad = []
    for path in _sources():
        for module, names in _imports(path, top_level_only=False):
            if not module.startswith("jaxwb."):
                continue
            if any(p.startswith("_") for p in module.split(".")):
                bad.append(f"{path.relative_to(REPO_ROOT)}: imports the private module {module}")
            bad += [f"{path.relative_to(REPO_ROOT)}: imports {module}.{n}" for n in names if n.startswith("_")]
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    """Between the modules of the package, counting imports inside functions too (a cycle hidden in a function
    body is still a cycle a reader has to untangle)."""
    modules = {_module_name(p): p for p in _sources()}
    graph = {}
    for name, path in modules.items():
        deps = set()
        for module, names in _imports(path, top_level_only=False):
            # ``from pkg import sub`` depends on the submodule; ``from pkg import attr`` on pkg's __init__
            subs = [f"{module}.{n}" for n in names if f"{module}.{n}" in modules]
            targets = subs if subs and len(subs) == len(names) else [module, *subs]
            deps |= {t for t in targets if t in modules and t != name}
        graph[name] = deps
    cycles, state = [], {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for dep in graph[node]:
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep) :] + [dep])
            elif dep not in state:
                visit(dep, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_no_function_is_longer_than_120_lines():
    long = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno} {node.name}: {n} lines")
    assert not long, "\n".join(long)
