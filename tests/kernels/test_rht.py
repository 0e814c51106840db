"""Dithered RHT quantizer: kernel (interpret mode) vs reference, the scalings' defining properties, errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxwb.pallas_kernels.quant.hadamard import fwht_reference
from jaxwb.pallas_kernels.quant.rht import (
    SCALINGS,
    RHTQuantized,
    compand,
    decode_levels,
    encode_levels,
    erfinv,
    rht_dequantize,
    rht_quantize,
    rht_randomness,
)


def _pre_floor(x, key, bits):
    """z/delta + u of the reference, to locate decision-boundary ties."""
    d = x.shape[-1]
    signs, u = rht_randomness(key, d, x.shape[:-1])
    y = fwht_reference(x * signs)
    sigma = jnp.sqrt(jnp.sum(x * x, -1, keepdims=True) / d)
    return compand(y / sigma) * (2**bits - 1) + u[..., None]


@pytest.mark.parametrize(
    "shape,bits,scaling", [((5, 16), 1, "turbo"), ((2, 3, 64), 4, "unbiased"), ((3, 1024), 8, "mse")]
)
def test_interpret_matches_reference(shape, bits, scaling):
    key = jax.random.key(sum(shape))
    x = 3.0 * jax.random.normal(jax.random.key(7), shape, jnp.float32)
    ref = rht_quantize(x, key=key, bits=bits, scaling=scaling, implementation="xla")
    ker = rht_quantize(x, key=key, bits=bits, scaling=scaling, implementation="interpret")
    assert ker.codes.dtype == jnp.uint8 and ker.codes.shape == shape and ker.scale.shape == shape[:-1]
    diff = np.asarray(ker.codes, np.int32) - np.asarray(ref.codes, np.int32)
    v = np.asarray(_pre_floor(x, key, bits))
    tie = np.abs(v - np.round(v)) < 1e-4 * 2**bits
    assert np.all(diff[~tie] == 0), "codes differ away from a decision boundary"
    assert np.all(np.abs(diff) <= 1)
    assert diff.astype(bool).mean() < 1e-3
    np.testing.assert_allclose(ker.scale, ref.scale, rtol=1e-4)
    xr = rht_dequantize(ref, implementation="xla")
    xk = rht_dequantize(ref, implementation="interpret")
    np.testing.assert_allclose(xk, xr, rtol=0, atol=1e-5 * float(jnp.max(jnp.abs(xr))))


@settings(max_examples=5)
@given(seed=st.integers(0, 2**20), bits=st.integers(1, 8), d=st.sampled_from([4, 512]))
def test_scaling_properties(seed, bits, d):
    k1, k2 = jax.random.split(jax.random.key(seed))
    x = jax.random.normal(k1, (4, d)) * jnp.array([[1e-3], [1.0], [10.0], [1e3]])
    err, inner = {}, {}
    for s in SCALINGS:
        q = rht_quantize(x, key=k2, bits=bits, scaling=s)
        xh = rht_dequantize(q)
        err[s] = np.asarray(jnp.sum((xh - x) ** 2, -1))
        inner[s] = np.asarray(jnp.sum(xh * x, -1))
        assert q.bits == bits and q.scaling == s
    sq = np.asarray(jnp.sum(x * x, -1))
    # least-squares scale: never worse than the turbo scale on the same codes (same key => same codes)
    assert np.all(err["mse"] <= err["turbo"] * (1 + 1e-4) + 1e-6 * sq)
    # EDEN's unbiased scale: <x_hat, x> = ||x||^2 exactly
    np.testing.assert_allclose(inner["unbiased"], sq, rtol=1e-4)


def test_codes_cover_levels_and_roundtrip_error_shrinks_4x_per_bit():
    x = jax.random.normal(jax.random.key(0), (64, 256))
    keys = jax.random.split(jax.random.key(1), 8)
    mses = []
    for b in (5, 6, 7, 8):
        e = [
            jnp.mean(jnp.sum((rht_dequantize(rht_quantize(x, key=k, bits=b)) - x) ** 2, -1) / jnp.sum(x * x, -1))
            for k in keys
        ]
        q = rht_quantize(x, key=keys[0], bits=b)
        assert int(q.codes.max()) <= 2**b - 1
        mses.append(float(np.mean(e)))
    ratios = np.array(mses[:-1]) / np.array(mses[1:])
    assert np.all((ratios > 3.5) & (ratios < 4.5)), ratios


def test_decode_inverts_encode_cellwise():
    # every t lands in the cell it is reconstructed from: |G(t) - G(q)| <= delta (one cell)
    t = jnp.linspace(-6, 6, 2001)
    for bits in (1, 3, 8):
        for u in (0.0, 0.3, 0.999):
            uu = jnp.full_like(t, u)
            q = decode_levels(encode_levels(t, uu, bits), uu, bits)
            assert float(jnp.max(jnp.abs(compand(t) - compand(q)))) <= 1.0 / (2**bits - 1) + 1e-6


def test_same_key_same_result_and_zero_vector():
    x = jnp.concatenate([jnp.zeros((1, 32)), jnp.ones((1, 32))])
    for s in SCALINGS:
        a = rht_quantize(x, key=jax.random.key(3), bits=3, scaling=s)
        b = rht_quantize(x, key=jax.random.key(3), bits=3, scaling=s)
        np.testing.assert_array_equal(a.codes, b.codes)
        xh = rht_dequantize(a)
        assert np.all(np.isfinite(xh)) and float(jnp.abs(xh[0]).max()) == 0.0
    assert isinstance(jax.jit(lambda x: rht_quantize(x, key=jax.random.key(0), bits=2))(x), RHTQuantized)


def test_bad_arguments_rejected():
    x = jnp.ones((2, 32))
    k = jax.random.key(0)
    for bits in (0, 9, 2.5):
        with pytest.raises(ValueError, match="bits"):
            rht_quantize(x, key=k, bits=bits)
    with pytest.raises(ValueError, match="scaling"):
        rht_quantize(x, key=k, bits=2, scaling="eden")
    with pytest.raises(ValueError, match="power of two"):
        rht_quantize(jnp.ones((2, 24)), key=k, bits=2)
    with pytest.raises(ValueError, match=">= 16"):
        rht_quantize(jnp.ones((2, 8)), key=k, bits=2, implementation="interpret")
    with pytest.raises(ValueError, match="RHTQuantized"):
        rht_dequantize(x)


@settings(max_examples=200, deadline=None)
@given(st.floats(-1.0, 1.0, width=32, exclude_min=True, exclude_max=True))
def test_erfinv_matches_scipy(x):
    """The kernel's own erfinv (Giles' float32 fit, lowerable by Pallas/Triton) against scipy's float64
    erfinv: relative error < 6e-6 (Giles' stated accuracy) everywhere in (-1, 1)."""
    from scipy.special import erfinv as erfinv64

    want = erfinv64(np.float64(np.float32(x)))
    got = float(erfinv(jnp.float32(x)))
    assert abs(got - want) <= 6e-6 * abs(want) + 1e-12


def test_erfinv_endpoints_and_inverse():
    """+-inf at +-1, 0 at 0, and erf(erfinv(x)) = x to float32 accuracy on a grid (jax's erf is independent)."""
    e = np.asarray(erfinv(jnp.asarray([-1.0, 0.0, 1.0], jnp.float32)))
    assert e[0] == -np.inf and e[1] == 0.0 and e[2] == np.inf
    x = jnp.linspace(-0.999, 0.999, 4001, dtype=jnp.float32)
    np.testing.assert_allclose(np.asarray(jax.scipy.special.erf(erfinv(x))), np.asarray(x), atol=2e-6)
