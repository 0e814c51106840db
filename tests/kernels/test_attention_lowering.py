"""Every attention kernel lowers for TPU (Mosaic) and CUDA (Triton) on a CPU-only machine.

TPU: ``jax.jit(f).trace(*specs).lower(lowering_platforms=('tpu',))`` under an abstract TPU mesh (the Mosaic
lowering asks for the device kind); CUDA: the same under an abstract H100 mesh, Triton selected by
``jax.experimental.pallas.triton.CompilerParams``. Lowering runs the Pallas->Mosaic/Triton-IR lowering (block
shapes, dot dims, index maps, scalar prefetch); it does not run the device compilers.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import pytest

from jaxwb.pallas_kernels.attention import (
    AttentionBlockSizes,
    block_sparse_attention,
    flash_attention,
    threshold_retrieve,
)
from tests.kernels.lowering import BACKEND, KERNEL, kernel_calls, lower_text

SD = jax.ShapeDtypeStruct
B, L, H, HKV, D, BLK = 1, 512, 4, 2, 128, 128


def _cases(platform):
    be, impl = BACKEND[platform], KERNEL[platform]
    q = SD((B, L, H, D), jnp.bfloat16)
    k = SD((B, L, HKV, D), jnp.bfloat16)
    cnt = SD((B, H, L // BLK), jnp.int32)
    idx = SD((B, H, L // BLK, 3), jnp.int32)  # cap 3: not a power of two (padded for Triton)
    return {
        "flash_causal": (
            functools.partial(
                flash_attention,
                is_causal=True,
                implementation=impl,
                backend=be,
                block_sizes=AttentionBlockSizes(BLK, BLK),
            ),
            (q, k, k),
        ),
        "flash_bidirectional": (
            functools.partial(
                flash_attention,
                implementation=impl,
                backend=be,
                block_sizes=AttentionBlockSizes(BLK, 64 if be == "gpu" else BLK),
            ),
            (q, k, k),
        ),
        "block_sparse": (
            functools.partial(
                block_sparse_attention,
                block_sizes=AttentionBlockSizes(BLK, BLK),
                is_causal=True,
                implementation=impl,
                backend=be,
            ),
            (q, k, k, cnt, idx),
        ),
        "threshold_ball": (
            lambda q, k: threshold_retrieve(q, k, 1.0, block_size=16, implementation=impl, backend=be).block_mask,
            (q, k),
        ),
        "threshold_box": (
            lambda q, k: (
                threshold_retrieve(q, k, 1.0, block_size=16, bound="box", implementation=impl, backend=be).block_mask
            ),
            (q, k),
        ),
    }


@pytest.mark.parametrize("platform", ["cuda", "tpu"])
@pytest.mark.filterwarnings("ignore:The Pallas Triton backend is deprecated:DeprecationWarning")
def test_kernels_lower(platform):
    for name, (fn, specs) in _cases(platform).items():
        assert kernel_calls(lower_text(fn, *specs, platform=platform), platform) >= 1, name


def test_gpu_rejects_non_power_of_two_blocks():
    q = SD((1, 96, 2, 16), jnp.float32)
    with pytest.raises(ValueError, match="power of two"):
        jax.jit(
            functools.partial(
                block_sparse_attention, block_sizes=AttentionBlockSizes(48, 48), implementation="triton", backend="gpu"
            )
        ).trace(q, q, q, SD((1, 2, 2), jnp.int32), SD((1, 2, 2, 2), jnp.int32))


@pytest.mark.filterwarnings("ignore:The Pallas Triton backend is deprecated:DeprecationWarning")
def test_default_implementation_falls_back_to_xla_for_shapes_the_kernel_refuses():
    """implementation=None on a GPU: the kernel when the shapes fit its tiling (L = 128), XLA otherwise
    (L = 100 is no multiple of a power-of-two block >= 16), never an error for a valid input."""
    fn = functools.partial(flash_attention, is_causal=True, backend="gpu")
    for length, kernels in ((128, 1), (100, 0)):
        spec = SD((1, length, 2, 64), jnp.bfloat16)
        assert kernel_calls(lower_text(fn, spec, spec, spec, platform="cuda"), "cuda") == kernels
