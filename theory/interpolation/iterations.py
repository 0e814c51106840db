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


@partial(jax.jit, static_argnames=("batch_size", "steps", "record_every"))
def run_jit(problem, x0, lr, beta, gamma, key, batch_size, steps, record_every, blowup=1e10):
    """The jitted SGD / momentum iteration behind ``run`` (no input checks)."""
    v.prng_key("key", key)
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


@partial(jax.jit, static_argnames=("batch_size", "steps", "record_every"))
def coordinate_descent_jit(A, b, x_star, x0, lr, beta, gamma, key, batch_size, steps, record_every):
    """The jitted coordinate descent behind ``coordinate_descent`` (no input checks)."""
    v.prng_key("key", key)
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
