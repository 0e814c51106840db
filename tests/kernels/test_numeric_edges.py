"""Numeric edges of the kernel variants: overflow, dtypes, block sizes, shapes, NaN/inf/huge/subnormal values.

A sibling of ``test_bad_inputs.py`` (the general table): every case here exercises a *variant* (FWHT's
``xla_method``, ``fp4_matmul``'s ``decode`` and ``dequantize_above_m``, the quantizers' ``QuantBlockSizes``
edges, ``implementation`` values, output dtypes) and either

* ``REFUSED``: raises ``ValueError`` whose message names the parameter (regex), eagerly, under ``grad``/``vmap``
  of an eager call, or under ``jit`` inside ``jaxwb.pallas_kernels.checked``; or
* ``COMPUTED``: returns the correct finite result, where a finite input's intermediate would overflow (the
  scaled forms of ``fwht``'s XLA paths and of ``fp4_matmul``) or where a NumPy float64 input or a float64
  output dtype is converted (float32 unless ``jax_enable_x64``), compared with an independent float64
  reference or with the ordinary call.

``python -m tests.kernels.test_numeric_edges`` prints both tables.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from jaxwb.pallas_kernels import checked, quant
from jaxwb.pallas_kernels.quant import (
    HadamardBlockSizes,
    MatmulBlockSizes,
    QuantBlockSizes,
    fp4_matmul,
    fwht,
    hadamard,
    inquant_pack,
    inquant_unpack,
)
from jaxwb.pallas_kernels.quant import matmul as mm
from jaxwb.pallas_kernels.quant import reference as ref

KEY = jax.random.key(0)
RNG = np.random.default_rng(0)
F16_BIG = jnp.full((2, 256), 6e4, jnp.float16)  # fwht output: 6e4 * 256 / 16 = 9.6e5 > float16's 65504
F32_HUGE = jnp.full((2, 256), 3e38, jnp.float32)  # fwht output 4.8e39: no float32 holds it
SIGNS = RNG.choice([-1.0, 1.0], (2, 256))
F32_HUGE_SIGNS = jnp.asarray(SIGNS * 3e37, jnp.float32)  # intermediate sums overflow, the outputs fit
W1 = quant.nvfp4_quantize(jnp.ones((32, 64), jnp.float32))
WTINY = quant.nvfp4_quantize(jnp.asarray(RNG.standard_normal((32, 64)) * 1e-30, jnp.float32))
X_F16_BIG = jnp.full((4, 64), 6e4, jnp.float16)  # x @ W1.T = 3.84e6 > 65504
X_HUGE = jnp.asarray(RNG.standard_normal((4, 64)) * 1e36, jnp.float32)  # acc ~1e39 overflows, result ~1e7
X64 = RNG.standard_normal((4, 64))  # NumPy float64
XQ = jnp.asarray(RNG.standard_normal((4, 64)), jnp.float32)
SUB = np.float32(1e-40)


def grad_of(f, x):
    return jax.grad(lambda a: jnp.sum(f(a)).astype(jnp.float32))(x)


REFUSED = [
    # --- fwht: outputs that no dtype holds, per XLA method and implementation ------------------------------
    ("fwht kron float16 6e4", lambda: fwht(F16_BIG, xla_method="kron"), "^x would overflow float16"),
    ("fwht butterfly float16 6e4", lambda: fwht(F16_BIG, xla_method="butterfly"), "^x would overflow float16"),
    ("fwht interpret float16 6e4", lambda: fwht(F16_BIG, implementation="interpret"), "^x would overflow float16"),
    ("fwht kron float32 3e38", lambda: fwht(F32_HUGE, xla_method="kron"), "^x would overflow float32"),
    ("fwht butterfly float32 3e38", lambda: fwht(F32_HUGE), "^x would overflow float32"),
    (
        "fwht interpret float32 huge signs (no scaled form in the kernel)",
        lambda: fwht(F32_HUGE_SIGNS * 8, implementation="interpret"),
        "^x would overflow float32.*scaled form",
    ),
    (
        "fwht kron bfloat16 3e38",
        lambda: fwht(F32_HUGE.astype(jnp.bfloat16), xla_method="kron"),
        "^x would overflow bfloat16",
    ),
    ("fwht kron float16 6e4 names the fix", lambda: fwht(F16_BIG, xla_method="kron"), "pass x as float32"),
    ("grad fwht kron float16 6e4", lambda: grad_of(lambda a: fwht(a, xla_method="kron"), F16_BIG), "^x would over"),
    ("vmap fwht kron float32 3e38", lambda: jax.vmap(lambda a: fwht(a, xla_method="kron"))(F32_HUGE), "^x would"),
    (
        "checked jit fwht kron float32 3e38",
        lambda: checked(jax.jit(lambda a: fwht(a, xla_method="kron")))(F32_HUGE),
        "^x would overflow float32",
    ),
    ("fwht xla_method dense", lambda: fwht(XQ, xla_method="dense"), "^xla_method must be one of"),
    ("fwht kron NaN", lambda: fwht(XQ.at[1, 2].set(jnp.nan), xla_method="kron"), "^x contains 1 non-finite"),
    ("fwht kron -inf float16", lambda: fwht(F16_BIG.at[0, 0].set(-jnp.inf), xla_method="kron"), "^x contains 1"),
    ("fwht kron d = 24", lambda: fwht(jnp.ones((2, 24)), xla_method="kron"), r"^x.shape\[-1\] must be a power"),
    ("fwht interpret d = 65536", lambda: fwht(jnp.ones((1, 65536)), implementation="interpret"), "<= 32768"),
    ("HadamardBlockSizes(dense_max=8)", lambda: HadamardBlockSizes(dense_max=8), "^block_sizes.dense_max must"),
    ("HadamardBlockSizes(num_warps=3)", lambda: HadamardBlockSizes(num_warps=3), "^block_sizes.num_warps must"),
    ("HadamardBlockSizes(block_rows=3)", lambda: HadamardBlockSizes(block_rows=3), "^block_sizes.block_rows must"),
    # --- fp4_matmul: decode variants, large-M path, block sizes, out dtypes ----------------------------------
    (
        "matmul bitplace float16 6e4",
        lambda: fp4_matmul(X_F16_BIG, W1, implementation="interpret", decode="bitplace"),
        "^x, w: .* would overflow float16.*out_dtype=jnp.float32",
    ),
    (
        "matmul interleaved float16 6e4",
        lambda: fp4_matmul(X_F16_BIG, W1, implementation="interpret"),
        "^x, w: .* would overflow float16",
    ),
    ("matmul xla float16 6e4", lambda: fp4_matmul(X_F16_BIG, W1, implementation="xla"), "^x, w: .* overflow"),
    (
        "matmul dequantize_above_m=0 float16 6e4",
        lambda: fp4_matmul(X_F16_BIG, W1, implementation="interpret", dequantize_above_m=0),
        "^x, w: .* would overflow float16",
    ),
    (
        "grad matmul xla float16 6e4",
        lambda: grad_of(lambda a: fp4_matmul(a, W1, implementation="xla"), X_F16_BIG),
        "^x, w: .* would overflow",
    ),
    (
        "checked jit matmul bitplace float16 6e4",
        lambda: checked(jax.jit(lambda a: fp4_matmul(a, W1, implementation="interpret", decode="bitplace")))(X_F16_BIG),
        "^x, w: .* would overflow",
    ),
    (
        "matmul bitplace on MXFP4",
        lambda: fp4_matmul(XQ, quant.mxfp4_quantize(jnp.ones((32, 64))), decode="bitplace"),
        "^decode='bitplace' supports w.format",
    ),
    (
        "matmul bitplace on RaZeR weight",
        lambda: fp4_matmul(XQ, quant.razer_quantize(jnp.ones((32, 64)), variant="weight"), decode="bitplace"),
        "^decode='bitplace' supports w.format",
    ),
    ("matmul decode marlin", lambda: fp4_matmul(XQ, W1, decode="marlin"), "^decode must be one of"),
    (
        "matmul bitplace NaN x",
        lambda: fp4_matmul(XQ.at[0, 1].set(jnp.nan), W1, implementation="interpret", decode="bitplace"),
        "^x contains 1 non-finite",
    ),
    (
        "matmul bitplace inf float16 x",
        lambda: fp4_matmul(X_F16_BIG.at[1, 1].set(jnp.inf), W1, decode="bitplace"),
        "^x contains 1 non-finite",
    ),
    ("matmul dequantize_above_m=-1", lambda: fp4_matmul(XQ, W1, dequantize_above_m=-1), "^dequantize_above_m"),
    ("matmul dequantize_above_m=True", lambda: fp4_matmul(XQ, W1, dequantize_above_m=True), "^dequantize_above_m"),
    ("MatmulBlockSizes(64, 48, 128)", lambda: MatmulBlockSizes(64, 48, 128), "^block_n must be a power of two"),
    ("MatmulBlockSizes(block_k=8)", lambda: MatmulBlockSizes(block_k=8), "^block_k must be >= 16"),
    (
        "matmul QuantBlockSizes as block_sizes",
        lambda: fp4_matmul(XQ, W1, block_sizes=QuantBlockSizes()),
        "^block_sizes must be a MatmulBlockSizes",
    ),
    ("matmul bitplace int out_dtype", lambda: fp4_matmul(XQ, W1, decode="bitplace", out_dtype=jnp.int32), "^dtype"),
    (
        "matmul bitplace complex x",
        lambda: fp4_matmul(XQ.astype(jnp.complex64), W1, decode="bitplace"),
        "^x must be a floating.*complex",
    ),
    # --- block quantizers: values, global scales, block sizes, output dtypes --------------------------------
    (
        "nvfp4 interpret inf",
        lambda: quant.nvfp4_quantize(XQ.at[2, 3].set(jnp.inf), implementation="interpret"),
        "^x contains 1 non-finite",
    ),
    (
        "mxfp4 interpret -inf float16",
        lambda: quant.mxfp4_quantize(XQ.at[0, 0].set(-jnp.inf).astype(jnp.float16), implementation="interpret"),
        "^x contains 1 non-finite",
    ),
    (
        "razer weight interpret NaN bfloat16",
        lambda: quant.razer_quantize(XQ.at[3, 9].set(jnp.nan).astype(jnp.bfloat16), variant="weight"),
        "^x contains 1 non-finite",
    ),
    (
        "nvfp4 subnormal global_scale",
        lambda: quant.nvfp4_quantize(XQ, global_scale=SUB),
        "^global_scale must be a finite",
    ),
    ("nvfp4 zero global_scale", lambda: quant.nvfp4_quantize(XQ, global_scale=0.0), "^global_scale must be a finite"),
    (
        "nvfp4 negative global_scale",
        lambda: quant.nvfp4_quantize(XQ, global_scale=-1.0),
        "^global_scale must be a finite",
    ),
    ("razer NaN global_scale", lambda: quant.razer_quantize(XQ, global_scale=np.nan), "^global_scale must be a finite"),
    (
        "razer weight vector global_scale",
        lambda: quant.razer_quantize(XQ, variant="weight", global_scale=np.ones(3, np.float32)),
        "^global_scale must be a scalar",
    ),
    ("QuantBlockSizes(edge='clip')", lambda: QuantBlockSizes(edge="clip"), "^edge must be one of"),
    ("QuantBlockSizes(num_warps=3)", lambda: QuantBlockSizes(num_warps=3), "^num_warps must be a power of two"),
    ("QuantBlockSizes(16, 16)", lambda: QuantBlockSizes(16, 16), "^block_cols must be >= 32"),
    ("QuantBlockSizes(True, 512)", lambda: QuantBlockSizes(True, 512), "^block_rows must be a positive"),
    (
        "nvfp4 dequantize complex dtype",
        lambda: quant.nvfp4_dequantize(W1, dtype=jnp.complex64),
        "^dtype must be a float",
    ),
    (
        "rht dequantize bool dtype",
        lambda: quant.rht_dequantize(quant.rht_quantize(XQ, key=KEY, bits=4), dtype=bool),
        "^dtype",
    ),
    (
        "mxfp4 interpret K = 48 (not a block multiple)",
        lambda: quant.mxfp4_quantize(jnp.ones((2, 48)), implementation="interpret"),
        r"^x.shape\[-1\] must be a multiple of the block size 32",
    ),
]


def _fwht64(x):
    """float64 reference of the normalized transform."""
    x = np.asarray(x, np.float64)
    d = x.shape[-1]
    return x @ scipy.linalg.hadamard(d) / np.sqrt(d)


def _w4a16_64(x, w):
    """float64 reference of the W4A16 numerics: x rounded to bfloat16, times the exact dequantized weight."""
    xb = np.asarray(jnp.asarray(x, jnp.float32).astype(jnp.bfloat16), np.float64)
    wv = np.asarray(ref.dequantized_weight_unscaled(w), np.float64)
    return (xb @ wv.T) * float(w.global_scale)


def _close(rtol):
    def check(got, want):
        got = np.asarray(got, np.float64)
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.max(np.abs(want)))

    return check


def _equal(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# MXFP4 (no global scale): products 1e10 * 1e30 overflow float32, but the first block's +-1e10 pairs meet a
# constant weight block and cancel exactly; the second block's products are ~1e30: the result fits
MX_BIG = quant.mxfp4_quantize(
    jnp.asarray(np.concatenate([np.ones((32, 32)), RNG.standard_normal((32, 32))], 1) * 1e30, jnp.float32)
)
X_MX = jnp.asarray(np.concatenate([np.tile([1e10, -1e10], (4, 16)), RNG.standard_normal((4, 32))], 1), jnp.float32)
MASK_X = jnp.asarray(RNG.standard_normal((3, 5, 48)), jnp.float32)  # ragged: masked edge tiles

COMPUTED = [  # (id, call, expected (thunk), check)
    ("fwht kron float32 huge signs", lambda: fwht(F32_HUGE_SIGNS, xla_method="kron"), lambda: _fwht64(F32_HUGE_SIGNS),
     _close(1e-6)),
    ("fwht butterfly float32 huge signs", lambda: fwht(F32_HUGE_SIGNS), lambda: _fwht64(F32_HUGE_SIGNS), _close(1e-6)),
    ("jit fwht kron float32 huge signs", lambda: jax.jit(lambda a: fwht(a, xla_method="kron"))(F32_HUGE_SIGNS),
     lambda: fwht(F32_HUGE_SIGNS, xla_method="kron"), _equal),
    ("vmap fwht kron float32 huge signs", lambda: jax.vmap(lambda a: fwht(a, xla_method="kron"))(F32_HUGE_SIGNS),
     lambda: _fwht64(F32_HUGE_SIGNS), _close(1e-6)),
    ("fwht kron bfloat16 huge signs", lambda: fwht(F32_HUGE_SIGNS.astype(jnp.bfloat16), xla_method="kron"),
     lambda: _fwht64(F32_HUGE_SIGNS.astype(jnp.bfloat16)), _close(2**-7)),
    ("fwht kron float32 1e36 (output 1.6e37)", lambda: fwht(jnp.full((2, 256), 1e36), xla_method="kron"),
     lambda: _fwht64(jnp.full((2, 256), 1e36)), _close(1e-6)),
    ("fwht kron d = 4096 huge signs", lambda: fwht(jnp.asarray(np.tile(SIGNS, 16) * 1e35, jnp.float32),
     xla_method="kron"), lambda: _fwht64(jnp.asarray(np.tile(SIGNS, 16) * 1e35, jnp.float32)), _close(1e-6)),
    ("fwht kron ordinary x: the unscaled path bit for bit", lambda: fwht(XQ, xla_method="kron"),
     lambda: hadamard.fwht_kron_xla(XQ), _equal),
    ("fwht kron float16 subnormals", lambda: fwht(jnp.full((2, 64), 1e-7, jnp.float16), xla_method="kron"),
     lambda: fwht(jnp.full((2, 64), 1e-7, jnp.float16)), _equal),
    ("matmul xla x 1e36, w 1e-30", lambda: fp4_matmul(X_HUGE, WTINY, implementation="xla"),
     lambda: _w4a16_64(X_HUGE, WTINY), _close(1e-5)),
    ("matmul interpret x 1e36, w 1e-30", lambda: fp4_matmul(X_HUGE, WTINY, implementation="interpret"),
     lambda: _w4a16_64(X_HUGE, WTINY), _close(1e-5)),
    ("matmul bitplace x 1e36, w 1e-30 equals interleaved",
     lambda: fp4_matmul(X_HUGE, W1, implementation="interpret", decode="bitplace"),
     lambda: fp4_matmul(X_HUGE, W1, implementation="interpret"), _close(1e-6)),
    ("matmul dequantize_above_m=0 x 1e36, w 1e-30",
     lambda: fp4_matmul(X_HUGE, WTINY, implementation="interpret", dequantize_above_m=0),
     lambda: _w4a16_64(X_HUGE, WTINY), _close(1e-5)),
    ("jit matmul bitplace x 1e36", lambda: jax.jit(lambda a, w: fp4_matmul(a, w, implementation="interpret",
     decode="bitplace"))(X_HUGE, W1), lambda: fp4_matmul(X_HUGE, W1, implementation="interpret", decode="bitplace"),
     _equal),
    ("matmul MXFP4 scales 2^100, x 1e10", lambda: fp4_matmul(X_MX, MX_BIG, implementation="interpret"),
     lambda: _w4a16_64(X_MX, MX_BIG), _close(1e-5)),
    ("matmul bitplace float64 NumPy x", lambda: fp4_matmul(X64, W1, implementation="interpret", decode="bitplace"),
     lambda: fp4_matmul(jnp.asarray(X64, jnp.float32), W1, implementation="interpret", decode="bitplace"), _equal),
    ("matmul interleaved float64 NumPy x", lambda: fp4_matmul(X64, W1, implementation="interpret"),
     lambda: fp4_matmul(jnp.asarray(X64, jnp.float32), W1, implementation="interpret"), _equal),
    ("matmul out_dtype float64", lambda: fp4_matmul(XQ, W1, implementation="interpret", out_dtype=np.float64),
     lambda: fp4_matmul(XQ, W1, implementation="interpret"), _equal),
    ("matmul bitplace subnormal x", lambda: fp4_matmul(XQ * SUB, W1, implementation="interpret", decode="bitplace"),
     lambda: jnp.zeros((4, 32), jnp.float32), _equal),
    ("nvfp4 dequantize float64 interpret",
     lambda: quant.nvfp4_dequantize(W1, dtype=np.float64, implementation="interpret"),
     lambda: quant.nvfp4_dequantize(W1, implementation="xla"), _equal),
    ("mxfp4 dequantize float64 interpret",
     lambda: quant.mxfp4_dequantize(quant.mxfp4_quantize(XQ), dtype=np.float64, implementation="interpret"),
     lambda: quant.mxfp4_dequantize(quant.mxfp4_quantize(XQ), implementation="xla"), _equal),
    ("razer dequantize float64 interpret",
     lambda: quant.razer_dequantize(quant.razer_quantize(XQ), dtype=np.float64, implementation="interpret"),
     lambda: quant.razer_dequantize(quant.razer_quantize(XQ), implementation="xla"), _equal),
    ("rht dequantize float64 interpret",
     lambda: quant.rht_dequantize(quant.rht_quantize(XQ, key=KEY, bits=4), dtype=np.float64,
                                  implementation="interpret"),
     lambda: quant.rht_dequantize(quant.rht_quantize(XQ, key=KEY, bits=4), implementation="interpret"), _equal),
    ("inquant unpack float64 interpret", lambda: inquant_unpack(inquant_pack(XQ, key=KEY), dtype=np.float64,
     implementation="interpret"), lambda: inquant_unpack(inquant_pack(XQ, key=KEY), implementation="interpret"),
     _equal),
    ("nvfp4 interpret float64 NumPy x", lambda: quant.nvfp4_quantize(X64, implementation="interpret").codes,
     lambda: quant.nvfp4_quantize(jnp.asarray(X64, jnp.float32), implementation="xla").codes, _equal),
    ("nvfp4 interpret subnormals + normals", lambda: quant.nvfp4_quantize(XQ.at[:, :8].set(SUB),
     implementation="interpret").codes, lambda: quant.nvfp4_quantize(XQ.at[:, :8].set(SUB), implementation="xla").codes,
     _equal),
    ("razer weight masked edge 3-D", lambda: quant.razer_quantize(MASK_X, variant="weight", implementation="interpret",
     block_sizes=QuantBlockSizes(4, 32, edge="mask")).codes,
     lambda: quant.razer_quantize(MASK_X, variant="weight", implementation="xla").codes, _equal),
]  # fmt: skip


def test_corpus_sizes():
    assert len({c[0] for c in REFUSED}) == len(REFUSED) >= 45
    assert len({c[0] for c in COMPUTED}) == len(COMPUTED) >= 20


@pytest.mark.parametrize("name,call,match", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_by_name(name, call, match):
    with pytest.raises(ValueError, match=match):
        call()


# float64 NumPy inputs are computed in float32 without x64: JAX says so when the kernel casts them (expected here)
@pytest.mark.filterwarnings("ignore:Explicitly requested dtype float64 requested in astype:UserWarning")
@pytest.mark.parametrize("name,call,expected,check", COMPUTED, ids=[c[0] for c in COMPUTED])
def test_computed_correctly(name, call, expected, check):
    check(call(), expected())


def test_scaled_forms_leave_ordinary_calls_bit_identical():
    """The scaled branches run only where an intermediate would overflow: an ordinary call's result is the
    unscaled computation bit for bit (eager and jitted, XLA and the kernels). The weight is a jit argument:
    XLA:CPU constant-folds a closed-over weight's interpreted kernel without flushing bfloat16 subnormals,
    which changes the bit-placement decode of codes +-0.5 (``matmul.py``'s docstring)."""
    x = jax.random.normal(KEY, (8, 512), jnp.float32)
    for method, fn in (("kron", hadamard.fwht_kron_xla), ("butterfly", hadamard.fwht_reference)):
        _equal(fwht(x, xla_method=method), fn(x))
        _equal(jax.jit(lambda a, m=method: fwht(a, xla_method=m))(x), fn(x))
    w = quant.nvfp4_quantize(jax.random.normal(KEY, (32, 64)))
    for decode in ("interleaved", "bitplace"):
        want = mm.fp4_matmul_pallas(XQ, w, interpret=True, decode=decode)
        _equal(fp4_matmul(XQ, w, implementation="interpret", decode=decode), want)
        _equal(jax.jit(lambda a, v, d=decode: fp4_matmul(a, v, implementation="interpret", decode=d))(XQ, w), want)
    assert mm.overflow_shift(jnp.float32(1e30), 16384, w) == 0 and mm.overflow_shift(jnp.float32(1e36), 64, w) > 0
    wx = dataclasses.replace(w)
    assert int(mm.overflow_shift(np.float32(3e38), 1 << 20, wx, np)) <= 126


def corpus_tables() -> str:
    lines = ["| # | refused call | message |", "|---|---|---|"]
    for i, (name, call, _) in enumerate(REFUSED, 1):
        try:
            call()
            msg = "(nothing raised)"
        except Exception as e:
            msg = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
        lines.append(f"| {i} | {name} | {msg.replace('|', '\\|')} |")
    lines += ["", "| # | computed call | result |", "|---|---|---|"]
    for i, (name, call, expected, check) in enumerate(COMPUTED, 1):
        try:
            check(call(), expected())
            msg = "correct, finite"
        except Exception as e:
            msg = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
        lines.append(f"| {i} | {name} | {msg} |")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(corpus_tables())
