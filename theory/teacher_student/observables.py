"""Teacher-student reconstruction: errors (eqs. BO, Gibbs), effective width, per-feature thresholds, jump detection."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, ArrayLike, Float, Int

from jaxwb.theory import validate as v
from jaxwb.theory.teacher_student.kernel import Kernel, cubic_kernel, g
from jaxwb.theory.teacher_student.solver import check_solver_params, default_tol, is_cubic, solve_fixed_point


def first_crossing(y: Float[ArrayLike, "*b n"], level: Float[ArrayLike, ""]) -> Int[Array, "*b"]:
    """Index of the first entry of ``y`` (..., n) above ``level`` along the last axis (n when none): the grid
    point where a jump is detected (a feature's overlap, or an AMP overlap read from the large-c side)."""
    above = jnp.asarray(y) > level
    return jnp.where(jnp.any(above, axis=-1), jnp.argmax(above, axis=-1), above.shape[-1])


def check_overlaps_amplitudes(m: ArrayLike, a2: ArrayLike) -> None:
    """Overlaps ``m`` (..., k), finite, against amplitudes ``a2`` (k,), non-negative and finite."""
    v.array("a2", a2, ndim=1, allow_empty=True)
    v.nonnegative("a2", a2)
    v.array("m", m, min_ndim=1, allow_empty=True)
    k = np.shape(a2)[0]
    if np.shape(m)[-1] != k:
        raise ValueError(f"m must have last axis k = {k} (the length of a2), got shape {tuple(np.shape(m))}")


def bayes_error(
    m: Float[ArrayLike, "*b k"], a2: Float[ArrayLike, " k"], kernel: Kernel | None = None
) -> Float[Array, "*b"]:
    """eps_BO = sum_i a2_i (1 - g(m_i)) (eq. BO). ``m`` (..., k)."""
    check_overlaps_amplitudes(m, a2)
    return jnp.sum(a2 * (1.0 - g(m, kernel)), axis=-1)


def gibbs_error(
    m: Float[ArrayLike, "*b k"], a2: Float[ArrayLike, " k"], kernel: Kernel | None = None, q_self: float = 1.0
) -> Float[Array, "*b"]:
    """Gibbs error sum_i a2_i (g(q_self) + g(1) - 2 g(q_i)): a posterior sample against the teacher.

    Nishimori: a sample's overlap with the teacher equals the overlap between two samples, q_i = m_i, and its
    self-overlap equals the teacher's, q_self = 1; then eps_G = 2 eps_BO (eq. Gibbs).
    """
    check_overlaps_amplitudes(m, a2)
    v.in_interval("q_self", q_self, 0.0, 1.0, closed_hi=True)
    return jnp.sum(a2 * (g(q_self, kernel) + g(1.0, kernel) - 2.0 * g(m, kernel)), axis=-1)


def effective_width(m: Float[ArrayLike, "*b k"], threshold: float = 0.5) -> Int[Array, "*b"]:
    """k_c = number of features with overlap above ``threshold`` (default 1/2 < m+(c_IT) = 0.645)."""
    v.array("m", m, min_ndim=1, allow_empty=True)
    v.finite("threshold", threshold)
    return jnp.sum(jnp.asarray(m) > threshold, axis=-1)


@partial(jax.jit, static_argnames=("iters", "cubic"))
def _thresholds(idx, a2, delta, kernel, lo, hi, iters, tol, max_iter, cubic=True):
    def one(i):
        def body(_, br):
            a, b = br
            mid = jnp.sqrt(a * b)
            learned = solve_fixed_point(mid, a2, delta, kernel, tol, max_iter, cubic=cubic).m[i] > 0.5
            return jnp.where(learned, a, mid), jnp.where(learned, mid, b)

        a, b = lax.fori_loop(0, iters, body, (jnp.asarray(lo, a2.dtype), jnp.asarray(hi, a2.dtype)))
        return jnp.sqrt(a * b)

    return jax.vmap(one)(idx)


def thresholds(
    idx: Int[ArrayLike, " F"],
    a2: Float[ArrayLike, " k"],
    delta: Float[ArrayLike, ""],
    *,
    kernel: Kernel | None = None,
    lo: float = 1e-3,
    hi: float = 1e12,
    iters: int = 44,
    tol: float | None = None,
    max_iter: int = 20000,
) -> Float[Array, " F"]:
    """Per-feature thresholds alpha_i: the alpha where feature ``idx`` (0-based, (F,)) first has m_i > 1/2.

    Bisection in log(alpha) on [lo, hi] with ``iters`` solves each, vmapped over features; returns (F,).
    (m_i is non-decreasing in alpha, a tested property, so the bisection is well posed.)
    """
    v.real("a2", a2)  # before the cast: a complex a2 must not lose its imaginary part
    a2 = jnp.asarray(a2, dtype=jnp.result_type(float))
    tol = default_tol(a2.dtype) if tol is None else tol
    check_solver_params(lo, a2, delta, tol, max_iter, alpha_name="lo")
    v.positive("lo", lo)
    v.check("hi", hi, lambda h: h > lo, f"> lo={lo}")
    v.array("idx", idx, ndim=(0, 1), integer=True)
    idx = jnp.atleast_1d(jnp.asarray(idx))
    v.check("idx", idx, lambda i: (i >= 0) & (i < a2.shape[0]), f"in [0, {a2.shape[0]})")
    return _thresholds(
        idx, a2, delta, kernel or cubic_kernel(), lo, hi, iters, tol, jnp.asarray(max_iter), cubic=is_cubic(kernel)
    )
