"""The one parametrized kernel-test base: the ``implementation`` fixture runs a test under "xla",
"interpret" and the platform's compiled kernel ("triton" on a GPU, "mosaic_tpu" on a TPU; skipped on a CPU)."""

from __future__ import annotations

import jax
import pytest

ACCELERATED = jax.default_backend() in ("gpu", "tpu")
KERNEL = {"gpu": "triton", "tpu": "mosaic_tpu"}.get(jax.default_backend(), "triton")  # the compiled kernel here
IMPLEMENTATIONS = ("xla", "interpret", KERNEL)


def implementation_params(*impls: str):
    """``pytest.param`` per implementation, the compiled kernel marked skip without a GPU/TPU."""
    return [
        pytest.param(
            impl,
            id=impl,
            marks=pytest.mark.skipif(impl == KERNEL and not ACCELERATED, reason="needs a GPU or TPU"),
        )
        for impl in impls or IMPLEMENTATIONS
    ]


@pytest.fixture(params=implementation_params())
def implementation(request) -> str:
    return request.param


@pytest.fixture(params=implementation_params("interpret", KERNEL))
def kernel_implementation(request) -> str:
    """The kernel paths only (for tests that compare a kernel with the XLA reference)."""
    return request.param


@pytest.fixture(autouse=True)
def float32_matmuls():
    """Every kernel test runs under ``jax.default_matmul_precision("highest")``: the tests compare float32
    kernels with float32 references at float32 tolerances, and a GPU's default float32 dot is TF32 (inputs
    rounded to 10 mantissa bits). On an H200 (2026-12-04) the default made 7 attention and layer tests miss by
    ~1e-4 against 2e-5 tolerances (kernel and peer both in TF32, in different orders). The ops follow the
    setting as ``jax.nn.dot_product_attention`` does; XLA:CPU computes float32 dots in float32 either way."""
    with jax.default_matmul_precision("highest"):
        yield
