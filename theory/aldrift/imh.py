"""Independent Metropolis-Hastings: the exact finite-space kernel, its TV bound and the JAX chains (eq. IMH)."""

from __future__ import annotations

from typing import Literal, overload

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, ArrayLike, Float

from jaxwb.theory import validate as v
from jaxwb.theory.aldrift.costs import GaussianPrior
from jaxwb.theory.aldrift.coverage import importance_ess
from jaxwb.theory.aldrift.models import KDE, Gaussian, draw_noise, from_noise, log_prob_fn, model_dim
from jaxwb.theory.aldrift.util import as_float, check_points


def imh_transition_matrix(p: Float[ArrayLike, " K"], q: Float[ArrayLike, " K"]) -> Float[Array, "K K"]:
    """Exact IMH kernel on a finite space (eq. IMH): P[x, y] = q(y) min(1, p(y) q(x) / (p(x) q(y))) for y != x,
    P[x, x] = 1 - sum_{y != x} P[x, y]. p, q (K,) probability vectors with q > 0. Returns (K, K)."""
    v.array("p", p, ndim=1)
    v.array("q", q, ndim=1)
    v.same_shape("p", p, "q", q)
    v.nonnegative("p", p)
    v.positive("q", q)
    v.check("p", p, lambda a: abs(a.sum() - 1.0) <= 1e-4, "a probability vector (sum 1)")
    v.check("q", q, lambda a: abs(a.sum() - 1.0) <= 1e-4, "a probability vector (sum 1)")
    p, q = as_float(p), as_float(q)
    r = p / q  # importance ratio
    rx = r[:, None]
    acc = jnp.where(rx > 0, jnp.minimum(1.0, r[None, :] / jnp.where(rx > 0, rx, 1.0)), 1.0)  # leave p(x) = 0
    P = q[None, :] * acc
    P = P * (1.0 - jnp.eye(p.shape[0], dtype=P.dtype))
    return P + jnp.diag(1.0 - jnp.sum(P, axis=1))


def imh_tv_bound(W: Float[ArrayLike, "*b"], M: Float[ArrayLike, "*b"]) -> Float[Array, "*b"]:
    """(1 - 1/W)^M: the TV bound of M IMH steps from any start, W = max p/q >= 1 (eq. IMH-TV)."""
    v.check("W", W, lambda a: a >= 1, ">= 1 (max p/q of two distributions)", finite=True)
    v.nonnegative("M", M)
    return (1.0 - 1.0 / as_float(W)) ** as_float(M)


def _imh_chain(cost, prior, tau, model, key, M, x0=None):
    """One IMH chain of M steps (lax.scan). Starts from ``x0`` (n,), or a proposal draw when None (the draw is
    made either way, so a chain's proposals do not depend on where it starts). Returns (x_M, n_accepted, best
    cost, log weights of the M proposals).

    All the chain's randomness is drawn before the scan (one PRNG call site per kind, a much smaller program to
    compile than a key split per step)."""
    logq = log_prob_fn(model)

    def logw(x):
        dx = cost(x)
        return prior.log_prob(x) - tau * dx - logq(x), dx

    kz, ku = jax.random.split(key)
    z, idx = draw_noise(model, kz, (M + 1,))
    props = from_noise(model, z, idx)  # (M + 1, n): the initial state and the M proposals
    logu = jnp.log(jax.random.uniform(ku, (M,), dtype=props.dtype))
    x = props[0] if x0 is None else x0
    lw, dx = logw(x)

    def step(carry, inp):
        x, lw, best = carry
        y, lu = inp
        lwy, dy = logw(y)
        accept = lu < lwy - lw
        return (jnp.where(accept, y, x), jnp.where(accept, lwy, lw), jnp.minimum(best, dy)), (accept, lwy)

    (x, _, best), (acc, lws) = lax.scan(step, (x, lw, dx), (props[1:], logu))
    return x, jnp.sum(acc), best, lws


@overload
def imh_chains(
    cost,
    prior: GaussianPrior,
    tau: float,
    model: Gaussian | KDE,
    *,
    m: int,
    M: int,
    key: Array,
    init: Float[ArrayLike, "m n"] | None = ...,
    return_ess: Literal[False] = ...,
) -> tuple[Float[Array, "m n"], Float[Array, ""], Float[Array, ""]]: ...


@overload
def imh_chains(
    cost,
    prior: GaussianPrior,
    tau: float,
    model: Gaussian | KDE,
    *,
    m: int,
    M: int,
    key: Array,
    init: Float[ArrayLike, "m n"] | None = ...,
    return_ess: Literal[True],
) -> tuple[Float[Array, "m n"], Float[Array, ""], Float[Array, ""], Float[Array, ""]]: ...


def imh_chains(
    cost,
    prior: GaussianPrior,
    tau: float,
    model: Gaussian | KDE,
    *,
    m: int,
    M: int,
    key: Array,
    init: Float[ArrayLike, "m n"] | None = None,
    return_ess: bool = False,
) -> (
    tuple[Float[Array, "m n"], Float[Array, ""], Float[Array, ""]]
    | tuple[Float[Array, "m n"], Float[Array, ""], Float[Array, ""], Float[Array, ""]]
):
    """m independent IMH chains (vmap) of M steps (lax.scan), target w_tau = L0 exp(-tau d), proposal ``model``.

    Returns (final states (m, n), acceptance rate over all m*M proposals, best cost seen), and with
    ``return_ess`` also the importance-sampling ESS fraction of the m*M proposals against the target
    (``importance_ess``: how well the fitted proposal covers p_tau). Uses m (M + 1) evaluations of d (each
    chain's initial state plus M proposals). ``init`` (m, n): the chains' initial states (default: one proposal
    draw each); the proposals are the same draws either way.
    """
    v.prng_key("key", key)
    v.positive_int("m", m)
    v.positive_int("M", M)
    v.nonnegative("tau", tau)
    n = model_dim(model)
    if prior.x0.shape[-1] != n:
        raise ValueError(f"model must have the prior's dimension n = {prior.x0.shape[-1]}, got {n}")
    keys = jax.random.split(key, m)
    if init is None:
        xs, acc, best, lws = jax.vmap(lambda k: _imh_chain(cost, prior, tau, model, k, M))(keys)
    else:
        check_points("init", init, n)
        v.shape("init", init, (m, n))
        init = jnp.asarray(init, prior.x0.dtype)
        xs, acc, best, lws = jax.vmap(lambda k, x0: _imh_chain(cost, prior, tau, model, k, M, x0))(keys, init)
    out = (xs, jnp.sum(acc) / (m * M), jnp.min(best))
    return (*out, importance_ess(lws)) if return_ess else out
