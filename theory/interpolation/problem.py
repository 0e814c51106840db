"""Problems: the consistent system and its row sampling, H, the constants (mu, L, L_max, tr H) and the
saturation scales; Kaczmarz and coordinate descent as special cases (notation: ``jaxwb.theory.interpolation``)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int, PRNGKeyArray

from jaxwb.theory import validate as v

SAMPLINGS = ("uniform", "norm")
METHODS = ("sgd", "hb", "nesterov")
# ---------------------------------------------------------------------------------------------------------
# Problems
# ---------------------------------------------------------------------------------------------------------


class Problem(NamedTuple):
    """A consistent least-squares problem with a sampling distribution (a pytree: vmappable).

    A (n, d), b (n,), x_star (d,) with A x_star = b, probs (n,) the row-sampling probabilities p_i, weights
    (n,)
    the importance weights w_i = 1/(n p_i), residual () the relative least-squares residual
    ||A x_ls - b|| / ||b|| (0 for an interpolating system; ``make_problem`` rejects it when it is not ~0).
    """

    A: Float[Array, "n d"]
    b: Float[Array, " n"]
    x_star: Float[Array, " d"]
    probs: Float[Array, " n"]
    weights: Float[Array, " n"]
    residual: Float[Array, ""]


class Constants(NamedTuple):
    mu: Float[Array, ""]  # lambda_min(H)
    L: Float[Array, ""]  # lambda_max(H)
    L_max: Float[Array, ""]  # lambda_max(H^{-1/2} E[X^2] H^{-1/2})
    tr_H: Float[Array, ""]
    eff_rank: Float[Array, ""]  # tr H / L
    row_spread: Float[Array, ""]  # max_i ||a_i||^2 / mean_i ||a_i||^2


def spectrum(d: int, cond: float, decay: float = 1.0) -> Float[Array, " d"]:
    """Eigenvalues of H, descending from L = 1 to mu = 1/cond, shape (d,):

        lam_j = cond^(-(j/(d-1))^decay),  j = 0..d-1.

    decay = 1 is geometric; decay > 1 keeps more eigenvalues near L (larger effective rank tr H / L),
    decay < 1 makes them fall faster (smaller effective rank).
    """
    v.positive_int("d", d)
    v.check("cond", cond, lambda a: a >= 1, ">= 1", finite=True)
    v.positive("decay", decay)
    if d == 1:
        return jnp.ones(1)
    j = jnp.arange(d) / (d - 1)
    return jnp.asarray(cond, dtype=jnp.result_type(float)) ** (-(j**decay))


def _check_system(A, b) -> None:
    v.array("A", A, ndim=2)
    v.array("b", b, ndim=1)
    if np.shape(b)[0] != np.shape(A)[0]:
        raise ValueError(f"b must have one entry per row of A ({np.shape(A)[0]}), got shape {np.shape(b)}")


def least_squares_residual(
    A: Float[ArrayLike, "n d"], b: Float[ArrayLike, " n"]
) -> tuple[Float[Array, " d"], Float[Array, ""]]:
    """(x_ls, ||A x_ls - b|| / ||b||) for the least-squares solution x_ls. Traceable; 0 residual =
    consistent."""
    _check_system(A, b)
    A = jnp.asarray(A, dtype=jnp.result_type(A, float))
    b = jnp.asarray(b, dtype=A.dtype)
    return _least_squares_residual(A, b)


def _least_squares_residual(A, b):
    x_ls = jnp.linalg.lstsq(A, b)[0]
    res = jnp.linalg.norm(A @ x_ls - b) / jnp.maximum(jnp.linalg.norm(b), jnp.finfo(b.dtype).tiny)
    return x_ls, res


def _probs(A, sampling):
    n = A.shape[0]
    if sampling == "uniform":
        p = jnp.full((n,), 1.0 / n, dtype=A.dtype)
    else:
        r = jnp.sum(A**2, axis=1)
        p = r / jnp.sum(r)
    w = jnp.where(p > 0, 1.0 / (n * jnp.where(p > 0, p, 1.0)), 0.0)
    return p, w


def make_problem(
    A: Float[ArrayLike, "n d"], b: Float[ArrayLike, " n"], *, sampling: str = "uniform", rtol: float | None = None
) -> Problem:
    """Validate a consistent system A x = b (A (n, d), b (n,)) and attach the sampling distribution.

    Raises ValueError when ``b`` is not in the range of ``A`` (relative least-squares residual > ``rtol``,
    see below): the interpolation theory assumes b = A x*. Also rejects A without full column
    rank (x* would not be unique and mu = 0). Default ``rtol``: 1e-4 in float32, 1e-6 in float64, 5e-2 for
    float16/bfloat16 inputs (computed in float32; loose enough
    for a consistent system rounded to float32). Under ``jit`` the checks cannot run; the residual is then
    kept
    in ``Problem.residual`` so callers can flag it.
    """
    v.one_of("sampling", sampling, SAMPLINGS)
    _check_system(A, b)
    v.positive("rtol", rtol)
    dt = jnp.result_type(A, float)
    half = jnp.finfo(dt).bits < 32  # float16 / bfloat16: the least-squares solve (an SVD) runs in float32,
    if half:  # the consistency tolerance stays that of the half-precision input (default rtol 5e-2)
        dt = jnp.dtype(jnp.float32)
    A = jnp.asarray(A, dtype=dt)
    b = jnp.asarray(b, dtype=A.dtype)
    if A.shape[0] < A.shape[1]:
        raise ValueError(f"A must have n >= d rows (full column rank), got shape {A.shape}")
    x_ls, res = _least_squares_residual(A, b)
    tol = (5e-2 if half else 1e-4 if np.dtype(A.dtype).itemsize <= 4 else 1e-6) if rtol is None else rtol
    v.check(
        "b",
        res,
        lambda r: r <= tol,
        f"in the range of A (consistent, relative least-squares residual <= {tol:.1e}); the interpolation "
        "theory assumes b = A x*, this system is inconsistent with residual",
    )
    if v.is_concrete(A):
        s = np.linalg.svd(np.asarray(v.primal(A), dtype=np.float64), compute_uv=False)
        if s[-1] <= 1e-10 * s[0]:
            raise ValueError(f"A must have full column rank, got smallest singular value {s[-1]:.3g}")
    p, w = _probs(A, sampling)
    return Problem(A, b, x_ls, p, w, res)


def random_problem(
    n: int,
    d: int,
    *,
    cond: float,
    decay: float = 1.0,
    row_spread: float = 0.0,
    sampling: str = "uniform",
    key: PRNGKeyArray,
) -> Problem:
    """A random consistent system with H = A^T A / n = V diag(spectrum(d, cond, decay)) V^T exactly.

    Rows: a_i = s_i g_i W V diag(sqrt lam) V^T with g_i ~ N(0, I_d), s_i = exp(row_spread * xi_i) (log-normal
    row scales: ``row_spread`` controls the spread of ||a_i||), W whitening so that the s_i g_i have identity
    second moment exactly, V Haar-orthogonal. x* ~ N(0, I_d), b = A x*. Shapes: A (n, d), b (n,).
    """
    v.prng_key("key", key)
    v.positive_int("n", n)
    v.positive_int("d", d)
    if n < d:
        raise ValueError(f"n must be >= d={d} (full column rank), got {n}")
    v.nonnegative("row_spread", row_spread)
    v.one_of("sampling", sampling, SAMPLINGS)
    lam = spectrum(d, cond, decay)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    G = jax.random.normal(k1, (n, d)) * jnp.exp(row_spread * jax.random.normal(k2, (n,)))[:, None]
    ev, Q = jnp.linalg.eigh(G.T @ G / n)
    W = (Q / jnp.sqrt(ev)) @ Q.T
    V, _ = jnp.linalg.qr(jax.random.normal(k3, (d, d)))
    A = G @ W @ (V * jnp.sqrt(lam)) @ V.T
    x_star = jax.random.normal(k4, (d,))
    b = A @ x_star
    p, w = _probs(A, sampling)
    return Problem(A, b, x_star, p, w, jnp.zeros((), A.dtype))


def check_problem(problem) -> None:
    """Raise ValueError unless ``problem`` is a ``Problem`` with consistent, finite fields."""
    if not isinstance(problem, Problem):
        raise ValueError(f"problem must be a Problem (make_problem, random_problem, ...), got {type(problem).__name__}")
    v.array("problem.A", problem.A, ndim=2)
    v.array("problem.probs", problem.probs, ndim=1)


def hessian(problem: Problem) -> Float[Array, "d d"]:
    """H = A^T A / n = E[X], shape (d, d)."""
    check_problem(problem)
    return hessian_matrix(problem)


def hessian_matrix(problem: Problem):
    """The Hessian H = A^T A / n of the problem's least-squares loss."""
    return problem.A.T @ problem.A / problem.A.shape[0]


def _second_moment(problem: Problem) -> jax.Array:
    """E[X^2] = sum_i p_i w_i^2 ||a_i||^2 a_i a_i^T, shape (d, d)."""
    A = problem.A
    c = problem.probs * problem.weights**2 * jnp.sum(A**2, axis=1)
    return (A * c[:, None]).T @ A


def constants(problem: Problem) -> Constants:
    """mu, L, L_max, tr H, effective rank tr H / L and the row-norm spread max ||a_i||^2 / mean ||a_i||^2."""
    check_problem(problem)
    H = hessian_matrix(problem)
    h, U = jnp.linalg.eigh(H)
    Hm12 = (U / jnp.sqrt(h)) @ U.T
    L_max = jnp.linalg.eigvalsh(Hm12 @ _second_moment(problem) @ Hm12)[-1]
    r = jnp.sum(problem.A**2, axis=1)
    tr = jnp.trace(H)
    return Constants(h[0], h[-1], L_max, tr, tr / h[-1], jnp.max(r) / jnp.mean(r))


def saturation_scales(problem: Problem) -> dict[str, Float[Array, ""]]:
    """Batch sizes where batching stops paying: {"sgd": L_max / L, "shb": tr H / sqrt(L mu),
    "shb_lmax": L_max / sqrt(L mu)} (the last equals "shb" for "norm" sampling)."""
    c = constants(problem)
    return {
        "sgd": c.L_max / c.L,
        "shb": c.tr_H / jnp.sqrt(c.L * c.mu),
        "shb_lmax": c.L_max / jnp.sqrt(c.L * c.mu),
    }


# ---------------------------------------------------------------------------------------------------------
# Kaczmarz and coordinate descent as special cases
# ---------------------------------------------------------------------------------------------------------


def kaczmarz_problem(A: Float[ArrayLike, "n d"], b: Float[ArrayLike, " n"]) -> Problem:
    """The system with "norm" sampling (rows ~ ||a_i||^2): randomized Kaczmarz's distribution."""
    return make_problem(A, b, sampling="norm")


def kaczmarz_lr(problem: Problem) -> Float[Array, ""]:
    """lr = 1 / tr H = n / ||A||_F^2: with "norm" sampling lr X_i = a_i a_i^T / ||a_i||^2 (a projection)."""
    return 1.0 / jnp.trace(hessian(problem))


def kaczmarz_rate_bound(A: Float[ArrayLike, "n d"]) -> Float[Array, ""]:
    """Per-step factor of the randomized Kaczmarz bound: 1 - sigma_min(A)^2 / ||A||_F^2."""
    v.array("A", A, ndim=2)
    v.check("A", A, lambda a: (a != 0).any(), "non-zero (some entry)")
    A = jnp.asarray(A, dtype=jnp.result_type(A, float))
    s = jnp.linalg.svd(A, compute_uv=False)
    return 1.0 - s[-1] ** 2 / jnp.sum(A**2)


def kaczmarz_bound(A: Float[ArrayLike, "n d"], t: Int[ArrayLike, "*b"]) -> Float[Array, "*b"]:
    """Strohmer-Vershynin bound E||x_t - x*||^2 / ||x_0 - x*||^2 <= (1 - sigma_min^2 / ||A||_F^2)^t.

    Also holds for the averaged block variant (average of B projections, relaxation 1) by convexity.
    ``t`` (>= 0) broadcasts.
    """
    v.nonnegative("t", t)
    return kaczmarz_rate_bound(A) ** jnp.asarray(t)


def coordinate_descent_problem(A: Float[ArrayLike, "n d"], b: Float[ArrayLike, " n"]) -> Problem:
    """The problem on which randomized coordinate descent for f(x) = 1/(2n)||Ax - b||^2 is mini-batch SGD.

    With G = A^T A / n, coordinate j ~ p_j = G_jj / tr G and update x <- x - lr (1/B) sum_j (1/p_j) e_j
    (grad f(y))_j, the error z = G^{1/2} (x - x*) follows SGD / HB / Nesterov with X_j = g_j g_j^T / p_j,
    g_j = G^{1/2} e_j, i.e. the problem with A_eq = sqrt(d) G^{1/2} (d x d), "norm" sampling (p_j ~ ||g_j||^2
    =
    G_jj) and x*_eq = G^{1/2} x*. ||z||^2 = 2 (f(x) - f*). lr = 1 / tr G is exact coordinate minimisation.
    """
    pr = make_problem(A, b)
    G = hessian_matrix(pr)
    d = G.shape[0]
    h, U = jnp.linalg.eigh(G)
    Gh = (U * jnp.sqrt(h)) @ U.T
    A_eq = jnp.sqrt(d) * Gh
    z_star = Gh @ pr.x_star
    p, w = _probs(A_eq, "norm")
    return Problem(A_eq, A_eq @ z_star, z_star, p, w, pr.residual)
