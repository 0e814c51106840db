# ruff: noqa: F722  (jaxtyping shape strings)
"""Mini-batch SGD, heavy ball and Nesterov on consistent least squares (the interpolation regime).

Reference: Garg & Derezinski, "Perfect parallelization in mini-batch SGD with classical momentum acceleration"
(2026), notes in ``shared/papers/interpolation.md``. Prior lines: Bollapragada, Chen & Ward (mini-batch heavy
ball = accelerated randomized Kaczmarz), Jain et al. 2018 (accelerated SGD for least squares), Lee, Cheng,
Paquette & Paquette 2022 (batch-size saturation).

Setup and notation (used throughout):
  A (n, d) with full column rank, b = A x* (consistent: b in range(A)), f(x) = 1/(2n) ||A x - b||^2,
  H = A^T A / n  (the Hessian), eigenvalues mu = lambda_min(H) <= ... <= L = lambda_max(H),  kappa = L / mu.
  Sampling: rows i ~ p_i iid with replacement, importance weights w_i = 1 / (n p_i):
     "uniform"  p_i = 1/n                       (w_i = 1)
     "norm"     p_i = ||a_i||^2 / ||A||_F^2     (the randomized-Kaczmarz distribution)
  X_i = w_i a_i a_i^T, so E[X] = H.  Mini-batch of B rows: Xbar = (1/B) sum_j X_{i_j}; the stochastic
  gradient is g(x) = (1/B) sum_j w_{i_j} a_{i_j} (a_{i_j}^T x - b_{i_j}) = Xbar (x - x*).
  L_max = lambda_max(H^{-1/2} E[X^2] H^{-1/2}): the tightest constant with E[X^2] <= L_max H ("expected
  smoothness"); it equals tr H for "norm" sampling and lies in [tr H, max_i ||a_i||^2] for "uniform".

Methods on the error e_t = x_t - x* (x_{-1} = x_0):
  SGD        e_{t+1} = e_t - lr Xbar_t e_t
  heavy ball e_{t+1} = e_t - lr Xbar_t e_t + beta (e_t - e_{t-1})
  Nesterov   y_t = e_t + beta (e_t - e_{t-1}),  e_{t+1} = y_t - lr Xbar_t y_t
One formula covers all three: y_t = e_t + gamma beta (e_t - e_{t-1}), e_{t+1} = e_t - lr Xbar_t y_t +
beta (e_t - e_{t-1}), with gamma = 0 (SGD, HB) or 1 (Nesterov).

Exact mean-square dynamics (eq. MS): the second moment S_t = E[z_t z_t^T] of z_t = (e_t, e_{t-1}) (2d x 2d)
evolves by the linear map
  S -> T(S) = M S M^T + (lr^2 / B) E1 N(C S C^T) E1^T,   N(Q) = E[X Q X] - H Q H,
  HB:        M = [[(1 + beta) I - lr H, -beta I], [I, 0]],          C = [I, 0]
  Nesterov:  M = [[(1 + beta)(I - lr H), -beta (I - lr H)], [I, 0]], C = [(1 + beta) I, -beta I]
E1 = [I; 0].  (1/B) N is the covariance of Xbar acting on Q (iid sampling).  B = 1, beta = 0 is exactly
SGD's recursion E[(I - lr X) S (I - lr X)].  The spectral radius rho(T) is the exact asymptotic rate of
E||e_t||^2 (per step); -1 / log rho(T) is the number of iterations per e-fold of E||e_t||^2.

Computing rho(T) without the (2d)^2 x (2d)^2 matrix (``mean_square_rate``): T = T0 + noise with T0(S) =
M S M^T. In H's eigenbasis T0 decouples into 2 x 2 blocks, so for lambda > rho(T0) = rho(M)^2 the reduced map
F(lambda) Q = (lr^2 / B) g(lambda) o N(Q),  g_ij(lambda) = (c (x) c)^T (lambda I_4 - M_i (x) M_j)^{-1} (e1
(x) e1)
(a Schur multiplier; c = (1, 0) for HB, (1 + beta, -beta) for Nesterov) is a positive map on d x d matrices
and
   lambda > rho(T)   <=>   lambda > rho(M)^2  and  (I - F(lambda))^{-1}(I) is positive definite.
(If x = (I - F)^{-1} I is PD then x = I + F(x) >= I and F(x) <= (1 - 1/lambda_max(x)) x, so rho(F) < 1; the
converse is the Neumann series.)  Bisection on lambda gives rho(T) to machine precision with d^2 x d^2
solves; the dense operator (``operator_matrix``) is kept as the reference for tests.

A sufficient mean-square stability condition (eq. STAB, from the same reduced map with F(1)(I) <= max_i(...) I
and N(I) <= L_max H - H^2): rho(M) < 1 and for every eigenvalue h of H
   (lr / B) (L_max - h) (1 + beta) / ((1 - beta) (2 (1 + beta) - lr h)) < 1       (heavy ball / SGD).
For SGD with B = 1 it reads lr < 2 / L_max (Kaczmarz's relaxation limit 2).

Special cases (all are instances of the same mini-batch iteration):
  randomized Kaczmarz = "norm" sampling, lr = 1 / tr H (lr X_i is the projection a a^T / ||a||^2), B = 1;
  block (averaged) Kaczmarz = the same with B rows, x moved by the average of the B projections (times a
     relaxation); with momentum it is mini-batch heavy ball / Nesterov;
  randomized coordinate descent on f (coordinate j ~ G_jj, G = H) is SGD on the equivalent problem with rows
     g_j = G^{1/2} e_j (``coordinate_descent_problem``), error z = G^{1/2} e, ||z||^2 = 2 (f(x) - f*).
Kaczmarz bound (Strohmer & Vershynin): E||e_t||^2 <= (1 - sigma_min(A)^2 / ||A||_F^2)^t ||e_0||^2.

Saturation scales: SGD's speedup from batching stops near B ~ L_max / L (then lr is limited by L, not by the
noise); accelerated SHB keeps a speedup proportional to B up to B ~ tr H / sqrt(L mu) (L_max / sqrt(L mu) with
uniform sampling), where its rate reaches full-batch heavy ball's (sqrt(kappa) - 1)/(sqrt(kappa) + 1).

Momentum rule (``momentum_rule``, eq. RULE): critically damped heavy ball with a step growing like B^2,
   lr_B = min(4 mu (B / L_max)^2, 2 / L),   beta_B = (1 - sqrt(lr_B mu))^2   (Nesterov: a / L with a = 1 and
   beta_B = (1 - sqrt(lr_B mu)) / (1 + sqrt(lr_B mu))).
Why: heavy ball's effective step along slow directions is lr / (1 - beta) ~= sqrt(lr / mu) / 2 at critical
damping;
eq. STAB for small lr h says the noise is tolerated while lr / (1 - beta) < 2 B / L_max. The rule puts the
effective step at B / L_max (half the limit), so the slowest mode contracts by 1 - sqrt(lr mu) = 1 - 2 B mu /
L_max
per step: a speedup proportional to B, with 1 - beta ~= 4 B mu / L_max growing linearly in B, until the step
reaches 2 / L at B = L_max / sqrt(2 L mu) (the saturation point, ~ tr H / sqrt(L mu)); beyond it the rule is
full-batch heavy ball critically damped on mu (rate 1 - sqrt(2 / kappa), within sqrt 2 in e-folds of Polyak's
optimum). Polyak's own parameters are NOT used: they put the top mode at the edge of the complex region
(lr L = (1 + sqrt beta)^2), where eq. STAB's denominator vanishes and any sampling noise makes SHB diverge.

Everything is a pure function; bad concrete parameters raise ValueError naming the parameter. Use float64
(``jax.enable_x64``) for the operator's spectral radius when rates are within ~1e-4 of 1.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, ArrayLike, Bool, Float, Int, PRNGKeyArray

from theory import _validate as v
from theory.river_valley import _quadratic_roots, hb_optimal_params, spectral_radius

SAMPLINGS = ("uniform", "norm")
METHODS = ("sgd", "hb", "nesterov")

__all__ = [
    "SAMPLINGS",
    "METHODS",
    "Problem",
    "Constants",
    "spectrum",
    "make_problem",
    "random_problem",
    "least_squares_residual",
    "hessian",
    "constants",
    "saturation_scales",
    "kaczmarz_problem",
    "kaczmarz_lr",
    "kaczmarz_rate_bound",
    "kaczmarz_bound",
    "coordinate_descent_problem",
    "momentum_rule",
    "rule_saturation",
    "stable_sufficient",
    "sample_batch",
    "minibatch_gradient",
    "run",
    "kaczmarz",
    "coordinate_descent",
    "mean_matrices",
    "operator_matrix",
    "operator_apply",
    "second_moment_trajectory",
    "noise_kernel",
    "mean_square_rate",
    "MeanSquareRate",
    "efold_time",
    "expected_sq_error",
    "NoiseKernel",
    "hb_optimal_params",
    "spectral_radius",
]

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
    rank (x* would not be unique and mu = 0). Default ``rtol``: 1e-4 in float32, 1e-6 in float64 (loose enough
    for a consistent system rounded to float32). Under ``jit`` the checks cannot run; the residual is then
    kept
    in ``Problem.residual`` so callers can flag it.
    """
    v.one_of("sampling", sampling, SAMPLINGS)
    _check_system(A, b)
    v.positive("rtol", rtol)
    A = jnp.asarray(A, dtype=jnp.result_type(A, float))
    b = jnp.asarray(b, dtype=A.dtype)
    if A.shape[0] < A.shape[1]:
        raise ValueError(f"A must have n >= d rows (full column rank), got shape {A.shape}")
    x_ls, res = _least_squares_residual(A, b)
    tol = (1e-4 if np.dtype(A.dtype).itemsize <= 4 else 1e-6) if rtol is None else rtol
    v.check(
        "b",
        res,
        lambda r: r <= tol,
        f"in the range of A (consistent, relative least-squares residual <= {tol:.1e}); the interpolation "
        "theory assumes b = A x*, this system is inconsistent with residual",
    )
    if v.is_concrete(A):
        s = np.linalg.svd(np.asarray(A, dtype=np.float64), compute_uv=False)
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


def _check_problem(problem) -> None:
    if not isinstance(problem, Problem):
        raise ValueError(f"problem must be a Problem (make_problem, random_problem, ...), got {type(problem).__name__}")
    v.array("problem.A", problem.A, ndim=2)
    v.array("problem.probs", problem.probs, ndim=1)


def hessian(problem: Problem) -> Float[Array, "d d"]:
    """H = A^T A / n = E[X], shape (d, d)."""
    _check_problem(problem)
    return _hessian(problem)


def _hessian(problem: Problem):
    return problem.A.T @ problem.A / problem.A.shape[0]


def _second_moment(problem: Problem) -> jax.Array:
    """E[X^2] = sum_i p_i w_i^2 ||a_i||^2 a_i a_i^T, shape (d, d)."""
    A = problem.A
    c = problem.probs * problem.weights**2 * jnp.sum(A**2, axis=1)
    return (A * c[:, None]).T @ A


def constants(problem: Problem) -> Constants:
    """mu, L, L_max, tr H, effective rank tr H / L and the row-norm spread max ||a_i||^2 / mean ||a_i||^2."""
    _check_problem(problem)
    H = _hessian(problem)
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
    G = _hessian(pr)
    d = G.shape[0]
    h, U = jnp.linalg.eigh(G)
    Gh = (U * jnp.sqrt(h)) @ U.T
    A_eq = jnp.sqrt(d) * Gh
    z_star = Gh @ pr.x_star
    p, w = _probs(A_eq, "norm")
    return Problem(A_eq, A_eq @ z_star, z_star, p, w, pr.residual)


# ---------------------------------------------------------------------------------------------------------
# Parameters: the momentum rule and the sufficient stability condition
# ---------------------------------------------------------------------------------------------------------


def momentum_rule(
    mu: Float[ArrayLike, "*b"],
    L: Float[ArrayLike, "*b"],
    L_max: Float[ArrayLike, "*b"],
    batch_size: Float[ArrayLike, "*b"],
    method: str = "hb",
    a: float | None = None,
) -> tuple[Float[Array, "*b"], Float[Array, "*b"]]:
    """(lr, beta) of the simple batch-size rule (module docstring, eq. RULE):

        lr = min(4 mu (B / L_max)^2, a / L),   heavy ball: beta = (1 - sqrt(lr mu))^2  (a = 2),
                                               Nesterov:   beta = (1 - sqrt(lr mu)) / (1 + sqrt(lr mu))  (a =
                                               1),
    i.e. critically damp the slowest mode and grow the step like B^2 so that the effective step
    lr / (1 - beta) ~= B / L_max stays at half of the noise limit 2 B / L_max of eq. STAB; it saturates at
    B = L_max sqrt(a) / (2 sqrt(L mu)) ~ tr H / sqrt(L mu). For "sgd": lr = 1 / (L (1 - 1/B) + L_max / B),
    beta = 0 (the step minimising the Lyapunov bound E||e'||^2 <= (1 - lr (2 - lr L_B') mu) ||e||^2)."""
    v.one_of("method", method, METHODS)
    v.positive("mu", mu)
    v.positive("L", L)
    v.positive("L_max", L_max)
    v.positive("batch_size", batch_size, allow_inf=True)
    if method == "sgd":
        return 1.0 / (L * (1.0 - 1.0 / batch_size) + L_max / batch_size), 0.0 * jnp.asarray(mu)
    a = (2.0 if method == "hb" else 1.0) if a is None else a
    v.positive("a", a)
    lr = jnp.minimum(4.0 * mu * (batch_size / L_max) ** 2, a / L)
    s = jnp.sqrt(lr * mu)
    return lr, ((1.0 - s) ** 2 if method == "hb" else (1.0 - s) / (1.0 + s))


def rule_saturation(
    mu: Float[ArrayLike, "*b"],
    L: Float[ArrayLike, "*b"],
    L_max: Float[ArrayLike, "*b"],
    method: str = "hb",
    a: float | None = None,
) -> Float[Array, "*b"]:
    """Batch size where the rule's step reaches a / L: B = L_max sqrt(a) / (2 sqrt(L mu))."""
    v.one_of("method", method, ("hb", "nesterov"))
    v.positive("mu", mu)
    v.positive("L", L)
    v.positive("L_max", L_max)
    a = (2.0 if method == "hb" else 1.0) if a is None else a
    v.positive("a", a)
    return L_max * jnp.sqrt(a) / (2.0 * jnp.sqrt(L * mu))


def stable_sufficient(
    lr: Float[ArrayLike, ""],
    beta: Float[ArrayLike, ""],
    batch_size: Float[ArrayLike, ""],
    h: Float[ArrayLike, " d"],
    L_max: Float[ArrayLike, ""],
) -> Bool[Array, ""]:
    """Sufficient condition (eq. STAB) for mean-square stability of SGD / heavy ball: True when the
    deterministic HB on every eigenvalue ``h`` (array (d,)) is stable and
    max_h (lr / B)(L_max - h)(1 + beta) / ((1 - beta)(2(1 + beta) - lr h)) < 1."""
    v.positive("lr", lr)
    v.in_interval("beta", beta, 0.0, 1.0)
    v.positive("batch_size", batch_size, allow_inf=True)
    v.array("h", h, ndim=(0, 1))
    v.positive("h", h)
    v.positive("L_max", L_max)
    h = jnp.asarray(h)
    mean_ok = jnp.all(spectral_radius(lr, h, beta, "hb") < 1.0)
    denom = (1.0 - beta) * (2.0 * (1.0 + beta) - lr * h)
    val = (lr / batch_size) * (L_max - h) * (1.0 + beta) / denom
    return mean_ok & jnp.all(denom > 0) & (jnp.max(val) < 1.0)


# ---------------------------------------------------------------------------------------------------------
# The stochastic iteration
# ---------------------------------------------------------------------------------------------------------


def sample_batch(problem: Problem, batch_size: int, *, key: PRNGKeyArray) -> Int[Array, " B"]:
    """B row indices drawn iid (with replacement) from ``problem.probs``, shape (B,) (inverse-CDF sampling:
    O(B log n) per batch instead of the O(B n) of Gumbel-max)."""
    _check_problem(problem)
    v.positive_int("batch_size", batch_size)
    return _sample_batch(problem, batch_size, key=key)


def _sample_batch(problem, batch_size, *, key):
    cdf = jnp.cumsum(problem.probs)
    u = jax.random.uniform(key, (batch_size,), dtype=cdf.dtype) * cdf[-1]
    return jnp.minimum(jnp.searchsorted(cdf, u, side="right"), problem.probs.shape[0] - 1)


def minibatch_gradient(problem: Problem, x: Float[ArrayLike, " d"], idx: Int[ArrayLike, " B"]) -> Float[Array, " d"]:
    """g(x) = (1/B) sum_j w_{i_j} a_{i_j} (a_{i_j}^T x - b_{i_j}), x (d,), idx (B,) -> (d,). E[g] = grad f."""
    _check_problem(problem)
    v.array("x", x, ndim=1)
    v.shape("x", x, problem.x_star.shape)
    v.array("idx", idx, ndim=1, integer=True)
    n = problem.A.shape[0]
    v.check("idx", idx, lambda a: (a >= 0) & (a < n), f"row indices in [0, {n})")
    return _minibatch_gradient(problem, jnp.asarray(x, problem.A.dtype), jnp.asarray(idx))


def _minibatch_gradient(problem, x, idx):
    a = problem.A[idx]
    r = (a @ x - problem.b[idx]) * problem.weights[idx]
    return a.T @ r / idx.shape[0]


def _gamma(method):
    return 1.0 if method == "nesterov" else 0.0


@partial(jax.jit, static_argnames=("batch_size", "steps", "record_every"))
def _run(problem, x0, lr, beta, gamma, key, batch_size, steps, record_every, blowup=1e10):
    e0 = jnp.sum((x0 - problem.x_star) ** 2)
    limit = blowup * jnp.maximum(e0, jnp.finfo(x0.dtype).tiny)

    def step(carry, k):
        x, xp, div = carry
        idx = _sample_batch(problem, batch_size, key=k)
        y = x + gamma * beta * (x - xp)
        xn = x - lr * _minibatch_gradient(problem, y, idx) + beta * (x - xp)
        err = jnp.sum((xn - problem.x_star) ** 2)
        bad = div | ~jnp.isfinite(err) | (err > limit)
        return (jnp.where(bad, x, xn), jnp.where(bad, xp, x), bad), None

    def chunk(carry, keys):
        carry, _ = lax.scan(step, carry, keys)
        return carry, jnp.sum((carry[0] - problem.x_star) ** 2)

    keys = jax.random.split(key, steps).reshape(steps // record_every, record_every)
    (_, _, div), errs = lax.scan(chunk, (x0, x0, jnp.array(False)), keys)
    return jnp.concatenate([e0[None], errs]), div


def _check_run_args(method, batch_size, steps, record_every, lr, beta) -> None:
    """Eager checks shared by the iterative solvers (``run``, coordinate descent, Kaczmarz)."""
    v.one_of("method", method, METHODS)
    v.positive_int("batch_size", batch_size)
    v.positive_int("steps", steps)
    v.positive_int("record_every", record_every)
    if steps % record_every:
        raise ValueError(f"steps must be a multiple of record_every={record_every}, got {steps}")
    v.positive("lr", lr)
    v.in_interval("beta", beta, 0.0, 1.0)


def _check_x0(problem: Problem, x0) -> None:
    _check_problem(problem)
    v.array("x0", x0, ndim=1)
    v.shape("x0", x0, problem.x_star.shape)


def run(
    problem: Problem,
    x0: Float[ArrayLike, " d"],
    *,
    lr: Float[ArrayLike, ""],
    beta: Float[ArrayLike, ""] = 0.0,
    batch_size: int,
    steps: int,
    method: str = "hb",
    key: PRNGKeyArray,
    record_every: int = 1,
) -> tuple[Float[Array, " steps//record_every+1"], Bool[Array, ""]]:
    """Run mini-batch SGD / heavy ball / Nesterov from x0 (x_{-1} = x0) on ``problem``.

    Returns ``(sq_errors, diverged)``: ||x_t - x*||^2 at t = 0, k, 2k, ..., steps (k = ``record_every``; shape
    (steps // k + 1,)) and a bool, True once ||x_t - x*||^2 exceeded 1e10 ||x_0 - x*||^2 (the iterate is then
    frozen at its last finite value: no NaN/inf leaves for a finite ``x0``, which is checked). lr and beta may
    be traced; ``method`` "sgd" forces beta = 0.
    """
    _check_run_args(method, batch_size, steps, record_every, lr, beta)
    _check_x0(problem, x0)
    beta = 0.0 * jnp.asarray(beta) if method == "sgd" else jnp.asarray(beta)
    x0 = jnp.asarray(x0, dtype=problem.A.dtype)
    return _run(
        problem,
        x0,
        jnp.asarray(lr, x0.dtype),
        beta.astype(x0.dtype),
        jnp.asarray(_gamma(method), x0.dtype),
        key,
        batch_size,
        steps,
        record_every,
    )


def kaczmarz(
    problem: Problem,
    x0: Float[ArrayLike, " d"],
    *,
    steps: int,
    key: PRNGKeyArray,
    block_size: int = 1,
    relaxation: float = 1.0,
    beta: float = 0.0,
    method: str = "hb",
    record_every: int = 1,
) -> tuple[Float[Array, " steps//record_every+1"], Bool[Array, ""]]:
    """Randomized Kaczmarz (``block_size`` 1) and averaged block Kaczmarz: x moves by ``relaxation`` times the
    average of ``block_size`` row projections (rows ~ ||a_i||^2), optionally with momentum ``beta``
    (heavy ball or Nesterov). ``problem`` must use "norm" sampling. Returns ``run``'s (sq_errors,
    diverged)."""
    v.positive("relaxation", relaxation)
    v.in_interval("beta", beta, 0.0, 1.0)
    _check_problem(problem)
    if v.is_concrete(problem.probs):
        r = np.sum(np.asarray(problem.A) ** 2, axis=1)
        if not np.allclose(np.asarray(problem.probs), r / r.sum(), rtol=1e-5):
            raise ValueError("problem must use 'norm' sampling for Kaczmarz (see kaczmarz_problem)")
    return run(
        problem,
        x0,
        lr=relaxation * (1.0 / jnp.trace(_hessian(problem))),
        beta=beta,
        batch_size=block_size,
        steps=steps,
        method=method if beta > 0 else "sgd",
        key=key,
        record_every=record_every,
    )


@partial(jax.jit, static_argnames=("batch_size", "steps", "record_every"))
def _cd(A, b, x_star, x0, lr, beta, gamma, key, batch_size, steps, record_every):
    n, d = A.shape
    G = A.T @ A / n
    c = A.T @ b / n
    p = jnp.diag(G) / jnp.trace(G)
    cdf = jnp.cumsum(p)
    gap = lambda x: 0.5 * (x - x_star) @ G @ (x - x_star)

    def step(carry, k):
        x, xp = carry
        u = jax.random.uniform(k, (batch_size,), dtype=cdf.dtype) * cdf[-1]
        j = jnp.minimum(jnp.searchsorted(cdf, u, side="right"), d - 1)
        y = x + gamma * beta * (x - xp)
        gj = (G[j] @ y - c[j]) / p[j] / batch_size
        xn = (x + beta * (x - xp)).at[j].add(-lr * gj)
        return (xn, x), None

    def chunk(carry, keys):
        carry, _ = lax.scan(step, carry, keys)
        return carry, gap(carry[0])

    keys = jax.random.split(key, steps).reshape(steps // record_every, record_every)
    _, gaps = lax.scan(chunk, (x0, x0), keys)
    return jnp.concatenate([gap(x0)[None], gaps])


def coordinate_descent(
    problem: Problem,
    x0: Float[ArrayLike, " d"],
    *,
    lr: Float[ArrayLike, ""],
    beta: Float[ArrayLike, ""] = 0.0,
    batch_size: int = 1,
    steps: int,
    method: str = "hb",
    key: PRNGKeyArray,
    record_every: int = 1,
) -> Float[Array, " steps//record_every+1"]:
    """Randomized (block) coordinate descent with optional momentum on f(x) = 1/(2n)||Ax - b||^2, acting on x
    coordinate by coordinate: j ~ G_jj / tr G, x_j <- x_j - lr (1/B) (grad f(y))_j / p_j (accumulated over the
    B sampled coordinates), y as in ``run``. lr = 1/tr G with B = 1, beta = 0 is exact coordinate
    minimisation. Returns f(x_t) - f* = 1/2 e^T G e at t = 0, k, ..., steps, shape (steps // k + 1,).
    Divergence: there is no freezing here; with lr/beta outside the mean-square stable region the gap
    overflows to inf (NaN after inf - inf) for long runs. Check ``mean_square_rate`` first."""
    _check_run_args(method, batch_size, steps, record_every, lr, beta)
    _check_x0(problem, x0)
    dt = problem.A.dtype
    beta = 0.0 if method == "sgd" else beta
    return _cd(
        problem.A,
        problem.b,
        problem.x_star,
        jnp.asarray(x0, dt),
        jnp.asarray(lr, dt),
        jnp.asarray(beta, dt),
        jnp.asarray(_gamma(method), dt),
        key,
        batch_size,
        steps,
        record_every,
    )


# ---------------------------------------------------------------------------------------------------------
# Exact mean-square dynamics (eq. MS)
# ---------------------------------------------------------------------------------------------------------


def mean_matrices(
    lr: Float[ArrayLike, ""], beta: Float[ArrayLike, ""], h: Float[ArrayLike, "*d"], method: str = "hb"
) -> tuple[Float[Array, "*d 2 2"], Float[Array, " 2"]]:
    """Per-eigenvalue 2x2 mean matrices M_i (shape h.shape + (2, 2)) and the read vector c (2,) of eq. MS."""
    v.one_of("method", method, METHODS)
    v.positive("lr", lr)
    v.in_interval("beta", beta, 0.0, 1.0)
    v.nonnegative("h", h)
    h = jnp.asarray(h)
    beta = 0.0 * jnp.asarray(beta) if method == "sgd" else jnp.asarray(beta)
    one, zero = jnp.ones_like(h), jnp.zeros_like(h)
    if method == "nesterov":
        q = 1.0 - lr * h
        M = jnp.stack([jnp.stack([(1 + beta) * q, -beta * q], -1), jnp.stack([one, zero], -1)], -2)
        c = jnp.stack([1.0 + beta, -beta])
    else:
        M = jnp.stack([jnp.stack([1 + beta - lr * h, -beta * one], -1), jnp.stack([one, zero], -1)], -2)
        c = jnp.stack([1.0 + 0 * beta, 0 * beta])
    return M, c


def _noise_map(problem: Problem, Q):
    """N(Q) = E[X Q X] - H Q H, Q (d, d) -> (d, d)."""
    A = problem.A
    c = problem.probs * problem.weights**2 * jnp.einsum("ij,jk,ik->i", A, Q, A)
    H = _hessian(problem)
    return (A * c[:, None]).T @ A - H @ Q @ H


def _full_mean(lr, beta, H, method):
    d = H.shape[0]
    eye = jnp.eye(d, dtype=H.dtype)
    beta = 0.0 * beta if method == "sgd" else beta
    if method == "nesterov":
        top = jnp.concatenate([(1 + beta) * (eye - lr * H), -beta * (eye - lr * H)], 1)
        C = jnp.concatenate([(1 + beta) * eye, -beta * eye], 1)
    else:
        top = jnp.concatenate([(1 + beta) * eye - lr * H, -beta * eye], 1)
        C = jnp.concatenate([eye, 0 * eye], 1)
    M = jnp.concatenate([top, jnp.concatenate([eye, 0 * eye], 1)], 0)
    return M, C


def _check_ms_args(method, lr, beta, batch_size) -> None:
    v.one_of("method", method, METHODS)
    v.positive("lr", lr)
    v.in_interval("beta", beta, 0.0, 1.0)
    v.positive("batch_size", batch_size, allow_inf=True)


def operator_apply(
    problem: Problem,
    S: Float[ArrayLike, "2*d 2*d"],
    *,
    lr: Float[ArrayLike, ""],
    beta: Float[ArrayLike, ""],
    batch_size: Float[ArrayLike, ""],
    method: str = "hb",
) -> Float[Array, "2*d 2*d"]:
    """One step of eq. MS: S (2d, 2d) -> M S M^T + (lr^2/B) E1 N(C S C^T) E1^T. ``batch_size`` may be a float
    (jnp.inf gives the noiseless, full-batch dynamics)."""
    _check_ms_args(method, lr, beta, batch_size)
    _check_problem(problem)
    d = problem.A.shape[1]
    v.array("S", S, ndim=2)
    v.shape("S", S, (2 * d, 2 * d))
    return _operator_apply(
        problem, jnp.asarray(S, problem.A.dtype), lr=lr, beta=beta, batch_size=batch_size, method=method
    )


def _operator_apply(problem, S, *, lr, beta, batch_size, method):
    d = problem.A.shape[1]
    M, C = _full_mean(lr, beta, _hessian(problem), method)
    noise = (lr**2 / batch_size) * _noise_map(problem, C @ S @ C.T)
    return M @ S @ M.T + jnp.zeros_like(S).at[:d, :d].set(noise)


def operator_matrix(
    problem: Problem,
    *,
    lr: Float[ArrayLike, ""],
    beta: Float[ArrayLike, ""],
    batch_size: Float[ArrayLike, ""],
    method: str = "hb",
) -> Float[Array, "4*d*d 4*d*d"]:
    """The dense (2d)^2 x (2d)^2 matrix of eq. MS acting on row-major vec(S) (the reference for tests; use
    ``mean_square_rate`` for the spectral radius). vec(P S Q^T) = (P (x) Q) vec(S)."""
    _check_ms_args(method, lr, beta, batch_size)
    _check_problem(problem)
    A = problem.A
    d = A.shape[1]
    H = _hessian(problem)
    M, C = _full_mean(lr, beta, H, method)
    A2 = jax.vmap(lambda a: jnp.kron(a, a))(A)  # (n, d^2): vec(a a^T)
    c = problem.probs * problem.weights**2
    N = (A2 * c[:, None]).T @ A2 - jnp.kron(H, H)
    E1 = jnp.concatenate([jnp.eye(d), jnp.zeros((d, d))], 0).astype(A.dtype)
    return jnp.kron(M, M) + (lr**2 / batch_size) * jnp.kron(E1, E1) @ N @ jnp.kron(C, C)


def second_moment_trajectory(
    problem: Problem,
    e0: Float[ArrayLike, " d"],
    *,
    lr: Float[ArrayLike, ""],
    beta: Float[ArrayLike, ""],
    batch_size: Float[ArrayLike, ""],
    steps: int,
    method: str = "hb",
) -> Float[Array, " steps+1"]:
    """Exact E||x_t - x*||^2 for t = 0..steps (shape (steps + 1,)) from x_0 - x* = e0 (= x_{-1} - x*), by
    iterating eq. MS on S_0 = [[e0 e0^T, e0 e0^T], [e0 e0^T, e0 e0^T]].
    Divergence: where ``mean_square_rate(...).rho`` > 1 the values grow like rho^t and overflow to inf for
    long horizons (the exact answer is then larger than the dtype's range)."""
    v.positive_int("steps", steps)
    _check_ms_args(method, lr, beta, batch_size)
    _check_problem(problem)
    v.array("e0", e0, ndim=1)
    v.shape("e0", e0, (problem.A.shape[1],))
    e0 = jnp.asarray(e0, problem.A.dtype)
    z = jnp.concatenate([e0, e0])
    S0 = jnp.outer(z, z)
    d = e0.shape[0]

    def body(S, _):
        S = _operator_apply(problem, S, lr=lr, beta=beta, batch_size=batch_size, method=method)
        return S, jnp.trace(S[:d, :d])

    _, tr = lax.scan(body, S0, None, length=steps)
    return jnp.concatenate([jnp.sum(e0**2)[None], tr])


def _sym_basis(d: int) -> np.ndarray:
    """S (d^2, m), m = d(d+1)/2, orthonormal columns spanning row-major vec of symmetric matrices."""
    cols = []
    for i in range(d):
        for j in range(i, d):
            c = np.zeros((d, d))
            c[i, j] = c[j, i] = 1.0 if i == j else 1.0 / np.sqrt(2.0)
            cols.append(c.reshape(-1))
    return np.stack(cols, 1)


class NoiseKernel(NamedTuple):
    """Eq. MS in H's eigenbasis: h (d,) eigenvalues (ascending), U (d, d) eigenvectors, K (m, m) the noise
    map."""

    h: Float[Array, " d"]
    U: Float[Array, "d d"]
    K: Float[Array, "m m"]


def noise_kernel(problem: Problem) -> NoiseKernel:
    """NoiseKernel(h, U, K): eigenvalues h (d,) of H (ascending), eigenvectors U, and N restricted to symmetric
    matrices in H's eigenbasis, as an
    (m, m) matrix, m = d(d+1)/2, in the orthonormal coordinates of ``_sym_basis`` (K = S^T K_full S with
    K_full = sum_i p_i w_i^2 vec(a~ a~^T) vec(a~ a~^T)^T - diag(vec(h h^T)), a~ = U^T a). Depends on the
    problem only: compute it once and reuse it for every (lr, beta, B) (``kernel=`` of ``mean_square_rate``
    and ``expected_sq_error``)."""
    _check_problem(problem)
    H = _hessian(problem)
    d = H.shape[0]
    h, U = jnp.linalg.eigh(H)
    At = problem.A @ U
    S = jnp.asarray(_sym_basis(d), H.dtype)
    A2 = jax.vmap(lambda a: jnp.kron(a, a))(At) @ S  # (n, m)
    c = problem.probs * problem.weights**2
    K = (A2 * c[:, None]).T @ A2 - S.T @ (jnp.outer(h, h).reshape(-1)[:, None] * S)
    return NoiseKernel(h, U, K)


def _unified_mean(lr, beta, nu, h):
    """M_i (h.shape + (2, 2)) and c (2,) for heavy ball (nu = 0) and Nesterov (nu = 1) at once (nu traced):
    M11 = 1 + beta - lr h - nu beta lr h, M12 = -beta (1 - nu lr h), c = (1 + nu beta, -nu beta)."""
    one, zero = jnp.ones_like(h), jnp.zeros_like(h)
    M = jnp.stack(
        [
            jnp.stack([1 + beta - lr * h - nu * beta * lr * h, -beta * (1 - nu * lr * h)], -1),
            jnp.stack([one, zero], -1),
        ],
        -2,
    )
    return M, jnp.stack([1.0 + nu * beta, -nu * beta])


@partial(jax.jit, static_argnames=("iters",))
def _rate(h, K, lr, beta, nu, batch_size, iters, cap):
    d = h.shape[0]
    dt = h.dtype
    iu, ju = np.triu_indices(d)
    M, c = _unified_mean(lr, beta, nu, h)
    MM = jnp.einsum("pab,pcd->pacbd", M[iu], M[ju]).reshape(-1, 4, 4)  # M_i (x) M_j over the pairs i <= j
    cc = jnp.kron(c, c)
    e11 = jnp.zeros((MM.shape[0], 4, 1), dt).at[:, 0, 0].set(1.0)
    r1, _ = _quadratic_roots(M[:, 0, 0], -M[:, 0, 1])
    lo = jnp.max(jnp.abs(r1)) ** 2  # rho(M)^2 = rho(T0)
    eye = jnp.eye(K.shape[0], dtype=dt)
    vec_i = jnp.asarray(_sym_basis(d).T @ np.eye(d).reshape(-1), dt)
    cap = jnp.asarray(cap, dt)

    def test(lam):
        """(lam > rho(T), phi(lam) = 1 / <I, x>): phi > 0 right of rho(T), ~linear zero at it."""
        g = jnp.linalg.solve(lam * jnp.eye(4, dtype=dt) - MM, e11)[..., 0] @ cc
        scale = lr**2 / batch_size
        # B = inf: no noise, F = 0 exactly (g itself is ill-conditioned next to rho(M)^2 at double roots)
        F = jnp.where(scale > 0, scale * g[:, None] * K, 0.0)
        x = jnp.linalg.solve(eye - F, vec_i)
        X = jnp.zeros((d, d), dt).at[iu, ju].set(x).at[ju, iu].set(x)
        off = jnp.where(jnp.eye(d, dtype=bool), 1.0, 1.0 / np.sqrt(2.0)).astype(dt)
        X = X * off
        chol = jnp.linalg.cholesky(X)
        pd = jnp.all(jnp.isfinite(chol)) & jnp.all(jnp.isfinite(x))
        ok = (lam > lo) & pd
        return ok, 1.0 / jnp.trace(X)

    # Illinois (regula falsi) on phi, bracketed by the exact test; bisection where phi(a) is not usable
    ok_cap, phi_cap = test(cap)

    def body(_, st):
        a, fa, b, fb, side = st
        usable = (fa < 0) & (fb > 0)
        rf = b - fb * (b - a) / (fb - fa)
        m = jnp.where(usable & (rf > a) & (rf < b), rf, 0.5 * (a + b))
        ok, fm = test(m)
        # Illinois: when the same end is kept twice, halve the other end's phi so the bracket closes from
        # both sides
        new_side = jnp.where(ok, 1, -1)
        fa_n = jnp.where(ok, jnp.where(side == 1, 0.5 * fa, fa), jnp.where(fm < 0, fm, jnp.nan))
        fb_n = jnp.where(ok, fm, jnp.where(side == -1, 0.5 * fb, fb))
        return (jnp.where(ok, a, m), fa_n, jnp.where(ok, m, b), fb_n, new_side)

    st0 = (lo, jnp.asarray(jnp.nan, dt), cap, phi_cap, jnp.asarray(0))
    a, _, b, _, _ = lax.fori_loop(0, iters, body, st0)
    return jnp.where(ok_cap, b, cap)


class MeanSquareRate(NamedTuple):
    """``rho``: the spectral radius rho(T) of eq. MS (an upper bound within the root finder's tolerance);
    ``at_cap``: True where rho(T) >= ``cap`` (then ``rho`` equals ``cap`` and is only a lower bound of rho(T):
    the iteration diverges in mean square at least that fast)."""

    rho: Float[Array, "*b"]
    at_cap: Bool[Array, "*b"]


def mean_square_rate(
    problem: Problem,
    *,
    lr: Float[ArrayLike, ""],
    beta: Float[ArrayLike, ""],
    batch_size: Float[ArrayLike, ""],
    method: str = "hb",
    iters: int = 40,
    cap: float = 2.0,
    kernel: NoiseKernel | None = None,
) -> MeanSquareRate:
    """Spectral radius rho(T) of eq. MS (the exact per-step rate of E||e_t||^2) of ``problem``.

    Returns ``MeanSquareRate(rho, at_cap)``. ``kernel``: ``noise_kernel(problem)`` when already computed
    (it depends on the problem only; pass it to reuse it over a grid of (lr, beta, B)), else computed here.

    Root finding on lambda in [rho(M)^2, cap]: the positive-definiteness test of the module docstring decides
    on which side of rho(T) a point lies (exact); Illinois regula falsi on phi(lambda) = 1 / tr((I -
    F(lambda))^{-1} I), which changes sign through a simple zero at rho(T), proposes the points, with
    bisection where phi is not usable (far left of rho(T)). Returns the
    smallest point found to pass the test (an upper bound of rho(T); ``iters`` = 40 gives ~1e-12 in float64).
    ``rho`` >= 1 means mean-square divergence. The search stops at ``cap`` (> 1): where rho(T) >= cap the
    result is ``rho = cap`` with ``at_cap = True`` (flagged, never silent). lr, beta and batch_size may be
    traced (vmap over grids); batch_size = jnp.inf gives the deterministic rate rho(M)^2.
    """
    v.one_of("method", method, METHODS)
    v.positive_int("iters", iters)
    _check_ms_args(method, lr, beta, batch_size)
    v.check("cap", cap, lambda a: a > 1, "> 1", finite=True)
    if kernel is None:
        kernel = noise_kernel(problem)
    else:
        _check_problem(problem)
        _check_kernel(kernel, problem)
    h, K = kernel.h, kernel.K
    dt = h.dtype
    beta = 0.0 * jnp.asarray(beta, dt) if method == "sgd" else jnp.asarray(beta, dt)
    nu = jnp.asarray(1.0 if method == "nesterov" else 0.0, dt)
    rho = _rate(h, K, jnp.asarray(lr, dt), beta, nu, jnp.asarray(batch_size, dt), iters, cap)
    return MeanSquareRate(rho, rho >= jnp.asarray(cap, dt))


@partial(jax.jit, static_argnames=("steps",))
def _traj(h, U, K, e0, lr, beta, nu, batch_size, steps):
    d = h.shape[0]
    dt = h.dtype
    M, c = _unified_mean(lr, beta, nu, h)
    S = jnp.asarray(_sym_basis(d), dt)
    et = U.T @ e0
    s0 = jnp.outer(et, et)[:, :, None, None] * jnp.ones((2, 2), dt)

    def body(s, _):
        mean = jnp.einsum("iab,ijbc,jdc->ijad", M, s, M)
        Q = jnp.einsum("a,ijab,b->ij", c, s, c)
        noise = (S @ (K @ (S.T @ Q.reshape(-1)))).reshape(d, d) * (lr**2 / batch_size)
        s = mean.at[:, :, 0, 0].add(noise)
        return s, jnp.trace(s[:, :, 0, 0])

    _, tr = lax.scan(body, s0, None, length=steps)
    return jnp.concatenate([jnp.sum(e0**2)[None], tr])


def _check_kernel(kernel, problem: Problem) -> None:
    if not isinstance(kernel, NoiseKernel):
        raise ValueError(f"kernel must be a NoiseKernel (noise_kernel(problem)), got {type(kernel).__name__}")
    d = problem.A.shape[1]
    v.shape("kernel.h", kernel.h, (d,))
    v.shape("kernel.K", kernel.K, (d * (d + 1) // 2,) * 2)


def expected_sq_error(
    problem: Problem,
    e0: Float[ArrayLike, " d"],
    *,
    lr: Float[ArrayLike, ""],
    beta: Float[ArrayLike, ""],
    batch_size: Float[ArrayLike, ""],
    steps: int,
    method: str = "hb",
    kernel: NoiseKernel | None = None,
) -> Float[Array, " steps+1"]:
    """Exact E||e_t||^2, t = 0..steps (shape (steps + 1,)), from e_0 = e_{-1} = e0, iterating eq. MS in H's
    eigenbasis with the reduced noise map (O(d^4) per step instead of O(n d^2); same values as
    ``second_moment_trajectory``). lr, beta, batch_size may be traced. ``kernel``: ``noise_kernel(problem)``
    when already computed (reused), else computed here. Divergence: where ``mean_square_rate(...).rho`` > 1
    the values grow like rho^t and overflow to inf for long horizons."""
    v.positive_int("steps", steps)
    _check_ms_args(method, lr, beta, batch_size)
    if kernel is None:
        kernel = noise_kernel(problem)
    else:
        _check_problem(problem)
        _check_kernel(kernel, problem)
    v.array("e0", e0, ndim=1)
    v.shape("e0", e0, kernel.h.shape)
    dt = kernel.h.dtype
    beta = 0.0 * jnp.asarray(beta, dt) if method == "sgd" else jnp.asarray(beta, dt)
    nu = jnp.asarray(1.0 if method == "nesterov" else 0.0, dt)
    return _traj(
        kernel.h,
        kernel.U,
        kernel.K,
        jnp.asarray(e0, dt),
        jnp.asarray(lr, dt),
        beta,
        nu,
        jnp.asarray(batch_size, dt),
        steps,
    )


def efold_time(rho: Float[ArrayLike, "*b"]) -> Float[Array, "*b"]:
    """Iterations per e-fold of E||e||^2 at per-step rate rho >= 0: -1 / log(rho). Where rho >= 1 the answer
    is +inf on purpose (E||e||^2 never shrinks by a factor e): the one documented non-finite output."""
    v.nonnegative("rho", rho)
    rho = jnp.asarray(rho)
    return jnp.where(rho < 1.0, -1.0 / jnp.log(jnp.clip(rho, 1e-300, 1.0 - 1e-16)), jnp.inf)
