"""The FWHT and dithered-RHT Pallas kernels lower for TPU (Mosaic) and CUDA (Triton) from a CPU host.

TPU: ``jax.jit(f).trace(*specs).lower(lowering_platforms=("tpu",))``. CUDA: the same under an abstract mesh of
one H100 (``DESIGN.md``, Kernels); the kernels pick Triton ``CompilerParams`` per platform with
``lax.platform_dependent``, so each lowering must contain exactly its own custom call.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from jaxwb.pallas_kernels.quant.hadamard import fwht
from jaxwb.pallas_kernels.quant.rht import rht_dequantize, rht_quantize
from tests.kernels.lowering import BACKEND, KERNEL, kernel_calls, lower_text


def check_custom_calls(text: str, platform: str, count: int) -> None:
    assert kernel_calls(text, platform) == count


@pytest.mark.parametrize("platform", ["tpu", "cuda"])
@pytest.mark.parametrize("d", [8, 128, 32768])  # block-diagonal 16-tile, dense tile, Kronecker 256 x 128
def test_fwht_lowers(platform, d):
    spec = jax.ShapeDtypeStruct((4, d), jnp.float32)
    text = lower_text(
        lambda x: fwht(x, implementation=KERNEL[platform], backend=BACKEND[platform]), spec, platform=platform
    )
    check_custom_calls(text, platform, 1)


@pytest.mark.parametrize("platform", ["tpu", "cuda"])
@pytest.mark.parametrize("d", [64, 4096])
def test_rht_lowers(platform, d):
    spec = jax.ShapeDtypeStruct((3, d), jnp.bfloat16)

    def f(x):
        q = rht_quantize(
            x,
            key=jax.random.key(0),
            bits=4,
            scaling="unbiased",
            implementation=KERNEL[platform],
            backend=BACKEND[platform],
        )
        return q.codes, q.scale, rht_dequantize(q, implementation=KERNEL[platform], backend=BACKEND[platform])

    text = lower_text(f, spec, platform=platform)
    check_custom_calls(text, platform, 2)


@pytest.mark.parametrize("platform", ["tpu", "cuda"])
def test_inquant_unpack_lowers(platform):
    from jaxwb.pallas_kernels.quant.inquant import inquant_pack, inquant_unpack

    x = jnp.ones((64, 128), jnp.bfloat16)
    q = inquant_pack(x, key=jax.random.key(0), n_outliers=4)
    text = lower_text(
        lambda q: inquant_unpack(q, implementation=KERNEL[platform], backend=BACKEND[platform]), q, platform=platform
    )
    check_custom_calls(text, platform, 1)


@pytest.mark.filterwarnings("ignore:The Pallas Triton backend is deprecated:DeprecationWarning")
def test_default_on_gpu_is_xla_above_the_measured_range():
    """implementation=None on a GPU runs the kernel up to d = 4096 and XLA above (the H200's Triton compile at
    d = 16384 did not finish: dispatch.MEASURED); implementation="triton" still runs the kernel."""
    from jaxwb.pallas_kernels.dispatch import MEASURED
    from jaxwb.pallas_kernels.quant.hadamard import GPU_MAX_D

    m = MEASURED[("fwht", "triton")]
    assert GPU_MAX_D == 4096 and (m.platform, m.faster, m.when) == ("gpu", "xla", "d > 4096")
    for d, impl, count in ((4096, None, 1), (8192, None, 0), (8192, "triton", 1)):
        spec = jax.ShapeDtypeStruct((2, d), jnp.float32)
        text = lower_text(lambda x: fwht(x, implementation=impl, backend="gpu"), spec, platform="cuda")  # noqa: B023
        assert kernel_calls(text, "cuda") == count, (d, impl)
    text = lower_text(lambda x: fwht(x, backend="tpu"), jax.ShapeDtypeStruct((2, 8192), jnp.float32), platform="tpu")
    assert kernel_calls(text, "tpu") == 1  # the GPU measurement says nothing about TPUs


def test_default_block_sizes_follow_the_kernel_platform(monkeypatch):
    """block_sizes=None: for the GPU kernel and the interpreter (which runs the GPU form) tile 64 with 8 warps
    from d = 4096 on (GPU_BLOCK_SIZES, measured 23x the tile-128 default at d = 4096 on an H200) and 4 warps
    below; HadamardBlockSizes() (tile 128) for TPU."""
    from jaxwb.pallas_kernels.quant import hadamard

    seen = []
    monkeypatch.setattr(hadamard, "fwht_pallas", lambda x, *, blocks, **kw: seen.append(blocks) or x)
    x = jnp.ones((2, 4096), jnp.float32)
    # traced (eval_shape): an eager call with a backend that has no device here raises (bad input)
    for backend, impl in (("gpu", "triton"), ("tpu", "mosaic_tpu")):
        jax.eval_shape(lambda a, b=backend, i=impl: hadamard.fwht(a, implementation=i, backend=b), x)
    hadamard.fwht(x, implementation="interpret")
    jax.eval_shape(lambda a: hadamard.fwht(a, implementation="triton", backend="gpu"), x[:, :1024])
    small = hadamard.HadamardBlockSizes(tile=64, num_warps=4)
    assert seen == [hadamard.GPU_BLOCK_SIZES, hadamard.HadamardBlockSizes(), hadamard.GPU_BLOCK_SIZES, small]
    assert hadamard.GPU_BLOCK_SIZES == hadamard.HadamardBlockSizes(tile=64, num_warps=8)
