"""Teacher-student reconstruction: readout amplitudes (eq. A) and overlap kernels g (eq. G)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from jaxwb.theory import validate as v


def normaliser(k: int, beta: Float[ArrayLike, ""]) -> Float[Array, ""]:
    """Z = sum_{j<=k} j^(-2 beta) (eq. A)."""
    v.positive_int("k", k)
    v.check("beta", beta, lambda b: b > 0.5, "> 1/2")
    return jnp.sum(jnp.arange(1, k + 1, dtype=jnp.result_type(float)) ** (-2.0 * beta))


def amplitudes(k: int, beta: Float[ArrayLike, ""]) -> Float[Array, " k"]:
    """Squared readout amplitudes a2_i = i^(-2 beta) / Z, i = 1..k, shape (k,), summing to 1 (eq. A).

    ``k`` is static; ``beta`` (> 1/2) may be traced.
    """
    v.positive_int("k", k)
    v.check("beta", beta, lambda b: b > 0.5, "> 1/2")
    w = jnp.arange(1, k + 1, dtype=jnp.result_type(float)) ** (-2.0 * jnp.asarray(beta))
    return w / jnp.sum(w)


class Kernel(NamedTuple):
    """Overlap kernel g(m) = sum_l c2_l m^l with c2_0 = 0 and sum_l c2_l = 1 (c2 has shape (L + 1,)).

    For an activation sigma = sum_l mu_l He_l / sqrt(l!) the teacher/student correlation of two units with
    overlap m is sum_l mu_l^2 m^l; c2_l = mu_l^2 / sum mu^2 (eq. G). A NamedTuple of arrays: a pytree.
    """

    c2: jax.Array


def hermite_kernel(mu: Float[ArrayLike, " L"] | Sequence[float]) -> Kernel:
    """Kernel from Hermite coefficients ``mu`` = (mu_1, ..., mu_L) of the activation (normalised basis).

    mu_0 (a constant output) carries no feature information and is excluded. Raises ValueError when every
    coefficient is zero.
    """
    mu = jnp.atleast_1d(jnp.asarray(mu, dtype=jnp.result_type(float)))
    v.check("mu", jnp.sum(mu**2), lambda s: s > 0, "a non-zero vector of Hermite coefficients")
    c2 = jnp.concatenate([jnp.zeros(1, mu.dtype), mu**2])
    return Kernel(c2 / jnp.sum(c2))


def cubic_kernel() -> Kernel:
    """g(m) = m^3: activation He_3 / sqrt 6 (the default). Built once per float dtype (an immutable constant:
    building it eagerly costs ~1 ms of dispatches, paid on every default-kernel call before)."""
    return _cubic_kernel(jnp.dtype(jnp.result_type(float)).name)


@cache
def _cubic_kernel(dtype_name: str) -> Kernel:
    # evaluated eagerly even when first called inside a jit/vmap trace: the cache must hold a concrete array,
    # never a tracer of the trace that happened to build it
    with jax.ensure_compile_time_eval():
        return hermite_kernel([0.0, 0.0, 1.0])


def g(m: Float[ArrayLike, "*shape"], kernel: Kernel | None = None) -> Float[Array, "*shape"]:
    """Overlap kernel g(m) (eq. G); broadcasts over ``m``."""
    v.finite("m", m)
    c2 = (kernel or cubic_kernel()).c2
    return jnp.polyval(c2[::-1], m)


def g_prime(m: Float[ArrayLike, "*shape"], kernel: Kernel | None = None) -> Float[Array, "*shape"]:
    """g'(m); broadcasts over ``m``."""
    v.finite("m", m)
    c2 = (kernel or cubic_kernel()).c2
    ls = jnp.arange(c2.shape[0], dtype=c2.dtype)
    return jnp.polyval((ls * c2)[1:][::-1], m)


def one_minus_g_from_s(s: Float[ArrayLike, "*shape"], kernel: Kernel | None = None) -> Float[Array, "*shape"]:
    """1 - g(m) at m = s/(1 + s), computed without cancellation: (1 - m) sum_l c2_l (1 + m + ... + m^(l-1))."""
    v.nonnegative("s", s)
    c2 = (kernel or cubic_kernel()).c2
    s = jnp.asarray(s)
    m = s / (1.0 + s)
    u = 1.0 / (1.0 + s)
    # sum_l c2_l sum_{j<l} m^j = sum_j m^j (sum_{l>j} c2_l) = polynomial with coefficients tail sums
    tail = jnp.cumsum(c2[::-1])[::-1][1:]  # tail_j = sum_{l>j} c2_l, j = 0..L-1
    return u * jnp.polyval(tail[::-1], m)
