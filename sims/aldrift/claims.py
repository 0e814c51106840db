"""ALDRIFT sim: the claims (each compares a measurement with a closed form or a paper number)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from jaxwb.sims.aldrift.config import COVERAGE_FAMILIES, COVERAGE_HOLDS, PAPER_INFLATION, Config
from jaxwb.sims.aldrift.measures import covered_temperatures, eps_summary, final_distance, line_fit
from jaxwb.sims.aldrift.pieces import empirical_growth_probability
from jaxwb.sims.core.claims import (
    Claim,
    ClaimGroups,
    agreement,
    array_agreement,
    largest_difference,
    lower_bound,
    mean_ci,
    seed_mean,
    upper_bound,
)

CLAIMS = ClaimGroups()
PRIOR_SHARE = 0.05  # the e-fold slope is fitted where the prior's share mu0 / (tau mu_d) of mu_tau is <= this


@CLAIMS.add
def settings_claims(results: dict, cfg: Config) -> list[Claim]:
    """Setting 1: ALDRIFT ends in x*'s basin, TOPIFT is trapped outside it. Setting 2: x0 = 1.35 lies in the
    neighbouring basin and TOPIFT's elite keeps it there (every run, both presets)."""
    basins = [math.pi / setting[2] for setting in cfg.settings]
    on_seeds = {"over_seeds": True, "source": "paper"}  # the whole 95% interval of the mean over runs
    ends = (
        f"setting 1: ALDRIFT ends in x*'s basin, ||mean - x*|| <= pi/w = {basins[0]:.2f} (whole 95% CI over "
        f"{cfg.runs} runs; loose by nature, the pure-quadratic checks below test the same sampler sharply)"
    )
    out = [upper_bound(ends, basins[0], final_distance(results["setting1"], "aldrift"), **on_seeds)]
    for i, basin in enumerate(basins):
        value = f" = {basin:.2f}" if i else ""  # setting 1's value is in the statement above
        text = (
            f"setting {i + 1}: TOPIFT trapped outside x*'s basin, ||mean - x*|| >= pi/w{value} (whole 95% CI over "
            f"{cfg.runs} runs)"
        )
        out.append(lower_bound(text, basin, final_distance(results[f"setting{i + 1}"], "topift"), **on_seeds))
    for i in range(len(cfg.settings)):
        text = (
            f"setting {i + 1}: with the same budget ALDRIFT's best cost seen ends below TOPIFT's (paired difference "
            f"TOPIFT - ALDRIFT over {cfg.runs} runs, 95% interval above 0)"
        )
        best = (np.asarray(results[f"setting{i + 1}"][who]["best"])[:, -1] for who in ("topift", "aldrift"))
        out.append(Claim.ordering(text, *best, kind="paper"))
    # the budget both comparisons and the e-fold slope count: evaluations of d per temperature (round), by hand
    per = {"aldrift": cfg.m * (cfg.M + 1), "topift": cfg.m * cfg.M}
    gaps = []
    for i in range(len(cfg.settings)):
        for who, k in per.items():
            evals = np.asarray(results[f"setting{i + 1}"][who]["evals"])  # (runs, temperatures), cumulative
            gaps.append(largest_difference(evals, k * np.arange(1, evals.shape[-1] + 1), relative=None))
    budget = (
        f"evaluation budget: after k temperatures ALDRIFT has evaluated d k m (M+1) = {per['aldrift']} k times (m "
        f"initial states and m M = {cfg.m} x {cfg.M} IMH proposals each) and TOPIFT k m M = {per['topift']} k, in "
        "every run of both settings (exact: integer counts, below 2^24 in float32)"
    )
    out.append(agreement(budget, 0.0, max(gaps), 0.0, "abs"))
    return out


@CLAIMS.add
def tracking_claims(results: dict, cfg: Config) -> list[Claim]:
    """Where the proposal covers p_tau (``covered_temperatures``), ALDRIFT's samples follow p_tau: their mean cost
    and their mean per coordinate vs the exact moments of p_tau (1-D quadrature; the cost is separable)."""
    out = []
    taus = np.asarray(results["taus"])
    for i, setting in enumerate(cfg.settings):
        k = covered_temperatures(setting, taus)
        if k.sum() < 3:
            continue  # setting 1: 2/mu_tau never covers the curvature L_d = 37 mu_d at tau >= tau1
        res = results[f"setting{i + 1}"]
        cost = np.asarray(res["aldrift"]["sample_cost"])[:, k] / np.asarray(res["exact"]["cost"])[k]
        span = f"the {int(k.sum())} temperatures tau <= mu0/(L_d - 2 mu_d) = {taus[k][-1]:.3g}"
        text = (
            f"setting {i + 1}: ALDRIFT follows p_tau where its proposal covers it: mean sample cost / "
            f"E_{{p_tau}}[d] (quadrature) = 1, averaged over {span} ({cfg.runs} runs x {cfg.m} chains; "
            "1 inside the 95% interval, half-width <= 3%)"
        )
        out.append(seed_mean(text, 1.0, np.mean(cost, axis=1), 0.03))
        # each coordinate of the fitted mean estimates E_{p_tau}[x_i] = ||E x - x*|| / sqrt(n) (x0 (1, ..., 1), x* = 0)
        coord = np.mean(np.asarray(res["aldrift"]["mean"])[:, k, :], axis=-1)
        exact_coord = np.asarray(res["exact"]["distance"])[k] / math.sqrt(cfg.n) * np.sign(setting[3])
        text = (
            f"setting {i + 1}: ALDRIFT's fitted mean follows p_tau's mean where its proposal covers it: mean "
            f"coordinate / E_{{p_tau}}[x_i] (quadrature) = 1, averaged over {span} ({cfg.runs} runs; 1 inside the "
            "95% interval, half-width <= 3%)"
        )
        out.append(seed_mean(text, 1.0, np.mean(coord / exact_coord, axis=1), 0.03))
    return out


@CLAIMS.add
def quadratic_claims(results: dict, cfg: Config) -> list[Claim]:
    """Pure quadratic (A = 0): closed forms decided on intervals over runs, and the importance ESS of the proposals."""
    q = results["quadratic"]
    taus_q = np.asarray(q["intended_taus"])
    at_T = (
        f"pure quadratic (A=0): ALDRIFT mean sample cost at T={cfg.T:g} = closed form mu_d/2 (n/(mu0+T mu_d) + "
        f"|mean_T|^2) ({cfg.quad_runs} runs x {cfg.m} chains, M={cfg.M}; whole CI within 3%: at M=50 "
        "the IMH lag leaves E[d] ~0.5-1.5% high)"
    )
    sc, cf = np.asarray(q["sample_cost"]), np.asarray(q["closed_form"])
    L = min(sc.shape[1], cf.shape[0])
    schedule = (
        f"pure quadratic: ALDRIFT mean sample cost / closed form E_{{p_tau}}[d] = 1 along the schedule (per-run "
        f"mean over tau in [{taus_q[2]:.3g}, {taus_q[L - 1]:.3g}]: the first two start from the prior's chains; "
        f"{cfg.quad_runs} runs; whole CI within 1%: the IMH lag leaves E[d] ~0.5% high)"
    )
    lag = (
        "the tolerance covers the IMH lag at M = 50, a bias (+0.48% over seeds 0-9, sd 0.03% of that mean), plus 4 "
        "sd of the 100-run mean (config.py: the power of 0.8% and of 1%)"
    )
    mean_sq = np.sum(np.asarray(q["mean"])[:, -1] ** 2, axis=-1)
    fitted = (
        f"pure quadratic: E||fitted mean - x*||^2 at T = ||mean_T||^2 + n/(m mu_T) (m={cfg.m}; CI half-width <= 50%)"
    )
    ess, pred = np.asarray(q["ess"]), np.asarray(q["ess_predicted"])
    K = min(ess.shape[1], pred.shape[0])
    half = slice(K // 2, K)
    text = (
        f"pure quadratic: importance ESS fraction of the IMH proposals = closed form 1/E_q[(p/q)^2] for the fitted "
        f"proposal N(mean, {PAPER_INFLATION:g}/mu_tau) against p_tau (ratio measured/predicted averaged over tau "
        f"in [{taus_q[K // 2]:.3g}, {taus_q[K - 1]:.3g}], predicted ESS {pred[half].min():.3f}-{pred[half].max():.3f}; "
        f"{cfg.quad_runs} runs of m M = {cfg.m * cfg.M} proposals per tau; whole CI within 2%)"
    )
    why = (
        "the Kish estimate over m M proposals and the chains' lag bias the ratio by up to ~1% (1.0098 +- 0.003 "
        "quick, 1.0017 +- 0.004 full): the tolerance covers that bias, not the noise"
    )
    # first temperature: the proposals are m M iid draws of the prior (no fitted mean), so the Kish fraction's law
    # is that of exact sampling; its finite-N bias at ESS ~3% (+30%) comes with the Monte Carlo reference
    ref = np.asarray(q["ess_first_reference"])
    m1, h1, n1 = mean_ci(ess[:, 0])
    m2, h2, _ = mean_ci(ref)
    first = (
        f"pure quadratic, first temperature (proposal = the prior): importance ESS fraction of the m M = "
        f"{cfg.m * cfg.M} prior draws = its mean under exact sampling (NumPy Monte Carlo of the same Kish "
        f"estimator, {ref.size} repetitions; {cfg.quad_runs} runs; the reference inside the 95% interval of the "
        "difference, half-width <= 25%)"
    )
    closed = (
        f"pure quadratic: the ESS predictions 1/E_q[(p/q)^2] at all {pred.shape[0]} temperatures (closed form, "
        "gaussian_importance_ess: the prior's proposal first, then the fitted ones averaged over their mean's noise) "
        "= the same expectation by quadrature (scipy.integrate.quad over x, Gauss-Hermite over the mean; largest "
        "relative difference)"
    )
    rounding = "the closed form runs in float32 (measured 4e-6 relative); a wrong term moves a prediction by O(1)"
    return [
        array_agreement(closed, pred, q["ess_predicted_quadrature"], 1e-4, relative="each", wide_reason=rounding),
        seed_mean(at_T, float(q["closed_form_T"]), sc[:, -1], 0.03, "rel"),
        seed_mean(schedule, 1.0, np.mean(sc[:, 2:L] / cf[2:L], axis=1), 0.01, "rel", wide_reason=lag),
        seed_mean(fitted, float(q["mean_sq_T"]), mean_sq, 0.5 * float(q["mean_sq_T"])),
        seed_mean(text, 1.0, np.mean(ess[:, half] / pred[half], axis=1), 0.02, "rel", wide_reason=why),
        Claim.from_interval(first, m2, (m1, math.hypot(h1, h2), n1), 0.25 * m2, "ci", kind="check", source="theory"),
    ]


@CLAIMS.add
def p_T_claims(results: dict, cfg: Config) -> list[Claim]:
    """ALDRIFT approximates p_T (the paper's aim): the mean cost of its final samples in each paper setting vs
    E_{p_T}[d] by 1-D quadrature (the cost and prior are separable). Known disagreement (docs/papers/aldrift.md):
    with M = 50 IMH steps the chains do not reach p_T in n = 10 when A > 0."""
    out = []
    for i, (mu_d, A, w, _, mu0) in enumerate(cfg.settings):
        res = results[f"setting{i + 1}"]
        cost_T = np.asarray(res["aldrift"]["sample_cost"])[:, -1]
        exact = float(np.asarray(res["exact"]["cost"])[-1])
        L_d = mu_d + A * w**2
        ratio = 2.0 * L_d / (mu0 / cfg.T + mu_d)  # proposal variance 2/mu_T over p_T's 1/(T L_d) near x*
        text = (
            f"setting {i + 1}: ALDRIFT approximates p_T: mean sample cost at T={cfg.T:g} = E_{{p_T}}[d] (quadrature; "
            f"{cfg.runs} runs x {cfg.m} chains, M={cfg.M}; whole CI within 3%, as on the pure quadratic)"
        )
        reason = (
            f"the IMH chains (M={cfg.M}) do not reach p_T: the proposal N(mean, 2/mu_T), mu_T = mu0 + T mu_d, is "
            f"~{ratio:.0f}x wider in variance than p_T near x* (curvature L_d = mu_d + A w^2 = {L_d:g}), so sup p/q "
            f"~ {ratio:.0f}^(n/2) and the samples keep the proposal's cost (19x E_p[d] in setting 1, 4x in setting "
            "2, full preset); the pure quadratic (L_d = mu_d) matches its closed form"
        )
        out.append(seed_mean(text, exact, cost_T, 0.03, "rel", source="paper", expected="fail", reason=reason))
        # what is found instead, decided (so that a bug in the sample cost or the quadrature is still seen)
        text = (
            f"found, setting {i + 1}: ALDRIFT's final samples cost more than p_T's E_{{p_T}}[d] (quadrature): log(mean "
            f"sample cost at T / E_{{p_T}}[d]) > 0 per run ({cfg.runs} runs; the proposal ~{ratio:.0f}x wider than p_T)"
        )
        out.append(Claim.ordering(text, np.log(cost_T), np.full(cost_T.shape, np.log(exact)), source="theory"))
    return out


@CLAIMS.add
def eps_claims(results: dict, cfg: Config) -> list[Claim]:
    """Evaluations to reach eps: ALDRIFT's slope in ln(1/eps), random search's (1/eps)^(n/2), DOO as implemented."""
    e = results["eps"]
    s = eps_summary(results, cfg)
    # ALDRIFT: fitted where the prior's share mu0 / (tau mu_d) of mu_tau is <= PRIOR_SHARE. There the samples' mean
    # cost falls like 1/tau (p_tau's n/(2 tau) and the proposal's 1/(mu0 + tau mu_d) alike), so the slope is
    # m(M+1)/ln(1+1/n) whatever constant factor separates the samples from p_tau. At lower tau the prior term bends
    # the curve: the fit over every eps gave 9612 +- 37 vs 9411 (full preset; docs/papers/aldrift.md).
    mu_d, _, _, _, mu0 = cfg.settings[cfg.eps_setting]
    ald = np.asarray(e["aldrift"]["mean_cost"], float)
    # temperature index at which each run's running-min sample cost first reaches each eps (runs, eps): from the
    # recorded costs, not from the evaluation counts being tested
    cm = np.minimum.accumulate(np.asarray(e["aldrift"]["sample_cost"], float), axis=1)
    k = np.argmax(cm[:, :, None] <= s["eps"][None, None, :], axis=1)
    tau_min = mu0 / (PRIOR_SHARE * mu_d)
    ok = s["ald_ok"] & (np.asarray(e["taus"])[k].min(0) >= tau_min)
    slopes = [line_fit(np.log(1.0 / s["eps"][ok]), row[ok])[0] for row in ald] if ok.sum() >= 3 else [np.nan]
    pred = float(e["aldrift_slope_predicted"])
    text = (
        f"ALDRIFT (n={cfg.eps_n}): slope d evals / d ln(1/eps) = m(M+1)/ln(1+1/n) (E[d] ~ 1/tau; per-run fits "
        f"over the {int(ok.sum())} eps reached at tau >= mu0/({PRIOR_SHARE:g} mu_d) = {tau_min:g}, {cfg.eps_runs} "
        "runs; the 95% interval contains the prediction and is within 10% of it)"
    )
    out = [seed_mean(text, pred, slopes, 0.1 * pred)]
    # random search: a first hit of eps is geometric with P = P[d <= eps] (pieces.random_search_probability, NumPy
    # quadrature), so E[log count] = log(1/P) - Euler's gamma + O(P) and each run's least-squares slope of log count
    # on log(1/eps) has expectation the slope of log(1/P): 2.053 at the quick preset's eps in [0.1, 0.32], 2.016 on
    # the full preset's [0.03, 0.1], n/2 = 2 as eps -> 0 (the sublevel set tends to the ball of radius
    # sqrt(2 eps/L_d); at larger eps the ripple makes it larger, so P grows faster than eps^(n/2))
    rs, rs_eps, rs_ok = np.asarray(e["random"]["count"], float), s["rs_eps"], s["rs_ok"]
    okr = rs_ok & (rs_eps <= cfg.rs_eps_max * 1.0001) & (rs_eps >= cfg.rs_eps_min * 0.9999)
    rslopes = [line_fit(np.log(1 / rs_eps[okr]), np.log(row[okr]))[0] for row in rs] if okr.sum() >= 2 else [np.nan]
    fit_eps, prob = (np.asarray(e["random"][key], float) for key in ("fit_eps", "probability"))
    sel = np.isclose(fit_eps[:, None], np.asarray(rs_eps[okr], float)[None], rtol=1e-6).any(axis=1)
    exact_slope = line_fit(np.log(1 / fit_eps[sel]), np.log(1 / prob[sel]))[0] if sel.sum() >= 2 else np.nan
    text = (
        f"random search: evaluations ~ (1/eps)^(n/2) (n={cfg.eps_n}): per-run log-log slope = that of 1/P[d <= eps]"
        f" for uniform draws on the box (NumPy quadrature, {exact_slope:.3f}; n/2 = {cfg.eps_n / 2:g} as eps -> 0)"
        f" over eps in [{cfg.rs_eps_min:g}, {cfg.rs_eps_max:g}], {cfg.rs_runs} runs (inside the 95% interval, "
        "half-width <= 10%)"
    )
    out.append(seed_mean(text, exact_slope, rslopes, 0.1 * exact_slope, source="paper"))
    ball = np.asarray(e["random"]["predicted"])  # 1/P(ball) per eps
    i = int(np.flatnonzero(rs_ok)[-1]) if rs_ok.any() else -1  # the smallest eps every run reached
    text = (
        f"random search: mean evaluations at eps={rs_eps[i]:.2g} = 1/P(ball of radius sqrt(2 eps/L_d)) "
        f"({cfg.rs_runs} runs; whole CI within 30%: the ball is exact only as eps -> 0)"
    )
    out.append(seed_mean(text, float(ball[i]), rs[:, i] if rs_ok.any() else [np.nan], 0.3, "rel"))
    ep, ratio = float("nan"), np.array([np.nan])
    if rs_ok.any() and s["ald_ok"].any():
        ep = rs_eps[i]
        ja = int(np.argmin(np.abs(s["eps"] - ep)))
        ratio = rs[:, i].mean() / ald[:, ja] if s["ald_ok"][ja] else ratio
    text = (
        f"n={cfg.eps_n}: ALDRIFT needs fewer evaluations than random search at eps={ep:.2g} (ratio random / ALDRIFT "
        f">= 1 over the {cfg.eps_runs} ALDRIFT runs)"
    )
    out.append(lower_bound(text, 1.0, ratio, over_seeds=True, kind="paper", source="paper"))
    # DOO: at n = 4 its evaluations-to-eps are a staircase (a new cell centre lands near x* every few hundred
    # evaluations), so no slope is fitted; the implementation is checked against an independent NumPy DOO
    got, ref = np.where(s["doo_ok"], s["doo"], -1), np.asarray(e["doo"]["reference_count"])
    text = (
        "DOO (Munos 2011) as implemented = an independent NumPy DOO (float64): evaluations to reach each of the "
        f"{ref.size} eps on the grid (number of eps where the first-hit counts or reached flags differ; deterministic)"
    )
    return out + [agreement(text, 0.0, float(np.sum(got != ref)), 0.0, "abs")]


# Coverage families whose boundary prediction (0 or 1) has a known rare exception: (the rate the claim allows, why).
# KDE with h = sigma_hat: its Gaussian tails have the bandwidth's sd (seed sweep, quick preset: the 2 samples had
# sigma_hat/sd = 0.865 and 0.842, none of the other 478 below 0.88). A rate of 1% plus 3 binomial sd over the seeds
# (2 of 48; 1 of 12) fails at a true rate of 0.4% with P ~0.1% per run.
RARE_FAILURES = {
    "KDE h = sigma_hat (c = 1)": (
        0.01,
        "coverage holds except on samples whose sigma_hat < ~0.87 x the target's sd (the KDE's tails are then "
        "lighter than p inside R = 16 sd: 2 of 480 samples at m = 300); tolerance: a rate of 1% + 3 binomial sd",
    ),
}


@CLAIMS.add
def coverage_claims(results: dict, cfg: Config) -> list[Claim]:
    """Where coarse learnability holds and fails, and the inflated MLE's closed-form sup p/L."""
    out = []
    # coverage: the fraction of seeds whose sup p/L still grows between R_mid and R_max (by > 0.01 decade).
    # Bounded families: 0. Shrinking bandwidth (h < sigma: lighter tails than p): 1. Empirical variance: the seeds
    # whose fitted (mean, variance) make the quadratic log p/L grow (pieces.empirical_growth_probability: with the
    # mean at 0 exactly s_hat^2 < 1/(1 + 2 g/(R_max^2 - R_mid^2)), g = 0.01 ln 10, m s_hat^2 ~ chi2_{m-1}; that
    # formula, 0.526 at m = 300, ignores the fitted mean and sat 2.2 binomial sd below the 0.561 measured over the
    # 960 seeds of the quick seed sweep (20 x 48); with the mean: 0.548)
    cov = results["coverage"]
    sup = np.asarray(cov["log_sup_vs_R"]) / np.log(10.0)  # (S, F, nR) in decades
    R = np.asarray(cov["R"])
    j_mid = int(np.argmin(np.abs(R - R.max() / 2)))
    frac = np.mean(sup[:, :, -1] - sup[:, :, j_mid] > 0.01, axis=0)  # (F,)
    S = sup.shape[0]
    p_emp = empirical_growth_probability(cfg.cov_m_main, float(R[j_mid]), float(R[-1]), 0.01 * np.log(10.0))
    predicted = {"empirical variance (no inflation)": p_emp, "KDE h = m^(-1/5) sigma_hat (shrinking)": 1.0}
    for f, (name, holds) in enumerate(zip(COVERAGE_FAMILIES, COVERAGE_HOLDS, strict=True)):
        pred = 0.0 if holds else predicted[name]
        tol = 3 * math.sqrt(max(pred * (1 - pred), 0.25 / S) / S) if 0 < pred < 1 else 0.0  # 3 binomial sd over S seeds
        verdict = "holds" if holds else "fails"
        text = (
            f"coverage {verdict}, {name}: fraction of {S} seeds whose sup p/L still grows R={R[j_mid]:g}->{R[-1]:g} sd"
        )
        extra: dict[str, Any] = {"source": "theory" if name.startswith("empirical") else "paper"}
        if name in RARE_FAILURES:
            rate, why = RARE_FAILURES[name]
            tol = rate + 3 * math.sqrt(rate * (1 - rate) / S)
            text += f" (all but a rate <= {rate:g})"
            extra["wide_reason"] = f"a fraction of {S} seeds, binomial noise (no interval): {why}"
        out.append(Claim.from_interval(text, pred, (frac[f], 0.0, S), tol, "abs", kind="check", **extra))
    # the paper: a shrinking bandwidth breaks coarse learnability as m grows (unpaired seeds)
    ms = np.asarray(cov["m"])
    supm = np.asarray(cov["log_sup_vs_m"]) / np.log(10.0)  # (S, nm, F)
    f_shr = COVERAGE_FAMILIES.index("KDE h = m^(-1/5) sigma_hat (shrinking)")
    text = (
        f"coverage fails as m grows, KDE h = m^(-1/5) sigma_hat: log10 sup p/L over |x| <= {cfg.cov_R_fixed:g} sd "
        f"at m = {ms[-1]} above m = {ms[0]} ({S} seeds each, 95% interval of the difference above 0)"
    )
    out.append(Claim.ordering(text, supm[:, -1, f_shr], supm[:, 0, f_shr], kind="paper"))
    cf = np.asarray(cov["mle_closed_form"]) / np.log(10.0)
    text = "grid sup p/L of the inflated MLE = closed form log(s2/s1) + dm^2/(2(s2^2-s1^2)) (max abs error, decades)"
    return out + [array_agreement(text, sup[:, 0, -1], cf, 1e-4, relative=None)]


claims = CLAIMS.claims
