"""Figures of the tv_distance result (``figures/tv_distance/``)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from jaxwb.sims.core import panels, style
from jaxwb.sims.core.claims import bootstrap_ci
from jaxwb.sims.tv_distance.config import INTERVAL_MIN_S, Config
from jaxwb.sims.tv_distance.measures import interval_rep
from jaxwb.sims.tv_distance.pieces import loglog_slope
from jaxwb.sims.tv_distance.statistics import binomial_ci, ci_hits
from jaxwb.theory import tv_distance as tv

FIGURES = panels.Figures()
plot = FIGURES.plot  # the figures below, in this order


@FIGURES.add
def plot_errors_vs_queries(results: dict, cfg: Config):
    """Mean |estimate - TV| vs total queries, three access models, with the guide lines."""
    tv_true, e, K, n = float(results["exact"]["tv"]), results["errors"], cfg.K, cfg.n
    fig, axes = style.figure(1, 3, figsize=(15, 4.6), sharey=True)
    qmax = max(float(np.max(v2["queries"])) for v2 in e.values() if isinstance(v2, dict) and "queries" in v2)
    qq = np.geomspace(2 * n, qmax, 50)
    guide_logit = np.sqrt(n / qq)
    ax = axes[0]
    for kind, c in zip(tv.LOGIT_KINDS, ("tab:blue", "tab:orange", "tab:green"), strict=True):
        ax.loglog(e[f"logit_{kind}"]["queries"], e[f"logit_{kind}"]["error"], "o-", color=c, ms=3, label=kind)
    ax.loglog(qq, guide_logit, **style.prediction(), label="n / eps^2 (eps = sqrt(n/Q))")
    title = f"Logit access (K={K}, n={n}, TV={tv_true:.3f})"
    ylabel = "mean |estimate - TV|"
    panels.finish(ax, ylim=(1e-3, 1), title=title, xlabel="total queries Q (both models)", ylabel=ylabel)
    colors = ("tab:purple", "tab:red", "tab:brown", "tab:pink", "tab:olive", "tab:cyan")
    for ax, access, param, values, guide, guide_label, title, xlabel in (
        (axes[1], "sample", "s", cfg.sample_s, np.sqrt(n * n * K / qq), "n^2 K / eps^2",
         "Sample access: s samples per model and position", "total sampler calls Q"),
        (axes[2], "noisy", "r", cfg.noisy_r, np.sqrt((n + n * n * cfg.sigma**2) / qq), "(n + n^2 sigma^2) / eps^2",
         f"Noisy logits: sigma={cfg.sigma}, r repeats per query", "total noisy queries Q"),
    ):  # fmt: skip
        for v, c in zip(values, colors, strict=False):
            for est, fmt, alpha in (("simex", "o-", 1.0), ("plugin", "x:", 0.7)):
                d = e[f"{access}_{est}_{param}{v}"]
                label = f"{'SIMEX' if est == 'simex' else est}, {param}={v}"
                ax.loglog(d["queries"], d["error"], fmt, color=c, ms=3, alpha=alpha, label=label)
        ax.loglog(qq, guide, **style.prediction(), label=guide_label)
        ax.loglog(qq, guide_logit, **style.prediction(color="0.6"), label="n / eps^2")
        panels.finish(ax, legend={"fontsize": 7, "ncol": 2}, ylim=(1e-3, 1), title=title, xlabel=xlabel)
    fig.suptitle(
        "Error vs queries (error = mean over groups of m sequences from one pool; plateaus = bias). "
        "Guide lines: eps = sqrt(rate / Q)"
    )
    return fig


@FIGURES.add
def plot_queries_vs_n(results: dict, cfg: Config):
    """Queries needed for RMSE eps vs n, with the fitted log-log slopes."""
    sl = results["slopes"]
    nn, ex = np.asarray(sl["n"], float), sl["exact"]
    fig, (ax, ax2) = style.figure(1, 2, figsize=(12, 4.6))
    for name, c, lab, slope, pred_label in (  # the predicted slope drawn through the first point
        ("plain", "tab:blue", "logit plain", None, None),
        ("rb", "tab:green", "logit RB", 1.0, "slope 1 (n / eps^2)"),
        ("sample_plugin", "tab:red", "sample, plugin", 2.0, "slope 2 (n^2 K / eps^2)"),
        ("sample_simex", "tab:purple", "sample, SIMEX", None, None),
        ("noisy_plugin", "tab:brown", f"noisy sigma={cfg.sigma}, plugin", None, None),
        ("noisy_simex", "tab:pink", f"noisy sigma={cfg.sigma}, SIMEX", None, None),
    ):
        lo, hi = (float(x) for x in sl[name]["slope_ci"])
        label = f"{lab}: slope {float(sl[name]['slope']):.2f} [{lo:.2f}, {hi:.2f}]"
        q = np.asarray(sl[name]["queries"])
        panels.slope_panel(ax, nn, q, fit=False, predicted=slope, anchor=(nn[0], q[0]), color=c, fmt="o-",
                           label=label, pred_label=pred_label)  # fmt: skip
    for name, c in (("plain", "tab:blue"), ("rb", "tab:green")):
        label = f"{name}: 2 n Var Z(n) / eps^2, exact Var Z (claimed slope)"
        ax.loglog(nn, ex[f"queries_{name}"], ":", color=c, lw=2.5, alpha=0.6, label=label)
    title = f"Queries to reach eps = {cfg.slope_eps} (K={cfg.K}, per-step perturbation {cfg.slope_delta}/sqrt(n))"
    ylabel = f"queries for RMSE = {cfg.slope_eps} (counted in the run)"
    panels.finish(ax, legend=7, xlabel="sequence length n", ylabel=ylabel, title=title)
    label = f"TV (RB, {cfg.slope_pool * cfg.slope_chunks} sequences, +-2 SE)"
    ax2.errorbar(nn, sl["tv_ref"], 2 * np.asarray(sl["tv_ref_se"]), fmt="o-", color="k", label=label)
    ax2.plot(nn, sl["rb"]["var"], "s-", color="tab:green", label="Var Z (RB)")
    ax2.plot(nn, sl["plain"]["var"], "^-", color="tab:blue", label="Var Z (plain)")
    ax2.plot(nn, ex["tv"], "k:", lw=2.5, alpha=0.6, label="exact TV, Var Z (law of L on a grid)")
    ax2.plot(nn, ex["var_rb"], ":", color="tab:green", lw=2.5, alpha=0.6)
    ax2.plot(nn, ex["var_plain"], ":", color="tab:blue", lw=2.5, alpha=0.6)
    title = "The family keeps TV (and Var Z) roughly constant in n"
    panels.finish(ax2, xscale="log", xlabel="sequence length n", ylabel="TV or variance", ylim=(0, None), title=title)
    for a in (ax, ax2):
        panels.integer_ticks(a, nn)
    return fig


@FIGURES.add
def plot_coverage(results: dict, cfg: Config):
    """Coverage of |T - TV| <= eps at the Hoeffding m, the stated intervals' coverage, the errors."""
    tv_true, cov, m_h = float(results["exact"]["tv"]), results["coverage"], int(results["coverage"]["m"])
    fig, (ax, ax2, ax3) = style.figure(1, 3, figsize=(16, 4.4))
    kinds, colors = list(tv.LOGIT_KINDS), ["tab:blue", "tab:orange", "tab:green"]
    wilson = lambda hits: binomial_ci(hits)[:3]  # (fraction, low, high), 95% Wilson interval
    xs, z_d = np.arange(len(kinds)), float(stats.norm.ppf(1 - cfg.delta / 2))
    label = f"|T - TV| <= eps = {cfg.eps} (Hoeffding; not claimed: ~1 for any unbiased [0, 1] estimator)"
    ax.bar(xs - 0.2, [float(cov[k]["coverage"]) for k in kinds], 0.4, color=colors, alpha=0.4, label=label)
    sds = [np.sqrt(float(results["reference"]["var"][k]) / m_h) for k in kinds]
    est = {k: np.asarray(cov[k]["estimates"]) for k in kinds}
    hits = [np.abs(est[k] - tv_true) <= z_d * sd for k, sd in zip(kinds, sds, strict=True)]  # within the CLT's eps'
    f, lo, hi = np.array([wilson(h) for h in hits]).T
    label = "|T - TV| <= z sqrt(Var Z / m), exact Var Z (claimed)"
    ax.bar(xs + 0.2, f, 0.4, color=colors, yerr=[f - lo, hi - f], capsize=4, label=label)
    ax.set_xticks(xs, kinds)
    ax.axhline(1 - cfg.delta, **style.prediction(), label=f"1 - delta = {1 - cfg.delta}")
    title = f"Coverage at the Hoeffding m = {m_h} ({cfg.coverage_reps} repetitions)"
    legend = {"loc": "upper left", "fontsize": 6.5}
    panels.finish(ax, legend=legend, ylim=(0.5, 1.15), ylabel="fraction of repetitions", title=title)
    xg = np.linspace(-cfg.eps, cfg.eps, 201)
    for kind, c, sd in zip(kinds, colors, sds, strict=True):
        ax2.hist(est[kind] - tv_true, bins=25, histtype="step", color=c, lw=1.5, label=kind)
        scale = len(est[kind]) * (np.ptp(est[kind]) or 1.0) / 25  # repetitions per bin width
        ax2.plot(xg, scale * stats.norm.pdf(xg, 0, sd), ":", color=c, lw=1.2)
    ax2.axvline(cfg.eps, **style.prediction(), label="+-eps")
    ax2.axvline(-cfg.eps, **style.prediction())
    title = "Error distribution at the Hoeffding m"
    panels.finish(ax2, xlabel="estimate - exact TV", ylabel="repetitions", title=title)
    names = [("rb", "logit RB")] + [(f"noisy_r{r}", f"noisy r={r}") for r in cfg.noisy_r]
    for s in cfg.sample_s:
        names.append((f"sample_s{s}", f"sample s={s}" + ("" if s >= INTERVAL_MIN_S else "\n(not claimed)")))
    reps = [interval_rep(cov, name) for name, _ in names]
    biased = [j for j, rep in enumerate(reps) if "bias" in rep]
    no_bias = [{**reps[j], "bias": 0.0 * np.asarray(reps[j]["bias"])} for j in biased]  # 1.96 stderr only
    for x, rows, fmt, color, label in (
        (np.arange(len(reps)), reps, "o", "tab:blue", "with the bias term (Estimate.halfwidth)"),
        (np.array(biased) + 0.15, no_bias, "x", "tab:red", "1.96 stderr only (centred on a biased mean)"),
    ):
        f, lo, hi = np.array([wilson(ci_hits(rep, tv_true)) for rep in rows]).reshape(-1, 3).T
        ax3.errorbar(x, f, [f - lo, hi - f], fmt=fmt, color=color, capsize=4, label=label)
    ax3.axhline(0.95, **style.prediction(), label="stated level 0.95")
    ax3.set_xticks(range(len(names)), [lab for _, lab in names], rotation=30, fontsize=8)
    title = f"95% intervals at m = {m_h} (95% Wilson interval)"
    ylabel, legend = "fraction of intervals covering the exact TV", {"fontsize": 8, "loc": "lower left"}
    return panels.finish(ax3, legend=legend, ylim=(0, 1.05), ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_tv_vs_kl(results: dict, cfg: Config):
    """TV vs KL (and Pinsker) as the supports separate; the spread of both estimators."""
    sep = results["separation"]
    lam, tvx, klx = np.asarray(sep["lam"]), np.asarray(sep["tv"]), np.asarray(sep["kl"])
    fig, (ax, ax2) = style.figure(1, 2, figsize=(13, 4.8))
    for est, truth, c, lab in ((sep["tv_est"], tvx, "tab:blue", "TV"), (sep["kl_est"], klx, "tab:red", "KL(P||Q)")):
        lo, hi = np.percentile(np.asarray(est), [5, 95], axis=1)
        ax.plot(lam, truth, "o-", color=c, label=f"exact {lab}")
        ax.fill_between(lam, lo, hi, color=c, alpha=0.25, label=f"{lab} estimates, 5-95% (m={cfg.sep_m})")
        ax2.plot(lam, hi - lo, "o-", color=c, label=f"{lab[:2]} estimator")
    ax.plot(lam, np.sqrt(klx / 2), **style.prediction(), label="Pinsker bound sqrt(KL/2)")
    ax.axhline(1.0, color="0.5", lw=1)
    legend = {"fontsize": 8, "loc": "upper left", "bbox_to_anchor": (0.02, 0.78)}
    xlabel = "separation lambda (logit gap between the halves of the vocabulary)"
    title = f"TV saturates at 1, KL grows without bound (K={cfg.K}, n={cfg.n})"
    ylabel = "distance (nats for KL)"
    panels.finish(ax, legend=legend, yscale="symlog", ylim=(0, None), xlabel=xlabel, ylabel=ylabel, title=title)
    hoeffding = 2 * math.sqrt(math.log(20) / (2 * cfg.sep_m))
    ax2.axhline(hoeffding, **style.prediction(), label="TV: Hoeffding 90% width (any lambda)")
    title = f"Estimator spread ({cfg.sep_reps} repetitions of m={cfg.sep_m})"
    ylabel = "5-95% spread of the estimate (same units as the value)"
    return panels.finish(ax2, xlabel="separation lambda", ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_engines(results: dict, cfg: Config):
    """TV and KL between a float32 and a bfloat16 engine of one random tiny transformer vs n."""
    eng, ne = results["engines"], np.asarray(results["engines"]["n"], float)
    fig, ax = style.figure(figsize=(7.5, 4.6))
    for key, fmt, color, exact_color, label in (
        ("tv", "o-", "tab:blue", "k", "TV(fp32, bf16), RB estimate +-2 SE"),
        ("kl", "s-", "tab:red", "darkred", "KL(fp32 || bf16) estimate +-2 SE"),
    ):
        ax.errorbar(ne, eng[key], 2 * np.asarray(eng[f"{key}_se"]), fmt=fmt, color=color, label=label)
        exact = ([float(eng["exact_n"])], [float(eng[f"exact_{key}"])])
        ax.plot(*exact, "*", color=exact_color, ms=12, label=f"exact {key.upper()} (enumeration)")
    label = "heuristic, not a bound: 1-(1-TV_1)^n (first-token TV as if independent per position)"
    ax.plot(ne, 1 - (1 - float(eng["first_token_tv"])) ** ne, color="0.5", ls=":", lw=1.3, label=label)
    model = f"K={cfg.tf_K}, d={cfg.tf_d}, {cfg.tf_layers} layers, m={cfg.tf_m}"
    title = f"Two engines of one random tiny transformer ({model})"
    panels.finish(ax, legend=8, log="xy", xlabel="sequence length n", ylabel="distance (KL in nats)", title=title)
    return panels.integer_ticks(ax, ne).figure


@FIGURES.add(name="queries_vs_K")
def plot_queries_vs_k(results: dict, cfg: Config):
    """Queries to reach eps vs the vocabulary K at fixed n (sample access; the paper's n^2 K / eps^2 beside it),
    the plugin's bias against s / (n (K - 1)) (sample access as noisy logits with sigma^2 ~ (K - 1) / s), and
    the family's TV per K; none without a K sweep."""
    if "ksweep" not in results:
        return None
    ks = results["ksweep"]
    K, qp = np.asarray(ks["K"], float), np.asarray(ks["sample_plugin"]["queries"], float)
    fig, (ax, ax2, ax3) = style.figure(1, 3, figsize=(17, 4.8))
    (slope, half, _), (slope1, half1, _) = (bootstrap_ci(loglog_slope(x, qp)) for x in (K, K - 1))
    for j, row in enumerate(qp):
        ax.loglog(K, row, "-", color="tab:red", lw=0.7, alpha=0.35, label="plugin, one seed" if j == 0 else None)
    for name, c, fmt, lab in (
        ("sample_plugin", "tab:red", "o-", f"sample, plugin: slope {slope:.3f} +- {half:.3f} in K"),
        ("sample_simex", "tab:purple", "s--", "sample, SIMEX (not claimed: bias changes sign at s ~ K)"),
        ("rb", "tab:green", "^-", "logit access (RB), for reference"),
    ):
        panels.errorbars(ax, K, ks[name]["queries"], geometric=True, fmt=fmt, color=c, ms=4, label=lab)
    for x, lab, c in (
        (K, "paper: slope 1 in K (n^2 K / eps^2)", "k"),
        (K - 1, f"slope 1 in K - 1 (noise (K - 1) / s; measured {slope1:.3f} +- {half1:.3f})", "tab:blue"),
    ):
        c0 = np.exp(np.mean(np.log(qp) - np.log(x)))  # the level of a slope-1 line through the plugin's points
        ax.loglog(K, c0 * x, **style.prediction(color=c), label=f"{lab}, fitted level")
    title = f"Sample access vs K (n={cfg.k_n}; geometric mean, 95% CI over {qp.shape[0]} seeds)"
    ylabel = f"queries for RMSE = {cfg.slope_eps} (counted in the run)"
    legend = {"fontsize": 7, "loc": "lower right", "bbox_to_anchor": (1.0, 0.1)}
    panels.finish(ax, legend=legend, xlabel="vocabulary K (next-token support)", ylabel=ylabel, title=title)
    s, bias = np.asarray(ks["s"], float), np.asarray(ks["sample_plugin"]["bias"], float).mean(0)  # (NK, P)
    for k, b in zip(K, bias, strict=True):
        keep = b > 0
        ax2.loglog((s / (cfg.k_n * (k - 1)))[keep], b[keep], "o-", ms=3, label=f"K={int(k)}")
    ax2.axhline(cfg.slope_eps, **style.prediction(color="0.5"), label=f"eps = {cfg.slope_eps}")
    title = "Plugin bias vs s / (n (K - 1)) (sample access as noisy logits, sigma^2 ~ (K - 1) / s)"
    ylabel = "plugin bias E Z - TV (paired with RB, seed mean)"
    xlabel = "s / (n (K - 1)): samples per position over the noise scale"
    panels.finish(ax2, legend=7, xlabel=xlabel, ylabel=ylabel, title=title)
    tvk = np.asarray(ks["tv"], float)
    label = "TV (RB), mean +- sd over seeds"
    ax3.errorbar(K, tvk.mean(0), tvk.std(0, ddof=1), fmt="o-", color="k", capsize=3, label=label)
    title = f"The family (per-step perturbation {cfg.slope_delta}/sqrt(n)) vs K"
    panels.finish(ax3, xscale="log", xlabel="vocabulary K", ylabel="TV", ylim=(0, None), title=title)
    for a in (ax, ax3):
        panels.integer_ticks(a, K)
    return fig
