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

The other pieces live in one module per concept and are imported from there:

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

import contextlib
import dataclasses
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import jax

from jaxwb.sims.core.claims import Claim, evaluate, format_claims
from jaxwb.sims.core.devices import describe, on_device
from jaxwb.sims.core.errors import WorkbenchError
from jaxwb.sims.core.outputs import run_result, write_outputs
from jaxwb.sims.core.paths import check_out_dir, default_out_dir
from jaxwb.sims.core.presets import get_config
from jaxwb.sims.core.profiling import Profile, format_profile, profiling
from jaxwb.sims.core.progress import Phases
from jaxwb.sims.core.weights import seed_model_cache

__all__ = ["Outcome", "execute"]


@dataclasses.dataclass
class Outcome:
    name: str
    preset: str
    results: Any
    claims: list[Claim]
    out_dir: Path | None
    wall_s: float
    profile: Profile | None = None

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.claims)

    @property
    def as_expected(self) -> bool:
        """Every claim's outcome equals its expectation (known disagreements fail, everything else passes)."""
        return all(c.as_expected for c in self.claims)


def execute(
    module: ModuleType,
    *,
    preset: str = "full",
    seed: int = 0,
    out_dir: str | Path | None = None,
    write: bool = True,
    verbose: bool = True,
    cfg=None,
    progress: bool | None = None,
    profile: bool = False,
    device: str | None = None,
) -> Outcome:
    """Run one result: ``run`` -> ``claims`` -> ``plot`` -> write ``out_dir`` atomically.

    ``out_dir`` defaults to :func:`default_out_dir` (``figures/<name>`` only for the full preset); it is checked
    before the run starts. ``cfg`` (a Config) replaces the preset's; ``preset`` is then only recorded in the
    manifest. ``progress`` (default: on a terminal) shows the phases with their elapsed time. ``profile`` splits
    each phase into tracing, lowering, compiling and the rest (``jaxwb.sims.core.profiling``), prints the table and
    keeps it in ``Outcome.profile``. ``device`` (``"cpu"``, ``"gpu"``, ``"tpu"``; default the best JAX sees)
    is where the run executes (:mod:`jaxwb.sims.core.devices`); the manifest records it, the run's CPU time and,
    with ``profile``, the run phase's profile.
    """
    if cfg is None:
        cfg = get_config(module, preset)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**32:
        raise WorkbenchError(f"seed must be an integer in [0, 2**32), got {seed!r}")
    out = None
    if write:
        out = check_out_dir(out_dir if out_dir is not None else default_out_dir(module.NAME, preset), module.NAME)
    with contextlib.ExitStack() as stack:
        dev = stack.enter_context(on_device(device))
        prof = stack.enter_context(profiling()) if profile else None
        outcome = _execute(module, cfg, preset, seed, out, write, verbose, progress, prof, dev)
    if prof is not None:
        outcome.profile = prof
        if verbose:
            print(format_profile(f"{module.NAME} [{preset}]", prof))
    return outcome


def _execute(module, cfg, preset, seed, out, write, verbose, progress, prof, dev) -> Outcome:
    phases = Phases(
        f"{module.NAME} [{preset}]",
        ("run", "claims", "plot", "write") if write else ("run", "claims"),
        enabled=progress,
        profile=prof,
    )
    try:
        key = jax.random.key(seed)
        seed_model_cache(module.NAME)  # the shipped trained models, so that the run loads instead of training
        phases.start("run")
        t0, c0 = time.perf_counter(), time.process_time()
        results = run_result(module, cfg, key=key)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        phases.done()
        record = {"device": describe(dev), "cpu_time_s": round(cpu, 3)}
        if prof is not None:
            record["profile_run"] = {k: round(v, 3) for k, v in prof.to_json().get("run", {}).items()}
        phases.start("claims")
        claims = evaluate(module, results, cfg)
        phases.done()
        if write:
            write_outputs(
                module,
                out,
                results=results,
                cfg=cfg,
                claims=claims,
                preset=preset,
                seed=seed,
                wall=wall,
                phases=phases,
                extra=record,
            )
    finally:
        phases.close()
    if verbose:
        print(format_claims(f"{module.NAME} [{preset}, seed {seed}, {wall:.1f}s]", claims))
        if out is not None:
            print(f"  wrote {out}")
    return Outcome(module.NAME, preset, results, claims, out, wall)
