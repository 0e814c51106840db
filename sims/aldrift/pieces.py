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


def coverage_seed(key, *, m, xs, sep, sd):
    """log p - log L on the grid xs (G,) for each coverage family, from m samples of the target N(0, sd^2) (the
    mixture: (N(-sep sd, sd^2) + N(sep sd, sd^2)) / 2). Returns ((F, G) log ratios, (F, G) log p)."""
    k1, k2, k3 = jax.random.split(key, 3)
    s = sd * jax.random.normal(k1, (m, 1))
    logp = jax.scipy.stats.norm.logpdf(xs, scale=sd)
    grid = xs[:, None]
    fams = [al.fit_gaussian_fixed(s, 2.0 * sd**2), al.fit_kde(s, 1.0), al.fit_kde(s, 2.0)]
    out = [logp - al.log_prob(f, grid) for f in fams]
    # two-mode mixture target, single Gaussian MLE (mean, empirical variance)
    signs = jnp.where(jax.random.bernoulli(k2, 0.5, (m, 1)), sep, -sep)
    smix = sd * (signs + jax.random.normal(k3, (m, 1)))
    logp_mix = jnp.logaddexp(
        jax.scipy.stats.norm.logpdf(xs, -sep * sd, sd), jax.scipy.stats.norm.logpdf(xs, sep * sd, sd)
    ) - jnp.log(2.0)
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
    R = np.asarray(cfg.cov_R)  # in units of the target's sd
    sd = cfg.cov_sd
    xs = jnp.linspace(-R.max() * sd, R.max() * sd, cfg.cov_grid)
    dx = float(xs[1] - xs[0])
    cov = {"R": jnp.asarray(R), "m": jnp.asarray(cfg.cov_m)}
    sup_R, sup_m, tail_m = [], [], []
    masks = jnp.stack([jnp.abs(xs) <= (r + 1e-9) * sd for r in R])  # (nR, G)
    fixed = jnp.abs(xs) <= (cfg.cov_R_fixed + 1e-9) * sd
    for j, m in enumerate(cfg.cov_m):
        keys = jax.random.split(jax.random.fold_in(k_cov, j), cfg.cov_seeds)
        chunk = max(1, int(4e7 // (m * cfg.cov_grid)))  # KDE log-densities are (G, m) per seed: bound the memory
        ratio, logps = sweep(partial(coverage_seed, m=m, xs=xs, sep=cfg.cov_mix_sep, sd=sd), keys, chunk_size=chunk)
        if m == cfg.cov_m_main:
            sup_R.append(jnp.max(jnp.where(masks[None, None], ratio[:, :, None, :], -jnp.inf), axis=-1))
        sup_m.append(jnp.max(jnp.where(fixed, ratio, -jnp.inf), axis=-1))  # (S, F)
        tail_m.append(jnp.sum(jnp.exp(logps) * (ratio > jnp.log(10.0)), axis=-1) * dx)
    cov["log_sup_vs_R"] = sup_R[0]  # (S, F, nR)
    cov["log_sup_vs_m"] = jnp.stack(sup_m, axis=1)  # (S, nm, F)
    cov["tail_mass_K10_vs_m"] = jnp.stack(tail_m, axis=1)  # (S, nm, F)
    # closed-form sup for the inflated MLE (seed by seed, from its fitted mean) at m = cov_m_main
    km = jax.random.split(jax.random.fold_in(k_cov, list(cfg.cov_m).index(cfg.cov_m_main)), cfg.cov_seeds)
    means = jax.vmap(lambda k: sd * jnp.mean(jax.random.normal(jax.random.split(k, 3)[0], (cfg.cov_m_main, 1))))(km)
    cov["mle_closed_form"] = al.gaussian_log_sup_ratio(0.0, sd, means, math.sqrt(2.0) * sd)
    return cov


# ---------------------------------------------------------------------------------------------------------
# Independent references (NumPy / plain jax.random: no jaxwb.theory code, which a mutant may break)
# ---------------------------------------------------------------------------------------------------------


def rastrigin_numpy(x: np.ndarray, setting) -> np.ndarray:
    """d(x) = mu_d/2 |x|^2 + A sum_i (1 - cos(w x_i)) (x* = 0), x (..., n) -> (...), written out in NumPy."""
    mu_d, A, w = setting[:3]
    return 0.5 * mu_d * np.sum(x**2, axis=-1) + A * np.sum(1.0 - np.cos(w * x), axis=-1)


def doo_reference(setting, *, n: int, lo: float, hi: float, L_d: float, expansions: int) -> np.ndarray:
    """DOO (Munos 2011, minimisation) written out in NumPy (float64) from the algorithm's description, as a
    reference for ``theory.aldrift.doo``: the root cell is [lo, hi]^n evaluated at its centre; each step expands
    the leaf with the smallest d(centre) - L_d/2 |half-diagonal|^2 (first created on ties) by cutting it in 3 along
    its widest side (the first on ties), the middle child keeping the centre, the two others evaluated. Returns the
    best-so-far cost after each evaluation (1 + 2 expansions,)."""
    K = 1 + 2 * expansions
    centre = np.zeros((K, n))
    half = np.zeros((K, n))
    value = np.full(K, np.inf)
    centre[0], half[0] = 0.5 * (lo + hi), 0.5 * (hi - lo)
    value[0] = rastrigin_numpy(centre[0], setting)
    for e in range(expansions):
        used = 1 + 2 * e
        j = int(np.argmin(value[:used] - 0.5 * L_d * np.sum(half[:used] ** 2, axis=1)))
        k = int(np.argmax(half[j]))
        half[j, k] /= 3.0  # the middle child: the parent's centre and value, a third of its width along k
        for slot, sign in ((used, -1.0), (used + 1, 1.0)):
            centre[slot], half[slot] = centre[j], half[j]
            centre[slot, k] += sign * 2.0 * half[j, k]
            value[slot] = rastrigin_numpy(centre[slot], setting)
    return np.minimum.accumulate(value)


def kish_reference(seed: int, *, mean_p, var_p, mean_q, var_q, n: int, N: int, reps: int) -> np.ndarray:
    """``reps`` draws of the Kish ESS fraction (sum w)^2 / (N sum w^2) of N iid proposals from q = N(mean_q, var_q
    I_n) weighted against p = N(mean_p, var_p I_n), sampled exactly in NumPy (``np.random.default_rng(seed)``; the
    log-weights written out here). Its mean is what the importance ESS of N exact proposals should average to,
    the estimator's finite-N bias included. Returns (reps,)."""
    rng = np.random.default_rng(seed)
    out = np.empty(reps)
    for r in range(reps):
        x = mean_q + math.sqrt(var_q) * rng.standard_normal((N, n))
        lw = -0.5 * np.sum((x - mean_p) ** 2, -1) / var_p + 0.5 * np.sum((x - mean_q) ** 2, -1) / var_q
        w = np.exp(lw - lw.max())
        out[r] = w.sum() ** 2 / (N * np.sum(w**2))
    return out
