"""Coverage diagnostics (coarse learnability) and importance ESS, sampled and closed form (eq. ESS)."""

from __future__ import annotations

import jax.numpy as jnp
from jax.scipy.special import logsumexp

from theory import _validate as v
from theory.aldrift._util import _f


def log_coverage_sup(log_p, log_L):
    """log sup_grid p/L: the largest log ratio over grid values log_p (..., G), log_L (..., G) -> (...)."""
    return jnp.max(log_p - log_L, axis=-1)


def coverage_tail_mass(log_p, log_L, dx, K):
    """Pr_{s~p}[p(s)/L(s) > K] by a Riemann sum on a uniform 1-D grid of spacing dx. (..., G) -> (...)."""
    v.positive("K", K)
    v.positive("dx", dx)
    return jnp.sum(jnp.exp(log_p) * (log_p - log_L > jnp.log(K)), axis=-1) * dx


def gaussian_log_sup_ratio(m1, s1, m2, s2):
    """log sup_x N(x; m1, s1^2) / N(x; m2, s2^2) in 1-D (closed form): finite iff s2 > s1 (or equal means
    and variances). For s2 > s1: log(s2/s1) + (m1 - m2)^2 / (2 (s2^2 - s1^2)); +inf if s2 < s1."""
    gap = s2**2 - s1**2
    finite = jnp.log(s2 / s1) + (m1 - m2) ** 2 / (2.0 * jnp.where(gap > 0, gap, 1.0))
    same = (gap == 0) & (m1 == m2)
    return jnp.where(gap > 0, finite, jnp.where(same, 0.0, jnp.inf))


def gaussian_importance_ess(mean_p, var_p, mean_q, var_q, n: int, mean_var=0.0):
    """Population importance ESS fraction 1/E_q[(p/q)^2] (eq. ESS) for target p = N(mean_p, var_p I_n) and
    proposal q = N(mean_q, var_q I_n): the limit of ``importance_ess`` over N -> inf proposals. Per coordinate
        E_q[(p/q)^2] = var_q / (sqrt(var_p) sqrt(2 var_q - var_p)) exp((mean_p - mean_q)^2 / (2 var_q - var_p)),
    finite iff var_q > var_p / 2 (the fraction is 0 otherwise). ``mean_var`` > 0 averages the result over a
    random proposal mean mean_q + N(0, mean_var I) (a mean fitted on samples): the exponential factor becomes
    (1 + 2 mean_var/D)^(-1/2) exp(-(mean_p - mean_q)^2 / (D + 2 mean_var)) per coordinate, D = 2 var_q - var_p.
    mean_p, mean_q: (..., n), or (..., 1) / scalars for the same value in every coordinate; returns (...)."""
    v.positive_int("n", n)
    v.positive("var_p", var_p)
    v.positive("var_q", var_q)
    v.nonnegative("mean_var", mean_var)
    var_p, var_q, mean_var = _f(var_p), _f(var_q), _f(mean_var)
    D = 2.0 * var_q - var_p
    Ds = jnp.where(D > 0, D, 1.0)
    delta2 = jnp.atleast_1d(_f(mean_p) - _f(mean_q)) ** 2
    sq = jnp.sum(jnp.broadcast_to(delta2, jnp.broadcast_shapes(delta2.shape, (n,))), axis=-1)
    log_ess = (0.5 * n * (jnp.log(var_p) + jnp.log(Ds)) - n * jnp.log(var_q)
               - 0.5 * n * jnp.log1p(2.0 * mean_var / Ds) - sq / (Ds + 2.0 * mean_var))
    return jnp.where(D > 0, jnp.exp(log_ess), 0.0)


def importance_ess(log_w):
    """Kish effective sample size fraction (sum w)^2 / (N sum w^2) of importance weights given as logs (any
    shape, N = their count); 1 when the proposal is the target, ~1/E_q[(p/q)^2] otherwise."""
    lw = jnp.ravel(log_w)
    return jnp.exp(2.0 * logsumexp(lw) - logsumexp(2.0 * lw)) / lw.size
