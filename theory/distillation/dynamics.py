"""Gradient descent on the readout A: linear dynamics in the eigenbasis of the feature Gram matrix, the two
timescales and the directions the teacher memorises with (Bonnaire et al., arXiv 2505.17638, section 4).

The loss of ``model.dsm_loss`` is quadratic in A with Hessian (2 Delta / (d p)) U. We run gradient descent with the
step preconditioned by that scale (the loss weighted by 1/Delta_t, as diffusion training does), at a normalised
learning rate ``lr``:

    A_{k+1} = A_k - lr (A_k U + sqrt(p / Delta) V^T),      A_0 = 0,                                (eq. GD)

(plain GD on L_t with learning rate lr d p / (2 Delta)). With U = Q diag(lam) Q^T and the minimiser
A* = -sqrt(p / Delta) V^T U^{-1}, the iterate is exact in closed form (the paper's eq. 9, discrete time):

    A_k Q = -sqrt(p / Delta) (V^T Q) g_k(lam),   g_k(lam) = (1 - (1 - lr lam)^k) / lam  (= k lr at lam = 0),

so each eigen-direction j relaxes on its own timescale 1 / (lr lam_j) steps (``relaxation_steps``). Stable for
lr lam_max < 2; lr = 1/p is always stable here (lam_max <= E|phi|^2 <= 2 p).

Timescales (the paper's section 4, high-dimensional limit n, p, d -> infinity; our constants for the feature
sqrt(2) sin(h + b) with a uniform phase, ``gaussian_equivalent``): the Gram splits into (i) the population bulk of
the d linear directions, eigenvalue ~ a^2 p / d, learned at tau_gen = d / (lr a^2 p) steps (independent of n:
generalisation), (ii) n directions tied to the training points, eigenvalue ~ v_t^2 p / n + s_t^2, learned at
tau_mem = 1 / (lr (v_t^2 p / n + s_t^2)) steps (~ n at fixed p: memorisation), and (iii) a floor ~ s_t^2.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, ArrayLike, Float, Int

from jaxwb.theory import validate as v
from jaxwb.theory.distillation import model


def _check_lr(lr) -> None:
    v.positive("lr", lr)


def _check_steps(steps) -> None:
    v.array("steps", steps, ndim=(0, 1), finite=False)
    v.nonnegative("steps", steps, allow_inf=True)


def spectral_solution(
    U: Float[ArrayLike, "p p"], V: Float[ArrayLike, "p d"], t: Float[ArrayLike, ""]
) -> tuple[Float[Array, " p"], Float[Array, "p p"], Float[Array, "d p"]]:
    """(lam, Q, C): U = Q diag(lam) Q^T (ascending, clipped at 0) and C = -sqrt(p / Delta) V^T Q, so that the GD
    iterate of eq. GD is A_k = (C g_k(lam)) Q^T. Shapes (p,), (p, p), (d, p)."""
    model.check_moments(U, V)
    _, delta = model.schedule(t)
    lam, Q = jnp.linalg.eigh(jnp.asarray(U))
    p = lam.shape[0]
    return jnp.maximum(lam, 0.0), Q, -jnp.sqrt(p / delta) * (jnp.asarray(V).T @ Q)


def gd_filter(lam: Float[ArrayLike, " p"], steps: Float[ArrayLike, "*k"], lr: float) -> Float[Array, "*k p"]:
    """g_k(lam) = (1 - (1 - lr lam)^k) / lam, with the limit k lr at lam = 0: shape steps.shape + (p,)."""
    v.array("lam", lam, ndim=1)
    v.nonnegative("lam", lam)
    _check_steps(steps)
    _check_lr(lr)
    lam = jnp.asarray(lam)
    k = jnp.asarray(steps, lam.dtype)[..., None]
    x = lr * lam
    small = x < 1e-12
    safe = jnp.where(small, 1.0, lam)
    g = -jnp.expm1(k * jnp.log1p(-jnp.where(small, 0.0, x))) / safe
    return jnp.where(small, k * lr, g)


def gd_solution(
    U: Float[ArrayLike, "p p"],
    V: Float[ArrayLike, "p d"],
    t: Float[ArrayLike, ""],
    *,
    steps: Float[ArrayLike, "*k"],
    lr: float,
) -> Float[Array, "*k d p"]:
    """The GD iterate A_k of eq. GD from A_0 = 0, in closed form through the eigen-decomposition of U: shape
    steps.shape + (d, p). ``steps`` may be any non-negative real (k = inf gives A*, where lam > 0)."""
    lam, Q, C = spectral_solution(U, V, t)
    g = gd_filter(lam, steps, lr)
    return jnp.einsum("ij,...j,pj->...ip", C, g, Q)


def gd_iterate(
    U: Float[ArrayLike, "p p"], V: Float[ArrayLike, "p d"], t: Float[ArrayLike, ""], *, steps: int, lr: float
) -> Float[Array, "d p"]:
    """``steps`` iterations of eq. GD from A_0 = 0, one matrix product each (``lax.scan``; no eigen-decomposition):
    the reference the closed form ``gd_solution`` is checked against. Returns A_steps (d, p)."""
    model.check_moments(U, V)
    v.positive_int("steps", steps)
    _check_lr(lr)
    _, delta = model.schedule(t)
    U, V = jnp.asarray(U), jnp.asarray(V)
    p, d = V.shape
    force = jnp.sqrt(p / delta) * V.T

    def body(A, _):
        return A - lr * (A @ U + force), None

    A, _ = lax.scan(body, jnp.zeros((d, p), U.dtype), None, length=steps)
    return A


def relaxation_steps(lam: Float[ArrayLike, "*b"], lr: float) -> Float[Array, "*b"]:
    """The relaxation time of an eigen-direction in GD steps: 1 / (lr lam) (inf at lam = 0)."""
    v.nonnegative("lam", lam)
    _check_lr(lr)
    lam = jnp.asarray(lam)
    return jnp.where(lam > 0, 1.0 / (lr * jnp.where(lam > 0, lam, 1.0)), jnp.inf)


def gaussian_equivalent(t: Float[ArrayLike, ""]) -> dict[str, Array]:
    """Constants of the Gaussian-equivalent feature (the paper's lemma, its a_t, b_t, v_t, s_t), averaged over the
    phase b ~ U[0, 2 pi), for sigma(h) = sqrt(2) sin(h + b), data N(0, I_d) and a unit-variance preactivation:

        mu0^2 = e^{-1}                     (the mean feature E sigma),
        a^2   = e^{-1}                     (linear coefficient E sigma'; data part a^2 alpha^2, noise part
                                            b_t^2 = a^2 Delta),
        v_t^2 = e^{-Delta} - e^{-1} (1 + alpha^2)   (the part of E_xi sigma(x_t) fixed by the training point
                                            and not linear in it: the training-set directions),
        s_t^2 = 1 - e^{-Delta} - Delta e^{-1}       (the rest of E sigma^2 = 1: the floor).

    Returns a dict of scalars with these keys: ``mu0_sq``, ``a_sq``, ``b_sq``, ``v_sq``, ``s_sq``."""
    alpha, delta = model.schedule(t)
    e1 = jnp.exp(-1.0)
    v_sq = jnp.exp(-delta) - e1 * (1.0 + alpha**2)
    s_sq = -jnp.expm1(-delta) - delta * e1
    return {"mu0_sq": e1, "a_sq": e1, "b_sq": e1 * delta, "v_sq": v_sq, "s_sq": s_sq}


def predicted_timescales(
    n: Float[ArrayLike, "*b"], p: int, d: int, t: Float[ArrayLike, ""], lr: float
) -> tuple[Float[Array, "*b"], Float[Array, "*b"]]:
    """(tau_gen, tau_mem) in GD steps of eq. GD from the Gaussian-equivalent spectrum (high-dimensional limit):
    tau_gen = d / (lr a^2 p) (the linear population bulk, independent of n) and
    tau_mem = 1 / (lr (v_t^2 p / n + s_t^2)) (the training-set bulk: ~ n while n << p v_t^2 / s_t^2)."""
    v.positive("n", n)
    v.positive_int("p", p)
    v.positive_int("d", d)
    _check_lr(lr)
    ge = gaussian_equivalent(t)
    n = jnp.asarray(n, jnp.result_type(float))
    tau_gen = d / (lr * ge["a_sq"] * p) + 0.0 * n
    tau_mem = 1.0 / (lr * (ge["v_sq"] * p / n + ge["s_sq"]))
    return tau_gen, tau_mem


def direction_classes(lam: Float[ArrayLike, "*b p"], lr: float, tau_gen: float, tau_train: float) -> Int[Array, "*b p"]:
    """Label each eigen-direction of the teacher's Gram by when eq. GD learns it: 0 = generalising (relaxed by the
    early-stopping time, lr lam tau_gen >= 1), 1 = memorised (learned after tau_gen but by the end of training,
    lr lam tau_gen < 1 <= lr lam tau_train: the slow, small-eigenvalue directions), 2 = not learned."""
    v.nonnegative("lam", lam)
    _check_lr(lr)
    v.positive("tau_gen", tau_gen)
    v.check("tau_train", tau_train, lambda a: a >= tau_gen, f">= tau_gen = {tau_gen}", finite=True)
    x = lr * jnp.asarray(lam)
    return jnp.where(x * tau_gen >= 1.0, 0, jnp.where(x * tau_train >= 1.0, 1, 2))


def crossing_time(
    steps: Float[ArrayLike, " k"], curve: Float[ArrayLike, "*b k"], level: Float[ArrayLike, "*b"]
) -> Float[Array, "*b"]:
    """The first step at which ``curve`` (sampled at increasing ``steps`` > 0) reaches ``level`` from below,
    interpolated linearly in log(step); NaN when it never does (or already starts above). Shapes (k,), (..., k),
    (...) -> (...). Used for tau_gen (test loss down to a level) and tau_mem (generalisation gap up to a level)."""
    v.array("steps", steps, ndim=1)
    v.positive("steps", steps)
    v.array("curve", curve, min_ndim=1, finite=False)
    if np.shape(curve)[-1] != np.shape(steps)[0]:
        raise ValueError(f"curve must have last axis len(steps) = {np.shape(steps)[0]}, got {np.shape(curve)}")
    ls = jnp.log(jnp.asarray(steps))
    y = jnp.asarray(curve)
    lev = jnp.asarray(level)[..., None]
    above = y >= lev
    i = jnp.argmax(above, axis=-1)
    ok = jnp.any(above, axis=-1) & (i > 0)
    i = jnp.maximum(i, 1)
    y0 = jnp.take_along_axis(y, (i - 1)[..., None], -1)[..., 0]
    y1 = jnp.take_along_axis(y, i[..., None], -1)[..., 0]
    frac = (lev[..., 0] - y0) / jnp.where(y1 == y0, 1.0, y1 - y0)
    out = jnp.exp(ls[i - 1] + frac * (ls[i] - ls[i - 1]))
    return jnp.where(ok, out, jnp.nan)


def eigen_directions(U: Float[ArrayLike, "p p"]) -> tuple[Float[Array, " p"], Float[Array, "p p"]]:
    """Eigenvalues (ascending, clipped at 0) and eigenvectors (columns) of a feature Gram matrix."""
    v.array("U", U, ndim=2)
    lam, Q = jnp.linalg.eigh(jnp.asarray(U))
    return jnp.maximum(lam, 0.0), Q


__all__ = [
    "crossing_time",
    "direction_classes",
    "eigen_directions",
    "gaussian_equivalent",
    "gd_filter",
    "gd_iterate",
    "gd_solution",
    "predicted_timescales",
    "relaxation_steps",
    "spectral_solution",
]
