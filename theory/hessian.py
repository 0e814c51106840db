"""Hessian tools on flat parameter vectors: Hessian-vector products, Lanczos and power iteration.

All functions are pure JAX (jit/vmap-able) and take a scalar loss ``f: R^P -> R`` of a flat parameter vector.

- ``hvp(f, x, u) = H(x) u`` by forward-over-reverse differentiation, ``jvp(grad f, (x,), (u,))``: one
  Hessian-vector product costs ~2-3 gradients and never forms H (P^2 memory).
- ``lanczos_top``: ``iters`` Lanczos steps with full re-orthogonalisation on a symmetric operator; the top
  eigenvalues of the tridiagonal T_m (Ritz values) approximate the extreme eigenvalues of H (Golub & Van Loan,
  Matrix Computations, sec. 10.1).
- ``lanczos_warm``: the same Lanczos from a given start vector (``has_aux``: the operator may also return an
  auxiliary output, e.g. the loss and gradient that the HVP's primal pass computes anyway). Restarted from the
  previous top Ritz vector it tracks the largest *algebraic* eigenvalue lambda_max(H(theta_t)) along a training
  run (see its docstring for why).
- ``power_top``: power iteration ``u <- H u / |H u|`` with the Rayleigh quotient u^T H u; converges to the
  eigenvalue of largest *magnitude* (rate |lambda_2 / lambda_1| per step), which is a negative one whenever
  |lambda_min| > lambda_max: not a lambda_max tracker on a non-convex loss.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from jaxwb.theory import validate as v

__all__ = ["hvp", "lanczos_top", "lanczos_warm", "power_top"]


def hvp(f: Callable[[Array], Array], x: Float[Array, " p"], u: Float[Array, " p"]) -> Float[Array, " p"]:
    """Hessian-vector product ``H(x) u`` of the scalar ``f`` at ``x`` (forward-over-reverse)."""
    v.array("x", x, finite=False)
    v.array("u", u, finite=False)
    v.same_shape("x", x, "u", u)
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
    v.prng_key("key", key)
    evals, evecs, _ = _lanczos(lambda u: (op(u), ()), jax.random.normal(key, (dim,)), iters, k)
    return evals, evecs


def lanczos_warm(
    op: Callable, q0: Float[Array, " dim"], *, iters: int, k: int = 1, has_aux: bool = False
) -> tuple[Float[Array, " k"], Float[Array, "dim k"]] | tuple[Float[Array, " k"], Float[Array, "dim k"], object]:
    """Top-``k`` Ritz pairs of ``iters`` Lanczos steps (full re-orthogonalisation) on the symmetric ``op`` from the
    start vector ``q0`` (need not be normalised; must be nonzero). With ``has_aux``, ``op(u)`` returns
    ``(op u, aux)`` and ``aux`` of the first call (at ``q0``) is returned third.

    Why it tracks the largest *algebraic* eigenvalue (power iteration does not): the top Ritz value is the maximum
    of the Rayleigh quotient u^T H u / u^T u over the Krylov space K = span(q0, H q0, ..., H^(iters-1) q0). Hence
    (i) it lies in [q0^T H q0 / |q0|^2, lambda_max]: a negative eigenvalue of large magnitude only lowers the
    quotient, so it can never win (power iteration amplifies |lambda| and converges to it); (ii) restarted from the
    previous top Ritz vector (which lies in the new K), it never decreases on a fixed H and converges to
    lambda_max; each restart shrinks tan(angle to the top eigenvector) by the Chebyshev factor
    1/T_(iters-1)(1 + 2 (lambda_1 - lambda_2)/(lambda_2 - lambda_min)) (Golub & Van Loan, sec. 10.1.5), far faster
    than power iteration's |lambda_2/lambda_1| per HVP on a clustered top. ``iters`` operator applications.
    """
    _check_iters(iters, k)
    _check_start("q0", q0)
    evals, evecs, aux = _lanczos(op if has_aux else (lambda u: (op(u), ())), q0, iters, k)
    return (evals, evecs, aux) if has_aux else (evals, evecs)


def _check_start(name: str, q0: Array) -> None:
    v.array(name, q0, ndim=1)
    v.check(name, q0, lambda a: (a != 0).any(), "a nonzero start vector")


def _lanczos(op_aux, q0, iters, k):
    """Lanczos core: ``op_aux(u) -> (op u, aux)``; returns (top-k Ritz values, Ritz vectors, aux of the first call)."""
    q0 = q0 / jnp.maximum(jnp.linalg.norm(q0), 1e-30)
    dim = q0.shape[0]
    aux_shape = jax.eval_shape(op_aux, q0)[1]
    aux0 = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), aux_shape)

    def body(i, carry):
        qs, alphas, betas, aux = carry
        q = qs[i]
        w, a_i = op_aux(q)
        aux = jax.tree.map(lambda old, new: jnp.where(i == 0, new, old), aux, a_i)
        a = jnp.dot(w, q)
        mask = (jnp.arange(iters + 1) <= i)[:, None]
        w = w - (qs * mask).T @ ((qs * mask) @ w)
        w = w - (qs * mask).T @ ((qs * mask) @ w)
        b = jnp.linalg.norm(w)
        qs = qs.at[i + 1].set(jnp.where(i + 1 < iters, w / jnp.maximum(b, 1e-30), 0.0), mode="drop")
        return qs, alphas.at[i].set(a), betas.at[i].set(b), aux

    qs = jnp.zeros((iters + 1, dim), q0.dtype).at[0].set(q0)
    init = (qs, jnp.zeros(iters, q0.dtype), jnp.zeros(iters, q0.dtype), aux0)
    qs, alphas, betas, aux = jax.lax.fori_loop(0, iters, body, init)
    t = jnp.diag(alphas) + jnp.diag(betas[:-1], 1) + jnp.diag(betas[:-1], -1)
    evals, evecs = jnp.linalg.eigh(t)
    order = jnp.argsort(evals)[::-1][:k]
    return evals[order], qs[:iters].T @ evecs[:, order], aux


def power_top(
    op: Callable[[Array], Array], u0: Float[Array, " dim"], *, iters: int
) -> tuple[Float[Array, ""], Float[Array, " dim"]]:
    """``iters`` power-iteration steps on the symmetric ``op`` from ``u0`` (need not be normalised).

    Returns ``(rayleigh quotient u^T op u, unit vector u)``: the eigenvalue of largest magnitude and its
    eigenvector once converged. ``iters`` operator applications.
    """
    v.positive_int("iters", iters)
    _check_start("u0", u0)
    u = u0 / jnp.maximum(jnp.linalg.norm(u0), 1e-30)

    def body(_, c):
        u, _ = c
        w = op(u)
        lam = jnp.dot(u, w)
        return w / jnp.maximum(jnp.linalg.norm(w), 1e-30), lam

    u, _ = jax.lax.fori_loop(0, iters - 1, body, (u, jnp.zeros((), u.dtype)))
    lam = jnp.dot(u, op(u))
    return lam, u
