"""Shared test configuration: hypothesis profiles, float64 scoping, the repo root."""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

# Compile fast. The suite is compile-bound: each program runs once or a few times, on small inputs, and over half of
# the tests' time is XLA compiling. XLA's CPU backend without its LLVM optimization passes compiles about twice as
# fast (distillation's quick run: 61 -> 26 s compiling, 87 -> 59 s in all; every claim's outcome the same, measured
# values within float rounding). The operations computed are the same; only the machine code is less optimized.
# Set before JAX starts its backend, so every test, CLI subprocess and notebook kernel of the run inherits it;
# appended to the user's XLA_FLAGS. WORKBENCH_TEST_FAST_COMPILE=0 compiles as a normal run does.
FAST_COMPILE_XLA_FLAGS = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
# the user's flags, for subprocesses that compile as a run does (an xdist worker inherits them with ours appended)
USER_XLA_FLAGS = os.environ.get("XLA_FLAGS", "").replace(FAST_COMPILE_XLA_FLAGS, "").strip()
if os.environ.get("WORKBENCH_TEST_FAST_COMPILE", "1") != "0":
    os.environ["XLA_FLAGS"] = f"{USER_XLA_FLAGS} {FAST_COMPILE_XLA_FLAGS}".strip()

import jax  # noqa: E402  (after XLA_FLAGS)
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from jaxwb.sims.core.paths import enable_compilation_cache  # noqa: E402
from jaxwb.sims.core.profiling import CACHE_HIT, DURATIONS  # noqa: E402
from jaxwb.sims.core.weights import RESULTS, seed_model_cache  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent

# One persistent XLA compilation cache for the whole run (``.cache/workbench/jax``, git-ignored): the xdist workers,
# the CLI subprocesses and the notebook kernels share it, so a result's mutant run in tests/sims/test_audit.py
# recompiles only what its mutant changes, and a second local run of the suite skips most compile time (keeping
# every compilation, however short, measured within the runs' spread: docs/measurements.md). WORKBENCH_JAX_CACHE=0
# turns it off.
_JAX_CACHE = enable_compilation_cache()
if _JAX_CACHE is not None:
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(_JAX_CACHE)
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0.1"
    os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"

# The shipped trained models (jaxwb.sims.core.weights) go into the model cache before any test can train one, so the
# tests load the models the committed outputs were made with instead of training them again under the fast-compile
# flags above (which change trained weights in their last bits).
for _result in RESULTS:
    seed_model_cache(_result)

# CI: few, derandomized examples (reproducible, fast); dev: more exploration. deadline=None everywhere (jit).
# function-scoped fixtures are fine here: `x64` is a context that every example may share.
_SUPPRESS = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
settings.register_profile("ci", max_examples=15, deadline=None, derandomize=True, suppress_health_check=_SUPPRESS)
settings.register_profile("dev", max_examples=40, deadline=None, suppress_health_check=_SUPPRESS)
# The README command is deterministic with or without CI set; HYPOTHESIS_PROFILE=dev explores (opt-in).
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@contextlib.contextmanager
def float64():
    """Scoped float64 (``jax.enable_x64`` is not flipped globally mid-run)."""
    with jax.enable_x64(True):
        yield


@pytest.fixture
def x64():
    with float64():
        yield


@pytest.fixture
def run_compile_env() -> dict[str, str]:
    """The environment for a subprocess that must compile as a `workbench` run does: this run's, with the user's
    XLA_FLAGS instead of the suite's fast-compile ones."""
    return {**os.environ, "XLA_FLAGS": USER_XLA_FLAGS}


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


# Per-test compile profile, off by default: WORKBENCH_TEST_COMPILES=FILE appends one JSON line per test to FILE
# (nodeid, wall seconds, programs compiled or loaded ("programs", of which "cache_hits" came from the persistent
# cache) and the seconds tracing, lowering and compiling them). It counts the jax.monitoring events that
# `workbench run --profile` reads (jaxwb.sims.core.profiling), in the test's own process only: a CLI subprocess
# or a notebook kernel is not counted.
_COMPILE_LOG = os.environ.get("WORKBENCH_TEST_COMPILES", "")
_COMPILE_COUNTS: dict[str, float] = {}


def _count_duration(event: str, duration: float, **_) -> None:
    field = DURATIONS.get(event)
    if field is not None:
        _COMPILE_COUNTS[field] = _COMPILE_COUNTS.get(field, 0.0) + duration
        if field == "compile_s":
            _COMPILE_COUNTS["programs"] = _COMPILE_COUNTS.get("programs", 0) + 1


def _count_event(event: str, **_) -> None:
    if event == CACHE_HIT:
        _COMPILE_COUNTS["cache_hits"] = _COMPILE_COUNTS.get("cache_hits", 0) + 1


if _COMPILE_LOG:
    jax.monitoring.register_event_duration_secs_listener(_count_duration)
    jax.monitoring.register_event_listener(_count_event)


@pytest.fixture(autouse=True)
def compile_profile(request):
    """With WORKBENCH_TEST_COMPILES=FILE, one JSON line per test appended to FILE: what it compiled, and how long."""
    if not _COMPILE_LOG:
        yield
        return
    _COMPILE_COUNTS.clear()
    t0 = time.perf_counter()
    yield
    row = {"test": request.node.nodeid, "wall_s": round(time.perf_counter() - t0, 2)}
    row.update({k: round(v, 2) for k, v in sorted(_COMPILE_COUNTS.items())})
    with open(_COMPILE_LOG, "a") as f:
        f.write(json.dumps(row) + "\n")


def _is_default_audit(item) -> bool:
    return (
        item.path.name == "test_audit.py"
        and getattr(item, "originalname", "") == "test_mutant_is_caught"
        and item.get_closest_marker("mutation") is None
    )


def _is_quick_run(item) -> bool:
    return (
        item.path.parent.name == "sims"
        and item.path.name.startswith("test_")
        and getattr(item, "originalname", item.name).startswith(("test_quick_preset", "test_smoke_run"))
    )


SLOW_LIST = REPO_ROOT / "tests" / "slow_tests.txt"


def slow_node_ids() -> set[str]:
    """The node ids listed in ``tests/slow_tests.txt`` (comments and blank lines skipped)."""
    lines = SLOW_LIST.read_text().splitlines()
    return {ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")}


@pytest.hookimpl(tryfirst=True)  # before pytest's own `-m` deselection reads the markers
def pytest_collection_modifyitems(session, config, items):
    """Mark the tests listed in ``tests/slow_tests.txt`` ``slow``; then order: every result's quick-preset or smoke run
    first, the default audit mutants last, the rest between.

    Each audit mutant re-runs its result's quick preset with one function patched; the audit clears JAX's
    in-memory caches around the patch, but the persistent compilation cache (shared by the xdist workers) still
    holds every program the mutant leaves unchanged, once the clean quick run has compiled it. Run cold and alone,
    interpolation's default mutant took 52.6 s; right after its clean quick run, 30.5 s (fresh clone, CI=true:
    tests 583 -> 539 s). Only the order changes: every test still runs."""
    slow = slow_node_ids()
    for it in items:
        if it.nodeid in slow:
            it.add_marker(pytest.mark.slow)
    if config.args_source == pytest.Config.ArgsSource.TESTPATHS:  # the whole suite collected: no stale entry
        stale = sorted(slow - {it.nodeid for it in items})
        if stale:
            raise pytest.UsageError(f"tests/slow_tests.txt names {len(stale)} tests that do not exist: {stale[:5]}")
    quick = [it for it in items if _is_quick_run(it)]
    audit = [it for it in items if _is_default_audit(it)]
    moved = {id(it) for it in quick + audit}
    items[:] = quick + [it for it in items if id(it) not in moved] + audit
