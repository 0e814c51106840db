"""ALDRIFT (eq. ALDRIFT) and TOPIFT (the cross-entropy-method baseline)."""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, ArrayLike, Float

from jaxwb.theory import validate as v
from jaxwb.theory.aldrift.costs import GaussianPrior
from jaxwb.theory.aldrift.imh import imh_chains
from jaxwb.theory.aldrift.models import FAMILIES, KDE, Gaussian, fit_kde, fit_model, sample
from jaxwb.theory.aldrift.util import as_float


class History(NamedTuple):
    """Per-iteration record (leading axis = iteration, length N): fitted mean (N, n), mean cost of the m fitted
    samples (N,), best cost seen so far (N,), cumulative evaluations of d (N,), IMH acceptance rate (N,) (NaN-free;
    TOPIFT reports 1/M, the fraction kept), importance ESS fraction of the proposals against the target (N,)
    (``importance_ess``; TOPIFT reports 1: it does not weight)."""

    mean: Float[Array, "N n"]
    sample_cost: Float[Array, " N"]
    best: Float[Array, " N"]
    evals: Float[Array, " N"]
    acceptance: Float[Array, " N"]
    ess: Float[Array, " N"]


def initial_model(family: str, prior: GaussianPrior, *, m: int, c: float = 1.0, key: Array) -> Gaussian | KDE:
    """The model at tau = 0: the prior itself for the Gaussian families, a KDE of m prior draws for "kde"."""
    v.prng_key("key", key)
    v.one_of("family", family, FAMILIES)
    v.positive_int("m", m)
    n = prior.x0.shape[-1]
    if family == "kde":
        draws = prior.x0 + jax.random.normal(key, (m, n), dtype=prior.x0.dtype) / jnp.sqrt(prior.mu0)
        return fit_kde(draws, c)
    return Gaussian(prior.x0, jnp.eye(n, dtype=prior.x0.dtype) / jnp.sqrt(prior.mu0))


@partial(jax.jit, static_argnames=("m", "M", "family"))
def aldrift_jit(cost, prior, taus, mu_d, inflation, c, key, m, M, family):
    """The jitted ALDRIFT loop behind ``aldrift`` (no input checks)."""
    v.prng_key("key", key)
    kinit, krun = jax.random.split(key)
    model = initial_model(family, prior, m=m, c=c, key=kinit)

    def level(carry, inp):
        model, best, evals = carry
        tau, k = inp
        xs, acc, b, ess = imh_chains(cost, prior, tau, model, m=m, M=M, key=k, return_ess=True)
        var = inflation / (prior.mu0 + tau * mu_d)
        new = fit_model(family, xs, var=var, c=c)
        best = jnp.minimum(best, b)
        evals = evals + m * (M + 1)
        rec = History(jnp.mean(xs, axis=0), jnp.mean(cost(xs)), best, evals, acc, ess)
        return (new, best, evals), (rec, xs)

    keys = jax.random.split(krun, taus.shape[0])
    init = (model, jnp.array(jnp.inf, taus.dtype), jnp.array(0.0, taus.dtype))
    (model, _, _), (hist, xs) = lax.scan(level, init, (taus, keys))
    return hist, xs[-1], model


def aldrift(
    cost,
    prior: GaussianPrior,
    taus: Float[ArrayLike, " N"],
    *,
    m: int,
    M: int,
    family: str = "mle",
    mu_d: float | None = None,
    inflation: float = 2.0,
    c: float = 1.0,
    key: Array,
) -> tuple[History, Float[Array, "m n"], Gaussian | KDE]:
    """ALDRIFT over the temperatures ``taus`` (N,) (eq. ALDRIFT).

    At each tau_k: m IMH chains of M steps with proposal L_{k-1}, target L0 exp(-tau_k d); fit L_k on the m final
    states with ``family``:
      "mle"        N(sample mean, inflation / (mu0 + tau_k mu_d) I)   (paper: inflation 2, mu_tau = mu0 + tau mu_d)
      "empirical"  N(sample mean, sample covariance)                   (not coarse-learnable: tails too light)
      "kde"        KDE with bandwidth h = c * pooled sample std
    L_0 is the prior. Returns (History, final samples (m, n), final model). Uses N m (M + 1) evaluations of d.
    """
    v.prng_key("key", key)
    v.one_of("family", family, FAMILIES)
    v.positive_int("m", m)
    v.positive_int("M", M)
    v.positive("inflation", inflation)
    v.positive("c", c)
    v.array("taus", taus, ndim=1)
    v.nonnegative("taus", taus)
    taus = as_float(taus)
    if family == "mle":
        if mu_d is None:
            raise ValueError("mu_d must be given for family='mle' (the variance is inflation/(mu0 + tau mu_d))")
        v.positive("mu_d", mu_d)
    mu_d_arr = as_float(0.0 if mu_d is None else mu_d)
    return aldrift_jit(cost, prior, taus, mu_d_arr, as_float(inflation), as_float(c), key, m, M, family)


@partial(jax.jit, static_argnames=("m", "M", "rounds", "family"))
def _topift(cost, prior, c, key, m, M, rounds, family):
    kinit, krun = jax.random.split(key)
    model = initial_model(family, prior, m=m, c=c, key=kinit)

    def rnd(carry, k):
        model, best, evals = carry
        xs = sample(model, (m * M,), key=k)
        dx = cost(xs)
        _, idx = lax.top_k(-dx, m)
        elite = xs[idx]
        new = fit_model(family, elite, var=1.0, c=c)
        best = jnp.minimum(best, jnp.min(dx))
        evals = evals + m * M
        rec = History(
            jnp.mean(elite, axis=0),
            jnp.mean(dx[idx]),
            best,
            evals,
            jnp.asarray(1.0 / M, dx.dtype),
            jnp.asarray(1.0, dx.dtype),
        )
        return (new, best, evals), rec

    init = (model, jnp.array(jnp.inf, prior.x0.dtype), jnp.array(0.0, prior.x0.dtype))
    (model, _, _), hist = lax.scan(rnd, init, jax.random.split(krun, rounds))
    return hist, model


def topift(
    cost, prior: GaussianPrior, *, m: int, M: int, rounds: int, family: str = "empirical", c: float = 1.0, key: Array
) -> tuple[History, Gaussian | KDE]:
    """TOPIFT (cross-entropy method): each round draw m*M samples from the current model (round 1: the prior),
    keep the m cheapest, refit with ``family`` ("empirical" = Gaussian MLE mean and covariance, "kde").
    Same budget as ALDRIFT with the same (m, M, N = rounds). Returns (History, final model)."""
    v.prng_key("key", key)
    v.one_of("family", family, ("empirical", "kde"))
    v.positive_int("m", m)
    v.positive_int("M", M)
    v.positive_int("rounds", rounds)
    v.positive("c", c)
    return _topift(cost, prior, as_float(c), key, m, M, rounds, family)
