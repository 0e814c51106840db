"""Figures of the tv_distance result (``figures/tv_distance/``)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from jaxwb.sims.core import panels, style
from jaxwb.sims.core.claims import bootstrap_ci
from jaxwb.sims.tv_distance.config import INTERVAL_MIN_S, Config
from jaxwb.sims.tv_distance.pieces import loglog_slope
from jaxwb.sims.tv_distance.statistics import binomial_ci, ci_hits
from jaxwb.theory import tv_distance as tv


def plot_errors_vs_queries(results: dict, cfg: Config):
    """Mean |estimate - TV| vs total queries, three access models, with the guide lines."""
    tv_true = float(results["exact"]["tv"])
    e = results["errors"]
    K, n = cfg.K, cfg.n
    fig, axes = style.figure(1, 3, figsize=(15, 4.6), sharey=True)
    qmax = max(float(np.max(v2["queries"])) for v2 in e.values() if isinstance(v2, dict) and "queries" in v2)
    qq = np.geomspace(2 * n, qmax, 50)
    guide_logit = np.sqrt(n / qq)
    ax = axes[0]
    for kind, c in zip(tv.LOGIT_KINDS, ("tab:blue", "tab:orange", "tab:green"), strict=True):
        ax.loglog(e[f"logit_{kind}"]["queries"], e[f"logit_{kind}"]["error"], "o-", color=c, ms=3, label=f"{kind}")
    ax.loglog(qq, guide_logit, **style.prediction(), label="n / eps^2 (eps = sqrt(n/Q))")
    title = f"Logit access (K={K}, n={n}, TV={tv_true:.3f})"
    panels.finish(ax, title=title, xlabel="total queries Q (both models)", ylabel="mean |estimate - TV|")
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
        panels.finish(ax, legend={"fontsize": 7, "ncol": 2}, title=title, xlabel=xlabel)
    for ax in axes:
        ax.set_ylim(1e-3, 1)
    fig.suptitle(
        "Error vs queries (error = mean over groups of m sequences from one pool; plateaus = bias). "
        "Guide lines: eps = sqrt(rate / Q)"
    )
    return fig


def plot_queries_vs_n(results: dict, cfg: Config):
    """Queries needed for RMSE eps vs n, with the fitted log-log slopes."""
    K = cfg.K
    sl = results["slopes"]
    nn = np.asarray(sl["n"], float)
    fig, (ax, ax2) = style.figure(1, 2, figsize=(12, 4.6))
    styles = {
        "plain": ("tab:blue", "logit plain"),
        "rb": ("tab:green", "logit RB"),
        "sample_plugin": ("tab:red", "sample, plugin"),
        "sample_simex": ("tab:purple", "sample, SIMEX"),
        "noisy_plugin": ("tab:brown", f"noisy sigma={cfg.sigma}, plugin"),
        "noisy_simex": ("tab:pink", f"noisy sigma={cfg.sigma}, SIMEX"),
    }
    predicted = {"rb": (1.0, "slope 1 (n / eps^2)"), "sample_plugin": (2.0, "slope 2 (n^2 K / eps^2)")}
    for name, (c, lab) in styles.items():
        lo, hi = (float(x) for x in sl[name]["slope_ci"])
        label = f"{lab}: slope {float(sl[name]['slope']):.2f} [{lo:.2f}, {hi:.2f}]"
        q = np.asarray(sl[name]["queries"])
        slope, pred_label = predicted.get(name, (None, None))  # the predicted slope through the first point
        panels.slope_panel(ax, nn, q, fit=False, predicted=slope, anchor=(nn[0], q[0]), color=c, fmt="o-",
                           label=label, pred_label=pred_label)  # fmt: skip
    ex = sl.get("exact")
    for name, c in (("plain", "tab:blue"), ("rb", "tab:green")) if ex is not None else ():
        label = f"{name}: 2 n Var Z(n) / eps^2, exact Var Z (claimed slope)"
        ax.loglog(nn, ex[f"queries_{name}"], ":", color=c, lw=2.5, alpha=0.6, label=label)
    title = f"Queries to reach eps = {cfg.slope_eps} (K={K}, per-step perturbation {cfg.slope_delta}/sqrt(n))"
    ylabel = f"queries for RMSE = {cfg.slope_eps} (counted in the run)"
    panels.finish(ax, legend=7, xlabel="sequence length n", ylabel=ylabel, title=title)
    label = f"TV (RB, {cfg.slope_pool * cfg.slope_chunks} sequences, +-2 SE)"
    ax2.errorbar(nn, sl["tv_ref"], 2 * np.asarray(sl["tv_ref_se"]), fmt="o-", color="k", label=label)
    ax2.plot(nn, sl["rb"]["var"], "s-", color="tab:green", label="Var Z (RB)")
    ax2.plot(nn, sl["plain"]["var"], "^-", color="tab:blue", label="Var Z (plain)")
    if ex is not None:
        ax2.plot(nn, ex["tv"], "k:", lw=2.5, alpha=0.6, label="exact TV, Var Z (law of L on a grid)")
        ax2.plot(nn, np.stack([ex["var_rb"], ex["var_plain"]], 1), ":", lw=2.5, alpha=0.6)
        ax2.lines[-2].set_color("tab:green")
        ax2.lines[-1].set_color("tab:blue")
    title = "The family keeps TV (and Var Z) roughly constant in n"
    panels.finish(ax2, xscale="log", xlabel="sequence length n", ylabel="TV or variance", ylim=(0, None), title=title)
    for a in (ax, ax2):
        panels.integer_ticks(a, nn)
    return fig


def plot_queries_vs_k(results: dict, cfg: Config):
    """Queries to reach eps vs the vocabulary K at fixed n (sample access; the paper's n^2 K / eps^2 beside it),
    the plugin's bias against s / (n (K - 1)) (sample access as noisy logits with sigma^2 ~ (K - 1) / s), and
    the family's TV per K."""
    ks = results["ksweep"]
    K = np.asarray(ks["K"], float)
    S = np.asarray(ks["sample_plugin"]["queries"]).shape[0]
    fig, (ax, ax2, ax3) = style.figure(1, 3, figsize=(17, 4.8))
    qp = np.asarray(ks["sample_plugin"]["queries"], float)
    slope, half, _ = bootstrap_ci(loglog_slope(K, qp))
    slope1, half1, _ = bootstrap_ci(loglog_slope(K - 1, qp))
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
    title = f"Sample access vs K (n={cfg.k_n}; geometric mean, 95% CI over {S} seeds)"
    ylabel = f"queries for RMSE = {cfg.slope_eps} (counted in the run)"
    ax.set(xlabel="vocabulary K (next-token support)", ylabel=ylabel, title=title)
    ax.legend(fontsize=7, loc="lower right", bbox_to_anchor=(1.0, 0.1))
    s = np.asarray(ks["s"], float)
    bias = np.asarray(ks["sample_plugin"]["bias"], float).mean(0)  # (NK, P), mean over the seeds
    for i, k in enumerate(K):
        x = s / (cfg.k_n * (k - 1))
        keep = bias[i] > 0
        ax2.loglog(x[keep], bias[i][keep], "o-", ms=3, label=f"K={int(k)}")
    ax2.axhline(cfg.slope_eps, **style.prediction(color="0.5"), label=f"eps = {cfg.slope_eps}")
    title = "Plugin bias vs s / (n (K - 1)) (sample access as noisy logits, sigma^2 ~ (K - 1) / s)"
    ylabel = "plugin bias E Z - TV (paired with RB, seed mean)"
    ax2.set(xlabel="s / (n (K - 1)): samples per position over the noise scale", ylabel=ylabel, title=title)
    ax2.legend(fontsize=7)
    tvk = np.asarray(ks["tv"], float)
    label = "TV (RB), mean +- sd over seeds"
    ax3.errorbar(K, tvk.mean(0), tvk.std(0, ddof=1), fmt="o-", color="k", capsize=3, label=label)
    title = f"The family (per-step perturbation {cfg.slope_delta}/sqrt(n)) vs K"
    ax3.set(xscale="log", xlabel="vocabulary K", ylabel="TV", ylim=(0, None), title=title)
    ax3.legend()
    for a in (ax, ax3):
        panels.integer_ticks(a, K)
    return fig


def plot_coverage(results: dict, cfg: Config):
    """Coverage of |T - TV| <= eps at the Hoeffding m, the stated intervals' coverage, the errors."""
    tv_true = float(results["exact"]["tv"])
    cov = results["coverage"]
    fig, (ax, ax2, ax3) = style.figure(1, 3, figsize=(16, 4.4))
    kinds = list(tv.LOGIT_KINDS)
    colors = ["tab:blue", "tab:orange", "tab:green"]
    m_h = int(cov["m"])
    z_d = float(stats.norm.ppf(1 - cfg.delta / 2))
    xs = np.arange(len(kinds))
    label = f"|T - TV| <= eps = {cfg.eps} (Hoeffding; not claimed: ~1 for any unbiased [0, 1] estimator)"
    ax.bar(xs - 0.2, [float(cov[k]["coverage"]) for k in kinds], 0.4, color=colors, alpha=0.4, label=label)
    sds = [np.sqrt(float(results["reference"]["var"][k]) / m_h) for k in kinds]
    clt = np.array(
        [
            binomial_ci(np.abs(np.asarray(cov[k]["estimates"]) - tv_true) <= z_d * sd)[:3]
            for k, sd in zip(kinds, sds, strict=True)
        ]
    )
    ax.bar(xs + 0.2, clt[:, 0], 0.4, color=colors, label="|T - TV| <= z sqrt(Var Z / m), exact Var Z (claimed)")
    ax.errorbar(xs + 0.2, clt[:, 0], [clt[:, 0] - clt[:, 1], clt[:, 2] - clt[:, 0]], fmt="none", color="k", capsize=4)
    ax.set_xticks(xs, kinds)
    ax.axhline(1 - cfg.delta, **style.prediction(), label=f"1 - delta = {1 - cfg.delta}")
    title = f"Coverage at the Hoeffding m = {m_h} ({cfg.coverage_reps} repetitions)"
    ylabel = "fraction of repetitions"
    panels.finish(ax, legend={"loc": "upper left", "fontsize": 6.5}, ylim=(0.5, 1.15), ylabel=ylabel, title=title)
    xg = np.linspace(-cfg.eps, cfg.eps, 201)
    for kind, c, sd in zip(kinds, colors, sds, strict=True):
        est = np.asarray(cov[kind]["estimates"])
        ax2.hist(est - tv_true, bins=25, histtype="step", color=c, lw=1.5, label=kind)
        ax2.plot(xg, len(est) * (np.ptp(est) or 1.0) / 25 * stats.norm.pdf(xg, 0, sd), ":", color=c, lw=1.2)
    ax2.axvline(cfg.eps, **style.prediction(), label="+-eps")
    ax2.axvline(-cfg.eps, **style.prediction())
    title = "Error distribution at the Hoeffding m"
    panels.finish(ax2, xlabel="estimate - exact TV", ylabel="repetitions", title=title)
    names = (
        [("rb", "logit RB")]
        + [(f"noisy_r{r}", f"noisy r={r}") for r in cfg.noisy_r]
        + [
            (f"sample_s{s_}", f"sample s={s_}" + ("" if s_ >= INTERVAL_MIN_S else "\n(not claimed)"))
            for s_ in cfg.sample_s
        ]
    )
    reps = [
        cov[name] if name != "rb" else {"value": cov["rb"]["estimates"], "se": cov["rb"]["se"]} for name, _ in names
    ]
    with_bias = np.array([binomial_ci(ci_hits(rep, tv_true))[:3] for rep in reps])  # (frac, lo, hi) per name
    biased = [(j, rep) for j, rep in enumerate(reps) if "bias" in rep]
    no_bias = np.array(
        [binomial_ci(ci_hits({**rep, "bias": 0.0 * np.asarray(rep["bias"])}, tv_true))[:3] for _, rep in biased]
    ).reshape(-1, 3)
    for x, (f, lo, hi), fmt, color, label in (
        (np.arange(len(reps)), with_bias.T, "o", "tab:blue", "with the bias term (Estimate.halfwidth)"),
        (
            np.array([j for j, _ in biased]) + 0.15,
            no_bias.T,
            "x",
            "tab:red",
            "1.96 stderr only (centred on a biased mean)",
        ),
    ):
        ax3.errorbar(x, f, [f - lo, hi - f], fmt=fmt, color=color, capsize=4, label=label)
    ax3.axhline(0.95, **style.prediction(), label="stated level 0.95")
    ax3.set_xticks(range(len(names)), [lab for _, lab in names], rotation=30, fontsize=8)
    title = f"95% intervals at m = {int(cov['m'])} (95% Wilson interval)"
    ylabel = "fraction of intervals covering the exact TV"
    return panels.finish(
        ax3, legend={"fontsize": 8, "loc": "lower left"}, ylim=(0, 1.05), ylabel=ylabel, title=title
    ).figure


def plot_tv_vs_kl(results: dict, cfg: Config):
    """TV vs KL (and Pinsker) as the supports separate; the spread of both estimators."""
    K, n = cfg.K, cfg.n
    sep = results["separation"]
    lam = np.asarray(sep["lam"])
    fig, (ax, ax2) = style.figure(1, 2, figsize=(13, 4.8))
    tvx, klx = np.asarray(sep["tv"]), np.asarray(sep["kl"])
    for est, truth, c, lab in ((sep["tv_est"], tvx, "tab:blue", "TV"), (sep["kl_est"], klx, "tab:red", "KL(P||Q)")):
        lo, hi = np.percentile(np.asarray(est), [5, 95], axis=1)
        ax.plot(lam, truth, "o-", color=c, label=f"exact {lab}")
        ax.fill_between(lam, lo, hi, color=c, alpha=0.25, label=f"{lab} estimates, 5-95% (m={cfg.sep_m})")
        ax2.plot(lam, hi - lo, "o-", color=c, label=f"{lab[:2]} estimator")
    ax.plot(lam, np.sqrt(klx / 2), **style.prediction(), label="Pinsker bound sqrt(KL/2)")
    ax.axhline(1.0, color="0.5", lw=1)
    panels.finish(
        ax,
        legend={"fontsize": 8, "loc": "upper left", "bbox_to_anchor": (0.02, 0.78)},
        yscale="symlog",
        ylim=(0, None),
        xlabel="separation lambda (logit gap between the halves of the vocabulary)",
        ylabel="distance (nats for KL)",
        title=f"TV saturates at 1, KL grows without bound (K={K}, n={n})",
    )
    hoeffding = 2 * math.sqrt(math.log(20) / (2 * cfg.sep_m))
    ax2.axhline(hoeffding, **style.prediction(), label="TV: Hoeffding 90% width (any lambda)")
    title = f"Estimator spread ({cfg.sep_reps} repetitions of m={cfg.sep_m})"
    ylabel = "5-95% spread of the estimate (same units as the value)"
    return panels.finish(ax2, xlabel="separation lambda", ylabel=ylabel, title=title).figure


def plot_engines(results: dict, cfg: Config):
    """TV and KL between a float32 and a bfloat16 engine of one random tiny transformer vs n."""
    eng = results["engines"]
    ne = np.asarray(eng["n"], float)
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
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="sequence length n",
        ylabel="distance (KL in nats)",
        title=f"Two engines of one random tiny transformer (K={cfg.tf_K}, d={cfg.tf_d}, "
        f"{cfg.tf_layers} layers, m={cfg.tf_m})",
    )
    panels.integer_ticks(ax, ne)
    ax.legend(fontsize=8)
    return fig


def plot(results: dict, cfg: Config) -> dict:
    return {
        "errors_vs_queries": plot_errors_vs_queries(results, cfg),
        "queries_vs_n": plot_queries_vs_n(results, cfg),
        "coverage": plot_coverage(results, cfg),
        "tv_vs_kl": plot_tv_vs_kl(results, cfg),
        "engines": plot_engines(results, cfg),
        **({"queries_vs_K": plot_queries_vs_k(results, cfg)} if "ksweep" in results else {}),
    }
