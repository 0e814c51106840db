"""Teacher-student reconstruction: the potential Phi (eq. Phi), its differences, and each feature's best branch."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, ArrayLike, Float

from jaxwb.theory import validate as v
from jaxwb.theory.teacher_student.closed_forms import SPINODAL_C
from jaxwb.theory.teacher_student.kernel import Kernel, cubic_kernel, g, g_prime


def f_of_m(m, u, c, kernel):
    """f(m; c) (eq. f) from m and u = 1 - m (so that log(1 - m) keeps its precision for m -> 1)."""
    return 0.5 * (m + jnp.log(u) + c * g(m, kernel))


def one_minus_g(m, u, kernel):
    """1 - g(m) = u sum_l c2_l (1 + m + ... + m^(l-1)) with u = 1 - m: no cancellation as m -> 1."""
    c2 = kernel.c2
    tail = jnp.cumsum(c2[::-1])[::-1][1:]
    return u * jnp.polyval(tail[::-1], m)


def _learned_branch(c):
    """Non-trivial branch of g = m^3 as (m, u = 1 - m): m+(c), u+ = (2/(3c))/(1 + sqrt(1 - 4/(3c))), c >= 4/3."""
    cc = jnp.maximum(c, SPINODAL_C)
    r = jnp.sqrt(jnp.maximum(1.0 - 4.0 / (3.0 * cc), 0.0))
    return 0.5 * (1.0 + r), (2.0 / (3.0 * cc)) / (1.0 + r)


def best_branch(
    c: Float[ArrayLike, "*shape"], kernel: Kernel | None = None, *, cubic: bool = True, n_inner: int = 400
) -> tuple[Float[Array, "*shape"], Float[Array, "*shape"]]:
    """Per-feature maximiser of f(.; c) with D frozen (eq. f), as (m, u = 1 - m); broadcasts over ``c``.

    Cubic kernel: the larger of f(0) = 0 and f(m+(c); c) (learned iff c > c_IT). Other kernels: the fixed points
    of s <- c g'(s/(1+s)) reached from s = 0 and from s = c g'(1) (the smallest and the largest: the map is
    monotone), ``n_inner`` iterations each, the one with the larger f kept.
    """
    kernel = kernel or cubic_kernel()
    c = jnp.asarray(c)
    if cubic:
        m_hi, u_hi = _learned_branch(c)
        hi = (c >= SPINODAL_C) & (f_of_m(m_hi, u_hi, c, kernel) > 0.0)
        return jnp.where(hi, m_hi, 0.0), jnp.where(hi, u_hi, 1.0)

    def fixed(s0):
        s = lax.fori_loop(0, n_inner, lambda _, s: c * g_prime(s / (1.0 + s), kernel), s0)
        return s / (1.0 + s), 1.0 / (1.0 + s)

    m_lo, u_lo = fixed(jnp.zeros_like(c))
    m_hi, u_hi = fixed(c * g_prime(jnp.ones_like(c), kernel))
    hi = f_of_m(m_hi, u_hi, c, kernel) > f_of_m(m_lo, u_lo, c, kernel)
    return jnp.where(hi, m_hi, m_lo), jnp.where(hi, u_hi, u_lo)


def potential_gap(
    m_a: Float[ArrayLike, "*b k"],
    u_a: Float[ArrayLike, "*b k"],
    e_a: Float[ArrayLike, "*b"],
    m_b: Float[ArrayLike, "*b k"],
    u_b: Float[ArrayLike, "*b k"],
    e_b: Float[ArrayLike, "*b"],
    alpha: Float[ArrayLike, ""],
    delta: Float[ArrayLike, ""],
) -> Float[Array, "*b"]:
    """Phi(a) - Phi(b) for two configurations (eq. Phi, m-form), with D = delta + e and u = 1 - m per feature.

    Phi = sum_i (m_i + log(1 - m_i))/2 - (alpha/2) log D; the log D difference is log1p((e_a - e_b)/(delta + e_b))
    so that a large alpha does not swamp a small gap. (``phi_gap`` on the feature sums.)
    """
    return phi_gap(
        jnp.sum(0.5 * (m_a + jnp.log(u_a)), axis=-1),
        e_a,
        jnp.sum(0.5 * (m_b + jnp.log(u_b)), axis=-1),
        e_b,
        alpha,
        delta,
    )


def phi_gap(
    t_a: Float[ArrayLike, "*b"],
    e_a: Float[ArrayLike, "*b"],
    t_b: Float[ArrayLike, "*b"],
    e_b: Float[ArrayLike, "*b"],
    alpha: Float[ArrayLike, ""],
    delta: Float[ArrayLike, ""],
) -> Float[Array, "*b"]:
    """Phi(a) - Phi(b) from the feature sums t = sum_i (m_i + log(1 - m_i))/2 and the errors e (eq. Phi):
    t_a - t_b - (alpha/2) log((delta + e_a)/(delta + e_b)), the log as log1p((e_a - e_b)/(delta + e_b))."""
    if v.is_concrete((t_a, e_a, t_b, e_b, alpha, delta)):  # eager calls only: the solver's jitted loop calls it
        # on every step, where a checkify check (under theory.checked) would refuse the vmapped while loop
        for name, x in (("t_a", t_a), ("t_b", t_b)):
            v.finite(name, x)
        for name, x in (("e_a", e_a), ("e_b", e_b)):
            v.nonnegative(name, x)
        v.nonnegative("alpha", alpha)
        v.positive("delta", delta)
    # ArrayLike includes bool, for which numpy's stubs define no subtraction; the values are checked numbers
    return t_a - t_b - 0.5 * alpha * jnp.log1p((e_a - e_b) / (delta + e_b))  # type: ignore[operator]


def potential(
    m: Float[ArrayLike, " k"],
    alpha: Float[ArrayLike, ""],
    a2: Float[ArrayLike, " k"],
    delta: Float[ArrayLike, ""],
    kernel: Kernel | None = None,
) -> Float[Array, ""]:
    """Global potential Phi(m) = sum_i (m_i + log(1 - m_i))/2 - (alpha/2) log D(m) (eq. Phi, m-form)."""
    v.array("m", m, ndim=1)
    v.array("a2", a2, ndim=1)
    v.shape("a2", a2, (np.shape(m)[0],))
    v.nonnegative("alpha", alpha)
    v.positive("delta", delta)
    m = jnp.asarray(m)
    d = delta + jnp.sum(a2 * (1.0 - g(m, kernel)))
    return jnp.sum(0.5 * (m + jnp.log1p(-m))) - 0.5 * alpha * jnp.log(d)


def potential_notes_form(
    m: Float[ArrayLike, " k"],
    alpha: Float[ArrayLike, ""],
    a2: Float[ArrayLike, " k"],
    delta: Float[ArrayLike, ""],
    kernel: Kernel | None = None,
) -> Float[Array, ""]:
    """Phi in the notes' form sum_i [psi(s_i) - s_i m_i/2] - (alpha/2) log D with s_i = alpha a2_i g'(m_i)/D.

    Equals ``potential`` at a fixed point (tested); away from one the two differ.
    """
    d = delta + jnp.sum(a2 * (1.0 - g(m, kernel)))
    s = alpha * a2 * g_prime(m, kernel) / d
    psi = 0.5 * (s - jnp.log1p(s))
    return jnp.sum(psi - 0.5 * s * m) - 0.5 * alpha * jnp.log(d)
