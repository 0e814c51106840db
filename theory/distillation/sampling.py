"""Sampling with the probability-flow ODE and the memorisation / quality measures of generated samples.

Probability flow of the OU process (Song et al. 2021; Bonnaire et al., arXiv 2505.17638, eq. 2) in the angle
theta (alpha_t = cos theta, sqrt(Delta_t) = sin theta, dt/dtheta = tan theta):

    dx/dtheta = tan(theta) (-x - s(x, t(theta))).

For the N(0, I_d) data of this study the true score is -x, the drift vanishes and every marginal is N(0, I_d): a
sampler may start from N(0, I_d) at any theta_max. We integrate backwards with explicit Euler steps on a grid
theta_1 < ... < theta_K, with the score model trained at each grid time (``pf_step``), and finish with the
denoiser (Tweedie) at theta_1: x_0 = (x + Delta_1 s(x)) / alpha_1 (``pf_ode_sample``). Euler in theta is exact for
the score -x and, near a training point y, where s ~ (alpha y - x)/Delta, it contracts x - alpha y by the exact
factor theta_{k-1} / theta_k to first order in theta.

Memorisation (Bonnaire et al., following Yoon et al. 2023): a sample is a copy when its nearest training point is
much closer than the second nearest, d_1 / d_2 < 1/3 (``copy_fraction``). Sample quality: the energy distance to
fresh draws of the data law (Szekely & Rizzo 2013), as the unbiased U-statistic (``energy_distance``: mean 0 for
two samples of one law).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, ArrayLike, Float

from jaxwb.theory import validate as v
from jaxwb.theory.distillation import model


def _check_thetas(thetas) -> None:
    v.array("thetas", thetas, ndim=1)
    v.check("thetas", thetas, lambda a: (a > 0) & (a < np.pi / 2), "in (0, pi/2)", elementwise=True)
    if np.shape(thetas)[0] < 2:
        raise ValueError(f"thetas must hold at least 2 grid angles, got shape {np.shape(thetas)}")
    v.check("thetas", thetas, lambda a: jnp.all(jnp.diff(a) > 0), "strictly increasing")


def pf_step(
    x: Float[ArrayLike, "*b d"],
    A: Float[ArrayLike, "d p"],
    rf: model.RandomFeatures,
    theta: Float[ArrayLike, ""],
    theta_next: Float[ArrayLike, ""],
) -> Float[Array, "*b d"]:
    """One backward Euler step of the probability flow from ``theta`` to ``theta_next`` < ``theta`` with the score
    A phi(x)/sqrt(p) of time t(theta): x + (theta - theta_next) tan(theta) (x + s_A(x)). Shapes follow ``x``."""
    v.check("theta_next", theta_next, lambda a: a > 0, "> 0", finite=True)
    v.check("theta", theta, lambda a: (a > theta_next) & (a < np.pi / 2), "in (theta_next, pi/2)", finite=True)
    return _pf_step(jnp.asarray(x), jnp.asarray(A), rf, theta, theta_next)


def _pf_step(x, A, rf, theta, theta_next):
    s = model.score(A, rf, x)
    return x + (theta - theta_next) * jnp.tan(theta) * (x + s)


def pf_ode_sample(
    As: Float[ArrayLike, "K d p"],
    rf: model.RandomFeatures,
    thetas: Float[ArrayLike, " K"],
    z: Float[ArrayLike, "m d"],
) -> Float[Array, "m d"]:
    """Integrate the probability flow from z ~ N(0, I_d) at theta_K down to theta_1 with the readouts ``As[k]`` of the
    grid times (Euler, ``pf_step``), then denoise: x_0 = (x + Delta_1 s_1(x)) / alpha_1. ``As`` (K, d, p), ``thetas``
    (K,) increasing, ``z`` (m, d) -> samples (m, d)."""
    model.check_features(rf)
    _check_thetas(thetas)
    v.array("As", As, ndim=3)
    if np.shape(As)[0] != np.shape(thetas)[0]:
        raise ValueError(f"As must have one readout per grid angle, {np.shape(thetas)[0]}, got shape {np.shape(As)}")
    v.array("z", z, ndim=2)
    As, thetas = jnp.asarray(As), jnp.asarray(thetas)

    def body(x, k):
        return _pf_step(x, As[k], rf, thetas[k], thetas[k - 1]), None

    x, _ = lax.scan(body, jnp.asarray(z), jnp.arange(thetas.shape[0] - 1, 0, -1))
    c, s = jnp.cos(thetas[0]), jnp.sin(thetas[0])
    return (x + s**2 * model.score(As[0], rf, x)) / c


def nearest_two(
    samples: Float[ArrayLike, "m d"], X: Float[ArrayLike, "n d"]
) -> tuple[Float[Array, " m"], Float[Array, " m"]]:
    """Distances of each sample to its nearest and second-nearest training point (n >= 2): shapes (m,), (m,)."""
    v.array("samples", samples, ndim=2, finite=False)
    v.array("X", X, ndim=2)
    if np.shape(X)[0] < 2:
        raise ValueError(f"X must hold at least 2 training points, got shape {np.shape(X)}")
    if np.shape(samples)[1] != np.shape(X)[1]:
        raise ValueError(f"samples must have last axis d = {np.shape(X)[1]}, got shape {np.shape(samples)}")
    a, b = jnp.asarray(samples), jnp.asarray(X)
    sq = jnp.sum(a * a, 1)[:, None] + jnp.sum(b * b, 1)[None, :] - 2.0 * a @ b.T
    neg, _ = lax.top_k(-sq, 2)
    dist = jnp.sqrt(jnp.maximum(-neg, 0.0))
    return dist[:, 0], dist[:, 1]


def copy_fraction(
    samples: Float[ArrayLike, "m d"], X: Float[ArrayLike, "n d"], threshold: float = 1.0 / 3.0
) -> Float[Array, ""]:
    """Fraction of samples that copy a training point: nearest / second-nearest distance < ``threshold`` (1/3)."""
    v.check("threshold", threshold, lambda a: (a > 0) & (a <= 1), "in (0, 1]", finite=True)
    d1, d2 = nearest_two(samples, X)
    return jnp.mean(d1 < threshold * d2)


def _mean_pairwise(a, b, same: bool):
    sq = jnp.sum(a * a, 1)[:, None] + jnp.sum(b * b, 1)[None, :] - 2.0 * a @ b.T
    dist = jnp.sqrt(jnp.maximum(sq, 0.0))
    if same:
        m = a.shape[0]
        return (jnp.sum(dist) - jnp.sum(jnp.diag(dist))) / (m * (m - 1))
    return jnp.mean(dist)


def energy_distance(a: Float[ArrayLike, "m d"], b: Float[ArrayLike, "r d"]) -> Float[Array, ""]:
    """Energy distance 2 E|A - B| - E|A - A'| - E|B - B'| of the laws of two samples, as the unbiased U-statistic
    (pairs i != i' within a sample): mean 0 when both samples come from one law. Shapes (m, d), (r, d), m, r >= 2."""
    v.array("a", a, ndim=2, finite=False)
    v.array("b", b, ndim=2)
    if np.shape(a)[1] != np.shape(b)[1] or min(np.shape(a)[0], np.shape(b)[0]) < 2:
        raise ValueError(f"a and b must be (m, d) and (r, d) with m, r >= 2, got {np.shape(a)} and {np.shape(b)}")
    a, b = jnp.asarray(a), jnp.asarray(b)
    return 2.0 * _mean_pairwise(a, b, False) - _mean_pairwise(a, a, True) - _mean_pairwise(b, b, True)


__all__ = ["copy_fraction", "energy_distance", "nearest_two", "pf_ode_sample", "pf_step"]
