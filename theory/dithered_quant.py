"""Closed forms for dithered quantization after one randomized Hadamard transform
(``papers/quantization.md``).

Setting: a vector x in R^d, y = H D x (normalized Walsh-Hadamard H, random signs D), sigma = ||x||/sqrt(d),
b bits per coordinate, N = 2^b levels. The quantizer (``pallas_kernels/quant/rht.py``) companded each
coordinate with G(t) = Phi(t/sqrt 3), t = y/sigma (G' proportional to the N(0,1) density^(1/3), the
Panter-Dite optimal point density for a Gaussian source), then rounds on a grid of step delta = 1/(N-1)
shifted by one uniform dither u per vector.

High-resolution analysis (each equation is one function below):

  (1) subtractive dither: per coordinate E_u err^2 ~ (delta^2 / 12) sigma^2 / G'(t)^2
      with 1/G'(t)^2 = 6 pi exp(t^2/3)                                         -> ``dither_error_density``
  (2) E_g exp(lam g^2) = 1/sqrt(1 - 2 lam) for g ~ N(0,1), lam < 1/2; at lam = 1/3 it is sqrt 3
                                                                              -> ``gaussian_exp_moment``
      and a Rademacher sum t = sum_j eps_j a_j (sum a_j^2 = 1), the law of every coordinate of H D x / sigma,
      satisfies E exp(lam t^2) <= E exp(lam g^2) (Hoeffding's lemma inside a Gaussian mixture), so the
      Gaussian is the worst case for every unit vector x and every d.
  (3) summing d coordinates: E||x - x_hat||^2 <= (delta^2/12) 6 pi sqrt(3) ||x||^2 / d * d
                                             = (N/(N-1))^2 (pi sqrt(3)/2) 4^-b ||x||^2
                                                                              -> ``high_resolution_mse``
  (4) the paper's statement: E||x - x_hat||^2 <= (pi sqrt(3)/2 + o(1)) 4^-b ||x||^2 uniformly over unit x and
      d as b grows                                                              -> ``mse_bound``
      (the Panter-Dite constant for a unit-variance Gaussian; TurboQuant's D_mse bound is the same number).
The o(1) has two parts: the finite-level factor (N/(N-1))^2 - 1 = O(2^-b) of (3) and the high-resolution
error of (1) in the few wide tail cells. The tests and the sim *measure* it (``o1_term``), they do not
assume it.

All functions accept Python numbers or arrays (jit/vmap compatible); bits must be finite and >= 1; bad
parameters raise ValueError naming them (under ``jaxwb.theory.checked`` also for traced values).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from jaxwb.theory import validate as v

PANTER_DITE = math.pi * math.sqrt(3.0) / 2.0  # ~ 2.7207: Gaussian high-resolution constant (sqrt 3 pi / 2)

# Lloyd-Max (Max 1960) optimal MSE of a unit-variance Gaussian with 2^b levels, b = 1..4: the non-dithered
# TurboQuant-MSE per-coordinate distortion (literature values; 1 - 2/pi exactly for b = 1).
LLOYD_MAX_GAUSSIAN = {1: 1.0 - 2.0 / math.pi, 2: 0.1175, 3: 0.03454, 4: 0.009497}


def _bits(bits) -> None:
    v.check("bits", bits, lambda a: a >= 1, ">= 1", finite=True)


def mse_bound(bits: Float[ArrayLike, "*b"]) -> Float[Array, "*b"]:
    """(pi sqrt(3) / 2) 4^-b: the asymptotic MSE of a unit vector (eq. 4). ``bits`` scalar or array."""
    _bits(bits)
    return PANTER_DITE * jnp.power(4.0, -jnp.asarray(bits, jnp.float32))


def finite_level_factor(bits: Float[ArrayLike, "*b"]) -> Float[Array, "*b"]:
    """(N/(N-1))^2 with N = 2^b: the cost of covering [0, 1] with N dithered cells of step 1/(N-1) (eq. 3)."""
    _bits(bits)
    n = jnp.power(2.0, jnp.asarray(bits, jnp.float32))
    return (n / (n - 1.0)) ** 2


def gaussian_exp_moment(lam: Float[ArrayLike, "*b"]) -> Float[Array, "*b"]:
    """E exp(lam g^2) = 1/sqrt(1 - 2 lam) for g ~ N(0, 1) (eq. 2); requires finite lam < 1/2."""
    v.check("lam", lam, lambda a: a < 0.5, "< 1/2", finite=True)
    return 1.0 / jnp.sqrt(1.0 - 2.0 * jnp.asarray(lam, jnp.float32))


def dither_error_density(t: Float[ArrayLike, "*b"], bits: Float[ArrayLike, "*b"]) -> Float[Array, "*b"]:
    """(delta^2 / 12) / G'(t)^2 = (delta^2 / 12) 6 pi exp(t^2 / 3): dither-averaged squared error of one
    coordinate at t = y/sigma in units of sigma^2, to leading order in delta = 1/(2^b - 1) (eq. 1). ``t``
    finite (the density grows like exp(t^2/3): float32 overflows to inf past |t| ~ 16, where the
    high-resolution approximation means nothing anyway)."""
    _bits(bits)
    v.finite("t", t)
    delta = 1.0 / (jnp.power(2.0, jnp.asarray(bits, jnp.float32)) - 1.0)
    t = jnp.asarray(t, jnp.float32)
    return delta**2 / 12.0 * 6.0 * math.pi * jnp.exp(t * t / 3.0)


def high_resolution_mse(
    bits: Float[ArrayLike, "*b"], moment: Float[ArrayLike, "*b"] = math.sqrt(3.0)
) -> Float[Array, "*b"]:
    """(N/(N-1))^2 (pi/2) 4^-b E exp(t^2/3) per unit ||x||^2 (eq. 3); ``moment`` = E exp(t^2/3), at most
    sqrt 3 (the Gaussian value) for every x, which gives (N/(N-1))^2 (pi sqrt(3)/2) 4^-b."""
    v.positive("moment", moment)
    return finite_level_factor(bits) * (math.pi / 2.0) * jnp.power(4.0, -jnp.asarray(bits, jnp.float32)) * moment


def rademacher_exp_moment(a: Float[ArrayLike, " k"], lam: Float[ArrayLike, ""] = 1.0 / 3.0) -> Float[Array, ""]:
    """Exact E exp(lam (sum_j eps_j a_j)^2) by enumerating the 2^k sign patterns of a short vector ``a``
    (1 <= k <= 20, finite, not all zero), normalized so sum a_j^2 = 1 (eq. 2's left side; compare with
    ``gaussian_exp_moment(lam)``). ``lam`` finite."""
    v.array("a", a, ndim=1)
    k = np.shape(a)[-1]
    if k > 20:
        raise ValueError(f"a must have at most 20 entries for exact enumeration, got {k}")
    v.check("a", a, lambda x: (x != 0).any(), "not all zero (it is normalized to unit norm)")
    v.normal("a", a)
    v.finite("lam", lam)
    a = jnp.asarray(a, jnp.float32)
    # scaled form where sum a_j^2 overflows or underflows: a / max|a| first (same floats elsewhere)
    nrm = jnp.linalg.norm(a, axis=-1, keepdims=True)
    bad = ~(jnp.isfinite(nrm) & (nrm >= 1e-18))
    a = a / jnp.where(bad, jnp.max(jnp.abs(a), axis=-1, keepdims=True), 1.0)
    a = a / jnp.linalg.norm(a, axis=-1, keepdims=True)
    bits = (jnp.arange(2**k)[:, None] >> jnp.arange(k)[None, :]) & 1
    signs = 1.0 - 2.0 * bits.astype(jnp.float32)
    t = signs @ a
    return jnp.mean(jnp.exp(lam * t * t))


def o1_term(measured_mse: Float[ArrayLike, "*b"], bits: Float[ArrayLike, "*b"]) -> Float[Array, "*b"]:
    """Measured MSE / ((pi sqrt(3)/2) 4^-b) - 1: the o(1) of eq. (4) for a unit vector."""
    v.nonnegative("measured_mse", measured_mse)
    return jnp.asarray(measured_mse) / mse_bound(bits) - 1.0


def uniform_grid_mse(bits: Float[ArrayLike, "*b"], d: Float[ArrayLike, "*b"]) -> Float[Array, "*b"]:
    """For comparison: a plain (uncompanded) dithered uniform grid covering +-sqrt(2 ln d) sigma, the typical
    largest coordinate, has MSE ~ (2 ln d / 3) 4^-b: it grows with d, the compander removes the log d."""
    _bits(bits)
    v.check("d", d, lambda a: a >= 2, ">= 2", finite=True)
    return 2.0 * jnp.log(jnp.asarray(d, jnp.float32)) / 3.0 * jnp.power(4.0, -jnp.asarray(bits, jnp.float32))


def rademacher_exp_moment_quadrature(a: Float[ArrayLike, " d"], lam: float = 1.0 / 3.0, *, nodes: int = 200) -> float:
    """E exp(lam t^2) for the Rademacher sum t = sum_j eps_j a_j (a normalized to unit norm) of ANY length d, in
    float64: the Gaussian-mixture identity exp(lam t^2) = E_g exp(sqrt(2 lam) g t) and E_eps exp(s t) =
    prod_j cosh(s a_j) give E_g prod_j cosh(sqrt(2 lam) g a_j), a one-dimensional Gauss-Hermite integral (eq. 2's
    left side for the law of every coordinate of H D x / sigma; ``rademacher_exp_moment`` enumerates short ``a``).
    ``lam`` finite in [0, 1/2). NumPy, not traceable."""
    arr = np.asarray(a, np.float64)
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)) or not np.any(arr != 0):
        raise ValueError(f"a must be a finite, non-zero 1-D array, got shape {arr.shape}")
    if not (math.isfinite(lam) and 0.0 <= lam < 0.5):
        raise ValueError(f"lam must be finite in [0, 1/2), got {lam}")
    arr = arr / np.linalg.norm(arr)
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    s = math.sqrt(2.0 * lam) * x[:, None] * np.abs(arr)[None, :]
    logcosh = s + np.log1p(np.exp(-2.0 * s)) - math.log(2.0)  # log cosh(s), s >= 0, no overflow
    return float(np.sum(w * np.exp(np.sum(logcosh, axis=1))))


def sphere_exp_moment(d: int, lam: float = 1.0 / 3.0) -> float:
    """E exp(lam t^2) for one coordinate t = sqrt(d) u_1 of a uniform point u on the unit sphere S^(d-1) (the law
    of every coordinate of a Haar-rotated unit vector, scaled by 1/sigma): t^2 / d ~ Beta(1/2, (d-1)/2), so the
    moment is the confluent hypergeometric 1F1(1/2; d/2; lam d) (scipy), -> 1/sqrt(1 - 2 lam) as d grows.
    ``d`` an integer >= 2, ``lam`` finite in [0, 1/2)."""
    from scipy import special

    if not isinstance(d, (int, np.integer)) or d < 2:
        raise ValueError(f"d must be an integer >= 2, got {d!r}")
    if not (math.isfinite(lam) and 0.0 <= lam < 0.5):
        raise ValueError(f"lam must be finite in [0, 1/2), got {lam}")
    return float(special.hyp1f1(0.5, d / 2.0, lam * d))
