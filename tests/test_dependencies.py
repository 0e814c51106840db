"""Declared dependencies equal imported ones: every third-party package the library imports is declared in
pyproject.toml (``dependencies``, or the ``notebook`` extra for the notebook helpers, which import it lazily), every
declared runtime dependency is imported by the library, and the tests and notebooks import nothing undeclared."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions

from jaxwb.sims.core.paths import REPO_ROOT

LIBRARY = ("theory", "models", "pallas_kernels", "sims")
PROVIDED = {"jaxlib": "jax"}  # installed and versioned by the declared distribution named here
OURS = {"jaxwb", "tests", "benchmarks", "__future__"}


def _declared() -> dict[str, set[str]]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]

    def names(reqs):
        return {re.split(r"[\s<>=!~\[;]", r, maxsplit=1)[0].lower().replace("_", "-") for r in reqs}

    return {
        "runtime": names(project["dependencies"]),
        **{k: names(v) for k, v in project.get("optional-dependencies", {}).items()},
    }


def _imported(folders) -> dict[str, set[str]]:
    """Third-party distributions imported by the files under ``folders`` -> the files importing each."""
    dists = packages_distributions()
    out: dict[str, set[str]] = {}
    for folder in folders:
        for path in (REPO_ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    mods = [node.module]
                else:
                    continue
                for mod in mods:
                    top = mod.split(".")[0]
                    if top in sys.stdlib_module_names or top in OURS:
                        continue
                    dist = PROVIDED.get(top) or (dists.get(top) or [top])[0]
                    out.setdefault(dist.lower().replace("_", "-"), set()).add(str(path.relative_to(REPO_ROOT)))
    return out


def test_library_imports_equal_declared_dependencies():
    declared = _declared()
    used = _imported(LIBRARY)
    allowed = declared["runtime"] | declared.get("notebook", set())
    undeclared = {d: sorted(f) for d, f in used.items() if d not in allowed}
    assert not undeclared, f"imported but not declared: {undeclared}"
    unused = declared["runtime"] - set(used)
    assert not unused, f"declared in dependencies but imported nowhere in {LIBRARY}: {sorted(unused)}"


def test_tests_and_notebooks_import_only_declared_packages():
    declared = set().union(*_declared().values())
    used = _imported(("tests", "notebooks"))
    undeclared = {d: sorted(f)[:3] for d, f in used.items() if d not in declared}
    assert not undeclared, f"imported but not declared in any extra: {undeclared}"
