"""Mutation audit: each result proves that its claims can fail.

A result declares ``MUTANTS: list[Mutant]`` beside its claims: plausible bugs a developer could make (a constant
off by 10%, a missing factor, a dropped correction step, an off-by-one). A mutant is applied by *patching* the
function (or constant) it targets for the duration of one run, never by editing files::

    MUTANTS = [
        Mutant("hb_boundary_missing_1+beta", "jaxwb.theory.river_valley:hb_lr_boundary",
               lambda f: lambda lam, beta: f(lam, beta) / (1 + beta),
               "the heavy-ball stability edge without its (1+beta) factor"),
    ]

``target`` is ``"module.path:attribute"`` (dotted attributes allowed: ``"mod:Class.method"``); ``mutate``
receives the original object and returns the replacement. Every module of the project that bound the original
object by ``from ... import`` is patched too, so a mutant reaches every caller. JAX's compilation caches are
cleared around each run, so a function jitted in the clean run is traced again with the mutant in place.

``workbench audit [NAME ...]`` runs each result's quick preset once clean and once under each mutant: a mutant is
*caught* when a claim that passed clean fails (or the run raises) under it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from jaxwb.sims.core.claims import evaluate
from jaxwb.sims.core.outputs import run_result

PROJECT_PACKAGES = ("jaxwb.",)


@dataclasses.dataclass(frozen=True)
class Mutant:
    """A plausible bug: ``target`` (``"module:attr"``) replaced by ``mutate(original)`` during a run."""

    name: str
    target: str
    mutate: Callable[[Any], Any]
    description: str

    def __post_init__(self):
        if ":" not in self.target:
            raise ValueError(f"Mutant target must be 'module.path:attribute', got {self.target!r}")


def _resolve(target: str) -> tuple[Any, str, Any]:
    module_name, _, attr_path = target.partition(":")
    owner: Any = importlib.import_module(module_name)
    *parents, attr = attr_path.split(".")
    for p in parents:
        owner = getattr(owner, p)
    if not hasattr(owner, attr):
        raise AttributeError(f"mutant target {target!r}: {owner!r} has no attribute {attr!r}")
    return owner, attr, getattr(owner, attr)


def _clear_caches() -> None:
    import jax

    jax.clear_caches()
    for mod in list(sys.modules.values()):
        if mod is None or not getattr(mod, "__name__", "").startswith(PROJECT_PACKAGES):
            continue
        for value in list(vars(mod).values()):
            clear = getattr(value, "cache_clear", None)
            if callable(clear) and getattr(value, "__module__", "") == mod.__name__:
                clear()


@contextlib.contextmanager
def applied(mutant: Mutant) -> Iterator[None]:
    """Patch ``mutant.target`` (and every project-module alias of the same object) for the ``with`` block."""
    owner, attr, original = _resolve(mutant.target)
    replacement = mutant.mutate(original)
    patched: list[tuple[Any, str, Any]] = [(owner, attr, original)]
    for mod in list(sys.modules.values()):
        if mod is None or mod is owner or not getattr(mod, "__name__", "").startswith(PROJECT_PACKAGES):
            continue
        for name, value in list(vars(mod).items()):
            if value is original and not isinstance(original, (int, float, bool, str, type(None))):
                patched.append((mod, name, value))
    _clear_caches()
    try:
        for obj, name, _ in patched:
            setattr(obj, name, replacement)
        yield
    finally:
        for obj, name, value in patched:
            setattr(obj, name, value)
        _clear_caches()


@dataclasses.dataclass
class MutantOutcome:
    result: str
    mutant: str
    description: str
    failed_claims: list[str]
    error: str | None
    wall_s: float

    @property
    def caught(self) -> bool:
        return bool(self.failed_claims) or self.error is not None

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "caught": self.caught}


def claims_of_run(module: ModuleType, cfg, *, seed: int = 0):
    """Claims of one run of ``module`` under ``cfg`` (no output written)."""
    import jax

    results = run_result(module, cfg, key=jax.random.key(seed))
    return evaluate(module, results, cfg)


def newly_failed(claims: Sequence[Any], clean: Sequence[Any]) -> list[str]:
    """Statements of the claims that pass in the ``clean`` run and fail in ``claims``. Matched by position when
    both runs make the same number of claims (a statement may quote a number the mutant changed, and a catch
    must not hide behind the changed text), else by statement."""
    if len(claims) == len(clean):
        return [c.statement for c, k in zip(claims, clean, strict=True) if k.passed and not c.passed]
    passed = {k.statement for k in clean if k.passed}
    return [c.statement for c in claims if not c.passed and c.statement in passed]


def audit_mutant(
    module: ModuleType,
    mutant: Mutant,
    cfg,
    *,
    clean: Sequence[Any] | None = None,
    seed: int = 0,
) -> MutantOutcome:
    """Run ``module`` under ``mutant``; the failed claims are those that passed in the ``clean`` run's claims
    (:func:`newly_failed`), or, without a clean run, those expected to pass (a claim expected to fail fails in the
    clean run too, so its failure catches nothing)."""
    t0 = time.perf_counter()
    _resolve(mutant.target)  # a target that does not exist is a broken mutant, never "caught" by the error
    error = None
    failed: list[str] = []
    try:
        with applied(mutant):
            claims = claims_of_run(module, cfg, seed=seed)
        if clean is not None:
            failed = newly_failed(claims, clean)
        else:
            # without a clean run: the claims expected to pass (one expected to fail fails in the clean run too)
            failed = [c.statement for c in claims if not c.passed and c.expected == "pass"]
    except Exception as err:
        error = f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"
    return MutantOutcome(
        module.NAME, mutant.name, mutant.description, failed, error, round(time.perf_counter() - t0, 2)
    )


def audit_result(module: ModuleType, *, preset: str = "quick", seed: int = 0, verbose: bool = True) -> dict[str, Any]:
    """Clean run + one run per mutant of ``module``; a JSON-able summary."""
    from jaxwb.sims.core.presets import get_config

    cfg = get_config(module, preset)
    mutants: Sequence[Mutant] = getattr(module, "MUTANTS", ())
    t0 = time.perf_counter()
    clean = claims_of_run(module, cfg, seed=seed)
    clean_passed = {c.statement for c in clean if c.passed}
    unexpected = [c.statement for c in clean if not c.as_expected]
    summary: dict[str, Any] = {
        "result": module.NAME,
        "preset": preset,
        "seed": seed,
        "clean_passed": len(clean_passed),
        "clean_total": len(clean),
        "clean_failed": [c.statement for c in clean if not c.passed],
        "clean_unexpected": unexpected,
        "clean_wall_s": round(time.perf_counter() - t0, 2),
        "mutants": [],
    }
    if unexpected:  # a clean run that already fails unexpectedly cannot tell a mutant from the noise: no verdict
        summary["refused"] = f"the clean {preset} run fails {len(unexpected)} claim(s) not expected to fail"
        if verbose:
            print(f"  {module.NAME:<18} refused: {summary['refused']}: {unexpected[:3]}", flush=True)
        return summary
    for m in mutants:
        out = audit_mutant(module, m, cfg, clean=clean, seed=seed)
        summary["mutants"].append(out.to_json())
        if verbose:
            what = out.error or f"{len(out.failed_claims)} claim(s) fail"
            print(f"  {module.NAME:<18} {m.name:<36} {'CAUGHT' if out.caught else 'MISSED'}  {what}", flush=True)
    return summary


def format_audit_table(summaries: Sequence[dict[str, Any]]) -> str:
    """A markdown table: result, mutant, caught, which claims failed."""
    lines = ["| result | mutant | what it breaks | caught by |", "| --- | --- | --- | --- |"]
    for s in summaries:
        if s.get("refused"):
            lines.append(f"| {s['result']} | *(not judged: {s['refused']})* | | |")
            continue
        if not s["mutants"]:
            lines.append(f"| {s['result']} | *(no mutants declared)* | | |")
        for m in s["mutants"]:
            if m["error"]:
                by = f"run raises ({m['error'][:60]})"
            elif m["failed_claims"]:
                first = m["failed_claims"][0]
                first = first if len(first) <= 70 else first[:67] + "..."
                more = f" (+{len(m['failed_claims']) - 1} more)" if len(m["failed_claims"]) > 1 else ""
                by = f"{first}{more}"
            else:
                by = "**MISSED**"
            lines.append(f"| {s['result']} | `{m['mutant']}` | {m['description']} | {by} |")
    return "\n".join(lines)


def write_audit(summaries: Sequence[dict[str, Any]], figures_dir: Path) -> None:
    """Write ``figures/audit/<result>.json`` per summary, then rebuild ``figures/audit.json`` from every per-result
    file there (so audits of different results never overwrite each other). The docs page of the audit renders
    its table from these files (``format_audit_table``)."""
    from jaxwb.sims.core.outputs import atomic_write_text

    folder = figures_dir / "audit"
    folder.mkdir(parents=True, exist_ok=True)
    for s in summaries:
        atomic_write_text(folder / f"{s['result']}.json", json.dumps(s, indent=2) + "\n")
    collect(figures_dir)


def collect(figures_dir: Path) -> list[dict[str, Any]]:
    """Rebuild ``figures/audit.json`` from ``figures/audit/*.json``."""
    from jaxwb.sims.core.outputs import atomic_write_text

    merged = [json.loads(f.read_text()) for f in sorted((figures_dir / "audit").glob("*.json"))]
    atomic_write_text(figures_dir / "audit.json", json.dumps(merged, indent=2) + "\n")
    return merged
