"""The FWHT and dithered-RHT Pallas kernels lower for TPU (Mosaic) and CUDA (Triton) from a CPU host.

TPU: ``jax.jit(f).trace(*specs).lower(lowering_platforms=("tpu",))``. CUDA: the same under an abstract mesh of
one H100 (``DESIGN.md``, Kernels); the kernels pick Triton ``CompilerParams`` per platform with
``lax.platform_dependent``, so each lowering must contain exactly its own custom call.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from pallas_kernels.quant.hadamard import fwht
from pallas_kernels.quant.rht import rht_dequantize, rht_quantize
from tests.kernels.lowering import BACKEND, kernel_calls, lower_text


def check_custom_calls(text: str, platform: str, count: int) -> None:
    assert kernel_calls(text, platform) == count


@pytest.mark.parametrize("platform", ["tpu", "cuda"])
@pytest.mark.parametrize("d", [8, 128, 32768])  # block-diagonal 16-tile, dense tile, Kronecker 256 x 128
def test_fwht_lowers(platform, d):
    spec = jax.ShapeDtypeStruct((4, d), jnp.float32)
    text = lower_text(lambda x: fwht(x, implementation="pallas", backend=BACKEND[platform]), spec, platform=platform)
    check_custom_calls(text, platform, 1)


@pytest.mark.parametrize("platform", ["tpu", "cuda"])
@pytest.mark.parametrize("d", [64, 4096])
def test_rht_lowers(platform, d):
    spec = jax.ShapeDtypeStruct((3, d), jnp.bfloat16)

    def f(x):
        q = rht_quantize(
            x, key=jax.random.key(0), bits=4, scaling="unbiased", implementation="pallas", backend=BACKEND[platform]
        )
        return q.codes, q.scale, rht_dequantize(q, implementation="pallas", backend=BACKEND[platform])

    text = lower_text(f, spec, platform=platform)
    check_custom_calls(text, platform, 2)


@pytest.mark.parametrize("platform", ["tpu", "cuda"])
def test_inquant_unpack_lowers(platform):
    from pallas_kernels.quant.inquant import inquant_pack, inquant_unpack

    x = jnp.ones((64, 128), jnp.bfloat16)
    q = inquant_pack(x, key=jax.random.key(0), n_outliers=4)
    text = lower_text(
        lambda q: inquant_unpack(q, implementation="pallas", backend=BACKEND[platform]), q, platform=platform
    )
    check_custom_calls(text, platform, 1)
