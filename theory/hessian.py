# ruff: noqa: F722  (jaxtyping shape strings)
"""Hessian tools on flat parameter vectors: Hessian-vector products, Lanczos and power iteration.

All functions are pure JAX (jit/vmap-able) and take a scalar loss ``f: R^P -> R`` of a flat parameter vector.

- ``hvp(f, x, u) = H(x) u`` by forward-over-reverse differentiation, ``jvp(grad f, (x,), (u,))``: one
  Hessian-vector product costs ~2-3 gradients and never forms H (P^2 memory).
- ``lanczos_top``: ``iters`` Lanczos steps with full re-orthogonalisation on a symmetric operator; the top
  eigenvalues of the tridiagonal T_m (Ritz values) approximate the extreme eigenvalues of H (Golub & Van Loan,
  Matrix Computations, sec. 10.1).
- ``power_top``: power iteration ``u <- H u / |H u|`` with the Rayleigh quotient u^T H u; converges to the
  eigenvalue of largest *magnitude* (rate |lambda_2 / lambda_1| per step). Warm-start it from the previous
  eigenvector to track lambda_max(H(theta_t)) along a training run.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from theory import _validate as v

__all__ = ["hvp", "lanczos_top", "power_top"]


def hvp(f: Callable[[Array], Array], x: Float[Array, " p"], u: Float[Array, " p"]) -> Float[Array, " p"]:
    """Hessian-vector product ``H(x) u`` of the scalar ``f`` at ``x`` (forward-over-reverse)."""
    return jax.jvp(jax.grad(f), (x,), (u,))[1]


def _check_iters(iters: int, k: int) -> None:
    v.positive_int("iters", iters)
    v.positive_int("k", k)
    if k > iters:
        raise ValueError(f"k must be <= iters={iters}, got {k}")


def lanczos_top(
    op: Callable[[Array], Array], dim: int, *, key: Array, iters: int, k: int
) -> tuple[Float[Array, " k"], Float[Array, "dim k"]]:
    """Top-``k`` eigenpairs of the symmetric operator ``op: R^dim -> R^dim`` by ``iters`` Lanczos steps with full
    re-orthogonalisation (twice, "twice is enough"), from a Gaussian start drawn with ``key``.

    Returns ``(eigenvalues[k] descending, eigenvectors[dim, k] orthonormal)``: the Ritz pairs of the tridiagonal
    ``T = Q^T op Q`` (alpha_i = q_i^T op q_i on the diagonal, beta_i = |w_i| off it).
    """
    v.positive_int("dim", dim)
    _check_iters(iters, k)
    q0 = jax.random.normal(key, (dim,))
    q0 = q0 / jnp.linalg.norm(q0)

    def body(i, carry):
        qs, alphas, betas = carry
        q = qs[i]
        w = op(q)
        a = jnp.dot(w, q)
        mask = (jnp.arange(iters + 1) <= i)[:, None]
        w = w - (qs * mask).T @ ((qs * mask) @ w)
        w = w - (qs * mask).T @ ((qs * mask) @ w)
        b = jnp.linalg.norm(w)
        qs = qs.at[i + 1].set(jnp.where(i + 1 < iters, w / jnp.maximum(b, 1e-30), 0.0), mode="drop")
        return qs, alphas.at[i].set(a), betas.at[i].set(b)

    qs = jnp.zeros((iters + 1, dim), q0.dtype).at[0].set(q0)
    qs, alphas, betas = jax.lax.fori_loop(0, iters, body, (qs, jnp.zeros(iters), jnp.zeros(iters)))
    t = jnp.diag(alphas) + jnp.diag(betas[:-1], 1) + jnp.diag(betas[:-1], -1)
    evals, evecs = jnp.linalg.eigh(t)
    order = jnp.argsort(evals)[::-1][:k]
    return evals[order], qs[:iters].T @ evecs[:, order]


def power_top(
    op: Callable[[Array], Array], u0: Float[Array, " dim"], *, iters: int
) -> tuple[Float[Array, ""], Float[Array, " dim"]]:
    """``iters`` power-iteration steps on the symmetric ``op`` from ``u0`` (need not be normalised).

    Returns ``(rayleigh quotient u^T op u, unit vector u)``: the eigenvalue of largest magnitude and its
    eigenvector once converged. ``iters`` operator applications.
    """
    v.positive_int("iters", iters)
    u = u0 / jnp.maximum(jnp.linalg.norm(u0), 1e-30)

    def body(_, c):
        u, _ = c
        w = op(u)
        lam = jnp.dot(u, w)
        return w / jnp.maximum(jnp.linalg.norm(w), 1e-30), lam

    u, _ = jax.lax.fori_loop(0, iters - 1, body, (u, jnp.zeros((), u.dtype)))
    lam = jnp.dot(u, op(u))
    return lam, u
