"""The stochastic iteration: mini-batch sampling and gradients, SGD / heavy ball / Nesterov, randomized
Kaczmarz and coordinate descent (notation: ``jaxwb.theory.interpolation``)."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, ArrayLike, Bool, Float, Int, PRNGKeyArray

from jaxwb.theory import validate as v
from jaxwb.theory.interpolation.problem import METHODS, Problem, check_problem, hessian_matrix

# ---------------------------------------------------------------------------------------------------------
# The stochastic iteration
# ---------------------------------------------------------------------------------------------------------


def sample_batch(problem: Problem, batch_size: int, *, key: PRNGKeyArray) -> Int[Array, " B"]:
    """B row indices drawn iid (with replacement) from ``problem.probs``, shape (B,) (inverse-CDF sampling:
    O(B log n) per batch instead of the O(B n) of Gumbel-max)."""
    v.prng_key("key", key)
    check_problem(problem)
    v.positive_int("batch_size", batch_size)
    return _sample_batch(problem, batch_size, key=key)


def _sample_batch(problem, batch_size, *, key):
    cdf = jnp.cumsum(problem.probs)
    u = jax.random.uniform(key, (batch_size,), dtype=cdf.dtype) * cdf[-1]
    return jnp.minimum(jnp.searchsorted(cdf, u, side="right"), problem.probs.shape[0] - 1)


def minibatch_gradient(problem: Problem, x: Float[ArrayLike, " d"], idx: Int[ArrayLike, " B"]) -> Float[Array, " d"]:
    """g(x) = (1/B) sum_j w_{i_j} a_{i_j} (a_{i_j}^T x - b_{i_j}), x (d,), idx (B,) -> (d,). E[g] = grad f."""
    check_problem(problem)
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


@partial(jax.jit, static_argnames=("batch_size", "n_records"))
def curves_jit(problem, e0, lr, beta, gamma, key, n_chunks, stride, batch_size, n_records, blowup=1e10):
    """The jitted SGD / momentum iteration on the error e_t = x_t - x* (no input checks), in velocity form:
    v_{t+1} = beta v_t - lr g(e_t + gamma beta v_t), e_{t+1} = e_t + v_{t+1}, v_0 = 0 (x_{-1} = x_0), with
    g(e) = (1/B) sum_j w_{i_j} a_{i_j} (a_{i_j}^T e) the mini-batch gradient of the consistent system (b = A x*).
    The same iteration as x_{t+1} = x_t - lr g(y_t) + beta (x_t - x_{t-1}), without the cancellation of
    x_t - x_{t-1} at beta ~ 1. ``n_chunks`` and ``stride`` are traced (one compiled program per batch size and
    record count): ``n_chunks`` chunks of ``stride`` steps, step t drawing its batch from fold_in(key, t).

    Returns (sq_errors (n_records + 1,), diverged): ||e_t||^2 at t = 0, stride, ..., n_chunks stride, NaN after
    entry ``n_chunks`` (``n_chunks`` <= ``n_records``); diverged as in ``run``."""
    v.prng_key("key", key)
    e0 = jnp.asarray(e0)
    err0 = jnp.sum(e0**2)
    limit = blowup * jnp.maximum(err0, jnp.finfo(e0.dtype).tiny)

    def step(t, carry):
        e, vel, div = carry
        idx = _sample_batch(problem, batch_size, key=jax.random.fold_in(key, t))
        vn = beta * vel - lr * _error_gradient(problem, e + gamma * beta * vel, idx)
        en = e + vn
        err = jnp.sum(en**2)
        bad = div | ~jnp.isfinite(err) | (err > limit)
        return jnp.where(bad, e, en), jnp.where(bad, vel, vn), bad

    def chunk(c, carry):
        e, vel, div, errs = carry
        e, vel, div = lax.fori_loop(c * stride, (c + 1) * stride, step, (e, vel, div))
        return e, vel, div, errs.at[c + 1].set(jnp.sum(e**2))

    errs = jnp.full(n_records + 1, jnp.nan, e0.dtype).at[0].set(err0)
    _, _, div, errs = lax.fori_loop(0, n_chunks, chunk, (e0, jnp.zeros_like(e0), jnp.array(False), errs))
    return errs, div


def _error_gradient(problem, e, idx):
    """(1/B) sum_j w_{i_j} a_{i_j} (a_{i_j}^T e): the mini-batch gradient at x* + e of the consistent system."""
    a = problem.A[idx]
    return a.T @ ((a @ e) * problem.weights[idx]) / idx.shape[0]


@partial(jax.jit, static_argnames=("batch_size", "steps", "record_every"))
def run_jit(problem, x0, lr, beta, gamma, key, batch_size, steps, record_every, blowup=1e10):
    """The jitted SGD / momentum iteration behind ``run`` (no input checks): ``curves_jit`` from e_0 = x0 - x*."""
    n = steps // record_every
    return curves_jit(problem, x0 - problem.x_star, lr, beta, gamma, key, n, record_every, batch_size, n, blowup)


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
    check_problem(problem)
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
    v.prng_key("key", key)
    _check_run_args(method, batch_size, steps, record_every, lr, beta)
    _check_x0(problem, x0)
    beta = 0.0 * jnp.asarray(beta) if method == "sgd" else jnp.asarray(beta)
    x0 = jnp.asarray(x0, dtype=problem.A.dtype)
    return run_jit(
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
    v.prng_key("key", key)
    v.positive("relaxation", relaxation)
    v.in_interval("beta", beta, 0.0, 1.0)
    v.positive_int("block_size", block_size)
    check_problem(problem)
    if v.is_concrete((problem.A, problem.probs)):
        r = np.sum(np.asarray(v.primal(problem.A)) ** 2, axis=1)
        if not np.allclose(np.asarray(v.primal(problem.probs)), r / r.sum(), rtol=1e-5):
            raise ValueError("problem must use 'norm' sampling for Kaczmarz (see kaczmarz_problem)")
    return run(
        problem,
        x0,
        lr=relaxation * (1.0 / jnp.trace(hessian_matrix(problem))),
        beta=beta,
        batch_size=block_size,
        steps=steps,
        method=method if beta > 0 else "sgd",
        key=key,
        record_every=record_every,
    )


@partial(jax.jit, static_argnames=("batch_size", "n_records"))
def cd_curves_jit(A, e0, lr, beta, gamma, key, n_chunks, stride, batch_size, n_records):
    """The jitted (block) coordinate descent with momentum on the error e_t = x_t - x* (no input checks; G = A^T A
    / n, G x* = A^T b / n for a consistent system), velocity form as ``curves_jit``: coordinates j ~ G_jj / tr G,
    v_{t+1} = beta v_t - lr (1/B) sum_j (G_j . y) / p_j e_j with y = e_t + gamma beta v_t, e_{t+1} = e_t + v_{t+1}.
    ``n_chunks``, ``stride`` traced. Returns f(x_t) - f* = 1/2 e^T G e at t = 0, stride, ..., n_chunks stride,
    shape (n_records + 1,), NaN after entry ``n_chunks``."""
    v.prng_key("key", key)
    n, d = A.shape
    G = A.T @ A / n
    p = jnp.diag(G) / jnp.trace(G)
    cdf = jnp.cumsum(p)
    gap = lambda e: 0.5 * e @ G @ e

    def step(t, carry):
        e, vel = carry
        u = jax.random.uniform(jax.random.fold_in(key, t), (batch_size,), dtype=cdf.dtype) * cdf[-1]
        j = jnp.minimum(jnp.searchsorted(cdf, u, side="right"), d - 1)
        gj = (G[j] @ (e + gamma * beta * vel)) / p[j] / batch_size
        vn = (beta * vel).at[j].add(-lr * gj)
        return e + vn, vn

    def chunk(c, carry):
        e, vel, out = carry
        e, vel = lax.fori_loop(c * stride, (c + 1) * stride, step, (e, vel))
        return e, vel, out.at[c + 1].set(gap(e))

    out = jnp.full(n_records + 1, jnp.nan, e0.dtype).at[0].set(gap(e0))
    return lax.fori_loop(0, n_chunks, chunk, (e0, jnp.zeros_like(e0), out))[2]


@partial(jax.jit, static_argnames=("batch_size", "steps", "record_every"))
def coordinate_descent_jit(A, b, x_star, x0, lr, beta, gamma, key, batch_size, steps, record_every):
    """The jitted coordinate descent behind ``coordinate_descent`` (no input checks): ``cd_curves_jit`` from
    e_0 = x0 - x* (``b`` is A x*: consistent)."""
    n = steps // record_every
    return cd_curves_jit(A, x0 - x_star, lr, beta, gamma, key, n, record_every, batch_size, n)


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
    v.prng_key("key", key)
    _check_run_args(method, batch_size, steps, record_every, lr, beta)
    _check_x0(problem, x0)
    dt = problem.A.dtype
    beta = 0.0 if method == "sgd" else beta
    return coordinate_descent_jit(
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
