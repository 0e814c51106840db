"""The cost d (Rastrigin envelope of the paper's experiment) and the Gaussian prior L0 = N(x0, I/mu0)."""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from jaxwb.theory import validate as v
from jaxwb.theory.aldrift.util import LOG2PI, as_float


class RastriginEnvelope(NamedTuple):
    """d(x) = mu_d/2 ||x - x*||^2 + A sum_i (1 - cos(w (x_i - x*_i))),  d* = 0 at x*  (paper's experiment).

    Computed as 2 sin^2(u/2) instead of 1 - cos(u) (no cancellation in float32 near x*). Call on x of shape
    (..., n); returns shape (...). A = 0 is the pure quadratic. Non-convex for A w^2 > mu_d.
    """

    mu_d: Float[Array, ""]
    A: Float[Array, ""]
    w: Float[Array, ""]
    x_star: Float[Array, " n"]

    def __call__(self, x: Float[Array, "*b n"]) -> Float[Array, "*b"]:
        z = x - self.x_star
        ripple = 2.0 * jnp.sin(0.5 * self.w * z) ** 2
        return 0.5 * self.mu_d * jnp.sum(z**2, axis=-1) + self.A * jnp.sum(ripple, axis=-1)


def rastrigin_envelope(mu_d: float, A: float, w: float, x_star: Float[ArrayLike, " n"]) -> RastriginEnvelope:
    """Validated constructor; ``x_star`` shape (n,)."""
    v.positive("mu_d", mu_d)
    v.nonnegative("A", A)
    v.nonnegative("w", w)
    v.array("x_star", x_star, ndim=(0, 1))
    x_star = jnp.atleast_1d(as_float(x_star))
    return RastriginEnvelope(as_float(mu_d), as_float(A), as_float(w), x_star)


def envelope_constants(mu_d: float, A: float, w: float) -> tuple[float, float]:
    """(mu_lower, L_d) with mu_d/2 |z|^2 <= d - d* <= L_d/2 |z|^2 for the Rastrigin envelope.

    Lower: 1 - cos >= 0 gives mu_lower = mu_d. Upper: 1 - cos u <= u^2/2 gives L_d = mu_d + A w^2 (paper's note);
    both are tight (the upper one as z -> 0 along any axis, the lower one where cos(w z_i) = 1).
    """
    v.positive("mu_d", mu_d)
    v.nonnegative("A", A)
    v.nonnegative("w", w)
    return mu_d, mu_d + A * w**2


class GaussianPrior(NamedTuple):
    """L0 = N(x0, I/mu0); x0 shape (n,)."""

    x0: Float[Array, " n"]
    mu0: Float[Array, ""]

    def log_prob(self, x: Float[Array, "*b n"]) -> Float[Array, "*b"]:
        n = self.x0.shape[-1]
        return -0.5 * self.mu0 * jnp.sum((x - self.x0) ** 2, axis=-1) + 0.5 * n * (jnp.log(self.mu0) - LOG2PI)


def gaussian_prior(x0: Float[ArrayLike, " n"], mu0: float) -> GaussianPrior:
    """Validated constructor of L0 = N(x0, I/mu0); ``x0`` shape (n,) (a scalar is n = 1)."""
    v.array("x0", x0, ndim=(0, 1))
    v.positive("mu0", mu0)
    return GaussianPrior(jnp.atleast_1d(as_float(x0)), as_float(mu0))
