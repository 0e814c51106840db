"""The kernels' selectable variants besides W4A16 (each default off, defaults unchanged bit for bit):
FWHT ``xla_method="kron"`` (Kronecker einsum), block-sparse ``xla_keep_dtype=True`` (K/V in their dtype, float32
accumulation), quantize/dequantize ``QuantBlockSizes(num_warps=..., edge="mask")``."""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from jaxwb.pallas_kernels.attention import AttentionBlockSizes, block_sparse_attention
from jaxwb.pallas_kernels.attention import reference as aref
from jaxwb.pallas_kernels.quant import blockwise
from jaxwb.pallas_kernels.quant import reference as ref
from jaxwb.pallas_kernels.quant.hadamard import fwht, fwht_kron_xla, fwht_reference, kron_factors

QB = blockwise.QuantBlockSizes


def test_kron_factors():
    assert kron_factors(1) == (1,)
    assert kron_factors(64) == (64,)
    assert kron_factors(4096) == (64, 64)
    assert kron_factors(32768) == (32, 32, 32)
    assert kron_factors(2048) == (64, 32)
    for n in range(16):
        f = kron_factors(2**n)
        assert np.prod(f) == 2**n and max(f) <= 64


@pytest.mark.parametrize("n", [0, 1, 5, 7, 11])
def test_fwht_kron_equals_scipy_in_float64(n):
    d = 2**n
    x = np.random.default_rng(n).standard_normal((3, d))
    with jax.enable_x64(True):
        got = np.asarray(fwht_kron_xla(jnp.asarray(x)))
    np.testing.assert_allclose(got, x @ scipy.linalg.hadamard(d) / np.sqrt(d), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("d", [16, 256, pytest.param(4096, marks=pytest.mark.slow)])
def test_fwht_kron_float32_error_against_float64(d):
    """The accuracy goal for float32 FWHT, d <= 4096: max error <= 1e-6 of the largest output against
    float64 (both XLA formulations)."""
    x = np.random.default_rng(d).standard_normal((8, d)).astype(np.float32)
    exact = x.astype(np.float64) @ scipy.linalg.hadamard(d) / np.sqrt(d)
    for name, got in (("kron", fwht(jnp.asarray(x), xla_method="kron")), ("butterfly", fwht_reference(x))):
        err = np.abs(np.asarray(got, np.float64) - exact).max() / np.abs(exact).max()
        assert err <= 1e-6, (name, err)


def test_fwht_default_unchanged_and_method_checked():
    x = jnp.asarray(np.random.default_rng(0).standard_normal((4, 512)), jnp.float32)
    np.testing.assert_array_equal(np.asarray(fwht(x)), np.asarray(fwht_reference(x)))
    np.testing.assert_array_equal(np.asarray(fwht(x, xla_method="butterfly")), np.asarray(fwht_reference(x)))
    y = fwht(x.astype(jnp.bfloat16), xla_method="kron")
    assert y.dtype == jnp.bfloat16 and y.shape == x.shape
    with pytest.raises(ValueError, match="xla_method"):
        fwht(x, xla_method="dense")


def _sparse_case(dtype, L=128, H=1, D=16, block=16, cap=2, causal=True):
    key = jax.random.key(0)
    q, k, v = (jax.random.normal(jax.random.fold_in(key, i), (1, L, H, D), dtype) for i in range(3))
    n = L // block
    mask = jax.random.uniform(jax.random.fold_in(key, 9), (1, H, n, n)) < cap / n
    mask = mask | jnp.eye(n, dtype=bool)  # every row keeps its diagonal block (causal rows non-empty)
    cnt, idx = jax.jit(aref.mask_to_block_lists, static_argnums=1)(mask, n)
    f = functools.partial(
        block_sparse_attention, block_sizes=AttentionBlockSizes(block, block), is_causal=causal, implementation="xla"
    )
    return jax.jit(f, static_argnames="xla_keep_dtype"), (q, k, v, cnt, idx)


def test_block_sparse_keep_dtype_float32_is_identical():
    f, args = _sparse_case(jnp.float32)
    np.testing.assert_array_equal(np.asarray(f(*args)), np.asarray(f(*args, xla_keep_dtype=True)))


def test_block_sparse_keep_dtype_bfloat16_within_rounding_of_the_reference():
    """bfloat16 K/V kept: the float64 reference within bfloat16 rounding of the probabilities and output
    (2^-8 relative per element of the output, plus the 2^-9 of each weight: 2^-7 of max |v|)."""
    f, args = _sparse_case(jnp.bfloat16)
    q, k, v, cnt, idx = args
    want = jax.jit(aref.block_sparse_reference, static_argnames=("block_q", "block_k", "is_causal"))(
        *(a.astype(jnp.float32) for a in (q, k, v)), cnt, idx, block_q=16, block_k=16, is_causal=True
    )
    got = f(*args, xla_keep_dtype=True)
    assert got.dtype == jnp.bfloat16
    err = np.abs(np.asarray(got, np.float64) - np.asarray(want, np.float64)).max()
    assert err <= 2.0**-7 * float(jnp.max(jnp.abs(v.astype(jnp.float32)))), err
    with pytest.raises(ValueError, match="xla_keep_dtype"):
        block_sparse_attention(*args, block_sizes=AttentionBlockSizes(16, 16), xla_keep_dtype="yes")


@pytest.mark.parametrize("fmt", ["nvfp4", pytest.param("razer_weight", marks=pytest.mark.slow)])
def test_masked_edge_tiles_equal_the_reference(fmt):
    """edge="mask" (no padding copy; partial edge tiles): codes, scale bytes and dequantized values equal the
    reference's bit for bit on ragged shapes (rows and K not multiples of the tile)."""
    rng = np.random.default_rng(1)
    for shape, bs in (((2, 5, 96), QB(4, 64, num_warps=2, edge="mask")),):  # ragged rows and K, 3-D
        x = jnp.asarray(rng.standard_normal(shape), jnp.float32)
        g = ref.global_scale_from_amax(jnp.max(jnp.abs(x)), 2688.0)
        a = blockwise._ref_jit(x, g, fmt)
        b = blockwise.quantize_pallas(x, g, fmt=fmt, interpret=True, block_sizes=bs)
        np.testing.assert_array_equal(np.asarray(a.codes), np.asarray(b.codes))
        np.testing.assert_array_equal(np.asarray(a.scales), np.asarray(b.scales))
        np.testing.assert_array_equal(
            np.asarray(jax.jit(ref.dequantize)(a)),
            np.asarray(blockwise.dequantize_pallas(a, interpret=True, block_sizes=bs)),
        )


@pytest.mark.filterwarnings("ignore:The Pallas Triton backend is deprecated:DeprecationWarning")
def test_num_warps_and_masked_edges_in_the_cuda_lowering():
    """num_warps reaches the Triton call; the default keeps 4 warps and the padding copy, "mask" drops it."""
    from tests.kernels.lowering import lower_text

    x, g = jax.ShapeDtypeStruct((37, 160), jnp.float32), jax.ShapeDtypeStruct((), jnp.float32)
    for bs, warps, pad in ((QB(16, 128), 4, True), (QB(16, 128, num_warps=8, edge="mask"), 8, False)):
        t = lower_text(
            lambda x, g, bs=bs: blockwise.quantize_pallas(x, g, fmt="nvfp4", platform="gpu", block_sizes=bs),
            x,
            g,
            platform="cuda",
        )
        assert re.findall(r"num_warps = (\d+)", t) == [str(warps)]
        assert ("stablehlo.pad" in t) == pad


def test_quant_block_sizes_checked_and_default_unchanged():
    assert QB() == QB(16, 512, 4, "pad")
    with pytest.raises(ValueError, match="num_warps"):
        QB(num_warps=3)
    with pytest.raises(ValueError, match="edge"):
        QB(edge="clip")


@pytest.mark.parametrize("causal", [False, True])
def test_attention_exp2_variant_within_float32_rounding(causal):
    """AttentionBlockSizes(exp2=True): exp2 with log2(e) folded into the scale (JAX's Triton attention): the
    interpreter's output within float32 rounding of the reference (dense and block-sparse); the default
    (exp2=False) is the kernel as before."""
    from jaxwb.pallas_kernels.attention import flash_attention

    rng = np.random.default_rng(int(causal))
    q, k, v = (jnp.asarray(rng.standard_normal((1, 64, 2, 16)), jnp.float32) for _ in range(3))
    want = np.asarray(aref.attention_reference(q, k, v, is_causal=causal), np.float64)
    bs = AttentionBlockSizes(16, 16, num_warps=8, num_stages=3, exp2=True)
    got = flash_attention(q, k, v, is_causal=causal, implementation="interpret", block_sizes=bs)
    assert np.abs(np.asarray(got, np.float64) - want).max() <= 4e-6
    cnt, idx = jnp.full((1, 2, 4), 4, jnp.int32), jnp.broadcast_to(jnp.arange(4, dtype=jnp.int32), (1, 2, 4, 4))
    got = block_sparse_attention(q, k, v, cnt, idx, block_sizes=bs, is_causal=causal, implementation="interpret")
    assert np.abs(np.asarray(got, np.float64) - want).max() <= 4e-6


@pytest.mark.filterwarnings("ignore:The Pallas Triton backend is deprecated:DeprecationWarning")
def test_attention_block_sizes_reach_the_triton_call():
    """num_warps / num_stages reach the Triton call and exp2 replaces exp in the Triton IR; defaults as before."""
    from jaxwb.pallas_kernels.attention import flash_attention
    from tests.kernels.lowering import lower_text
    from tests.kernels.opcount import count_ops, triton_modules

    q = jax.ShapeDtypeStruct((1, 128, 2, 64), jnp.bfloat16)
    assert AttentionBlockSizes(64, 64) == AttentionBlockSizes(64, 64, 4, 2, False)
    for bs, warps, stages, exp in ((AttentionBlockSizes(64, 64), 4, 2, "__nv_expf"),
                                   (AttentionBlockSizes(64, 64, 8, 3, True), 8, 3, "__nv_exp2f")):  # fmt: skip
        f = functools.partial(flash_attention, block_sizes=bs, implementation="triton", backend="gpu")
        t = lower_text(f, q, q, q, platform="cuda")
        assert re.findall(r"num_warps = (\d+)", t) == [str(warps)] and f"num_stages = {stages}" in t
        c = count_ops(triton_modules(f, q, q, q)[0])
        assert c["extern"] > 0 and c["extern"] == c["extern:" + exp], c
    with pytest.raises(ValueError, match="num_warps"):
        AttentionBlockSizes(64, 64, num_warps=6)
    with pytest.raises(ValueError, match="exp2"):
        AttentionBlockSizes(64, 64, exp2=1)
