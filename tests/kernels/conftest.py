"""The one parametrized kernel-test base: the ``implementation`` fixture runs a test under "xla",
"interpret" and "pallas" (the last skipped unless the platform has a GPU or a TPU)."""

from __future__ import annotations

import jax
import pytest

ACCELERATED = jax.default_backend() in ("gpu", "tpu")
IMPLEMENTATIONS = ("xla", "interpret", "pallas")


def implementation_params(*impls: str):
    """``pytest.param`` per implementation, "pallas" marked skip without a GPU/TPU."""
    return [
        pytest.param(
            impl,
            id=impl,
            marks=pytest.mark.skipif(impl == "pallas" and not ACCELERATED, reason="needs a GPU or TPU"),
        )
        for impl in impls or IMPLEMENTATIONS
    ]


@pytest.fixture(params=implementation_params())
def implementation(request) -> str:
    return request.param


@pytest.fixture(params=implementation_params("interpret", "pallas"))
def kernel_implementation(request) -> str:
    """The kernel paths only (for tests that compare a kernel with the XLA reference)."""
    return request.param
