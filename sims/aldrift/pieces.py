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
    fams: list[al.Gaussian | al.KDE] = [al.fit_gaussian_fixed(s, 2.0 * sd**2), al.fit_kde(s, 1.0), al.fit_kde(s, 2.0)]
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


def random_search_probability(setting, *, n: int, lo: float, hi: float, eps, grid: int = 2001, angles: int = 256):
    """P[d(x) <= eps] for one uniform draw x on [lo, hi]^n (x* = 0, n even), by quadrature in NumPy (float64), as
    the reference for random search's first-hit law (the first hit of eps is geometric with this success
    probability). The cost d(x) = sum_i c(x_i), c(z) = mu_d/2 z^2 + A (1 - cos(w z)) (written out here as
    mu_d/2 z^2 + 2 A sin^2(w z/2): no cancellation near 0), is separable: with y_i = sign(x_i) sqrt(c(x_i)) the
    sublevel set {d <= eps} is the ball |y|^2 <= eps, and its
    volume in x is the ball's integral of prod_i h'(y_i), h = the inverse of y(z) (smooth; h' = 2|y|/|c'(z)|).
    Pairs of coordinates give the density g(s) = 1/2 int_0^2pi h'(sqrt(s) cos t) h'(sqrt(s) sin t) dt of
    s = y_1^2 + y_2^2 (bounded and smooth: periodic trapezoid in t), and the volume is the integral over [0, eps]
    of its n/2-fold convolution (trapezoid on a uniform grid of ``grid`` points). Valid while every eps lies below
    c at the end of the central interval where c increases in |z| and below c everywhere outside it in the box
    (else ValueError). Returns (E,) probabilities."""
    mu_d, A, w = (float(a) for a in setting[:3])
    eps = np.atleast_1d(np.asarray(eps, np.float64))
    if n < 2 or n % 2:
        raise ValueError(f"n must be even and >= 2, got {n}")
    if not (np.all(np.isfinite(eps)) and np.all(eps > 0)):
        raise ValueError(f"eps must be finite and > 0, got {eps}")
    c = lambda z: 0.5 * mu_d * z**2 + 2.0 * A * np.sin(0.5 * w * z) ** 2  # 1 - cos u = 2 sin^2(u/2): no cancellation
    dc = lambda z: mu_d * z + A * w * np.sin(w * z)
    zz = np.linspace(0.0, min(-lo, hi), 200_001)[1:]
    turn = np.flatnonzero(dc(zz) <= 0)
    z_up = zz[turn[0] - 1] if turn.size else zz[-1]  # c increases on (0, z_up] (and, c being even, on [-z_up, 0))
    zb = np.linspace(lo, hi, 400_001)
    outside = np.abs(zb) > z_up
    c_out = c(zb[outside]).min() if outside.any() else np.inf
    if not eps.max() < min(c(z_up), c_out):
        raise ValueError(f"eps must stay below {min(c(z_up), c_out):.4g} (one central interval per coordinate)")

    # h' tabulated once on |y| <= sqrt(max eps) (bisection for z in [0, z_up] with c(z) = y^2), read by
    # linear interpolation (h' is even and smooth: error ~ (grid step)^2 ~ 1e-10)
    ya = np.linspace(0.0, math.sqrt(eps.max()), 20_001)
    zlo, zhi = np.zeros_like(ya), np.full_like(ya, z_up)
    for _ in range(60):
        mid = 0.5 * (zlo + zhi)
        below = c(mid) < ya * ya
        zlo, zhi = np.where(below, mid, zlo), np.where(below, zhi, mid)
    z = 0.5 * (zlo + zhi)
    hp = np.concatenate([[math.sqrt(2.0 / (mu_d + A * w * w))], 2.0 * ya[1:] / dc(z[1:])])
    h_prime = lambda y: np.interp(np.abs(y), ya, hp)

    t = 2.0 * np.pi * np.arange(angles) / angles
    out = np.empty(eps.shape)
    for i, e in enumerate(eps):
        s = np.linspace(0.0, e, grid)
        ds = s[1] - s[0]
        r = np.sqrt(s)[:, None]
        g = np.pi * np.mean(h_prime(r * np.cos(t)) * h_prime(r * np.sin(t)), axis=1)  # 1/2 * 2 pi * mean over t
        f = g
        for _ in range(n // 2 - 1):  # density of the sum of one more pair: trapezoid convolution on [0, s]
            full = np.convolve(f, g)[:grid]
            f = ds * (full - 0.5 * f * g[0] - 0.5 * f[0] * g)
        vol = ds * (f.sum() - 0.5 * (f[0] + f[-1]))
        out[i] = vol / (hi - lo) ** n
    return out


def empirical_growth_probability(m: int, r_mid: float, r_max: float, g: float, *, draws: int = 1_000_000, seed=0):
    """P[sup_{|x| <= r_max} log p/L - sup_{|x| <= r_mid} log p/L > g] for the empirical-variance fit L = N(mu, s^2)
    (MLE mean and 1/m variance of m draws of the target p = N(0, 1); radii in units of p's sd) -- the reference for
    the "coverage fails, empirical variance" claim's fraction of seeds. log p/L = (x - mu)^2/(2 s^2) - x^2/2 + log s
    is a quadratic in x, so its sup over [-r, r] is at an end or, when concave, at its vertex; mu ~ N(0, 1/m) and
    m s^2 ~ chi2_{m-1} are independent, drawn ``draws`` times (NumPy, ``np.random.default_rng(seed)``: a standard
    error <= 0.5/sqrt(draws)). With mu = 0 it is P[s^2 < 1/(1 + 2 g/(r_max^2 - r_mid^2))]; the mean moves the
    threshold by ~2 |mu| (r_max - r_mid)/(r_max^2 - r_mid^2) (+0.022 in probability at m = 300: 0.548 vs 0.526)."""
    rng = np.random.default_rng(seed)
    mu = rng.standard_normal(draws) / math.sqrt(m)
    s2 = rng.chisquare(m - 1, draws) / m
    a, b = 0.5 / s2 - 0.5, -mu / s2  # log p/L = a x^2 + b x + const

    def sup(r):
        ends = np.maximum(a * r * r + b * r, a * r * r - b * r)
        xv = -b / (2 * np.where(a != 0, a, np.inf))
        inner = (a < 0) & (np.abs(xv) <= r)
        return np.where(inner, np.maximum(ends, a * xv * xv + b * xv), ends)

    return float(np.mean(sup(r_max) - sup(r_mid) > g))


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


def ess_quadrature(*, mean_p: float, var_p: float, mean_q: float, var_q: float, n: int, mean_var: float = 0.0) -> float:
    """The population importance ESS fraction 1/E_q[(p/q)^2] of p = N(mean_p, var_p I_n) under q = N(mean_q, var_q
    I_n), by quadrature (the closed form ``theory.aldrift.gaussian_importance_ess`` is not used): per coordinate
    E_q[(p/q)^2] = int p(x)^2 / q(x) dx (``scipy.integrate.quad``); with ``mean_var`` > 0 the fraction is averaged
    over a random proposal mean mean_q + N(0, mean_var) per coordinate (Gauss-Hermite, 60 nodes). The coordinates
    are independent, so the fraction is the per-coordinate one to the power n."""
    from scipy import integrate

    sp, sq = math.sqrt(var_p), math.sqrt(var_q)
    norm = sq / (sp * sp * math.sqrt(2 * math.pi))  # p(x)^2 / q(x) = norm exp(-(x-a)^2/var_p + (x-b)^2/(2 var_q))

    def per_coordinate(b: float) -> float:
        f = lambda x: norm * math.exp((x - b) ** 2 / (2 * var_q) - (x - mean_p) ** 2 / var_p)
        lo, hi = min(mean_p, b) - 12 * max(sp, sq), max(mean_p, b) + 12 * max(sp, sq)
        return 1.0 / integrate.quad(f, lo, hi, epsabs=0.0, epsrel=1e-12, limit=200)[0]

    if mean_var == 0.0:
        return per_coordinate(mean_q) ** n
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)  # E[g(Z)], Z ~ N(0, 1): sum w g(z) / sqrt(2 pi)
    values = [per_coordinate(mean_q + math.sqrt(mean_var) * z) for z in nodes]
    return float(np.dot(weights, values) / math.sqrt(2 * math.pi)) ** n
