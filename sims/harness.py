"""The harness every result runs through: Claim records, preset lookup, execution, and the output writer.

A result module ``sims/<name>.py`` provides (see ``shared/DESIGN.md``, "A result"):

    NAME: str                       # the result's name, equal to the module name
    TITLE: str                      # one line for ``workbench list`` and the README
    Config                          # a frozen dataclass
    PRESETS: {"quick": Config, "full": Config}
    run(cfg, *, key) -> results     # a pytree (dict) of arrays
    plot(results, cfg) -> {name: matplotlib Figure}
    claims(results, cfg) -> [Claim]
    bench(quick: bool) -> [BenchRow]   # optional: ``workbench bench <name>``

``execute(module, preset=..., seed=..., out_dir=...)`` runs it and writes ``figures/<name>/``:
``<fig>.png`` per figure, ``data.npz`` (the flattened results), ``claims.json`` and ``manifest.json``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
FIGURES_DIR = REPO_ROOT / "figures"
PRESET_NAMES = ("quick", "full")


class WorkbenchError(ValueError):
    """A user-facing error: the CLI prints its message on one line and exits non-zero."""


# ---------------------------------------------------------------------------------------------------------
# Claims
# ---------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Claim:
    """One sentence of the paper (or of theory) checked against the simulation.

    ``comparison`` says how ``measured`` is judged against ``predicted``:
      "rel"  |measured - predicted| <= tolerance * |predicted|
      "abs"  |measured - predicted| <= tolerance
      "le"   measured <= predicted + tolerance       (an upper bound)
      "ge"   measured >= predicted - tolerance       (a lower bound)
    A NaN or infinite measurement always fails.
    """

    statement: str
    predicted: float
    measured: float
    tolerance: float
    comparison: str = "rel"
    source: str = "paper"  # "paper" or "theory" (a consequence we derived), or "reconstruction"

    def __post_init__(self):
        if self.comparison not in ("rel", "abs", "le", "ge"):
            raise ValueError(f"comparison must be one of rel/abs/le/ge, got {self.comparison!r}")
        object.__setattr__(self, "predicted", float(self.predicted))
        object.__setattr__(self, "measured", float(self.measured))
        object.__setattr__(self, "tolerance", float(self.tolerance))

    @property
    def passed(self) -> bool:
        m, p, tol = self.measured, self.predicted, self.tolerance
        if not (math.isfinite(m) and math.isfinite(p)):
            return False
        if self.comparison == "rel":
            return abs(m - p) <= tol * abs(p)
        if self.comparison == "abs":
            return abs(m - p) <= tol
        if self.comparison == "le":
            return m <= p + tol
        return m >= p - tol

    @property
    def criterion(self) -> str:
        return {
            "rel": f"within {100 * self.tolerance:g}%",
            "abs": f"within +-{self.tolerance:g}",
            "le": f"<= predicted + {self.tolerance:g}",
            "ge": f">= predicted - {self.tolerance:g}",
        }[self.comparison]

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["passed"] = self.passed
        d["criterion"] = self.criterion
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Claim:
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in fields})


def format_claims(name: str, claims: Sequence[Claim]) -> str:
    """A plain-text table: status, statement, predicted, measured, criterion."""
    lines = [f"{name}: {sum(c.passed for c in claims)}/{len(claims)} claims pass"]
    width = min(80, max((len(c.statement) for c in claims), default=10))
    for c in claims:
        status = "PASS" if c.passed else "FAIL"
        stmt = c.statement if len(c.statement) <= width else c.statement[: width - 3] + "..."
        lines.append(f"  [{status}] {stmt:<{width}}  predicted {c.predicted:>11.5g}  measured "
                     f"{c.measured:>11.5g}  ({c.criterion})")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------
# Benchmarks
# ---------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class BenchRow:
    """One timing comparison: ``ours`` vs ``baseline`` seconds in the same run (ratio = baseline / ours)."""

    op: str
    ours: str
    baseline: str
    ours_s: float
    baseline_s: float
    note: str = ""

    @property
    def speedup(self) -> float:
        return self.baseline_s / self.ours_s if self.ours_s > 0 else float("inf")


def format_bench(rows: Sequence[BenchRow]) -> str:
    lines = [f"{'op':<28} {'ours':<26} {'baseline':<26} {'ours s':>10} {'base s':>10} {'speedup':>9}"]
    for r in rows:
        lines.append(f"{r.op:<28} {r.ours:<26} {r.baseline:<26} {r.ours_s:>10.4g} {r.baseline_s:>10.4g} "
                     f"{r.speedup:>8.1f}x" + (f"  {r.note}" if r.note else ""))
    return "\n".join(lines)


def time_call(fn, *args, repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn(*args)`` in seconds, blocking on JAX outputs; ``warmup`` calls first."""
    for _ in range(warmup):
        jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


# ---------------------------------------------------------------------------------------------------------
# Presets and execution
# ---------------------------------------------------------------------------------------------------------


def quick_from_env() -> bool:
    """True when ``WORKBENCH_QUICK`` is set to a non-empty, non-"0" value (CI, notebook tests)."""
    return os.environ.get("WORKBENCH_QUICK", "") not in ("", "0")


def get_config(module: ModuleType, preset: str, **overrides):
    """The module's preset ``Config`` with ``overrides`` applied (``dataclasses.replace``, so the Config's own
    ``__post_init__`` validation runs and raises ``ValueError`` naming a bad field)."""
    if preset not in module.PRESETS:
        raise WorkbenchError(f"unknown preset {preset!r} for {module.NAME}; choose from {sorted(module.PRESETS)}")
    cfg = module.PRESETS[preset]
    if not overrides:
        return cfg
    fields = {f.name for f in dataclasses.fields(cfg)}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise WorkbenchError(f"unknown config field(s) {unknown} for {module.NAME}; fields: {sorted(fields)}")
    return dataclasses.replace(cfg, **overrides)


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """Parse ``["lam=50", "speed_betas=(0.5, 0.9)"]`` into ``{"lam": 50, "speed_betas": (0.5, 0.9)}``.

    Values are Python literals (numbers, tuples, strings, True/False); anything else is kept as a string.
    """
    import ast

    out = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise WorkbenchError(f"--set expects FIELD=VALUE, got {item!r}")
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            value = text.strip()
        out[name.strip()] = tuple(value) if isinstance(value, list) else value
    return out


def _git_revision() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                             text=True, timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return (rev + ("-dirty" if dirty else "")) or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def flatten_results(results: Any) -> dict[str, np.ndarray]:
    """Flatten a results pytree to {"a/b/c": array} for ``np.savez`` (keys from the tree paths)."""
    flat = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(results)[0]:
        key = "/".join(str(getattr(p, "key", getattr(p, "idx", getattr(p, "name", p)))) for p in path)
        flat[key or "value"] = np.asarray(leaf)
    return flat


def _config_json(cfg) -> dict[str, Any]:
    def conv(x):
        if isinstance(x, (tuple, list)):
            return [conv(e) for e in x]
        if isinstance(x, (np.generic,)):
            return x.item()
        return x

    return {k: conv(v) for k, v in dataclasses.asdict(cfg).items()}


@dataclasses.dataclass
class Outcome:
    name: str
    preset: str
    results: Any
    claims: list[Claim]
    out_dir: Path | None
    wall_s: float

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.claims)


def execute(module: ModuleType, *, preset: str = "full", seed: int = 0, out_dir: str | Path | None = None,
            write: bool = True, verbose: bool = True, cfg=None) -> Outcome:
    """Run one result: ``run`` -> ``claims`` -> ``plot`` -> write ``out_dir`` (default ``figures/<name>``).

    ``cfg`` (a Config) replaces the preset's; ``preset`` is then only recorded in the manifest.
    """
    import matplotlib.pyplot as plt

    from sims import style

    if cfg is None:
        cfg = get_config(module, preset)
    if not isinstance(seed, int) or seed < 0:
        raise WorkbenchError(f"seed must be a non-negative integer, got {seed!r}")
    key = jax.random.key(seed)
    t0 = time.perf_counter()
    results = jax.block_until_ready(module.run(cfg, key=key))
    wall = time.perf_counter() - t0
    flat = flatten_results(results)
    nonfinite = [k for k, a in flat.items() if a.dtype.kind in "fc" and not np.all(np.isfinite(a))]
    claims = list(module.claims(results, cfg))
    out = None
    if write:
        out = Path(out_dir) if out_dir is not None else FIGURES_DIR / module.NAME
        out.mkdir(parents=True, exist_ok=True)
        with style.context():
            figs = module.plot(results, cfg)
            for fname, fig in figs.items():
                fig.savefig(out / f"{fname}.png")
                plt.close(fig)
        np.savez_compressed(out / "data.npz", **flat)
        (out / "claims.json").write_text(json.dumps([c.to_json() for c in claims], indent=2) + "\n")
        manifest = {
            "result": module.NAME,
            "title": module.TITLE,
            "preset": preset,
            "seed": seed,
            "config": _config_json(cfg),
            "git_revision": _git_revision(),
            "jax_version": jax.__version__,
            "python": platform.python_version(),
            "backend": jax.default_backend(),
            "device_count": jax.device_count(),
            "devices": sorted({d.device_kind for d in jax.devices()}),
            "wall_time_s": round(wall, 3),
            "figures": sorted(f"{k}.png" for k in figs),
            "nonfinite_arrays": nonfinite,
            "claims_passed": sum(c.passed for c in claims),
            "claims_total": len(claims),
        }
        (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    if verbose:
        print(format_claims(f"{module.NAME} [{preset}, seed {seed}, {wall:.1f}s]", claims))
        if nonfinite:
            print(f"  warning: non-finite values in {nonfinite}", file=sys.stderr)
        if out is not None:
            print(f"  wrote {out}")
    return Outcome(module.NAME, preset, results, claims, out, wall)


def load_claims(name: str, figures_dir: str | Path | None = None) -> list[Claim] | None:
    """Claims committed in ``figures/<name>/claims.json`` (None when that result has none yet)."""
    path = Path(figures_dir or FIGURES_DIR) / name / "claims.json"
    if not path.exists():
        return None
    return [Claim.from_json(d) for d in json.loads(path.read_text())]
