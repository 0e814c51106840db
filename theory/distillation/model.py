"""The random-feature score model, the diffusion schedule and the exact noise-averaged moments of the
denoising score-matching loss (Bonnaire, Urfin, Biroli & Mezard, arXiv 2505.17638, section 4).

Forward (Ornstein-Uhlenbeck) process: x_t = e^{-t} x_0 + sqrt(Delta_t) xi, Delta_t = 1 - e^{-2t}, xi ~ N(0, I_d)
(the paper's eq. 1). We write alpha_t = e^{-t} = cos(theta) and sqrt(Delta_t) = sin(theta): the angle theta in
[0, pi/2) parametrises time (``time_of_angle``).

Score model (the paper's eq. 6):  s_A(x) = A phi(x) / sqrt(p),  phi(x) = sigma(W x / sqrt(d) + b),  A: (d, p),
W: (p, d) with i.i.d. N(0, 1) entries, fixed; A is trained. Our activation is sigma_i(h) = sqrt(2) sin(h + b_i) with
a random phase b_i ~ U[0, 2 pi) (random Fourier features): its Gaussian averages are characteristic functions,
so every moment below is a closed form and no Monte Carlo enters the loss. (The paper uses a generic sigma, tanh
in its code; the phase makes the features neither odd nor even, so the model can represent a score that is not odd,
e.g. one pulled towards a finite training set.)

Denoising loss at time t (the paper's eq. 7), per dimension, with the noise average exact:
    L_t(A) = E ||sqrt(Delta_t) s_A(x_t) + xi||^2 / d
           = 1 + [ (Delta_t / p) tr(A U A^T) + 2 sqrt(Delta_t / p) tr(A V) ] / d,
    U = E[phi(x_t) phi(x_t)^T]  (p, p),   V = E[phi(x_t) xi^T]  (p, d).
The training loss averages over the n training points (``train_moments``: U_n, V_n, the feature Gram matrix of the
noised training set), the test loss over the data law (``population_moments``: data N(0, I_d), so x_t ~ N(0, I_d)
at every t and U is t-independent). For N(0, I_d) data the true score is -x and its loss is the Bayes (MMSE)
value e^{-2t} (``bayes_loss``): no A reaches a lower *test* loss; a training loss below it is memorisation.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from jaxwb.theory import validate as v

SQRT2 = float(np.sqrt(2.0))


class RandomFeatures(NamedTuple):
    """The fixed first layer: ``W`` (p, d) with N(0, 1) entries and phases ``b`` (p,) in [0, 2 pi)."""

    W: Float[Array, "p d"]
    b: Float[Array, " p"]


def init_features(d: int, p: int, *, key: PRNGKeyArray) -> RandomFeatures:
    """Draw the random first layer: W_ij ~ N(0, 1) (the paper's W), b_i ~ U[0, 2 pi). Shapes (p, d), (p,)."""
    v.positive_int("d", d)
    v.positive_int("p", p)
    v.prng_key("key", key)
    kw, kb = jax.random.split(key)
    dtype = jnp.result_type(float)
    return RandomFeatures(jax.random.normal(kw, (p, d), dtype), jax.random.uniform(kb, (p,), dtype, 0.0, 2.0 * np.pi))


def check_features(rf: RandomFeatures) -> None:
    """``rf`` is a :class:`RandomFeatures` with W (p, d) and b (p,), finite."""
    if not isinstance(rf, RandomFeatures):
        raise ValueError(f"rf must be a RandomFeatures (init_features), got {type(rf).__name__}")
    v.array("rf.W", rf.W, ndim=2)
    v.array("rf.b", rf.b, ndim=1)
    if np.shape(rf.b)[0] != np.shape(rf.W)[0]:
        raise ValueError(f"rf.b must have shape (p,) = ({np.shape(rf.W)[0]},), got {np.shape(rf.b)}")


def _preact(rf: RandomFeatures, x):
    return x @ rf.W.T / jnp.sqrt(rf.W.shape[1]) + rf.b


def features(rf: RandomFeatures, x: Float[ArrayLike, "*b d"]) -> Float[Array, "*b p"]:
    """phi(x) = sqrt(2) sin(W x / sqrt(d) + b): shape (..., d) -> (..., p)."""
    check_features(rf)
    _check_points("x", x, rf)
    return SQRT2 * jnp.sin(_preact(rf, jnp.asarray(x)))


def _check_points(name, x, rf, ndim=None) -> None:
    v.array(name, x, min_ndim=1, ndim=ndim)
    d = np.shape(rf.W)[1]
    if np.shape(x)[-1] != d:
        raise ValueError(f"{name} must have last axis d = {d}, got shape {np.shape(x)}")


def check_readout(name: str, A, rf: RandomFeatures) -> None:
    """``A`` is a finite readout of shape (d, p) for the features ``rf``."""
    v.array(name, A, ndim=2)
    p, d = np.shape(rf.W)
    if np.shape(A) != (d, p):
        raise ValueError(f"{name} must have shape (d, p) = ({d}, {p}), got {np.shape(A)}")


def score(A: Float[ArrayLike, "d p"], rf: RandomFeatures, x: Float[ArrayLike, "*b d"]) -> Float[Array, "*b d"]:
    """s_A(x) = A phi(x) / sqrt(p) (the paper's eq. 6): ``A`` (d, p), ``x`` (..., d) -> (..., d)."""
    check_features(rf)
    check_readout("A", A, rf)
    _check_points("x", x, rf)
    return features(rf, x) @ jnp.asarray(A).T / jnp.sqrt(rf.W.shape[0])


def schedule(t: Float[ArrayLike, "*b"]) -> tuple[Float[Array, "*b"], Float[Array, "*b"]]:
    """(alpha_t, Delta_t) = (e^{-t}, 1 - e^{-2t}) of the Ornstein-Uhlenbeck process (the paper's eq. 1); t > 0."""
    v.positive("t", t)
    t = jnp.asarray(t, jnp.result_type(float))
    return jnp.exp(-t), -jnp.expm1(-2.0 * t)


def time_of_angle(theta: Float[ArrayLike, "*b"]) -> Float[Array, "*b"]:
    """t = -log cos(theta), so that alpha_t = cos(theta) and sqrt(Delta_t) = sin(theta); theta in (0, pi/2)."""
    v.check("theta", theta, lambda a: (a > 0) & (a < np.pi / 2), "in (0, pi/2)", finite=True, elementwise=True)
    return -jnp.log(jnp.cos(jnp.asarray(theta, jnp.result_type(float))))


def bayes_loss(t: Float[ArrayLike, "*b"]) -> Float[Array, "*b"]:
    """The smallest test loss any score reaches for N(0, I_d) data: the true score -x gives
    E||-sqrt(Delta) x_t + xi||^2 / d = Delta e^{-2t} + (1 - Delta)^2 = e^{-2t}."""
    v.positive("t", t)
    return jnp.exp(-2.0 * jnp.asarray(t, jnp.result_type(float)))


def _pair_kernels(W, scale):
    """exp(-scale |w_i -+ w_j|^2 / (2 d)) as two (p, p) arrays."""
    d = W.shape[1]
    sq = jnp.sum(W * W, axis=1) / d
    gram = W @ W.T / d
    base = sq[:, None] + sq[None, :]
    return jnp.exp(-0.5 * scale * (base - 2.0 * gram)), jnp.exp(-0.5 * scale * (base + 2.0 * gram))


def train_moments(
    rf: RandomFeatures,
    X: Float[ArrayLike, "n d"],
    t: Float[ArrayLike, ""],
    weights: Float[ArrayLike, " n"] | None = None,
) -> tuple[Float[Array, "p p"], Float[Array, "p d"]]:
    """Exact noise averages over the training set X (n, d) at time t (the Gram of the paper's section 4):

        U_n = 1/n sum_mu E_xi[phi(x_t^mu) phi(x_t^mu)^T],  V_n = 1/n sum_mu E_xi[phi(x_t^mu) xi^T],

    with theta_i^mu = alpha w_i.x^mu / sqrt(d) + b_i and the Gaussian characteristic function:
        E[2 sin(h_i) sin(h_j)] = cos(theta_i - theta_j) e^{-Delta |w_i - w_j|^2 / 2d}
                               - cos(theta_i + theta_j) e^{-Delta |w_i + w_j|^2 / 2d},
        E[xi sqrt(2) sin(h_i)]  = sqrt(2 Delta) (w_i / sqrt(d)) cos(theta_i) e^{-Delta |w_i|^2 / 2d}   (Stein).
    ``weights`` (n,), >= 0 with a positive sum, replaces the uniform 1/n by w_mu / sum(w) (a zero weight leaves a
    point out: padded training sets of several sizes in one batch). Returns (U (p, p), V (p, d))."""
    check_features(rf)
    _check_points("X", X, rf, ndim=2)
    alpha, delta = schedule(t)
    X = jnp.asarray(X, rf.W.dtype)
    if weights is None:
        w = jnp.full((X.shape[0],), 1.0 / X.shape[0], X.dtype)
    else:
        v.array("weights", weights, ndim=1)
        v.nonnegative("weights", weights)
        v.check("weights", weights, lambda a: a.sum() > 0, "of positive sum")
        if np.shape(weights)[0] != X.shape[0]:
            raise ValueError(f"weights must have shape (n,) = ({X.shape[0]},), got {np.shape(weights)}")
        w = jnp.asarray(weights, X.dtype) / jnp.sum(jnp.asarray(weights, X.dtype))
    th = alpha * (X @ rf.W.T) / jnp.sqrt(rf.W.shape[1]) + rf.b  # (n, p)
    c, s = jnp.cos(th), jnp.sin(th)
    cc, ss = (c * w[:, None]).T @ c, (s * w[:, None]).T @ s
    k_minus, k_plus = _pair_kernels(rf.W, delta)
    U = (cc + ss) * k_minus - (cc - ss) * k_plus
    damp = jnp.exp(-0.5 * delta * jnp.sum(rf.W * rf.W, axis=1) / rf.W.shape[1])
    V = (SQRT2 * jnp.sqrt(delta) * damp * (w @ c))[:, None] * rf.W / jnp.sqrt(rf.W.shape[1])
    return U, V


def population_moments(rf: RandomFeatures, t: Float[ArrayLike, ""]) -> tuple[Float[Array, "p p"], Float[Array, "p d"]]:
    """U, V of ``train_moments`` averaged over the data law N(0, I_d) instead of a training set. Then x_t ~ N(0, I_d)
    at every t: U_ij = cos(b_i - b_j) e^{-|w_i - w_j|^2/2d} - cos(b_i + b_j) e^{-|w_i + w_j|^2/2d} (no t), and
    V_i = sqrt(2 Delta) (w_i / sqrt(d)) cos(b_i) e^{-|w_i|^2/2d}. Returns (U (p, p), V (p, d))."""
    check_features(rf)
    _, delta = schedule(t)
    k_minus, k_plus = _pair_kernels(rf.W, 1.0)
    b = rf.b
    U = jnp.cos(b[:, None] - b[None, :]) * k_minus - jnp.cos(b[:, None] + b[None, :]) * k_plus
    damp = jnp.exp(-0.5 * jnp.sum(rf.W * rf.W, axis=1) / rf.W.shape[1])
    V = (SQRT2 * jnp.sqrt(delta) * damp * jnp.cos(b))[:, None] * rf.W / jnp.sqrt(rf.W.shape[1])
    return U, V


def check_moments(U, V, *, square_name: str = "U", cross_name: str = "V") -> None:
    """U (p, p) and V (p, d), finite."""
    v.array(square_name, U, ndim=2)
    v.array(cross_name, V, ndim=2)
    p = np.shape(U)[0]
    if np.shape(U) != (p, p):
        raise ValueError(f"{square_name} must be square (p, p), got shape {np.shape(U)}")
    if np.shape(V)[0] != p:
        raise ValueError(f"{cross_name} must have shape (p, d) with p = {p}, got {np.shape(V)}")


def dsm_loss(
    A: Float[ArrayLike, "*b d p"], U: Float[ArrayLike, "p p"], V: Float[ArrayLike, "p d"], t: Float[ArrayLike, ""]
) -> Float[Array, "*b"]:
    """L_t(A) = 1 + [(Delta/p) tr(A U A^T) + 2 sqrt(Delta/p) tr(A V)] / d (the paper's eq. 7, per dimension, noise
    average exact). ``A`` (..., d, p) -> (...): the training loss with ``train_moments``, the test loss with
    ``population_moments``."""
    check_moments(U, V)
    v.array("A", A, min_ndim=2)
    p, d = np.shape(V)
    if np.shape(A)[-2:] != (d, p):
        raise ValueError(f"A must have last axes (d, p) = ({d}, {p}), got shape {np.shape(A)}")
    _, delta = schedule(t)
    A = jnp.asarray(A)
    quad = jnp.einsum("...ip,pq,...iq->...", A, jnp.asarray(U), A)
    lin = jnp.einsum("...ip,pi->...", A, jnp.asarray(V))
    return 1.0 + (delta * quad / p + 2.0 * jnp.sqrt(delta / p) * lin) / d
