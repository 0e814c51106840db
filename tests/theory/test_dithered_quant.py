"""Closed forms of theory/dithered_quant.py against numerics, and the MSE bound of the dithered RHT
quantizer for
b >= 3 as a property over unit vectors, with the o(1) term measured (not assumed)."""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from jaxwb.sims.quantization.config import FAMILIES
from jaxwb.sims.quantization.run import dithered_mse, unit_vectors
from jaxwb.theory import dithered_quant as dq


def test_panter_dite_constant_and_gaussian_moment():
    # Panter-Dite: D ~ (1/12) (int p^(1/3))^3 4^-b for a unit Gaussian
    integral = integrate.quad(lambda t: stats.norm.pdf(t) ** (1 / 3), -np.inf, np.inf)[0]
    assert dq.PANTER_DITE == pytest.approx(integral**3 / 12, rel=1e-8)
    for lam in (0.1, 1 / 3, 0.45):
        num = integrate.quad(lambda t, lam=lam: np.exp(-(0.5 - lam) * t * t) / np.sqrt(2 * np.pi), -np.inf, np.inf)[0]
        assert float(dq.gaussian_exp_moment(lam)) == pytest.approx(num, rel=1e-5)
    # eq. (1) integrated against the Gaussian gives eq. (3)
    for b in (3, 6):
        num = integrate.quad(lambda t, b=b: stats.norm.pdf(t) * float(dq.dither_error_density(t, b)), -14, 14)[0]
        assert float(dq.high_resolution_mse(b)) == pytest.approx(num, rel=1e-5)
        assert float(dq.high_resolution_mse(b)) == pytest.approx(
            float(dq.finite_level_factor(b) * dq.mse_bound(b)), rel=1e-6
        )


def test_lloyd_max_values_below_the_dithered_bound():
    assert dq.LLOYD_MAX_GAUSSIAN[1] == pytest.approx(1 - 2 / math.pi)
    # 1-bit Lloyd-Max: reconstruction +-E|g| = sqrt(2/pi), MSE 1 - 2/pi (numerically)
    num = integrate.quad(lambda t: stats.norm.pdf(t) * (abs(t) - math.sqrt(2 / math.pi)) ** 2, -np.inf, np.inf)[0]
    assert num == pytest.approx(dq.LLOYD_MAX_GAUSSIAN[1], rel=1e-6)
    for b, v in dq.LLOYD_MAX_GAUSSIAN.items():
        assert v <= float(dq.mse_bound(b))


@given(k=st.sampled_from([1, 3, 10]), seed=st.integers(0, 2**20))
def test_rademacher_sums_are_below_the_gaussian_moment(k, seed):
    a = np.random.default_rng(seed).standard_normal(k)
    m = float(dq.rademacher_exp_moment(a))
    assert m <= float(dq.gaussian_exp_moment(1 / 3)) * (1 + 1e-6)
    if k == 1:
        assert m == pytest.approx(math.exp(1 / 3), rel=1e-6)


def test_bad_parameters_raise():
    with pytest.raises(ValueError, match="bits"):
        dq.mse_bound(0)
    with pytest.raises(ValueError, match="lam"):
        dq.gaussian_exp_moment(0.5)
    with pytest.raises(ValueError, match="moment"):
        dq.high_resolution_mse(3, -1.0)
    with pytest.raises(ValueError, match="at most 20"):
        dq.rademacher_exp_moment(np.ones(21))
    with pytest.raises(ValueError, match="d"):
        dq.uniform_grid_mse(4, 1)


_mse = jax.jit(partial(dithered_mse, n_signs=32, n_dither=8))


@settings(max_examples=12)
@given(
    family=st.sampled_from(FAMILIES),
    d=st.sampled_from([64, 512]),
    bits=st.integers(3, 8),
    seed=st.integers(0, 2**16),
)
def test_mse_bound_holds_for_b_at_least_3_with_measured_o1(family, d, bits, seed):
    """E||x - x_hat||^2 <= (pi sqrt3/2)(1 + o(1)) 4^-b for unit x; the o(1) is measured and must not
    exceed the
    finite-level term (N/(N-1))^2 - 1 of the high-resolution analysis (up to 4 Monte Carlo standard
    errors)."""
    xs, names = unit_vectors(jax.random.key(seed), d, 1)
    x = jnp.asarray(xs[names.index(family)])
    m, se = _mse(x, jax.random.key(seed + 1), bits)
    o1 = float(dq.o1_term(m, bits))
    allowed = float(dq.finite_level_factor(bits)) - 1.0
    assert o1 <= allowed + 4 * float(se / dq.mse_bound(bits)), (family, d, bits, o1, allowed)


def test_o1_term_vanishes_and_matches_the_exact_moment():
    """For e_1 every Hadamard coordinate has |t| = 1, so E exp(t^2/3) = e^(1/3) exactly: the measured MSE must
    approach (N/(N-1))^2 (pi/2) e^(1/3) 4^-b as b grows, and the Gaussian-like flat vector's o(1) must
    shrink."""
    d = 256
    e1 = jnp.zeros(d).at[0].set(1.0)
    flat = jnp.ones(d) / np.sqrt(d)
    rel, o1 = [], []
    for b in (3, 5, 8):
        m, _ = _mse(e1, jax.random.key(b), b)
        rel.append(float(m / dq.high_resolution_mse(b, math.exp(1 / 3))) - 1)
        m, _ = _mse(flat, jax.random.key(10 + b), b)
        o1.append(float(dq.o1_term(m, b)))
    assert abs(rel[-1]) < 0.03, rel  # high-resolution prediction exact to 3% at b = 8
    assert abs(rel[-1]) < abs(rel[0]), rel
    assert abs(o1[-1]) < 0.05 and o1[0] > o1[-1], o1


def test_moment_quadrature_and_sphere_moment():
    """The Gauss-Hermite moment equals exact enumeration; the sphere's 1F1 equals Monte Carlo and tends to sqrt 3;
    a flat vector's Rademacher moment lies between the sphere's and the Gaussian's (the finite-d RHT/dense gap)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(12)
    assert dq.rademacher_exp_moment_quadrature(a) == pytest.approx(float(dq.rademacher_exp_moment(a)), rel=1e-6)
    u = rng.standard_normal((200_000, 8))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    assert dq.sphere_exp_moment(8) == pytest.approx(np.mean(np.exp(8 * u[:, 0] ** 2 / 3)), rel=5e-3)
    assert dq.sphere_exp_moment(10**6) == pytest.approx(np.sqrt(3.0), rel=1e-5)
    flat = dq.rademacher_exp_moment_quadrature(np.ones(64))
    assert dq.sphere_exp_moment(64) < flat < np.sqrt(3.0)
    for bad in (lambda: dq.sphere_exp_moment(1), lambda: dq.rademacher_exp_moment_quadrature(np.zeros(3))):
        with pytest.raises(ValueError):
            bad()
