"""Baselines: uniform random search and DOO (Munos 2011), and the evaluation-count predictions."""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, ArrayLike, Bool, Float

from jaxwb.theory import validate as v
from jaxwb.theory.aldrift.util import as_float


@partial(jax.jit, static_argnames=("n", "budget"))
def _random_search(cost, lo, hi, key, n, budget):
    x = jax.random.uniform(key, (budget, n), minval=lo, maxval=hi)
    return lax.cummin(cost(x))


def _box(lo, hi) -> None:
    v.finite("lo", lo)
    v.finite("hi", hi)
    v.check("hi", hi, lambda a: a > lo, f"> lo={lo}")


def random_search(cost, lo: float, hi: float, *, n: int, budget: int, key: Array) -> Float[Array, " budget"]:
    """Uniform random search on the box [lo, hi]^n: the best-so-far cost after 1..budget evaluations (budget,)."""
    v.prng_key("key", key)
    v.positive_int("n", n)
    v.positive_int("budget", budget)
    _box(lo, hi)
    return _random_search(cost, as_float(lo), as_float(hi), key, n, budget)


def random_search_expected_evals(
    eps: Float[ArrayLike, "*b"], L_d: float, lo: float, hi: float, n: int
) -> Float[Array, "*b"]:
    """1/P[d - d* <= eps] for one uniform draw on [lo, hi]^n when the sublevel set is the ball of radius
    r = sqrt(2 eps / L_d) (exact as eps -> 0, and an upper bound on the mean at every eps since
    d - d* <= L_d/2 |x - x*|^2): (hi - lo)^n Gamma(n/2 + 1) / (pi^(n/2) r^n). Grows as eps^(-n/2)."""
    v.positive("eps", eps)
    v.positive("L_d", L_d)
    _box(lo, hi)
    v.positive_int("n", n)
    r = jnp.sqrt(2.0 * as_float(eps) / L_d)
    log_ball = 0.5 * n * math.log(math.pi) - math.lgamma(0.5 * n + 1.0) + n * jnp.log(r)
    return jnp.exp(n * jnp.log(as_float(hi - lo)) - log_ball)


def evaluations_to_reach(
    best_curve: Float[ArrayLike, " B"], eps: Float[ArrayLike, " E"], evals: Float[ArrayLike, " B"] | None = None
) -> tuple[Float[Array, " E"], Bool[Array, " E"]]:
    """First evaluation count at which a non-increasing best-so-far curve (B,) is <= eps (E,).

    ``evals`` (B,) gives the evaluation count of each curve entry (default 1..B). Returns (counts (E,), reached
    (E,) bool); an unreached eps gets count = evals[-1] and reached = False (flagged, never silently inf)."""
    v.array("best_curve", best_curve, ndim=1, finite=False)
    v.check("best_curve", best_curve, lambda a: a == a, "free of NaN (+inf = nothing evaluated yet is allowed)")
    v.check(
        "best_curve", best_curve, lambda a: a[1:] <= a[:-1] + 1e-5 * abs(a[:-1]), "non-increasing (a best-so-far curve)"
    )
    v.array("eps", eps, ndim=(0, 1))
    if evals is not None:
        v.array("evals", evals, ndim=1)
        v.same_shape("best_curve", best_curve, "evals", evals)
    best_curve = as_float(best_curve)
    B = best_curve.shape[0]
    evals = jnp.arange(1, B + 1, dtype=best_curve.dtype) if evals is None else jnp.asarray(evals)
    idx = jnp.searchsorted(-best_curve, -as_float(eps), side="left")
    reached = idx < B
    return evals[jnp.minimum(idx, B - 1)], reached


@partial(jax.jit, static_argnames=("n", "expansions"))
def _doo(cost, lo, hi, L_d, n, expansions):
    K = 1 + 2 * expansions
    dt = jnp.result_type(float)
    centers = jnp.zeros((K, n), dt).at[0].set(jnp.full((n,), 0.5 * (lo + hi), dt))
    half = jnp.zeros((K, n), dt).at[0].set(jnp.full((n,), 0.5 * (hi - lo), dt))
    vals = jnp.full((K,), jnp.inf, dt).at[0].set(cost(centers[0]))
    alive = jnp.zeros((K,), bool).at[0].set(True)

    def body(i, state):
        centers, half, vals, alive = state
        delta = 0.5 * L_d * jnp.sum(half**2, axis=-1)  # sup of the semi-metric L_d/2 |x - c|^2 over the cell
        j = jnp.argmin(jnp.where(alive, vals - delta, jnp.inf))  # most optimistic leaf (min f - delta)
        k = jnp.argmax(half[j])
        new_half = half[j].at[k].divide(3.0)
        step = jnp.zeros((n,), dt).at[k].set(2.0 * new_half[k])
        a, b = 1 + 2 * i, 2 + 2 * i
        ca, cb = centers[j] - step, centers[j] + step
        centers = centers.at[a].set(ca).at[b].set(cb)
        half = half.at[j].set(new_half).at[a].set(new_half).at[b].set(new_half)
        vals = vals.at[a].set(cost(ca)).at[b].set(cost(cb))
        alive = alive.at[a].set(True).at[b].set(True)
        return centers, half, vals, alive

    centers, half, vals, alive = lax.fori_loop(0, expansions, body, (centers, half, vals, alive))
    return lax.cummin(vals), centers, half


def doo(
    cost, lo: float, hi: float, *, n: int, L_d: float, expansions: int
) -> tuple[Float[Array, " K"], Float[Array, "K n"], Float[Array, "K n"]]:
    """Deterministic Optimistic Optimisation (Munos 2011) of d on [lo, hi]^n, minimisation form.

    Cells are boxes split in 3 along their widest side (the middle child keeps the parent's centre, so each
    expansion costs 2 evaluations); the leaf expanded is argmin d(centre) - L_d/2 |half-diagonal|^2, optimistic
    under the local smoothness d(x) - d* <= L_d/2 |x - x*|^2 (the quadratic envelope). With d - d* >= mu_d/2
    |x - x*|^2 the near-optimality dimension is 0, so the regret falls exponentially in the evaluations
    (O(log 1/eps) evaluations). Returns (best-so-far (1 + 2 expansions,), centres, half-widths); entry i is the
    best after i + 1 evaluations.
    """
    v.positive_int("n", n)
    v.positive_int("expansions", expansions)
    v.positive("L_d", L_d)
    _box(lo, hi)
    return _doo(cost, as_float(lo), as_float(hi), as_float(L_d), n, expansions)


def aldrift_evals_per_efold(m: int, M: int, n: int) -> float:
    """Predicted slope of ALDRIFT's evaluations vs ln(1/eps) on a geometric schedule: each temperature costs
    m (M + 1) evaluations and multiplies tau by 1 + 1/n, while E_{p_tau}[d] -> n/(2 tau) (Laplace: p_tau is
    ~N(x*, I/(tau L)) near x*, E[d] = n/(2 tau) whatever L). Hence d evals / d ln(1/eps) = m (M+1)/ln(1 + 1/n)."""
    v.positive_int("m", m)
    v.positive_int("M", M)
    v.positive_int("n", n)
    return m * (M + 1) / math.log1p(1.0 / n)
