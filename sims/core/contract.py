"""The result contract as a type: every package ``jaxwb.sims.<name>`` is a :class:`Result`.

One template per result (``sims/<name>/``):

    __init__.py   the paper cited in the docstring; the contract's names imported from the files below
    config.py     NAME, TITLE, Config (a frozen dataclass), PRESETS = {"quick": Config(...), "full": Config(...)}
    run.py        run(cfg, *, key) -> results (a pytree of arrays)
    claims.py     claims(results, cfg) -> list[Claim]
    figures.py    plot(results, cfg) -> {figure name: matplotlib Figure}, one function per figure
    mutants.py    MUTANTS: plausible bugs, each of which some claim must catch (``workbench audit``)
    bench.py      optional: bench(quick) -> list[BenchRow] (``workbench bench <name>``)

A module is checked against :class:`Result` by a type checker (a module satisfies a Protocol whose members it
defines) and at run time by :func:`contract_problems` (the registry refuses a module that fails it).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

#: file of the template -> the names it defines
TEMPLATE: dict[str, tuple[str, ...]] = {
    "config": ("NAME", "TITLE", "Config", "PRESETS"),
    "run": ("run",),
    "claims": ("claims",),
    "figures": ("plot",),
    "mutants": ("MUTANTS",),
}
OPTIONAL: dict[str, tuple[str, ...]] = {"bench": ("bench",)}


@runtime_checkable
class Result(Protocol):
    """What ``workbench`` needs of a result package."""

    NAME: str
    TITLE: str
    Config: type
    PRESETS: Mapping[str, Any]
    MUTANTS: Sequence[Any]

    def run(self, cfg: Any, *, key: Any) -> Any: ...

    def plot(self, results: Any, cfg: Any) -> Mapping[str, Any]: ...

    def claims(self, results: Any, cfg: Any) -> Sequence[Any]: ...


def contract_problems(module: ModuleType) -> list[str]:
    """What keeps ``module`` from following the contract (empty when it does): missing names, a name defined
    elsewhere than its template file, signatures that differ, presets that are not Configs."""
    problems = []
    base = module.__name__
    for part, names in {**TEMPLATE, **OPTIONAL}.items():
        for n in names:
            if not hasattr(module, n):
                if part not in OPTIONAL:
                    problems.append(f"missing {n} (expected in {part}.py)")
                continue
            obj = getattr(module, n)
            home = getattr(obj, "__module__", None)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and home != f"{base}.{part}":
                problems.append(f"{n} is defined in {home}, not in {base}.{part}")
    if problems:
        return problems
    if module.NAME != base.rsplit(".", 1)[-1]:
        problems.append(f"NAME {module.NAME!r} differs from the package name")
    if set(module.PRESETS) < {"quick", "full"}:
        problems.append(f"PRESETS has {sorted(module.PRESETS)}, needs 'quick' and 'full'")
    if not all(isinstance(c, module.Config) for c in module.PRESETS.values()):
        problems.append("a preset is not an instance of Config")
    run = inspect.signature(module.run).parameters
    if list(run)[:1] != ["cfg"] or "key" not in run or run["key"].kind is not inspect.Parameter.KEYWORD_ONLY:
        problems.append(f"run must be run(cfg, *, key), got run{inspect.signature(module.run)}")
    for fn in ("plot", "claims"):
        params = list(inspect.signature(getattr(module, fn)).parameters)
        if params[:2] != ["results", "cfg"]:
            problems.append(f"{fn} must be {fn}(results, cfg), got {fn}{inspect.signature(getattr(module, fn))}")
    if not isinstance(module, Result):
        problems.append("does not satisfy jaxwb.sims.core.contract.Result")
    return problems
