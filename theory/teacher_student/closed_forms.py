"""Teacher-student reconstruction, closed forms for g = m^3: the learned branch m+(c), the per-feature
potential f(m; c) (eq. f), the information-theoretic threshold c_IT and the scaling laws built on it (eq. kc).

``C_IT`` is read from this module at call time by every user in the package (the audit's ``c_it_off_5pct``
mutant patches it here)."""

from __future__ import annotations

import math

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int

from jaxwb.theory import validate as v
from jaxwb.theory.teacher_student.kernel import Kernel, g, normaliser

SPINODAL_C = 4.0 / 3.0  # c where the non-trivial branch of g = m^3 appears (m+ = 1/2)


def m_plus(c: Float[ArrayLike, "*shape"]) -> Float[Array, "*shape"]:
    """Non-trivial (stable) branch for g = m^3: m+(c) = (1 + sqrt(1 - 4/(3c)))/2, NaN-free: 0 below c = 4/3."""
    v.finite("c", c)
    c = jnp.asarray(c, dtype=jnp.result_type(float))
    disc = 1.0 - 4.0 / (3.0 * jnp.maximum(c, SPINODAL_C))
    return jnp.where(c >= SPINODAL_C, 0.5 * (1.0 + jnp.sqrt(jnp.maximum(disc, 0.0))), 0.0)


def feature_potential(
    m: Float[ArrayLike, "*shape"], c: Float[ArrayLike, "*shape"], kernel: Kernel | None = None
) -> Float[Array, "*shape"]:
    """Per-feature potential f(m; c) = (m + log(1 - m) + c g(m)) / 2 with D frozen (eq. f); f(0) = 0.

    Its stationary points are exactly eq. FP (m/(1 - m) = c g'(m)); the learned branch wins when f(m+) > 0.
    ``m`` is an overlap in [0, 1) (log(1 - m) is undefined beyond), ``c`` finite.
    """
    v.in_interval("m", m, 0.0, 1.0)
    v.finite("c", c)
    m = jnp.asarray(m)
    return 0.5 * (m + jnp.log1p(-m) + c * g(m, kernel))


def _it_equation(m: float) -> float:
    # f(m+(c); c) with c = 1/(3 m (1 - m)) eliminated via 3 c m^2 - 3 c m + 1 = 0
    return m + math.log1p(-m) + m * m / (3.0 * (1.0 - m))


def information_threshold() -> tuple[float, float]:
    """(c_IT, m_jump) for g = m^3: the c where f(m+(c); c) = 0, and m+(c_IT). (1.4558, 0.645) by bisection.

    Pure Python floats (a constant); tested against scipy's brentq on the potential itself.
    """
    lo, hi = 0.5 + 1e-12, 1.0 - 1e-12  # _it_equation < 0 at m = 1/2, -> +inf as m -> 1
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _it_equation(mid) > 0:
            hi = mid
        else:
            lo = mid
    m = 0.5 * (lo + hi)
    return 1.0 / (3.0 * m * (1.0 - m)), m


C_IT, M_JUMP = information_threshold()


def threshold_closed_form(
    i: Int[ArrayLike, "*shape"], beta: Float[ArrayLike, ""], k: int, delta_eff: Float[ArrayLike, ""]
) -> Float[ArrayLike, "*shape"]:
    """alpha_i ~ c_IT Delta_eff / a2_i = c_IT Delta_eff Z i^(2 beta) (g = m^3, Delta_eff frozen). ``i`` 1-based."""
    v.check("delta_eff", delta_eff, lambda d: d > 0, "> 0")
    return C_IT * delta_eff * normaliser(k, beta) * jnp.asarray(i, jnp.result_type(float)) ** (2.0 * beta)


def k_c_closed_form(
    alpha: Float[ArrayLike, "*shape"], beta: Float[ArrayLike, ""], k: int, delta_eff: Float[ArrayLike, "*shape"]
) -> Float[Array, "*shape"]:
    """Effective width k_c ~ (alpha / (c_IT Delta_eff Z))^(1/(2 beta)), capped at k (eq. kc; g = m^3)."""
    v.nonnegative("alpha", alpha)
    return jnp.minimum((alpha / (C_IT * delta_eff * normaliser(k, beta))) ** (0.5 / beta), float(k))
