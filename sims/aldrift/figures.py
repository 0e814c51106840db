"""ALDRIFT sim: the figures."""

from __future__ import annotations

import math

import numpy as np

from jaxwb.sims.aldrift.config import COVERAGE_FAMILIES, COVERAGE_HOLDS, PAPER_INFLATION, Config
from jaxwb.sims.aldrift.measures import eps_summary
from jaxwb.sims.core import panels, style
from jaxwb.theory import aldrift as al

FIGURES = panels.Figures()


@FIGURES.add
def plot_mean_distance(results: dict, cfg: Config):
    """||mean - x*|| vs iteration, ALDRIFT vs TOPIFT, each paper setting, with the exact mean of p_tau."""
    it = np.arange(1, len(np.asarray(results["taus"])) + 1)
    fig, axes = style.figure(1, len(cfg.settings), figsize=(5.6 * len(cfg.settings), 4.4))
    xlabel, ylabel = "iteration k (ALDRIFT: temperature tau_k; TOPIFT: round)", "||mean of fitted samples - x*||"
    for i, (ax, (mu_d, A, w, x0, mu0)) in enumerate(zip(np.atleast_1d(axes), cfg.settings, strict=True)):
        res = results[f"setting{i + 1}"]
        for name, color in (("aldrift", "tab:blue"), ("topift", "tab:red")):
            d = np.linalg.norm(np.asarray(res[name]["mean"]), axis=-1)
            panels.quantile_band(ax, it, d, color=color, label=f"{name.upper()} (median, min-max of {cfg.runs} runs)")
        exact = np.asarray(res["exact"]["distance"])
        ax.plot(it, exact, **style.prediction(), label="exact ||E_{p_tau} x - x*|| (quadrature)")
        ax.axhline(math.pi / w, color="0.4", ls=":", lw=1.2, label=f"x*'s basin radius pi/w = {math.pi / w:.2f}")
        title = (
            f"Setting {i + 1}: mu_d={mu_d:g}, A={A:g}, w={w:g}, x0={x0:g}*1, mu0={mu0:g}, n={cfg.n}\n"
            f"tau {cfg.tau1:g} -> {cfg.T:g} by x(1+1/n), m={cfg.m}, M={cfg.M}"
        )
        legend = {"fontsize": 8, "loc": "lower left"}
        panels.finish(ax, legend=legend, yscale="log", xlabel=xlabel, ylabel=ylabel, title=title)
    return fig


@FIGURES.add
def plot_acceptance(results: dict, cfg: Config):
    """IMH acceptance rate and importance ESS fraction vs tau, the pure quadratic's closed-form ESS dashed."""
    taus, qa = np.asarray(results["taus"]), results["quadratic"]
    fig, (ax, ax2) = style.figure(1, 2, figsize=(12.8, 4.4))
    series = []
    for i, (s, color) in enumerate(zip(cfg.settings, ("tab:blue", "tab:green"), strict=False)):
        label = f"setting {i + 1} (A={s[1]:g}, w={s[2]:g}), L_d/mu_d = {al.envelope_constants(*s[:3])[1] / s[0]:g}"
        series.append((results[f"setting{i + 1}"]["aldrift"], {"color": color, "label": label}))
    series.append((qa, {"color": "tab:gray", "label": "pure quadratic (A=0)", "ls": "--"}))
    for res, kw in series:
        panels.quantile_band(ax, taus, np.asarray(res["acceptance"]), **kw)
        panels.quantile_band(ax2, taus, np.asarray(res["ess"]), **kw)
    intended = np.asarray(qa["intended_taus"])
    label = f"pure quadratic, closed form 1/E_q[(p/q)^2], q = N(fitted mean, {PAPER_INFLATION:g}/mu_tau)"
    ax2.plot(intended, np.asarray(qa["ess_predicted"]), **style.prediction(color="tab:red"), label=label)
    label = "pure quadratic, first tau (prior proposal): Kish ESS of exact draws (Monte Carlo, mean +- 95% CI)"
    kish = np.asarray(qa["ess_first_reference"])[:, None]
    panels.errorbars(ax2, [float(intended[0])], kish, fmt="*", color="tab:red", ms=10, label=label)
    title = f"IMH acceptance, m={cfg.m} chains x M={cfg.M} steps per tau\n(median, min-max of runs)"
    panels.finish(ax, legend=8, log="xy", xlabel="temperature tau", ylabel="IMH acceptance rate", title=title)
    title = "Importance ESS fraction (sum w)^2 / (N sum w^2), w = p_tau / proposal,\nN = m M proposals"
    ylabel, legend = "importance ESS / (m M)  of the proposals", {"fontsize": 7, "loc": "lower left"}
    return panels.finish(ax2, legend=legend, log="xy", xlabel="temperature tau", ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_evaluations(results: dict, cfg: Config):
    """Evaluations of d to reach eps: ALDRIFT, random search and DOO (linear and log-log scales)."""
    s = eps_summary(results, cfg)
    e = results["eps"]
    fig, (ax, ax2) = style.figure(1, 2, figsize=(12, 4.6))
    L10, ok, okd, okr = np.log10(1 / s["eps"]), s["ald_ok"], s["doo_ok"], s["rs_ok"]
    label = f"ALDRIFT: mean sample cost <= eps (mean +- 95% CI of {cfg.eps_runs} runs)"
    panels.errorbars(ax, L10[ok], np.asarray(e["aldrift"]["mean_cost"])[:, ok], fmt="o-", color="tab:blue", label=label)
    k_lap = 1 + np.ceil(np.log(np.maximum(cfg.eps_n / (2 * s["eps"] * cfg.tau1), 1.0)) / math.log1p(1 / cfg.eps_n))
    label = "if E[d] were the Laplace n/(2 tau) (the gap = IMH lag)"
    ax.plot(L10, cfg.eps_m * (cfg.eps_M + 1) * k_lap, color="0.5", ls="--", lw=1, label=label)
    best = np.median(np.asarray(e["aldrift"]["best"]), 0)
    okb = np.asarray(e["aldrift"]["best_reached"]).all(0)
    ax.plot(L10[okb], best[okb], "o:", color="tab:blue", alpha=0.6, label="ALDRIFT: best cost seen <= eps")
    if ok.sum() >= 2:
        x_last, y_last = L10[ok][-1], s["ald_med"][ok][-1]
        xx = np.linspace(L10[ok][0], x_last, 10)
        yy = y_last + float(e["aldrift_slope_predicted"]) * np.log(10) * (xx - x_last)
        ax.plot(xx, yy, **style.prediction(), label="slope m(M+1)/ln(1+1/n) per e-fold (theory)")
    ax.plot(np.log10(1 / s["doo_eps"][okd]), s["doo"][okd], "s-", color="tab:orange", label="DOO (deterministic)")
    ref = np.asarray(e["doo"]["reference_count"], float)
    label = "DOO, independent NumPy reference (claim: same counts)"
    ax.plot(np.log10(1 / s["doo_eps"][ref > 0]), ref[ref > 0], "x", color="k", ms=7, label=label)
    title = f"Linear scale: evaluations vs log(1/eps), n={cfg.eps_n}, setting {cfg.eps_setting + 1} cost"
    panels.finish(ax, legend=8, xlabel="log10(1/eps)", ylabel="evaluations of d", title=title)
    ax2.loglog(1 / s["eps"][ok], s["ald_med"][ok], "o-", color="tab:blue", label="ALDRIFT (mean cost)")
    ax2.loglog(1 / s["doo_eps"][okd], s["doo"][okd], "s-", color="tab:orange", label="DOO")
    x, half = 1 / s["rs_eps"], panels.mean_ci_columns(np.asarray(e["random"]["count"], float)[:, okr])[1]
    label = f"random search on the box (mean +- 95% CI of {cfg.rs_runs})"
    ball = {"pred_x": x, "pred_label": "1/P(ball r = sqrt(2 eps/L_d)) ~ (1/eps)^(n/2)"}
    predicted = np.asarray(e["random"]["predicted"])
    panels.measured_vs_predicted(
        ax2, x[okr], s["rs_mean"][okr], predicted, yerr=half, fmt="^-", color="tab:red", label=label, **ball
    )
    if "probability" in e["random"]:  # the exact first-hit law on the fit range (quadrature)
        fit_eps, prob = np.asarray(e["random"]["fit_eps"]), np.asarray(e["random"]["probability"])
        label = "exact 1/P[d <= eps] (quadrature; the slope claim's fit range)"
        ax2.loglog(1 / fit_eps, 1 / prob, "kx", ms=8, label=label)
    title = f"Log-log: random search slope n/2 = {cfg.eps_n / 2:g}; box [{cfg.box[0]:g}, {cfg.box[1]:g}]^{cfg.eps_n}"
    return panels.finish(ax2, legend=8, xlabel="1/eps", ylabel="evaluations of d", title=title).figure


@FIGURES.add
def plot_coverage(results: dict, cfg: Config):
    """sup p/L vs grid radius and vs sample size, and the tail mass Pr_p[p/L > 10], per coverage family."""
    cov = results["coverage"]
    R, ms, tail = np.asarray(cov["R"]), np.asarray(cov["m"]), np.asarray(cov["tail_mass_K10_vs_m"])
    supR, supm = (np.asarray(cov[key]) / np.log(10) for key in ("log_sup_vs_R", "log_sup_vs_m"))
    fig, (a1, a2, a3) = style.figure(1, 3, figsize=(16, 4.8))
    colors = ("tab:blue", "tab:green", "tab:cyan", "tab:purple", "tab:red", "tab:orange")
    for f, (name, holds, c) in enumerate(zip(COVERAGE_FAMILIES, COVERAGE_HOLDS, colors, strict=True)):
        ls, label = ("-", "holds: " + name) if holds else ("--", "fails: " + name)
        rows = ((a1, R, supR[:, f], -np.inf), (a2, ms, supm[:, :, f], -np.inf), (a3, ms, tail[:, :, f], 1e-12))
        for ax, x, y, floor in rows:
            ax.plot(x, np.maximum(np.quantile(y, 0.9, axis=0), floor), ls, marker="o", color=c, label=label)
    mle = np.median(np.asarray(cov["mle_closed_form"])) / np.log(10)
    a1.axhline(mle, **style.prediction(), label="closed form sup for the inflated MLE (median)")
    title, ylabel = f"Coverage ratio vs grid size, m = {cfg.cov_m_main}", "log10 sup p/L (90% quantile over seeds)"
    xlabel = f"grid radius R in target sds (sup over |x| <= R sd; target N(0, sd^2), sd = {cfg.cov_sd:g})"
    panels.finish(a1, legend=7, yscale="symlog", ylim=(-0.1, None), xlabel=xlabel, ylabel=ylabel, title=title)
    title = f"Coverage ratio vs sample size, R = {cfg.cov_R_fixed:g} sd"
    ylabel = "log10 sup_{|x|<=R sd} p/L (90% quantile)"
    a2.set(xscale="log", yscale="symlog", ylim=(-0.1, None), xlabel="samples m", ylabel=ylabel, title=title)
    title = "Coarse-learnability tail mass, K = 10 (0 drawn at 1e-12)"
    ylabel = "Pr_{s~p}[p(s)/L(s) > 10] (90% quantile)"
    return panels.finish(a3, legend=7, log="xy", xlabel="samples m", ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_quadratic_check(results: dict, cfg: Config):
    """ALDRIFT's mean sample cost vs the closed form E_{p_tau}[d] for the pure quadratic."""
    q = results["quadratic"]
    fig, ax = style.figure(figsize=(6.4, 4.4))
    label = f"ALDRIFT mean sample cost ({cfg.quad_runs} runs x {cfg.m} chains; median, min-max)"
    panels.quantile_band(ax, np.asarray(results["taus"]), np.asarray(q["sample_cost"]), color="tab:blue", label=label)
    label = "closed form E_{p_tau}[d] = mu_d/2 (n/(mu0+tau mu_d) + |mean|^2)"
    ax.plot(np.asarray(q["intended_taus"]), np.asarray(q["closed_form"]), **style.prediction(), label=label)
    s1 = cfg.settings[0]
    title = f"Pure quadratic check: mu_d={s1[0]:g}, x0={s1[3]:g}*1, mu0={s1[4]:g}, n={cfg.n}"
    return panels.finish(ax, legend=8, log="xy", xlabel="temperature tau", ylabel="cost d", title=title).figure


plot = FIGURES.plot
