"""Shared test configuration: hypothesis profiles, float64 scoping, the repo root."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import jax
import pytest
from hypothesis import HealthCheck, settings

REPO_ROOT = Path(__file__).resolve().parent.parent

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
