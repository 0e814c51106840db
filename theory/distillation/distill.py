"""Consistency distillation of a teacher score model into a student of the same random-feature model (OUR
RECONSTRUCTION: the distillation paper's equations are not public).

Consistency distillation (Song et al. 2023, CD) trains a student so that its map is consistent along the teacher's
probability flow: for adjacent grid angles theta' < theta and x_theta from the forward process of a training point
(x_theta = cos(theta) x_0 + sin(theta) xi, fresh noise every step), the student's value at x_theta must equal its
value at the teacher's one-step ODE image Psi_T(x_theta). A student that is itself a probability-flow sampler in
the same model (readouts A_S per grid time, ``sampling.pf_step``) is consistent with the teacher exactly when its
one-step map equals the teacher's, Psi_S = Psi_T, on these inputs; we fit that condition in least squares:

    L_CD(A_S) = p / (2 h^2 tan^2 theta) E ||Psi_S(x_theta) - Psi_T(x_theta)||^2 = 1/2 E ||(A_S - A_T) phi(x_theta)||^2,
    h = theta - theta'                                                                          (eq. CD)

(normalised so that a step lr of gradient descent reads A_S <- A_S - lr (A_S - A_T) phi phi^T). Its Hessian is the
teacher's own training Gram U_n (the inputs are the noised training set): in expectation over the fresh noise and
the minibatch, K steps of stochastic gradient descent from A_S = 0 give

    E[A_S(K)] = A_T (I - (I - lr U_n)^K)                                            (eq. student, ``distill_solution``)

so along each eigen-direction q_j of U_n the student retains the fraction

    r_j = 1 - (1 - lr lam_j)^K  of the teacher's component A_T q_j                 (eq. retention)

(``predicted_retention``). Prediction: the teacher's fast, generalising directions (lr lam_j K >> 1) are kept
(r_j ~ 1), its slow, small-eigenvalue directions, those it learned only after the generalisation time, the
directions memorisation lives in (``dynamics.direction_classes``), are suppressed (r_j <= K lr lam_j << 1). We
identify these slow directions with the paper's "unstable feature directions associated with memorisation" (our
reading; the paper's definition is not public).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float

from jaxwb.theory import validate as v
from jaxwb.theory.distillation import model, sampling


def consistency_distillation_loss(
    A_student: Float[ArrayLike, "d p"],
    A_teacher: Float[ArrayLike, "d p"],
    rf: model.RandomFeatures,
    x: Float[ArrayLike, "m d"],
    theta: Float[ArrayLike, ""],
    theta_next: Float[ArrayLike, ""],
) -> Float[Array, ""]:
    """Eq. CD on a batch ``x`` (m, d) of noised training points at angle ``theta``: the distance between the
    student's and the teacher's one-step probability-flow maps to ``theta_next`` (``sampling.pf_step``), scaled by
    p / (2 h^2 tan^2 theta) and averaged over the batch. A scalar; its gradient in A_student is
    (A_S - A_T) phi^T phi / m."""
    model.check_features(rf)
    model.check_readout("A_student", A_student, rf)
    model.check_readout("A_teacher", A_teacher, rf)
    v.array("x", x, ndim=2)
    psi_s = sampling.pf_step(x, A_student, rf, theta, theta_next)
    psi_t = sampling.pf_step(x, A_teacher, rf, theta, theta_next)
    scale = (jnp.asarray(theta) - jnp.asarray(theta_next)) * jnp.tan(theta)
    p = np.shape(rf.W)[0]
    return 0.5 * p * jnp.mean(jnp.sum((psi_s - psi_t) ** 2, axis=-1)) / scale**2


def predicted_retention(lam: Float[ArrayLike, "*b p"], *, steps: int, lr: float) -> Float[Array, "*b p"]:
    """Eq. retention: r_j = 1 - (1 - lr lam_j)^K, the expected fraction of the teacher's component along
    eigen-direction j that K distillation steps transfer. Shapes follow ``lam``."""
    v.nonnegative("lam", lam)
    v.nonnegative_int("steps", steps)
    v.positive("lr", lr)
    lam = jnp.asarray(lam)
    return -jnp.expm1(steps * jnp.log1p(-lr * lam))


def distill_solution(
    A_teacher: Float[ArrayLike, "d p"], U: Float[ArrayLike, "p p"], *, steps: int, lr: float
) -> Float[Array, "d p"]:
    """Eq. student: the expected student after ``steps`` gradient steps of eq. CD from A_S = 0, whose inputs have the
    feature Gram ``U`` (the teacher's U_n): A_T Q diag(r) Q^T with r from ``predicted_retention``. Shape (d, p)."""
    v.array("A_teacher", A_teacher, ndim=2)
    v.array("U", U, ndim=2)
    if np.shape(U) != (np.shape(A_teacher)[1],) * 2:
        raise ValueError(f"U must have shape (p, p) with p = {np.shape(A_teacher)[1]}, got {np.shape(U)}")
    lam, Q = jnp.linalg.eigh(jnp.asarray(U))
    r = predicted_retention(jnp.maximum(lam, 0.0), steps=steps, lr=lr)
    return ((jnp.asarray(A_teacher) @ Q) * r) @ Q.T


def retention(
    A_student: Float[ArrayLike, "d p"],
    A_teacher: Float[ArrayLike, "d p"],
    Q: Float[ArrayLike, "p p"],
    mask: Bool[ArrayLike, " p"],
) -> Float[Array, ""]:
    """The fraction of the teacher's weight on the eigen-directions ``Q[:, mask]`` that the student carries:
    sum_j (A_S q_j . A_T q_j) / sum_j |A_T q_j|^2 over the masked j. Linear in A_student, so its expectation is
    the |A_T q_j|^2-weighted mean of eq. retention (``predicted_group_retention``). NaN for an empty mask."""
    v.array("A_student", A_student, ndim=2)
    v.array("A_teacher", A_teacher, ndim=2)
    v.same_shape("A_teacher", A_teacher, "A_student", A_student)
    v.array("Q", Q, ndim=2)
    v.array("mask", mask, ndim=1, finite=False)
    cs, ct = jnp.asarray(A_student) @ jnp.asarray(Q), jnp.asarray(A_teacher) @ jnp.asarray(Q)
    m = jnp.asarray(mask, bool)
    num = jnp.sum(jnp.where(m, jnp.sum(cs * ct, 0), 0.0))
    den = jnp.sum(jnp.where(m, jnp.sum(ct * ct, 0), 0.0))
    return num / jnp.where(den > 0, den, jnp.nan)


def predicted_group_retention(
    A_teacher: Float[ArrayLike, "d p"],
    Q: Float[ArrayLike, "p p"],
    lam: Float[ArrayLike, " p"],
    mask: Bool[ArrayLike, " p"],
    *,
    steps: int,
    lr: float,
) -> Float[Array, ""]:
    """E[``retention``] under eq. student: sum_j r_j |A_T q_j|^2 / sum_j |A_T q_j|^2 over the masked j."""
    v.array("Q", Q, ndim=2)
    ct = jnp.asarray(A_teacher) @ jnp.asarray(Q)
    w = jnp.where(jnp.asarray(mask, bool), jnp.sum(ct * ct, 0), 0.0)
    r = predicted_retention(lam, steps=steps, lr=lr)
    return jnp.sum(w * r) / jnp.where(jnp.sum(w) > 0, jnp.sum(w), jnp.nan)


__all__ = [
    "consistency_distillation_loss",
    "distill_solution",
    "predicted_group_retention",
    "predicted_retention",
    "retention",
]
