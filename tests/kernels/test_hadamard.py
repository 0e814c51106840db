"""FWHT: the butterfly reference against scipy's Hadamard matrix, and the Pallas kernel (interpret mode)
against
the reference."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxwb.pallas_kernels.quant.hadamard import (
    GPU_BLOCK_SIZES,
    HadamardBlockSizes,
    fwht,
    fwht_reference,
    hadamard_matrix,
    kron_split,
)

LEADS = [(), (3,), (2, 3)]


@settings(max_examples=10)
@given(n=st.integers(0, 10), lead=st.sampled_from(LEADS), seed=st.integers(0, 2**16))
def test_reference_equals_scipy_hadamard(n, lead, seed):
    d = 2**n
    x = np.random.default_rng(seed).standard_normal((*lead, d))
    expected = x @ scipy.linalg.hadamard(d) / np.sqrt(d)
    with jax.enable_x64(True):
        got = np.asarray(fwht_reference(jnp.asarray(x)))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@settings(max_examples=8)
@given(n=st.sampled_from([0, 3, 7, 12]), seed=st.integers(0, 2**16))
def test_reference_is_orthonormal_and_self_inverse(n, seed):
    d = 2**n
    x = jnp.asarray(np.random.default_rng(seed).standard_normal((2, d)), jnp.float32)
    y = fwht_reference(x)
    np.testing.assert_allclose(np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-5)
    np.testing.assert_allclose(fwht_reference(y), x, atol=1e-5 * np.sqrt(n + 1))


def test_hadamard_matrix_is_scipy():
    for d in (1, 2, 16, 128):
        np.testing.assert_array_equal(hadamard_matrix(d, normalize=False), scipy.linalg.hadamard(d))


@pytest.mark.parametrize("d,lead", [(4, (5,)), (32, (2, 3)), (4096, (2,))])
def test_pallas_interpret_matches_reference(d, lead):
    x = jax.random.normal(jax.random.key(d), (*lead, d), jnp.float32)
    got = fwht(x, implementation="interpret")
    assert got.shape == x.shape and got.dtype == x.dtype
    np.testing.assert_allclose(got, fwht_reference(x), rtol=0, atol=2e-6 * np.sqrt(np.log2(d)))


def test_pallas_small_tile_blocks_and_bf16():
    # a small dense_max / tile forces the Kronecker path at d = 512 = 16 x 32
    blocks = HadamardBlockSizes(dense_max=16, tile=32, block_rows=8)
    x = jax.random.normal(jax.random.key(1), (2, 512), jnp.float32)
    got = fwht(x, implementation="interpret", block_sizes=blocks)
    np.testing.assert_allclose(got, fwht_reference(x), atol=1e-5)
    xb = x.astype(jnp.bfloat16)
    yb = fwht(xb[:, :64], implementation="interpret")
    assert yb.dtype == jnp.bfloat16
    np.testing.assert_allclose(
        np.asarray(yb, np.float32), np.asarray(fwht_reference(xb[:, :64]), np.float32), rtol=2e-2, atol=2e-2
    )


def test_kron_split():
    assert kron_split(256) == (16, 16)
    assert kron_split(4096) == (32, 128)
    assert kron_split(32768) == (256, 128)
    assert kron_split(4096, GPU_BLOCK_SIZES) == (64, 64)  # the GPU default's 64 x 64 tiles
    assert kron_split(32768, GPU_BLOCK_SIZES) == (256, 128)  # b raised so that a <= 256
    assert kron_split(1024, GPU_BLOCK_SIZES) == kron_split(1024)  # below 4096 the defaults agree
    with pytest.raises(ValueError, match="32768"):
        kron_split(65536)


def test_default_implementation_on_cpu_is_reference():
    x = jnp.arange(8.0)
    np.testing.assert_array_equal(fwht(x), fwht_reference(x))


@pytest.mark.parametrize("bad", [12, 3, 0])
def test_non_power_of_two_rejected(bad):
    with pytest.raises(ValueError, match="power of two" if bad else "non-empty"):
        fwht(jnp.ones((2, bad)))


def test_bad_arguments_rejected():
    with pytest.raises(ValueError, match="implementation"):
        fwht(jnp.ones(8), implementation="cuda")
    with pytest.raises(ValueError, match="32768"):
        fwht(jnp.ones((1, 65536)), implementation="interpret")
    with pytest.raises(ValueError, match="block_sizes.tile"):
        fwht(jnp.ones(64), implementation="interpret", block_sizes=HadamardBlockSizes(tile=24))
