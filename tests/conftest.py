"""Shared test configuration: hypothesis profiles, float64 scoping, the repo root."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import jax
import pytest
from hypothesis import HealthCheck, settings

from sims.core.harness import enable_compilation_cache

REPO_ROOT = Path(__file__).resolve().parent.parent

# One persistent XLA compilation cache for the whole run (``.cache/workbench/jax``, git-ignored): the xdist workers,
# the CLI subprocesses and the notebook kernels share it, so a result's mutant run in tests/sims/test_audit.py
# recompiles only what its mutant changes, and a second local run of the suite skips most compile time.
# WORKBENCH_JAX_CACHE=0 turns it off.
_JAX_CACHE = enable_compilation_cache()
if _JAX_CACHE is not None:
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(_JAX_CACHE)
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0.1"
    os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"

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


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT
