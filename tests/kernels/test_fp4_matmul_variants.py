"""The W4A16 kernel variants (``fp4_matmul(..., decode="bitplace")``, ``dequantize_above_m=``): the bit-placement
decode formula exhaustively with numpy / ml_dtypes (which keep bfloat16 subnormals), the kernels bit for bit in
interpret mode on operands whose float32 sums are exact in any order, the refusals, and the dispatch."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from jaxwb.pallas_kernels.quant import fp4, fp4_matmul
from jaxwb.pallas_kernels.quant import matmul as mm
from jaxwb.pallas_kernels.quant import reference as ref
from jaxwb.pallas_kernels.quant.fp4 import QuantizedArray

F = mm.BITPLACE_FOLD
CODES = np.arange(16, dtype=np.uint8)
E4M3_BYTES = np.arange(256, dtype=np.uint8)


def _numpy_bits(nibble):
    """The decode formula in numpy: E2M1 nibble -> bfloat16 bits (Marlin's two logic ops)."""
    q = nibble.astype(np.uint16)
    return ((q & np.uint16(8)) << np.uint16(12)) | ((q & np.uint16(7)) << np.uint16(6))


def _e4m3(byte):
    """E4M3 scale value from ml_dtypes (bit 7 ignored, as the format's decoder does; 0x7F: 480, the decoder's
    reading of the byte that float8_e4m3fn calls NaN)."""
    v = (byte & np.uint8(0x7F)).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    return np.where((byte & 0x7F) == 0x7F, 480.0, v)


def test_bitplace_formula_exhaustive_over_codes_and_scales():
    """For every nibble and every scale byte: the placed bits are e2m1(q) * 2^-126 as a bfloat16 (subnormal
    for +-0.5), the folded scale e4m3(byte) * 2^(126-F) is exact in bfloat16, and their bfloat16 product is
    e2m1(q) * s * 2^-F exactly (ml_dtypes arithmetic, no flush-to-zero)."""
    value = CODES.view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    placed = _numpy_bits(CODES).view(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(placed.astype(np.float64), value * 2.0**-126)
    np.testing.assert_array_equal(np.signbit(placed.astype(np.float64)), CODES >= 8)  # -0 for code 8
    # the kernel's jnp formula: integer ops only, so this host computes its bits exactly
    for shift in (0, 4):
        got = np.asarray(mm.bitplace_bits(jnp.asarray(CODES << shift), shift))
        np.testing.assert_array_equal(got, _numpy_bits(CODES))
    s = _e4m3(E4M3_BYTES)
    folded = np.asarray(mm.bitplace_block_scale(jnp.asarray(E4M3_BYTES))).astype(np.float64)
    np.testing.assert_array_equal(folded, s * 2.0 ** (126 - F))
    assert np.isfinite(folded).all() and folded.max() == 480.0 * 2.0 ** (126 - F)
    prod = placed[:, None] * np.asarray(mm.bitplace_block_scale(jnp.asarray(E4M3_BYTES)))[None, :]
    np.testing.assert_array_equal(prod.astype(np.float64), value[:, None] * s[None, :] * 2.0**-F)


@pytest.mark.parametrize("g", [fp4.F32_MIN_NORMAL, 1.0, float(np.finfo(np.float32).max) / 2688.0])
def test_bitplace_global_fold_is_exact_at_the_scale_extremes(g):
    """g * 2^F is exact and finite from the smallest global scale (2^-126) to the largest a finite input gives
    (f32 max / 2688), so (acc 2^-F) (g 2^F) rounds like acc * g (both one rounding of the same real)."""
    g32 = np.float32(g)
    folded = g32 * np.float32(2.0**F)
    assert np.isfinite(folded) and float(folded) == float(g32) * 2.0**F
    acc = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal((acc * np.float32(2.0**-F)) * folded, acc * g32)


def _flushes_bf16_subnormals() -> bool:
    """Whether this backend's bfloat16 multiply flushes subnormal inputs (XLA:CPU does)."""
    sub = jax.lax.bitcast_convert_type(jnp.uint16(0x0040), jnp.bfloat16)
    return float(jax.jit(lambda v: v * jnp.bfloat16(2.0**118))(sub)) == 0.0


def _exact_operands(lead, n, k, seed):
    """x: small integers (bfloat16); w: random NVFP4 codes with scales in [1, 4) and g = 1/4: every product
    is a multiple of 2^-6 below 2^7 and every sum of K <= 512 terms below 2^16, so float32 sums are exact in
    any order and any kernel equals the float64 result bit for bit."""
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.integers(-4, 5, (*lead, k)), jnp.bfloat16)
    codes = rng.integers(0, 16, (n, k)).astype(np.uint32)
    scales = rng.integers(0x38, 0x48, (n, k // 16)).astype(np.uint8)  # E4M3 1.0 .. 3.75
    w = QuantizedArray(
        codes=fp4.pack_nibbles(jnp.asarray(codes)),
        scales=jnp.asarray(scales),
        global_scale=jnp.float32(0.25),
        shape=(n, k),
        format="nvfp4",
        block_size=16,
    )
    return x, w, codes, scales


def _exact(x, codes, scales, g, flush_half: bool):
    value = codes.astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    if flush_half:
        value = np.where(np.abs(value) == 0.5, 0.0, value)
    w = value * np.repeat(_e4m3(scales), 16, axis=-1) * g
    return np.asarray(x, np.float64) @ w.T


SHAPES = [
    pytest.param(((2, 3), 40, 160), id="ragged-3d"),
    pytest.param(((5,), 48, 96), id="ragged", marks=pytest.mark.slow),
    pytest.param(((16,), 64, 512), id="k512", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("case", SHAPES)
def test_bitplace_kernel_bit_exact_in_interpret_mode(case):
    """The bit-placement kernel equals float64 exactly; codes +-0.5 decode to 0 where the backend flushes
    bfloat16 subnormals (XLA:CPU, so the interpreter here) and to +-0.5 where it keeps them (a GPU: the device
    check runs this test with implementation="triton" too)."""
    lead, n, k = case
    x, w, codes, scales = _exact_operands(lead, n, k, seed=k)
    impls = ["interpret"] + (["triton"] if jax.default_backend() == "gpu" else [])
    for impl in impls:
        got = np.asarray(fp4_matmul(x, w, out_dtype=jnp.float32, implementation=impl, decode="bitplace"))
        # the interpreter on CPU computes with XLA:CPU (flushes); on a GPU (also when the device job forces
        # "interpret" to the compiled kernel) the kernel must keep bfloat16 subnormals
        flush = _flushes_bf16_subnormals() if jax.default_backend() == "cpu" else False
        np.testing.assert_array_equal(got, _exact(x, codes, scales, 0.25, flush_half=flush))
        assert got.shape == (*lead, n)


def test_default_and_large_m_paths_bit_exact_in_interpret_mode():
    """The default kernel and the dequantize-once path on the same exact operands: equal to float64 (so to
    each other and to the XLA reference) bit for bit, codes +-0.5 included (no subnormal in their decode)."""
    x, w, codes, scales = _exact_operands((33,), 48, 160, seed=1)
    want = _exact(x, codes, scales, 0.25, flush_half=False)
    for kw in ({}, {"dequantize_above_m": 32}, {"dequantize_above_m": 0}):
        got = np.asarray(fp4_matmul(x, w, out_dtype=jnp.float32, implementation="interpret", **kw))
        np.testing.assert_array_equal(got, want, err_msg=str(kw))
    np.testing.assert_array_equal(np.asarray(fp4_matmul(x, w, out_dtype=jnp.float32, implementation="xla")), want)


@pytest.mark.slow
def test_large_m_path_chunks_over_n():
    """Chunks of N rows (here 16 of 40) give the same result as one chunk."""
    x, w, codes, scales = _exact_operands((4,), 40, 64, seed=2)
    a = mm.dequantize_then_dot(x, w, out_dtype=jnp.float32, interpret=True, chunk=16)
    np.testing.assert_array_equal(np.asarray(a), _exact(x, codes, scales, 0.25, flush_half=False))


def test_variant_refusals():
    x, w, _, _ = _exact_operands((2,), 16, 32, seed=0)
    mx = dataclasses.replace(w, format="mxfp4", block_size=32)
    with pytest.raises(ValueError, match="decode must be one of"):
        fp4_matmul(x, w, decode="lut")
    with pytest.raises(ValueError, match="decode='bitplace' supports"):
        fp4_matmul(x, mx, decode="bitplace", implementation="interpret")
    with pytest.raises(ValueError, match="dequantize_above_m"):
        fp4_matmul(x, w, dequantize_above_m=-1)
    with pytest.raises(ValueError, match="not on TPU"):
        mm.fp4_matmul_pallas(x, w, decode="bitplace", platform="tpu", interpret=True)


@pytest.mark.filterwarnings("ignore:The Pallas Triton backend is deprecated:DeprecationWarning")
def test_large_m_dispatch_in_the_cuda_lowering():
    """Above the threshold the CUDA program runs the dequantize kernel and no matmul kernel; at or below it
    the fused matmul kernel (bit-placement decode when asked)."""
    from tests.kernels.lowering import lower_text

    w = jax.eval_shape(ref.nvfp4_quantize, jax.ShapeDtypeStruct((64, 256), jnp.float32))
    for m, decode, want in ((64, "interleaved", "nvfp4_dequantize"), (16, "bitplace", "nvfp4_matmul_bitplace")):
        x = jax.ShapeDtypeStruct((m, 256), jnp.bfloat16)
        f = lambda x, w, d=decode: fp4_matmul(x, w, implementation="triton", decode=d, dequantize_above_m=16)
        text = lower_text(f, x, w, platform="cuda")
        assert want in text and ("nvfp4_matmul" in text) == (want != "nvfp4_dequantize"), (m, decode)


def test_default_call_is_unchanged():
    """The defaults pick today's kernel: same program as decode="interleaved" with no threshold."""
    x, w, _, _ = _exact_operands((3,), 16, 64, seed=3)
    a = fp4_matmul(x, w, implementation="interpret")
    b = fp4_matmul(x, w, implementation="interpret", decode="interleaved", dequantize_above_m=None)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
