"""ALDRIFT sim: ``run``, one stage per study (the paper's settings, evaluations to eps, coverage, the pure
quadratic's closed forms), built from the pieces in ``jaxwb.sims.aldrift.pieces``."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.sims.aldrift.config import PAPER_INFLATION, Config
from jaxwb.sims.aldrift.pieces import (
    aldrift_run,
    coverage,
    doo_reference,
    eps_aldrift,
    eps_random,
    ess_quadrature,
    exact_path,
    kish_reference,
    problem,
    random_search_probability,
    topift_run,
)
from jaxwb.sims.core.sweep import sweep
from jaxwb.theory import aldrift as al


def quadratic_setting(cfg: Config) -> tuple:
    """The pure quadratic: setting 1 with A = 0."""
    s1 = cfg.settings[0]
    return (s1[0], 0.0, s1[2], s1[3], s1[4])


def run_settings(cfg: Config, key, taus) -> tuple[dict, dict]:
    """The two paper settings (ALDRIFT and TOPIFT) and the pure quadratic (ALDRIFT only): one ALDRIFT sweep over
    (setting, run) rows, one TOPIFT sweep over the paper settings' rows. Returns ({"setting<i>": ...}, the pure
    quadratic's ALDRIFT histories)."""
    n = cfg.n
    rows = list(cfg.settings)
    quad = quadratic_setting(cfg)
    k_ald, k_top, k_quad = jax.random.split(key, 3)
    nset = len(rows) * cfg.runs
    batch = {
        "key": jnp.concatenate([jax.random.split(k_ald, nset), jax.random.split(k_quad, cfg.quad_runs)]),
        "setting": jnp.asarray([r for r in rows for _ in range(cfg.runs)] + [quad] * cfg.quad_runs, dtype=jnp.float32),
    }
    ald_all = sweep(partial(aldrift_run, n=n, taus=tuple(float(t) for t in taus), m=cfg.m, M=cfg.M), batch)
    top_all = sweep(
        partial(topift_run, n=n, rounds=len(taus), m=cfg.m, M=cfg.M),
        {"key": jax.random.split(k_top, nset), "setting": batch["setting"][:nset]},
    )
    out = {}
    for i, setting in enumerate(rows):
        res = {
            name: jax.tree.map(lambda a, i=i: a[i * cfg.runs : (i + 1) * cfg.runs], tree)
            for name, tree in (("aldrift", ald_all), ("topift", top_all))
        }
        dist_exact, ecost_exact = exact_path(setting, n, taus)
        res["exact"] = {"distance": dist_exact, "cost": ecost_exact}
        out[f"setting{i + 1}"] = res
    quad_res = jax.tree.map(lambda a: a[nset:], ald_all)
    return out, quad_res


def run_random_search(cfg: Config, key, setting, eps, L_d) -> dict:
    """Random search on the box (runs vmapped in groups, each group's runs in sequence: early stopping)."""
    rs_eps = eps[eps >= cfg.rs_eps_min * (1 - 1e-6)]
    lo, hi = cfg.box
    groups = math.gcd(cfg.rs_runs, 8)
    fn = partial(
        eps_random,
        setting=setting,
        n=cfg.eps_n,
        lo=lo,
        hi=hi,
        budget=cfg.rs_budget,
        chunk=min(cfg.rs_budget, 4096),
        eps=tuple(float(e) for e in rs_eps),
    )
    rs = sweep(fn, jax.random.split(key, cfg.rs_runs).reshape(groups, -1))
    rs = jax.tree.map(lambda a: a.reshape(cfg.rs_runs, *a.shape[2:]), rs)
    rs["eps"] = rs_eps
    rs["predicted"] = al.random_search_expected_evals(rs_eps, L_d, lo, hi, cfg.eps_n)
    # the exact first-hit law on the fit range (NumPy quadrature, pieces.random_search_probability): a first hit is
    # geometric with success probability P[d <= eps], so E[log count] = log(1/P) - Euler's gamma + O(P)
    fit = np.asarray(rs_eps)
    fit = fit[(fit <= cfg.rs_eps_max * 1.0001) & (fit >= cfg.rs_eps_min * 0.9999)]
    rs["fit_eps"] = fit
    rs["probability"] = random_search_probability(setting, n=cfg.eps_n, lo=lo, hi=hi, eps=fit)
    return rs


def run_eps(cfg: Config, k_eps, k_rs) -> dict:
    """Evaluations to reach eps (n small): ALDRIFT (runs vmapped), random search (runs vmapped), DOO."""
    setting = cfg.settings[cfg.eps_setting]
    mu_lo, L_d = al.envelope_constants(*setting[:3])
    eps = jnp.geomspace(*cfg.eps_grid[:2], int(cfg.eps_grid[2]))
    etaus = al.temperature_schedule("geometric", cfg.eps_T, tau1=cfg.tau1, n=cfg.eps_n)
    fn = partial(
        eps_aldrift,
        setting=setting,
        n=cfg.eps_n,
        taus=tuple(float(t) for t in etaus),
        m=cfg.eps_m,
        M=cfg.eps_M,
        eps=tuple(float(e) for e in eps),
    )
    ald = sweep(fn, jax.random.split(k_eps, cfg.eps_runs))
    rs = run_random_search(cfg, k_rs, setting, eps, L_d)
    lo, hi = cfg.box
    cost, _ = problem(setting, cfg.eps_n)
    doo_best, _, _ = al.doo(cost, lo, hi, n=cfg.eps_n, L_d=L_d, expansions=cfg.doo_expansions)
    doo_eps = jnp.geomspace(*cfg.doo_eps_grid[:2], int(cfg.doo_eps_grid[2]))
    cnt, ok = al.evaluations_to_reach(doo_best, doo_eps)
    ref = doo_reference(setting, n=cfg.eps_n, lo=lo, hi=hi, L_d=L_d, expansions=cfg.doo_expansions)
    ref_eps = np.asarray(doo_eps, np.float64)
    ref_idx = np.searchsorted(-ref, -ref_eps, side="left")  # first evaluation with best <= eps (1-based count)
    return {
        "eps": eps,
        "taus": jnp.asarray(etaus),
        "aldrift": ald,
        "random": rs,
        "doo": {
            "eps": doo_eps,
            "count": cnt,
            "reached": ok,
            "best": doo_best,
            # the NumPy reference DOO's first-hit counts (float64; unreached = -1)
            "reference_count": np.where(ref_idx < ref.size, ref_idx + 1, -1),
        },
        "aldrift_slope_predicted": jnp.asarray(al.aldrift_evals_per_efold(cfg.eps_m, cfg.eps_M, cfg.eps_n)),
    }


def intended_schedule(cfg: Config) -> np.ndarray:
    """The paper's schedule written out here (tau_k = tau1 (1 + 1/n)^k, k = 0.., clipped at T), independently of
    theory.aldrift.temperature_schedule (which a mutant may break)."""
    n = cfg.n
    kmax = int(math.log(cfg.T / cfg.tau1) / math.log1p(1.0 / n)) + 2
    intended = np.minimum(cfg.tau1 * (1.0 + 1.0 / n) ** np.arange(kmax + 1), cfg.T)
    return intended[: int(np.argmax(intended >= cfg.T)) + 1]


def quadratic_predictions(cfg: Config, quad_res: dict, key) -> dict:
    """Pure quadratic: ALDRIFT's sample cost and fitted mean vs the closed forms, at the intended temperatures;
    ``key`` drives the exact-sampling reference of the first temperature's importance ESS."""
    n = cfg.n
    s1 = cfg.settings[0]
    intended = intended_schedule(cfg)
    mu_T = s1[4] + cfg.T * s1[0]
    mean_T = s1[4] * s1[3] / mu_T  # per coordinate (x* = 0)
    # importance ESS of the proposals at each temperature (eq. ESS of theory.aldrift): p_tau_k = N(mean_k, 1/mu_k)
    # per coordinate, mu_k = mu0 + tau_k mu_d; the proposal at k >= 2 is the paper's fitted model
    # N(mean of the m states at tau_{k-1}, PAPER_INFLATION / mu_{k-1}), its mean ~ N(mean_{k-1}, 1/(m mu_{k-1}))
    # if the m chains ended at exact draws of p_tau_{k-1}; at k = 1 it is the prior N(x0, 1/mu0).
    mu_k = s1[4] + intended * s1[0]
    mean_k = s1[4] * s1[3] / mu_k
    # the proposal at each temperature: the prior, then the fitted model with its mean's noise
    mean_q = np.concatenate([[s1[3]], mean_k[:-1]])
    var_q = np.concatenate([[1.0 / s1[4]], PAPER_INFLATION / mu_k[:-1]])
    mean_var = np.concatenate([[0.0], 1.0 / (cfg.m * mu_k[:-1])])
    ess_pred = np.concatenate(
        [
            [float(al.gaussian_importance_ess(mean_k[0], 1.0 / mu_k[0], float(mean_q[0]), float(var_q[0]), n))],
            np.asarray(
                al.gaussian_importance_ess(
                    mean_k[1:, None], 1.0 / mu_k[1:], mean_q[1:, None], var_q[1:], n, mean_var=mean_var[1:]
                )
            ),
        ]
    )
    # the same expectation by quadrature, without the closed form (pieces.ess_quadrature)
    ess_quad = [
        ess_quadrature(mean_p=a, var_p=1.0 / mu, mean_q=b, var_q=v, n=n, mean_var=w)
        for a, mu, b, v, w in zip(mean_k, mu_k, mean_q, var_q, mean_var, strict=True)
    ]
    # first temperature: the proposals are m M iid prior draws N(x0, 1/mu0) against p_tau1 = N(mean_1, 1/mu_1); the
    # Kish fraction over them, sampled exactly (finite-N bias included: ~3% ESS over a few thousand draws)
    kish_first = kish_reference(
        int(jax.random.randint(key, (), 0, 2**31 - 1)),
        mean_p=float(mean_k[0]),
        var_p=1.0 / float(mu_k[0]),
        mean_q=s1[3],
        var_q=1.0 / s1[4],
        n=n,
        N=cfg.m * cfg.M,
        reps=cfg.kish_reps,
    )
    return {
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
        "ess_predicted_quadrature": np.asarray(ess_quad),
        "mean_sq_T": n * mean_T**2 + n / (cfg.m * mu_T),
        "ess_first_reference": kish_first,
    }


def run(cfg: Config, *, key: jax.Array) -> dict:
    out: dict[str, Any] = {}
    k_set, k_eps, k_rs, k_cov = jax.random.split(key, 4)
    k_kish = jax.random.fold_in(key, 5)
    taus = al.temperature_schedule("geometric", cfg.T, tau1=cfg.tau1, n=cfg.n)
    out["taus"] = jnp.asarray(taus)
    settings, quad_res = run_settings(cfg, k_set, taus)
    out.update(settings)
    out["eps"] = run_eps(cfg, k_eps, k_rs)
    out["coverage"] = coverage(cfg, k_cov)
    out["quadratic"] = quadratic_predictions(cfg, quad_res, k_kish)
    return out
