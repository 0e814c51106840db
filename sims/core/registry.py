"""Discovery of results and benchmarks.

A *result* is any module or package ``sims/<name>`` (name not starting with "_"; the subpackages ``core`` and
``bench`` hold the machinery and the kernel benchmarks) that defines ``NAME``, ``PRESETS``, ``run``, ``plot`` and
``claims``. Adding a result is adding such a module: nothing to register by hand. A *benchmark* is ``bench`` in a
result module or a module ``sims/bench/<x>.py``.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
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
