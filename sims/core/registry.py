"""Discovery of results and benchmarks.

A *result* is any module or package ``sims/<name>`` (name not starting with "_"; the subpackages ``core`` and
``bench`` hold the machinery and the kernel benchmarks) that defines ``NAME``, ``PRESETS``, ``run``, ``plot`` and
``claims``. Adding a result is adding such a module: nothing to register by hand. A *benchmark* is ``bench`` in a
result module or a module ``sims/bench/<x>.py``.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from jaxwb import sims
from jaxwb.sims.core.contract import contract_problems
from jaxwb.sims.core.errors import WorkbenchError

INFRASTRUCTURE = {"core", "bench"}


def _candidate_names() -> list[str]:
    return sorted(
        m.name
        for m in pkgutil.iter_modules(sims.__path__)
        if not m.name.startswith("_") and m.name not in INFRASTRUCTURE
    )


def result_names() -> list[str]:
    """Names of every result module, sorted."""
    return _candidate_names()


def _unknown(kind: str, name: str, known: list[str]) -> WorkbenchError:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return WorkbenchError(f"unknown {kind} {name!r}{hint}; known: {', '.join(known) or 'none'}")


def get(name: str) -> ModuleType:
    """The result module ``sims.<name>``, checked against the contract."""
    names = result_names()
    if name not in names:
        raise _unknown("result", name, names)
    module = importlib.import_module(f"jaxwb.sims.{name}")
    problems = contract_problems(module)
    if problems:
        raise WorkbenchError(f"sims/{name} does not follow the result contract: {'; '.join(problems)}")
    return module


@contextlib.contextmanager
def loaded_result(name: str, root: str | Path) -> Iterator[ModuleType]:
    """The result package ``root/sims/<name>``, outside this repository's ``sims/`` (``workbench new`` wrote it
    into another tree, as the scaffold's test does), imported as ``jaxwb.sims.<name>`` for the ``with`` block
    and checked against the contract; its modules leave ``sys.modules`` when the block ends. A name of this
    repository's ``sims/`` or one already imported is refused: it would be shadowed."""
    folder = Path(root) / "sims" / name
    full = f"{sims.__name__}.{name}"
    if name in _candidate_names() or name in INFRASTRUCTURE or full in sys.modules:
        raise WorkbenchError(f"cannot load {folder} as {full}: that name is taken in this process's jaxwb.sims")
    if not (folder / "__init__.py").is_file():
        raise WorkbenchError(f"no result package at {folder} (no __init__.py)")
    init = folder / "__init__.py"
    spec = importlib.util.spec_from_file_location(full, init, submodule_search_locations=[str(folder)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    try:
        spec.loader.exec_module(module)
        setattr(sims, name, module)  # ``from jaxwb.sims import <name>`` works inside the block
        problems = contract_problems(module)
        if problems:
            raise WorkbenchError(f"{folder} does not follow the result contract: {'; '.join(problems)}")
        yield module
    finally:
        for key in [k for k in sys.modules if k == full or k.startswith(f"{full}.")]:
            del sys.modules[key]
        if getattr(sims, name, None) is module:
            delattr(sims, name)


def bench_names() -> list[str]:
    """Names accepted by ``workbench bench``: results with a ``bench`` and the ``sims/bench/<x>.py`` modules."""
    from jaxwb.sims import bench as bench_pkg

    names = [m.name for m in pkgutil.iter_modules(bench_pkg.__path__) if not m.name.startswith("_")]
    for n in _candidate_names():
        if hasattr(importlib.import_module(f"jaxwb.sims.{n}"), "bench"):
            names.append(n)
    return sorted(set(names))


def get_bench(name: str):
    """The ``bench(quick: bool) -> [BenchRow]`` function registered under ``name``."""
    from jaxwb.sims import bench as bench_pkg

    if name in {m.name for m in pkgutil.iter_modules(bench_pkg.__path__) if not m.name.startswith("_")}:
        return importlib.import_module(f"jaxwb.sims.bench.{name}").bench
    if name in _candidate_names():
        module = importlib.import_module(f"jaxwb.sims.{name}")
        if hasattr(module, "bench"):
            return module.bench
    raise _unknown("benchmark", name, bench_names())
