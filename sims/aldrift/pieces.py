"""ALDRIFT sim: the simulated pieces (sweepable per-run functions, the exact path, the coverage study) that
``run`` assembles."""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.sims.aldrift.config import Config
from jaxwb.sims.core.sweep import sweep
from jaxwb.theory import aldrift as al

# ---------------------------------------------------------------------------------------------------------
# Pieces (module-level, hashable partials for the sweep)
# ---------------------------------------------------------------------------------------------------------


def problem(setting, n):
    mu_d, A, w, x0, mu0 = setting
    return al.rastrigin_envelope(mu_d, A, w, jnp.zeros(n)), al.gaussian_prior(x0 * jnp.ones(n), mu0)


def row_problem(row, n):
    mu_d, A, w, x0, mu0 = (row["setting"][i] for i in range(5))
    return al.RastriginEnvelope(mu_d, A, w, jnp.zeros(n)), al.GaussianPrior(x0 * jnp.ones(n), mu0), mu_d


def aldrift_run(row, *, n, taus, m, M):
    """One ALDRIFT run; ``row`` = {"key", "setting" (5,)}: settings are data, so one compiled sweep covers every
    setting and run (the paper's settings and the pure quadratic). Its History as a dict."""
    cost, prior, mu_d = row_problem(row, n)
    h, _, _ = al.aldrift(cost, prior, taus, m=m, M=M, mu_d=mu_d, key=row["key"])
    return h._asdict()


def topift_run(row, *, n, rounds, m, M):
    """One TOPIFT run with ALDRIFT's budget (m M draws per round, ``rounds`` rounds); same rows."""
    cost, prior, _ = row_problem(row, n)
    h, _ = al.topift(cost, prior, m=m, M=M, rounds=rounds, key=row["key"])
    return h._asdict()


def eps_aldrift(key, *, setting, n, taus, m, M, eps):
    cost, prior = problem(setting, n)
    h, _, _ = al.aldrift(cost, prior, jnp.asarray(taus), m=m, M=M, mu_d=setting[0], key=key)
    cnt_mean, ok_mean = al.evaluations_to_reach(jax.lax.cummin(h.sample_cost), eps, h.evals)
    cnt_best, ok_best = al.evaluations_to_reach(h.best, eps, h.evals)
    return {
        "mean_cost": cnt_mean,
        "mean_reached": ok_mean,
        "best": cnt_best,
        "best_reached": ok_best,
        "sample_cost": h.sample_cost,
        "acceptance": h.acceptance,
        "ess": h.ess,
    }


def eps_random(keys, *, setting, n, lo, hi, budget, chunk, eps):
    """Random-search runs for a group of keys (R,), one after another (lax.map): each draws ``chunk`` points at a
    time (``jaxwb.theory.aldrift.random_search``) and stops once every eps (E,) is reached or ``budget`` is spent, so
    the work is ~ the mean first-hit count, not the budget. Returns first-hit counts (R, E) and reached (R, E);
    an unreached eps has count = budget and reached = False."""
    cost, _ = problem(setting, n)
    eps = jnp.asarray(eps)

    def one(key):
        def cond(st):
            i, _, done = st
            return (i * chunk < budget) & ~jnp.all(done)

        def body(st):
            i, cnt, done = st
            curve = al.random_search(cost, lo, hi, n=n, budget=chunk, key=jax.random.fold_in(key, i))
            c, ok = al.evaluations_to_reach(curve, eps)
            return i + 1, jnp.where(ok & ~done, i * chunk + c, cnt), done | ok

        init = (jnp.asarray(0), jnp.full(eps.shape, float(budget)), jnp.zeros(eps.shape, bool))
        _, cnt, done = jax.lax.while_loop(cond, body, init)
        ok = done & (cnt <= budget)
        return jnp.where(ok, cnt, float(budget)), ok

    cnt, ok = jax.lax.map(one, keys)
    return {"count": cnt, "reached": ok}


def coverage_seed(key, *, m, xs, sep):
    """log p - log L on the grid xs for each coverage family, from m samples of the target. (F, G)."""
    k1, k2, k3 = jax.random.split(key, 3)
    s = jax.random.normal(k1, (m, 1))
    logp = jax.scipy.stats.norm.logpdf(xs)
    grid = xs[:, None]
    fams = [al.fit_gaussian_fixed(s, 2.0), al.fit_kde(s, 1.0), al.fit_kde(s, 2.0)]
    out = [logp - al.log_prob(f, grid) for f in fams]
    # two-mode mixture target, single Gaussian MLE (mean, empirical variance)
    signs = jnp.where(jax.random.bernoulli(k2, 0.5, (m, 1)), sep, -sep)
    smix = signs + jax.random.normal(k3, (m, 1))
    logp_mix = jnp.logaddexp(jax.scipy.stats.norm.logpdf(xs, -sep), jax.scipy.stats.norm.logpdf(xs, sep)) - jnp.log(2.0)
    out.append(logp_mix - al.log_prob(al.fit_gaussian_empirical(smix, 0.0), grid))
    out.append(logp - al.log_prob(al.fit_gaussian_empirical(s, 0.0), grid))
    out.append(logp - al.log_prob(al.fit_kde(s, m ** (-0.2)), grid))
    logps = jnp.stack([logp, logp, logp, logp_mix, logp, logp])
    return jnp.stack(out), logps


def exact_path(setting, n, taus, npts=40001):
    """||E_{p_tau} x - x*|| and E_{p_tau}[d] at each tau, by 1-D quadrature (the cost and prior are separable)."""
    mu_d, A, w, x0, mu0 = setting
    grid = jnp.linspace(-30.0, 30.0, npts)

    def c1(z):
        return 0.5 * mu_d * z**2 + A * 2.0 * jnp.sin(0.5 * w * z) ** 2

    mean, ec = jax.vmap(lambda t: al.separable_tempered_moments(c1, x0, mu0, t, grid))(jnp.asarray(taus))
    return jnp.abs(mean) * math.sqrt(n), n * ec


def coverage(cfg: Config, key) -> dict:
    """sup p/L over growing 1-D grids and the tail mass Pr_p[p/L > 10] for every coverage family, seeds vmapped."""
    k_cov = key
    R = np.asarray(cfg.cov_R)
    xs = jnp.linspace(-R.max(), R.max(), cfg.cov_grid)
    dx = float(xs[1] - xs[0])
    cov = {"R": jnp.asarray(R), "m": jnp.asarray(cfg.cov_m)}
    sup_R, sup_m, tail_m = [], [], []
    masks = jnp.stack([jnp.abs(xs) <= r + 1e-9 for r in R])  # (nR, G)
    fixed = jnp.abs(xs) <= cfg.cov_R_fixed + 1e-9
    for j, m in enumerate(cfg.cov_m):
        keys = jax.random.split(jax.random.fold_in(k_cov, j), cfg.cov_seeds)
        chunk = max(1, int(4e7 // (m * cfg.cov_grid)))  # KDE log-densities are (G, m) per seed: bound the memory
        ratio, logps = sweep(partial(coverage_seed, m=m, xs=xs, sep=cfg.cov_mix_sep), keys, chunk_size=chunk)
        if m == cfg.cov_m_main:
            sup_R.append(jnp.max(jnp.where(masks[None, None], ratio[:, :, None, :], -jnp.inf), axis=-1))
        sup_m.append(jnp.max(jnp.where(fixed, ratio, -jnp.inf), axis=-1))  # (S, F)
        tail_m.append(jnp.sum(jnp.exp(logps) * (ratio > jnp.log(10.0)), axis=-1) * dx)
    cov["log_sup_vs_R"] = sup_R[0]  # (S, F, nR)
    cov["log_sup_vs_m"] = jnp.stack(sup_m, axis=1)  # (S, nm, F)
    cov["tail_mass_K10_vs_m"] = jnp.stack(tail_m, axis=1)  # (S, nm, F)
    # closed-form sup for the inflated MLE (seed by seed, from its fitted mean) at m = cov_m_main
    km = jax.random.split(jax.random.fold_in(k_cov, list(cfg.cov_m).index(cfg.cov_m_main)), cfg.cov_seeds)
    means = jax.vmap(lambda k: jnp.mean(jax.random.normal(jax.random.split(k, 3)[0], (cfg.cov_m_main, 1))))(km)
    cov["mle_closed_form"] = al.gaussian_log_sup_ratio(0.0, 1.0, means, math.sqrt(2.0))
    return cov
