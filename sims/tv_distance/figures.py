"""Figures of the tv_distance result (``figures/tv_distance/``)."""

from __future__ import annotations

import math

import matplotlib.ticker
import numpy as np
from scipy import stats

from jaxwb.sims.core import style
from jaxwb.sims.core.claims import bootstrap_ci
from jaxwb.sims.tv_distance.config import INTERVAL_MIN_S, Config
from jaxwb.sims.tv_distance.pieces import loglog_slope
from jaxwb.sims.tv_distance.statistics import binomial_ci, ci_hits
from jaxwb.theory import tv_distance as tv

# ---------------------------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------------------------


def plot_errors_vs_queries(results: dict, cfg: Config):
    """Mean |estimate - TV| vs total queries, three access models, with the guide lines."""
    tv_true = float(results["exact"]["tv"])
    e = results["errors"]
    K, n = cfg.K, cfg.n
    fig, axes = style.figure(1, 3, figsize=(15, 4.6), sharey=True)
    qmin = 2 * n
    qmax = max(float(np.max(v2["queries"])) for v2 in e.values() if isinstance(v2, dict) and "queries" in v2)
    qq = np.geomspace(qmin, qmax, 50)
    guide_logit = np.sqrt(n / qq)
    guide_sample = np.sqrt(n * n * K / qq)
    ax = axes[0]
    for kind, c in zip(tv.LOGIT_KINDS, ("tab:blue", "tab:orange", "tab:green"), strict=True):
        d = e[f"logit_{kind}"]
        ax.loglog(d["queries"], d["error"], "o-", color=c, ms=3, label=f"{kind}")
    ax.loglog(qq, guide_logit, **style.prediction(), label="n / eps^2 (eps = sqrt(n/Q))")
    ax.set(
        title=f"Logit access (K={K}, n={n}, TV={tv_true:.3f})",
        xlabel="total queries Q (both models)",
        ylabel="mean |estimate - TV|",
    )
    ax.legend()
    ax = axes[1]
    colors = iter(("tab:purple", "tab:red", "tab:brown", "tab:pink", "tab:olive", "tab:cyan"))
    for s in cfg.sample_s:
        c = next(colors)
        ax.loglog(
            e[f"sample_simex_s{s}"]["queries"],
            e[f"sample_simex_s{s}"]["error"],
            "o-",
            color=c,
            ms=3,
            label=f"SIMEX, s={s}",
        )
        ax.loglog(
            e[f"sample_plugin_s{s}"]["queries"],
            e[f"sample_plugin_s{s}"]["error"],
            "x:",
            color=c,
            ms=3,
            alpha=0.7,
            label=f"plugin, s={s}",
        )
    ax.loglog(qq, guide_sample, **style.prediction(), label="n^2 K / eps^2")
    ax.loglog(qq, guide_logit, **style.prediction(color="0.6"), label="n / eps^2")
    ax.set(title="Sample access: s samples per model and position", xlabel="total sampler calls Q")
    ax.legend(fontsize=7, ncol=2)
    ax = axes[2]
    colors = iter(("tab:purple", "tab:red", "tab:brown", "tab:pink"))
    for r in cfg.noisy_r:
        c = next(colors)
        ax.loglog(
            e[f"noisy_simex_r{r}"]["queries"],
            e[f"noisy_simex_r{r}"]["error"],
            "o-",
            color=c,
            ms=3,
            label=f"SIMEX, r={r}",
        )
        ax.loglog(
            e[f"noisy_plugin_r{r}"]["queries"],
            e[f"noisy_plugin_r{r}"]["error"],
            "x:",
            color=c,
            ms=3,
            alpha=0.7,
            label=f"plugin, r={r}",
        )
    ax.loglog(qq, np.sqrt((n + n * n * cfg.sigma**2) / qq), **style.prediction(), label="(n + n^2 sigma^2) / eps^2")
    ax.loglog(qq, guide_logit, **style.prediction(color="0.6"), label="n / eps^2")
    ax.set(title=f"Noisy logits: sigma={cfg.sigma}, r repeats per query", xlabel="total noisy queries Q")
    ax.legend(fontsize=7, ncol=2)
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
    for name, (c, lab) in styles.items():
        qv = np.asarray(sl[name]["queries"])
        lo, hi = (float(x) for x in sl[name]["slope_ci"])
        ax.loglog(nn, qv, "o-", color=c, label=f"{lab}: slope {float(sl[name]['slope']):.2f} [{lo:.2f}, {hi:.2f}]")
    ref = np.asarray(sl["rb"]["queries"])
    ax.loglog(nn, ref[0] * nn / nn[0], **style.prediction(), label="slope 1 (n / eps^2)")
    ex = sl.get("exact")
    if ex is not None:
        for name, c in (("plain", "tab:blue"), ("rb", "tab:green")):
            ax.loglog(
                nn,
                ex[f"queries_{name}"],
                ":",
                color=c,
                lw=2.5,
                alpha=0.6,
                label=f"{name}: 2 n Var Z(n) / eps^2, exact Var Z (claimed slope)",
            )
    sref = np.asarray(sl["sample_plugin"]["queries"])
    ax.loglog(nn, sref[0] * (nn / nn[0]) ** 2, **style.prediction(color="tab:red"), label="slope 2 (n^2 K / eps^2)")
    ax.set(
        xlabel="sequence length n",
        ylabel=f"queries for RMSE = {cfg.slope_eps} (counted in the run)",
        title=f"Queries to reach eps = {cfg.slope_eps} (K={K}, per-step perturbation {cfg.slope_delta}/sqrt(n))",
    )
    ax.legend(fontsize=7)
    ax2.errorbar(
        nn,
        sl["tv_ref"],
        2 * np.asarray(sl["tv_ref_se"]),
        fmt="o-",
        color="k",
        label=f"TV (RB, {cfg.slope_pool * cfg.slope_chunks} sequences, +-2 SE)",
    )
    ax2.plot(nn, sl["rb"]["var"], "s-", color="tab:green", label="Var Z (RB)")
    ax2.plot(nn, sl["plain"]["var"], "^-", color="tab:blue", label="Var Z (plain)")
    if ex is not None:
        ax2.plot(nn, ex["tv"], "k:", lw=2.5, alpha=0.6, label="exact TV, Var Z (law of L on a grid)")
        ax2.plot(nn, ex["var_rb"], ":", color="tab:green", lw=2.5, alpha=0.6)
        ax2.plot(nn, ex["var_plain"], ":", color="tab:blue", lw=2.5, alpha=0.6)
    ax2.set(
        xscale="log",
        xlabel="sequence length n",
        ylabel="TV or variance",
        ylim=(0, None),
        title="The family keeps TV (and Var Z) roughly constant in n",
    )
    ax2.legend()
    for a in (ax, ax2):
        a.set_xticks(nn, [str(int(v)) for v in nn])
        a.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    return fig


def geometric_band(q):
    """Geometric mean over the seeds (axis 0) of positive values q (S, N) and its 95% Student-t band
    (exp(mean log q +- t se)): (mean, low, high), each (N,)."""
    from scipy import stats

    lq = np.log(np.asarray(q, float))
    half = stats.t.ppf(0.975, lq.shape[0] - 1) * lq.std(0, ddof=1) / math.sqrt(lq.shape[0])
    m = lq.mean(0)
    return np.exp(m), np.exp(m - half), np.exp(m + half)


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
        g, lo, hi = geometric_band(ks[name]["queries"])
        ax.errorbar(K, g, [g - lo, hi - g], fmt=fmt, color=c, capsize=3, ms=4, label=f"{lab}")
    for x, lab, c in (
        (K, "paper: slope 1 in K (n^2 K / eps^2)", "k"),
        (K - 1, f"slope 1 in K - 1 (noise (K - 1) / s; measured {slope1:.3f} +- {half1:.3f})", "tab:blue"),
    ):
        c0 = np.exp(np.mean(np.log(qp) - np.log(x)))  # the level of a slope-1 line through the plugin's points
        ax.loglog(K, c0 * x, **style.prediction(color=c), label=f"{lab}, fitted level")
    ax.set(
        xlabel="vocabulary K (next-token support)",
        ylabel=f"queries for RMSE = {cfg.slope_eps} (counted in the run)",
        title=f"Sample access vs K (n={cfg.k_n}; geometric mean, 95% CI over {S} seeds)",
    )
    ax.legend(fontsize=7, loc="lower right", bbox_to_anchor=(1.0, 0.1))
    s = np.asarray(ks["s"], float)
    bias = np.asarray(ks["sample_plugin"]["bias"], float).mean(0)  # (NK, P), mean over the seeds
    for i, k in enumerate(K):
        x = s / (cfg.k_n * (k - 1))
        keep = bias[i] > 0
        ax2.loglog(x[keep], bias[i][keep], "o-", ms=3, label=f"K={int(k)}")
    ax2.axhline(cfg.slope_eps, **style.prediction(color="0.5"), label=f"eps = {cfg.slope_eps}")
    ax2.set(
        xlabel="s / (n (K - 1)): samples per position over the noise scale",
        ylabel="plugin bias E Z - TV (paired with RB, seed mean)",
        title="Plugin bias vs s / (n (K - 1)) (sample access as noisy logits, sigma^2 ~ (K - 1) / s)",
    )
    ax2.legend(fontsize=7)
    tvk = np.asarray(ks["tv"], float)
    ax3.errorbar(
        K, tvk.mean(0), tvk.std(0, ddof=1), fmt="o-", color="k", capsize=3, label="TV (RB), mean +- sd over seeds"
    )
    ax3.set(
        xscale="log",
        xlabel="vocabulary K",
        ylabel="TV",
        ylim=(0, None),
        title=f"The family (per-step perturbation {cfg.slope_delta}/sqrt(n)) vs K",
    )
    ax3.legend()
    for a in (ax, ax3):
        a.set_xticks(K, [str(int(v)) for v in K])
        a.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
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
    ax.bar(
        xs - 0.2,
        [float(cov[k]["coverage"]) for k in kinds],
        0.4,
        color=colors,
        alpha=0.4,
        label=f"|T - TV| <= eps = {cfg.eps} (Hoeffding; not claimed: ~1 for any unbiased [0, 1] estimator)",
    )
    for j, k in enumerate(kinds):
        eps_clt = z_d * np.sqrt(float(results["reference"]["var"][k]) / m_h)
        frac, lo, hi, _ = binomial_ci(np.abs(np.asarray(cov[k]["estimates"]) - tv_true) <= eps_clt)
        ax.bar(
            [j + 0.2],
            [frac],
            0.4,
            color=colors[j],
            label="|T - TV| <= z sqrt(Var Z / m), exact Var Z (claimed)" if j == 0 else None,
        )
        ax.errorbar([j + 0.2], [frac], [[frac - lo], [hi - frac]], fmt="none", color="k", capsize=4)
    ax.set_xticks(xs, kinds)
    ax.axhline(1 - cfg.delta, **style.prediction(), label=f"1 - delta = {1 - cfg.delta}")
    ax.set(
        ylim=(0.5, 1.15),
        ylabel="fraction of repetitions",
        title=f"Coverage at the Hoeffding m = {m_h} ({cfg.coverage_reps} repetitions)",
    )
    ax.legend(loc="upper left", fontsize=6.5)
    for kind, c in zip(kinds, ("tab:blue", "tab:orange", "tab:green"), strict=True):
        ax2.hist(np.asarray(cov[kind]["estimates"]) - tv_true, bins=25, histtype="step", color=c, lw=1.5, label=kind)
    ax2.axvline(cfg.eps, **style.prediction(), label="+-eps")
    ax2.axvline(-cfg.eps, **style.prediction())
    for kind, c in zip(kinds, colors, strict=True):
        sd = np.sqrt(float(results["reference"]["var"][kind]) / m_h)
        xg = np.linspace(-cfg.eps, cfg.eps, 201)
        width = (np.ptp(np.asarray(cov[kind]["estimates"])) or 1.0) / 25
        ax2.plot(xg, len(cov[kind]["estimates"]) * width * stats.norm.pdf(xg, 0, sd), ":", color=c, lw=1.2)
    ax2.set(xlabel="estimate - exact TV", ylabel="repetitions", title="Error distribution at the Hoeffding m")
    ax2.legend()
    names = (
        [("rb", "logit RB")]
        + [(f"noisy_r{r}", f"noisy r={r}") for r in cfg.noisy_r]
        + [
            (f"sample_s{s_}", f"sample s={s_}" + ("" if s_ >= INTERVAL_MIN_S else "\n(not claimed)"))
            for s_ in cfg.sample_s
        ]
    )
    for j, (name, _label) in enumerate(names):
        rep = cov[name] if name != "rb" else {"value": cov["rb"]["estimates"], "se": cov["rb"]["se"]}
        frac, lo, hi, _ = binomial_ci(ci_hits(rep, tv_true))
        ax3.errorbar(
            [j],
            [frac],
            [[frac - lo], [hi - frac]],
            fmt="o",
            color="tab:blue",
            capsize=4,
            label="with the bias term (Estimate.halfwidth)" if j == 0 else None,
        )
        if "bias" in rep:
            f0, lo0, hi0, _ = binomial_ci(ci_hits({**rep, "bias": 0.0 * np.asarray(rep["bias"])}, tv_true))
            ax3.errorbar(
                [j + 0.15],
                [f0],
                [[f0 - lo0], [hi0 - f0]],
                fmt="x",
                color="tab:red",
                capsize=4,
                label="1.96 stderr only (centred on a biased mean)" if j == 1 else None,
            )
    ax3.axhline(0.95, **style.prediction(), label="stated level 0.95")
    ax3.set_xticks(range(len(names)), [lab for _, lab in names], rotation=30, fontsize=8)
    ax3.set(
        ylim=(0, 1.05),
        ylabel="fraction of intervals covering the exact TV",
        title=f"95% intervals at m = {int(cov['m'])} (95% Wilson interval)",
    )
    ax3.legend(fontsize=8, loc="lower left")
    return fig


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
    ax.plot(lam, np.sqrt(klx / 2), **style.prediction(), label="Pinsker bound sqrt(KL/2)")
    ax.axhline(1.0, color="0.5", lw=1)
    ax.set(
        yscale="symlog",
        ylim=(0, None),
        xlabel="separation lambda (logit gap between the halves of the vocabulary)",
        ylabel="distance (nats for KL)",
        title=f"TV saturates at 1, KL grows without bound (K={K}, n={n})",
    )
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.02, 0.78))
    for est, c, lab in ((sep["tv_est"], "tab:blue", "TV"), (sep["kl_est"], "tab:red", "KL")):
        lo, hi = np.percentile(np.asarray(est), [5, 95], axis=1)
        ax2.plot(lam, hi - lo, "o-", color=c, label=f"{lab} estimator")
    ax2.axhline(
        2 * math.sqrt(math.log(20) / (2 * cfg.sep_m)),
        **style.prediction(),
        label="TV: Hoeffding 90% width (any lambda)",
    )
    ax2.set(
        xlabel="separation lambda",
        ylabel="5-95% spread of the estimate (same units as the value)",
        title=f"Estimator spread ({cfg.sep_reps} repetitions of m={cfg.sep_m})",
    )
    ax2.legend()
    return fig


def plot_engines(results: dict, cfg: Config):
    """TV and KL between a float32 and a bfloat16 engine of one random tiny transformer vs n."""
    eng = results["engines"]
    ne = np.asarray(eng["n"], float)
    fig, ax = style.figure(figsize=(7.5, 4.6))
    ax.errorbar(
        ne,
        eng["tv"],
        2 * np.asarray(eng["tv_se"]),
        fmt="o-",
        color="tab:blue",
        label="TV(fp32, bf16), RB estimate +-2 SE",
    )
    ax.errorbar(
        ne, eng["kl"], 2 * np.asarray(eng["kl_se"]), fmt="s-", color="tab:red", label="KL(fp32 || bf16) estimate +-2 SE"
    )
    ax.plot([float(eng["exact_n"])], [float(eng["exact_tv"])], "k*", ms=12, label="exact TV (enumeration)")
    ax.plot(
        [float(eng["exact_n"])], [float(eng["exact_kl"])], "*", color="darkred", ms=12, label="exact KL (enumeration)"
    )
    ftv = float(eng["first_token_tv"])
    ax.plot(
        ne,
        1 - (1 - ftv) ** ne,
        color="0.5",
        ls=":",
        lw=1.3,
        label="heuristic, not a bound: 1-(1-TV_1)^n (first-token TV as if independent per position)",
    )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="sequence length n",
        ylabel="distance (KL in nats)",
        title=f"Two engines of one random tiny transformer (K={cfg.tf_K}, d={cfg.tf_d}, "
        f"{cfg.tf_layers} layers, m={cfg.tf_m})",
    )
    ax.set_xticks(ne, [str(int(v)) for v in ne], minor=False)
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
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
