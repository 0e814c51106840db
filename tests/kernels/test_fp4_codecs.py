"""Integer-op codecs (pallas_kernels.quant.fp4) against ml_dtypes casts and exhaustive enumeration."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from jaxwb.pallas_kernels.quant import fp4 as _fp4
from tests.kernels.quant_np import e3m3_table as _e3m3_table


class _Jitted:
    """fp4's codecs under jit (eager op-by-op dispatch of the integer ops is slow on a shared CPU)."""

    def __getattr__(self, name):
        fn = getattr(_fp4, name)
        return jax.jit(fn) if name.startswith(("e2m1", "e4m3", "e3m3", "e8m0")) else fn


fp4 = _Jitted()

E2M1_VALUES = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], np.float32)
E2M1_MIDPOINTS = (E2M1_VALUES[1:] + E2M1_VALUES[:-1]) / 2  # 0.25 .. 5: the ties


def _float_probe(lo: float, hi: float, n: int, seed: int = 0) -> np.ndarray:
    """Log-uniform floats in [lo, hi] plus every float32 neighbour of the given grid's midpoints."""
    rng = np.random.default_rng(seed)
    return np.exp(rng.uniform(np.log(lo), np.log(hi), n)).astype(np.float32)


def test_e2m1_encode_matches_ml_dtypes_cast():
    rng = np.random.default_rng(0)
    v = np.concatenate(
        [
            rng.uniform(-7, 7, 20000).astype(np.float32),
            _float_probe(1e-4, 10, 5000),
            -_float_probe(1e-4, 10, 5000, seed=1),
            E2M1_MIDPOINTS,
            -E2M1_MIDPOINTS,
            np.nextafter(E2M1_MIDPOINTS, 0),
            np.nextafter(E2M1_MIDPOINTS, 9),
            E2M1_VALUES,
            -E2M1_VALUES,
            np.array([-0.0, 7.0, -100.0, 1e30, -1e-30], np.float32),
        ]
    ).astype(np.float32)
    ours = np.asarray(fp4.e2m1_encode(jnp.asarray(v)))
    cast = v.astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 0xF
    np.testing.assert_array_equal(ours, cast)


def test_e2m1_ties_round_to_even():
    """The documented tie rule: RNE (ml_dtypes), not the RaZeR authors' ties-down: 0.75 -> 1 and 1.75 -> 2
    (up), 0.25 -> 0, 1.25 -> 1, 2.5 -> 2, 3.5 -> 4, 5 -> 4 (to the even code)."""
    got = np.asarray(fp4.e2m1_decode(fp4.e2m1_encode(jnp.asarray(E2M1_MIDPOINTS))))
    np.testing.assert_array_equal(got, [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0])
    ties_down = E2M1_VALUES[:-1]
    assert (got != ties_down).sum() == 3  # the three midpoints where RNE rounds up (0.75, 1.75, 3.5)


def test_e2m1_decode_all_codes():
    codes = np.arange(16, dtype=np.uint8)
    ours = np.asarray(fp4.e2m1_decode(jnp.asarray(codes)))
    ref = codes.view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    np.testing.assert_array_equal(ours.view(np.uint32), ref.view(np.uint32))  # incl. -0.0 for code 8


def test_e4m3_encode_decode_match_ml_dtypes():
    grid = np.arange(1, 127, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    mids = ((grid[1:].astype(np.float64) + grid[:-1]) / 2).astype(np.float32)
    v = np.concatenate([_float_probe(2.0**-9, 448, 50000), grid, mids, np.nextafter(mids, 0), np.nextafter(mids, 1e3)])
    v = np.clip(v, 2.0**-9, 448).astype(np.float32)
    np.testing.assert_array_equal(
        np.asarray(fp4.e4m3_encode(jnp.asarray(v))), v.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    )
    codes = np.arange(127, dtype=np.uint8)
    np.testing.assert_array_equal(
        np.asarray(fp4.e4m3_decode(jnp.asarray(codes))), codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    )


def test_e3m3_against_enumeration():
    table = _e3m3_table()
    np.testing.assert_array_equal(np.asarray(fp4.e3m3_decode(jnp.arange(64))), table.astype(np.float32))
    assert table[1] == 2.0**-5 and table[62] == 28.0  # the RaZeR clamp range is representable
    grid = table[1:63]
    mids = (grid[1:] + grid[:-1]) / 2
    v = np.concatenate([_float_probe(2.0**-5, 28, 20000), grid, mids]).astype(np.float32)
    v = np.clip(v, 2.0**-5, 28).astype(np.float32)
    codes = np.asarray(fp4.e3m3_encode(jnp.asarray(v)))
    # brute force: nearest table entry, ties to the even code (even mantissa)
    d = np.abs(v[:, None].astype(np.float64) - table[None, :63])
    best = d.min(axis=1, keepdims=True)
    cand = d == best
    expect = np.where(cand.sum(1) > 1, np.argmax(cand & (np.arange(63) % 2 == 0), axis=1), np.argmax(cand, 1))
    np.testing.assert_array_equal(codes, expect)


def test_e8m0_round_up_and_decode():
    v = np.concatenate([_float_probe(2.0**-120, 2.0**120, 20000), 2.0 ** np.arange(-120, 121.0)])
    v = v.astype(np.float32)
    codes = np.asarray(fp4.e8m0_encode_round_up(jnp.asarray(v)))
    m, e = np.frexp(v.astype(np.float64))  # v = m 2^e, m in [0.5, 1)
    expect = np.where(m == 0.5, e - 1, e) + 127  # ceil(log2 v) + bias
    np.testing.assert_array_equal(codes, expect)
    dec = np.asarray(fp4.e8m0_decode(jnp.asarray(codes)))
    assert np.all(dec >= v) and np.all(dec < 2 * v)
    assert float(fp4.e8m0_decode(jnp.uint32(0))) == 2.0**-127


def test_pack_low_nibble_first_and_roundtrip():
    codes = np.arange(32, dtype=np.uint32).reshape(2, 16) % 16
    packed = np.asarray(fp4.pack_nibbles(jnp.asarray(codes)))
    assert packed.dtype == np.uint8 and packed.shape == (2, 8)
    np.testing.assert_array_equal(packed, (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8))
    np.testing.assert_array_equal(np.asarray(fp4.unpack_nibbles(jnp.asarray(packed))), codes)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_check_input_rejects_non_finite(bad):
    x = np.zeros((2, 16), np.float32)
    x[1, 3] = bad
    with pytest.raises(ValueError, match="non-finite"):
        fp4.check_input(x, 16)


def test_check_input_shape_and_dtype():
    with pytest.raises(ValueError, match="multiple of the block size 16"):
        fp4.check_input(np.zeros((2, 24), np.float32), 16)
    with pytest.raises(ValueError, match="floating-point"):
        fp4.check_input(np.zeros((2, 16), np.int32), 16)
    with pytest.raises(ValueError, match="at least one axis"):
        fp4.check_input(np.float32(1.0), 16)


def _div_rn_cases(n: int, seed: int):
    """float32 pairs (a >= 0, b > 0) from random bit patterns: normals and subnormals across the whole range,
    plus the quantizers' own cases (amax / 2688, amax / 168, 1 / g) and near-tie significands."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 0x7F800000, n, dtype=np.uint32).view(np.float32)
    b = rng.integers(1, 0x7F800000, n, dtype=np.uint32).view(np.float32)
    amax = (np.abs(rng.standard_normal(n)) * 2.0 ** rng.integers(-30, 30, n)).astype(np.float32)
    denom = rng.choice(np.array([2688, 168, 6, 7, 127, 1], np.float32), n)
    one = np.ones(n, np.float32)
    g = np.maximum(amax / denom, np.float32(2.0**-126))
    a = np.concatenate([a, amax, one, np.zeros(4, np.float32)]).astype(np.float32)
    return a, np.concatenate([b, denom, g, one[:4]]).astype(np.float32)


# NumPy's reference quotient of the random bit patterns overflows, and inf / inf is nan
@pytest.mark.filterwarnings("ignore:(overflow|invalid value) encountered in divide:RuntimeWarning")
def test_div_rn_is_the_ieee_quotient():
    """fp4.div_rn (integer long division) equals numpy's IEEE float32 division bit for bit wherever the
    quotient is a float32 normal (or zero): 60k random bit patterns, subnormal operands included."""
    a, b = _div_rn_cases(20_000, seed=0)
    want = a / b
    got = np.asarray(jax.jit(_fp4.div_rn)(a, b))
    normal = (want == 0) | ((np.abs(want) >= np.finfo(np.float32).tiny) & np.isfinite(want))
    assert normal.sum() > 40_000
    bad = np.flatnonzero(normal & (got.view(np.uint32) != want.view(np.uint32)))
    assert bad.size == 0, [(a[i], b[i], got[i], want[i]) for i in bad[:5]]
    # outside the normal range it falls back to the backend's float division (which may flush subnormals)
    np.testing.assert_array_equal(got[~normal], np.asarray(jax.jit(jnp.divide)(a, b))[~normal])
    # and so do inf and nan operands
    a2 = np.array([np.inf, np.nan, 1.0, 1.0, 0.0, np.inf], np.float32)
    b2 = np.array([2688.0, 2688.0, np.inf, np.nan, np.inf, np.inf], np.float32)
    np.testing.assert_array_equal(np.asarray(jax.jit(_fp4.div_rn)(a2, b2)), a2 / b2)


def test_div_rn_does_not_divide_in_float():
    """The quotient is computed with integer ops only: no float division in the jaxpr except the fallback
    branch's, so a backend's inexact float division cannot change a normal quotient."""
    lines = str(jax.make_jaxpr(_fp4.div_rn)(np.float32(1.0), np.float32(3.0))).splitlines()
    float_divs = [ln for ln in lines if "f32[] = div" in ln]
    assert len(float_divs) == 1, float_divs  # the fallback a / b
    assert any("u32[] = div" in ln for ln in lines)  # the long division


def test_div_rn_is_differentiable_like_a_division():
    """The integer long division carries no derivative of its own: a custom JVP gives the quotient rule, so a
    global scale amax / denom keeps d/d amax = 1 / denom (fake_quant's second-order grad goes through it)."""
    a, b = np.float32(3.0), np.float32(2688.0)
    da, db = jax.grad(_fp4.div_rn, argnums=(0, 1))(a, b)
    np.testing.assert_allclose([da, db], [1 / b, -a / b**2], rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda g: _fp4.div_rn(np.float32(1.0), g))(np.float32(0.25)), -16.0, rtol=1e-6)
