"""ALDRIFT sim: the simulated pieces (sweepable per-run functions) and ``run``."""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.sims.aldrift.config import PAPER_INFLATION, Config
from jaxwb.sims.core.sweep import sweep
from jaxwb.theory import aldrift as al

# ---------------------------------------------------------------------------------------------------------
# Pieces (module-level, hashable partials for the sweep)
# ---------------------------------------------------------------------------------------------------------


def _problem(setting, n):
    mu_d, A, w, x0, mu0 = setting
    return al.rastrigin_envelope(mu_d, A, w, jnp.zeros(n)), al.gaussian_prior(x0 * jnp.ones(n), mu0)


def _row_problem(row, n):
    mu_d, A, w, x0, mu0 = (row["setting"][i] for i in range(5))
    return al.RastriginEnvelope(mu_d, A, w, jnp.zeros(n)), al.GaussianPrior(x0 * jnp.ones(n), mu0), mu_d


def _aldrift_run(row, *, n, taus, m, M):
    """One ALDRIFT run; ``row`` = {"key", "setting" (5,)}: settings are data, so one compiled sweep covers every
    setting and run (the paper's settings and the pure quadratic). Its History as a dict."""
    cost, prior, mu_d = _row_problem(row, n)
    h, _, _ = al.aldrift(cost, prior, taus, m=m, M=M, mu_d=mu_d, key=row["key"])
    return h._asdict()


def _topift_run(row, *, n, rounds, m, M):
    """One TOPIFT run with ALDRIFT's budget (m M draws per round, ``rounds`` rounds); same rows."""
    cost, prior, _ = _row_problem(row, n)
    h, _ = al.topift(cost, prior, m=m, M=M, rounds=rounds, key=row["key"])
    return h._asdict()


def _eps_aldrift(key, *, setting, n, taus, m, M, eps):
    cost, prior = _problem(setting, n)
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


def _eps_random(keys, *, setting, n, lo, hi, budget, chunk, eps):
    """Random-search runs for a group of keys (R,), one after another (lax.map): each draws ``chunk`` points at a
    time (``jaxwb.theory.aldrift.random_search``) and stops once every eps (E,) is reached or ``budget`` is spent, so
    the work is ~ the mean first-hit count, not the budget. Returns first-hit counts (R, E) and reached (R, E);
    an unreached eps has count = budget and reached = False."""
    cost, _ = _problem(setting, n)
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


def _coverage_seed(key, *, m, xs, sep):
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


def _exact_path(setting, n, taus, npts=40001):
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
        ratio, logps = sweep(partial(_coverage_seed, m=m, xs=xs, sep=cfg.cov_mix_sep), keys, chunk_size=chunk)
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


# ---------------------------------------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------------------------------------


def run(cfg: Config, *, key: jax.Array) -> dict:
    out = {}
    k_set, k_eps, k_rs, k_cov = jax.random.split(key, 4)
    n = cfg.n
    taus = al.temperature_schedule("geometric", cfg.T, tau1=cfg.tau1, n=n)
    out["taus"] = jnp.asarray(taus)

    # 1. the two paper settings (ALDRIFT and TOPIFT) and the pure quadratic (setting 1 with A = 0, ALDRIFT only):
    # one ALDRIFT sweep over (setting, run) rows, one TOPIFT sweep over the paper settings' rows
    rows = list(cfg.settings)
    s1 = cfg.settings[0]
    quad = (s1[0], 0.0, s1[2], s1[3], s1[4])
    k_ald, k_top, k_quad = jax.random.split(k_set, 3)
    nset = len(rows) * cfg.runs
    batch = {
        "key": jnp.concatenate([jax.random.split(k_ald, nset), jax.random.split(k_quad, cfg.quad_runs)]),
        "setting": jnp.asarray([r for r in rows for _ in range(cfg.runs)] + [quad] * cfg.quad_runs, dtype=jnp.float32),
    }
    ald_all = sweep(partial(_aldrift_run, n=n, taus=tuple(float(t) for t in taus), m=cfg.m, M=cfg.M), batch)
    top_all = sweep(
        partial(_topift_run, n=n, rounds=len(taus), m=cfg.m, M=cfg.M),
        {"key": jax.random.split(k_top, nset), "setting": batch["setting"][:nset]},
    )
    for i, setting in enumerate(rows):
        res = {
            name: jax.tree.map(lambda a, i=i: a[i * cfg.runs : (i + 1) * cfg.runs], tree)
            for name, tree in (("aldrift", ald_all), ("topift", top_all))
        }
        dist_exact, ecost_exact = _exact_path(setting, n, taus)
        res["exact"] = {"distance": dist_exact, "cost": ecost_exact}
        out[f"setting{i + 1}"] = res
    quad_res = jax.tree.map(lambda a: a[nset:], ald_all)

    # 2. evaluations to reach eps (n small): ALDRIFT (runs vmapped), random search (runs vmapped), DOO
    setting = cfg.settings[cfg.eps_setting]
    mu_lo, L_d = al.envelope_constants(*setting[:3])
    eps = jnp.geomspace(*cfg.eps_grid[:2], int(cfg.eps_grid[2]))
    etaus = al.temperature_schedule("geometric", cfg.eps_T, tau1=cfg.tau1, n=cfg.eps_n)
    fn = partial(
        _eps_aldrift,
        setting=setting,
        n=cfg.eps_n,
        taus=tuple(float(t) for t in etaus),
        m=cfg.eps_m,
        M=cfg.eps_M,
        eps=tuple(float(e) for e in eps),
    )
    ald = sweep(fn, jax.random.split(k_eps, cfg.eps_runs))
    rs_eps = eps[eps >= cfg.rs_eps_min * (1 - 1e-6)]
    lo, hi = cfg.box
    groups = math.gcd(cfg.rs_runs, 8)  # vmapped groups of runs, each group's runs in sequence (early stopping)
    fn = partial(
        _eps_random,
        setting=setting,
        n=cfg.eps_n,
        lo=lo,
        hi=hi,
        budget=cfg.rs_budget,
        chunk=min(cfg.rs_budget, 4096),
        eps=tuple(float(e) for e in rs_eps),
    )
    rs = sweep(fn, jax.random.split(k_rs, cfg.rs_runs).reshape(groups, -1))
    rs = jax.tree.map(lambda a: a.reshape(cfg.rs_runs, *a.shape[2:]), rs)
    rs["eps"] = rs_eps
    rs["predicted"] = al.random_search_expected_evals(rs_eps, L_d, lo, hi, cfg.eps_n)
    cost, _ = _problem(setting, cfg.eps_n)
    doo_best, _, _ = al.doo(cost, lo, hi, n=cfg.eps_n, L_d=L_d, expansions=cfg.doo_expansions)
    doo_eps = jnp.geomspace(*cfg.doo_eps_grid[:2], int(cfg.doo_eps_grid[2]))
    cnt, ok = al.evaluations_to_reach(doo_best, doo_eps)
    out["eps"] = {
        "eps": eps,
        "taus": jnp.asarray(etaus),
        "aldrift": ald,
        "random": rs,
        "doo": {"eps": doo_eps, "count": cnt, "reached": ok, "best": doo_best},
        "aldrift_slope_predicted": jnp.asarray(al.aldrift_evals_per_efold(cfg.eps_m, cfg.eps_M, cfg.eps_n)),
    }

    # 3. coverage ratios on 1-D grids
    out["coverage"] = coverage(cfg, k_cov)

    # 4. pure quadratic: ALDRIFT's sample cost and fitted mean vs the closed forms. The temperatures of the
    # prediction are the paper's schedule written out here (tau_k = tau1 (1 + 1/n)^k, k = 0.., clipped at T),
    # independently of theory.aldrift.temperature_schedule (which a mutant may break).
    kmax = int(math.log(cfg.T / cfg.tau1) / math.log1p(1.0 / n)) + 2
    intended = np.minimum(cfg.tau1 * (1.0 + 1.0 / n) ** np.arange(kmax + 1), cfg.T)
    intended = intended[: int(np.argmax(intended >= cfg.T)) + 1]
    mu_T = s1[4] + cfg.T * s1[0]
    mean_T = s1[4] * s1[3] / mu_T  # per coordinate (x* = 0)
    # importance ESS of the proposals at each temperature (eq. ESS of theory.aldrift): p_tau_k = N(mean_k, 1/mu_k)
    # per coordinate, mu_k = mu0 + tau_k mu_d; the proposal at k >= 2 is the paper's fitted model
    # N(mean of the m states at tau_{k-1}, PAPER_INFLATION / mu_{k-1}), its mean ~ N(mean_{k-1}, 1/(m mu_{k-1}))
    # if the m chains ended at exact draws of p_tau_{k-1}; at k = 1 it is the prior N(x0, 1/mu0).
    mu_k = s1[4] + intended * s1[0]
    mean_k = s1[4] * s1[3] / mu_k
    ess_pred = np.concatenate(
        [
            [float(al.gaussian_importance_ess(mean_k[0], 1.0 / mu_k[0], s1[3], 1.0 / s1[4], n))],
            np.asarray(
                al.gaussian_importance_ess(
                    mean_k[1:, None],
                    1.0 / mu_k[1:],
                    mean_k[:-1, None],
                    PAPER_INFLATION / mu_k[:-1],
                    n,
                    mean_var=1.0 / (cfg.m * mu_k[:-1]),
                )
            ),
        ]
    )
    out["quadratic"] = {
        "sample_cost": quad_res["sample_cost"],
        "mean": quad_res["mean"],
        "acceptance": quad_res["acceptance"],
        "ess": quad_res["ess"],
        "intended_taus": intended,
        "closed_form": jax.vmap(
            lambda t: al.quadratic_expected_cost(s1[3] * jnp.ones(n), s1[4], jnp.zeros(n), s1[0], t)
        )(jnp.asarray(intended)),
        "closed_form_T": 0.5 * s1[0] * (n / mu_T + n * mean_T**2),
        "ess_predicted": ess_pred,
        "mean_sq_T": n * mean_T**2 + n / (cfg.m * mu_T),
    }
    return out
