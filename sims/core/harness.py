"""The harness every result runs through: preset lookup, execution, and the output writer.

A result module ``sims/<name>.py`` provides (see ``shared/DESIGN.md``, "A result"):

    NAME: str                       # the result's name, equal to the module name
    TITLE: str                      # one line for ``workbench list`` and the README
    Config                          # a frozen dataclass
    PRESETS: {"quick": Config, "full": Config}
    run(cfg, *, key) -> results     # a pytree (dict) of arrays
    plot(results, cfg) -> {name: matplotlib Figure}
    claims(results, cfg) -> [Claim]
    MUTANTS: [Mutant]                  # plausible bugs each caught by a claim (``jaxwb.sims.core.audit``)
    bench(quick: bool) -> [BenchRow]   # optional: ``workbench bench <name>``

``execute(module, preset=..., seed=..., out_dir=...)`` runs it and writes ``<fig>.png`` per figure, ``data.npz``
(the flattened results), ``claims.json`` and ``manifest.json`` (with a content hash of the others) into
``default_out_dir(name, preset)``: ``figures/<name>/`` for the full preset, a git-ignored cache for the quick one.
The folder is written **atomically**: everything goes to a temporary folder beside the target, which then
replaces the target in one rename (``renameat2(RENAME_EXCHANGE)`` on Linux), so an interrupt at any moment leaves
the previous output byte-identical.

The pieces live in one module per concept and are re-exported here, so ``jaxwb.sims.core.harness`` stays the one
import of a result, the CLI and the tests:

* ``jaxwb.sims.core.presets``: ``PRESET_NAMES``, ``get_config``, ``parse_overrides``, ``quick_from_env``
* ``jaxwb.sims.core.paths``: ``REPO_ROOT``, ``FIGURES_DIR``, ``cache_dir``, ``default_out_dir``, ``check_out_dir``,
  ``enable_compilation_cache``
* ``jaxwb.sims.core.outputs``: the results pytree <-> ``data.npz``, the atomic writer (``write_outputs``,
  ``publish_dir``, ``atomic_write_text``), ``verify_outputs`` and the loaders (``load_results``, ``load_claims``)
* ``jaxwb.sims.core.progress``: ``Phases``, ``progress_enabled``;
  ``jaxwb.sims.core.timing``: ``BenchRow``, ``time_call``
* ``jaxwb.sims.core.claims``: ``Claim`` and its formatting; ``jaxwb.sims.core.errors``: ``WorkbenchError``
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import jax

# The harness is the one import for a result and the CLI; its pieces live in their own modules and are
# re-exported here (``from sims.core.harness import Claim, BenchRow, execute, ...`` keeps working).
from jaxwb.sims.core.claims import Claim, format_claims, format_counts, kind_counts, mean_ci
from jaxwb.sims.core.errors import WorkbenchError
from jaxwb.sims.core.outputs import (
    HASHED,
    atomic_write_text,
    config_from_manifest,
    flatten_results,
    load_claims,
    load_manifest,
    load_results,
    publish_dir,
    remove_stale_temp,
    results_layout,
    sha256_file,
    unflatten_results,
    verify_outputs,
    write_outputs,
)
from jaxwb.sims.core.paths import (
    FIGURES_DIR,
    REPO_ROOT,
    cache_dir,
    check_out_dir,
    default_out_dir,
    enable_compilation_cache,
)
from jaxwb.sims.core.presets import PRESET_NAMES, get_config, parse_overrides, quick_from_env
from jaxwb.sims.core.progress import Phases, progress_enabled
from jaxwb.sims.core.timing import BenchRow, format_bench, time_call

__all__ = [
    "FIGURES_DIR", "HASHED", "PRESET_NAMES", "REPO_ROOT", "BenchRow", "Claim", "Outcome", "Phases", "WorkbenchError",
    "atomic_write_text", "cache_dir", "check_out_dir", "config_from_manifest", "default_out_dir",
    "enable_compilation_cache", "execute", "flatten_results", "format_bench", "format_claims", "format_counts",
    "get_config", "kind_counts", "load_claims", "load_manifest", "load_results", "mean_ci", "parse_overrides",
    "progress_enabled", "publish_dir", "quick_from_env", "remove_stale_temp", "results_layout", "sha256_file",
    "time_call", "unflatten_results", "verify_outputs", "write_outputs",
]


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
            write: bool = True, verbose: bool = True, cfg=None, progress: bool | None = None) -> Outcome:
    """Run one result: ``run`` -> ``claims`` -> ``plot`` -> write ``out_dir`` atomically.

    ``out_dir`` defaults to :func:`default_out_dir` (``figures/<name>`` only for the full preset); it is checked
    before the run starts. ``cfg`` (a Config) replaces the preset's; ``preset`` is then only recorded in the
    manifest. ``progress`` (default: on a terminal) shows the phases with their elapsed time.
    """
    if cfg is None:
        cfg = get_config(module, preset)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**32:
        raise WorkbenchError(f"seed must be an integer in [0, 2**32), got {seed!r}")
    out = None
    if write:
        out = check_out_dir(out_dir if out_dir is not None else default_out_dir(module.NAME, preset))
    phases = Phases(f"{module.NAME} [{preset}]", ("run", "claims", "plot", "write") if write else ("run", "claims"),
                    enabled=progress)
    try:
        key = jax.random.key(seed)
        phases.start("run")
        t0 = time.perf_counter()
        results = jax.block_until_ready(module.run(cfg, key=key))
        wall = time.perf_counter() - t0
        phases.done()
        phases.start("claims")
        claims = list(module.claims(results, cfg))
        phases.done()
        if write:
            write_outputs(module, out, results=results, cfg=cfg, claims=claims, preset=preset, seed=seed,
                          wall=wall, phases=phases)
    finally:
        phases.close()
    if verbose:
        print(format_claims(f"{module.NAME} [{preset}, seed {seed}, {wall:.1f}s]", claims))
        if out is not None:
            print(f"  wrote {out}")
    return Outcome(module.NAME, preset, results, claims, out, wall)
