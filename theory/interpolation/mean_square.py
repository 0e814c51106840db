"""Exact mean-square dynamics (eq. MS): the operator T, its spectral radius by the reduced map, and the
exact E||e_t||^2 recursion (notation and the derivation: ``jaxwb.theory.interpolation``)."""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, ArrayLike, Bool, Float

from jaxwb.theory import validate as v
from jaxwb.theory.interpolation.problem import METHODS, Problem, check_problem, hessian_matrix
from jaxwb.theory.river_valley import quadratic_roots_unchecked

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
    H = hessian_matrix(problem)
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
    check_problem(problem)
    d = problem.A.shape[1]
    v.array("S", S, ndim=2)
    v.shape("S", S, (2 * d, 2 * d))
    return _operator_apply(
        problem, jnp.asarray(S, problem.A.dtype), lr=lr, beta=beta, batch_size=batch_size, method=method
    )


def _operator_apply(problem, S, *, lr, beta, batch_size, method):
    d = problem.A.shape[1]
    M, C = _full_mean(lr, beta, hessian_matrix(problem), method)
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
    check_problem(problem)
    A = problem.A
    d = A.shape[1]
    H = hessian_matrix(problem)
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
    check_problem(problem)
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
    check_problem(problem)
    H = hessian_matrix(problem)
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
def rate_jit(h, K, lr, beta, nu, batch_size, iters, cap):
    """The jitted mean-square rate behind ``mean_square_rate`` (no input checks)."""
    d = h.shape[0]
    dt = h.dtype
    iu, ju = np.triu_indices(d)
    M, c = _unified_mean(lr, beta, nu, h)
    MM = jnp.einsum("pab,pcd->pacbd", M[iu], M[ju]).reshape(-1, 4, 4)  # M_i (x) M_j over the pairs i <= j
    cc = jnp.kron(c, c)
    e11 = jnp.zeros((MM.shape[0], 4, 1), dt).at[:, 0, 0].set(1.0)
    r1, _ = quadratic_roots_unchecked(M[:, 0, 0], -M[:, 0, 1])
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
        check_problem(problem)
        _check_kernel(kernel, problem)
    h, K = kernel.h, kernel.K
    dt = h.dtype
    beta = 0.0 * jnp.asarray(beta, dt) if method == "sgd" else jnp.asarray(beta, dt)
    nu = jnp.asarray(1.0 if method == "nesterov" else 0.0, dt)
    rho = rate_jit(h, K, jnp.asarray(lr, dt), beta, nu, jnp.asarray(batch_size, dt), iters, cap)
    return MeanSquareRate(rho, rho >= jnp.asarray(cap, dt))


@partial(jax.jit, static_argnames=("steps",))
def trajectory_jit(h, U, K, e0, lr, beta, nu, batch_size, steps):
    """The jitted second-moment recursion behind ``second_moment_trajectory`` (no input checks)."""
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
        check_problem(problem)
        _check_kernel(kernel, problem)
    v.array("e0", e0, ndim=1)
    v.shape("e0", e0, kernel.h.shape)
    dt = kernel.h.dtype
    beta = 0.0 * jnp.asarray(beta, dt) if method == "sgd" else jnp.asarray(beta, dt)
    nu = jnp.asarray(1.0 if method == "nesterov" else 0.0, dt)
    return trajectory_jit(
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
