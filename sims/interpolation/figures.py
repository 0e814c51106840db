"""Figures of the interpolation result (``figures/interpolation/``; list in the ``jaxwb.sims.interpolation``
docstring)."""

from __future__ import annotations

import numpy as np

from jaxwb.sims.core import panels, style
from jaxwb.sims.interpolation.config import COLORS, LABELS, METHODS, Config
from jaxwb.sims.interpolation.measures import full_batch_times
from jaxwb.theory import interpolation as ip

FIGURES = panels.Figures()
UPPER_LEFT = {"fontsize": 7, "loc": "upper left"}
I_SGD, I_HB = METHODS.index("sgd"), METHODS.index("hb")


def _sat_lines(ax, c):
    ax.axvline(c["sat_sgd"], color="tab:blue", ls=":", lw=1.2, label=f"SGD saturation L_max/L = {c['sat_sgd']:.1f}")
    label = f"SHB saturation tr H/sqrt(L mu) = {c['sat_shb']:.0f}"
    ax.axvline(c["sat_shb"], color="tab:red", ls=":", lw=1.2, label=label)


def _err(point, boot):
    """Asymmetric error bars (2, ...) (lower, upper) from bootstrap replicates (..., n_boot) at the 95% level."""
    boot = np.asarray(boot, np.float64)
    with np.errstate(invalid="ignore"):
        lo, hi = np.nanquantile(np.where(np.isfinite(boot), boot, np.nan), [0.025, 0.975], axis=-1)
    return np.stack([np.clip(point - lo, 0, None), np.clip(hi - point, 0, None)])


def _header(cfg: Config, c) -> str:
    """The problem line of every figure title."""
    rank = f"tr H/L={c['eff_rank']:.2f}"
    return f"n={cfg.n}, d={cfg.d}, kappa={cfg.cond:g}, {cfg.sampling} sampling, {rank}, eps={cfg.eps:g}"


def _hits(results: dict):
    """Batch sizes, constants, and iterations to eps: Monte Carlo, the exact recursion's, bootstrap replicates."""
    mc, th = results["mc"], np.asarray(results["theory"]["hits"])
    Bs = np.asarray(results["batch_sizes"], dtype=float)
    return Bs, results["constants"], np.asarray(mc["hits"]), th, np.asarray(mc["hits_boot"])


@FIGURES.add
def plot_iterations_vs_batch(results: dict, cfg: Config):
    """Iterations to eps vs B."""
    Bs, c, hits, th, boot = _hits(results)
    fig, ax = style.figure(figsize=(11.5, 5.6))
    for i, m in enumerate(METHODS):
        label = f"{LABELS[m]}: Monte Carlo (95% bootstrap CI)"
        yerr = _err(hits[i], boot[i])
        panels.measured_vs_predicted(ax, Bs, hits[i], th[i], yerr=yerr, color=COLORS[m], ms=6, label=label)
    panels.prediction_key(ax, "exact E||e_t||^2 recursion (theory, eq. MS)")
    det, gd = full_batch_times(results, cfg)
    for y, color, name in ((det, "tab:red", "heavy ball (Polyak)"), (gd, "tab:blue", "GD (lr = 2/(L+mu))")):
        label = f"full-batch {name}, ln(1/eps) x e-fold time: {y:.0f}"
        ax.axhline(y, color=color, lw=0.8, alpha=0.6, label=label)
    ax.plot(Bs, th[1, 0] / Bs, color="0.5", lw=1, ls="-.", label="perfect parallelization T(1)/B")
    _sat_lines(ax, c)
    legend = {"fontsize": 7.5, "loc": "upper left", "bbox_to_anchor": (1.01, 1.0)}
    labels = {"xlabel": "batch size B (rows per step)", "ylabel": f"iterations until E||e||^2 <= {cfg.eps:g} ||e_0||^2"}
    title, ylim = f"Iterations to eps vs batch size\n{_header(cfg, c)}", (max(1, 0.5 * np.nanmin(hits)), None)
    return panels.finish(ax, legend=legend, log="xy", **labels, title=title, ylim=ylim).figure


@FIGURES.add
def plot_speedup(results: dict, cfg: Config):
    """Speedup: against SGD at B = 1 (perfect parallelization), and against SGD at the same B."""
    Bs, c, hits, th, boot = _hits(results)
    fig, (ax, ax2) = style.figure(1, 2, figsize=(14, 5.4))
    for a, ref in ((ax, np.s_[:1]), (ax2, np.s_[:])):  # over SGD at B = 1, and at the same B (SGD not)
        for i, m in enumerate(METHODS):
            if a is ax2 and m == "sgd":
                continue
            y, yerr = hits[I_SGD, ref] / hits[i], _err(hits[I_SGD, ref] / hits[i], boot[I_SGD, ref] / boot[i])
            panels.measured_vs_predicted(a, Bs, y, th[I_SGD, ref] / th[i], yerr=yerr, color=COLORS[m], label=LABELS[m])
    panels.prediction_key(ax, "theory (exact recursion)")
    # what the speedup claims read: heavy ball's Monte-Carlo log-log slope over the fit range (with its 95% bootstrap
    # CI and the exact recursion's slope), the paper's proportionality (slope 1) through heavy ball's B = 1 point
    lin = Bs <= cfg.linear_fraction * c["sat_shb"]
    slope_of = lambda h: np.polyfit(np.log(Bs[lin]), np.log(h[..., :1] / h[..., lin]).T, 1)[0]
    s_ex = float(slope_of(th[I_HB]))
    s_lo, s_hi = np.quantile(slope_of(np.moveaxis(boot[I_HB], -1, 0)), [0.025, 0.975])
    speedup = hits[I_SGD, 0] / hits[I_HB]
    fit = f"heavy ball, Monte-Carlo log-log slope {{slope:.3f}} (95% CI {s_lo:.3f}..{s_hi:.3f}); exact recursion "
    pred_style = {"color": "0.3", "linewidth": 1, "linestyle": "-."}
    kw = {"fit": lin, "points": False, "predicted": 1.0, "anchor": (Bs[0], speedup[0]), "color": "tab:red"}
    kw |= {"fit_label": fit + f"{s_ex:.3f}", "fit_range_label": f"slope fit range B <= {Bs[lin][-1]:g}"}
    kw |= {"pred_label": "paper: heavy-ball speedup proportional to B (slope 1)", "pred_style": pred_style}
    panels.slope_panel(ax, Bs, speedup, **kw)
    # heavy ball's saturation batch B*_HB = (r - 1)/(1 - r/B_max), r = T_HB(1)/T_HB(B_max), and its 95% range, beside
    # the paper's tr H/sqrt(L mu)
    bstar = lambda h: (h[I_HB, 0] / h[I_HB, -1] - 1.0) / (1.0 - h[I_HB, 0] / h[I_HB, -1] / Bs[-1])
    lo, hi = np.nanquantile(bstar(boot), [0.025, 0.975])
    ax.axvspan(lo, hi, color="tab:red", alpha=0.25, label=f"heavy ball B*_HB, Monte Carlo: {bstar(hits):.0f} (95% CI)")
    _sat_lines(ax, c)
    title = f"Speedup over SGD at B = 1\n{_header(cfg, c)}"
    ylabel = "speedup T_SGD(B=1) / T(B)  (iterations to eps, Monte Carlo)"
    panels.finish(ax, legend=UPPER_LEFT, log="xy", xlabel="batch size B", ylabel=ylabel, title=title)
    pol, gdh = full_batch_times(results, cfg)
    label = f"full batch: GD / Polyak heavy ball e-fold times = {gdh / pol:.1f}"
    ax2.axhline(gdh / pol, color="tab:red", lw=0.8, alpha=0.6, label=label)
    panels.prediction_key(ax2, "theory (exact recursion)")
    growth = lambda h: np.log2((h[I_SGD, -1] / h[I_HB, -1]) / (h[I_SGD, 0] / h[I_HB, 0]))  # log2 A(B_max)/A(1)
    g, (g_lo, g_hi) = growth(hits), np.quantile(growth(boot), [0.025, 0.975])
    label = f"paper: grows with B; heavy ball log2 A({Bs[-1]:g})/A(1) = {g:.2f} (95% CI {g_lo:.2f}..{g_hi:.2f})"
    ax2.plot([], [], " ", label=label)
    _sat_lines(ax2, c)
    title = "Acceleration over SGD at the same batch size"
    ylabel = "acceleration T_SGD(B) / T(B)  (same B, Monte Carlo)"
    return panels.finish(ax2, legend=UPPER_LEFT, log="xy", xlabel="batch size B", ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_rate_check(results: dict, cfg: Config):
    """Predicted vs measured rate: Monte-Carlo fit against the exact curve's fit on the same window."""
    fig, ax = style.figure(figsize=(7.0, 5.8))
    efold = lambda r: -1 / np.log(np.asarray(r))
    pe, me, me_b = map(efold, (results["theory"]["rates_fit"], results["mc"]["rates"], results["mc"]["rates_boot"]))
    lo, hi = np.nanmin([np.nanmin(pe), np.nanmin(me)]) * 0.7, np.nanmax([np.nanmax(pe), np.nanmax(me)]) * 1.4
    xx = np.geomspace(lo, hi, 10)
    ax.plot(xx, xx, **style.prediction(), label="measured = predicted")
    ax.fill_between(xx, xx / 1.05, xx * 1.05, color="0.8", alpha=0.7, label="+-5%")
    for i, m in enumerate(METHODS):
        ax.errorbar(pe[i], me[i], yerr=_err(me[i], me_b[i]), fmt="o", color=COLORS[m], capsize=2, label=LABELS[m])
    for k, name, color in (("kaczmarz", "Kaczmarz", "tab:orange"), ("cd", "coord. descent", "tab:brown")):
        for cname, mk in (("single", "s"), ("block", "^"), ("block_hb", "D")):
            r = results[k][cname]
            x, m_ = efold(r["rate_exact_fit"]), efold(r["rate_mc"])
            yerr = _err(np.atleast_1d(m_), efold(r["rate_boot"])[None])
            ax.errorbar(x, m_, yerr=yerr, fmt=mk, mfc="none", color=color, capsize=2, label=f"{name}, {cname}")
    title = (
        f"Exact mean-square decay vs Monte Carlo (95% bootstrap CI)\n(window: {cfg.fit_efolds:g} e-folds once the "
        "exact slope is within 1% of log rho(T))"
    )
    xlabel = "predicted: exact E||e||^2 recursion, -1/slope of log on the fit window (iterations per e-fold)"
    ylabel = "measured: -1/slope of log(Monte-Carlo mean ||e||^2), same window"
    return panels.finish(ax, legend=UPPER_LEFT, log="xy", xlabel=xlabel, ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_momentum_rule(results: dict, cfg: Config):
    """Momentum rule vs grid."""
    Bs, c, p = np.asarray(results["batch_sizes"], dtype=float), results["constants"], results["params"]
    fig, (ax1, ax2, ax3) = style.figure(1, 3, figsize=(14, 4.4))
    series = [(p[m], mk, COLORS[m], LABELS[m]) for m, mk in (("hb", "o-"), ("nesterov", "s-"), ("hb_rule", "D--"))]
    nesterov_rule = (results["nesterov_rule"], "s:", "tab:olive", "Nesterov rule")
    series += [nesterov_rule, (p["sgd"], "o-", COLORS["sgd"], LABELS["sgd"])]
    for d, mk, color, label in series:
        if d is not p["sgd"]:
            ax1.loglog(Bs, 1 - np.asarray(d["beta"]), mk, color=color, label=label)
        ax2.loglog(Bs, np.asarray(d["lr"]) * c["L"], mk, color=color, label=label)
        ax3.loglog(Bs, np.asarray(ip.efold_time(d["rho"])), mk, color=color, label=label)
    ax1.loglog(Bs, 4 * Bs * c["mu"] / c["L_max"], color="0.5", ls="-.", label="4 B mu / L_max (linear in B)")
    _sat_lines(ax1, c)
    title = "Momentum: 1 - beta grows ~ linearly in B"
    panels.finish(ax1, legend=6.5, xlabel="batch size B", ylabel="1 - beta", title=title)
    panels.finish(ax2, legend=6.5, xlabel="batch size B", ylabel="lr x L", title="Step size")
    ylabel = "-1/log rho(T): iterations per e-fold of E||e||^2"
    title = "Exact rate: rule vs grid optimum"
    return panels.finish(ax3, legend=6.5, xlabel="batch size B", ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_kaczmarz_cd(results: dict, cfg: Config):
    """Kaczmarz and coordinate descent."""
    fig, axes = style.figure(1, 2, figsize=(12.5, 4.8))
    ylim = (cfg.aux_eps * 0.05, 2)
    for ax, k, title, ylab, bound in (
        (
            axes[0],
            "kaczmarz",
            "Randomized Kaczmarz (rows ~ ||a_i||^2)",
            "E||x_t - x*||^2 / ||x_0 - x*||^2",
            "bound (1 - sigma_min^2/||A||_F^2)^t",
        ),
        (
            axes[1],
            "cd",
            "Randomized coordinate descent (coordinates ~ G_jj)",
            "E[f(x_t) - f*] / (f(x_0) - f*)",
            "bound (1 - lambda_min(G)/tr G)^t (Leventhal-Lewis)",
        ),
    ):
        r = results[k]
        block, block_hb = r["block"], r["block_hb"]
        for cname, col, lab in (
            ("single", "tab:blue", "single row/coordinate, exact projection"),
            ("block", "tab:green", f"block of {block['B']} (averaged), lr from the SGD rule"),
            ("block_hb", "tab:red", f"block of {block_hb['B']} + heavy ball (rule, beta={block_hb['beta']:.3f})"),
        ):
            d = r[cname]
            t, mc = np.asarray(d["t"]), np.asarray(d["mc_mean"])
            label = f"{lab}: Monte Carlo ({int(d['seeds']) if 'seeds' in d else cfg.aux_seeds} seeds)"
            panels.band(ax, t, mc / mc[0], d["mc_lo"], d["mc_hi"], color=col, lw=3, alpha=0.45, label=label)
            ax.plot(t, np.asarray(d["exact"]) / np.asarray(d["exact"])[0], **style.prediction(color=col))
        tb = np.asarray(r["single"]["t"])
        ax.plot(tb, r["bound_rate"] ** tb, color="k", ls=":", lw=1.5, label=bound)
        panels.prediction_key(ax, "exact recursion (eq. MS)")
        panels.finish(ax, legend=7, log="y", xlabel="iteration t", ylabel=ylab, title=title, ylim=ylim)
    return fig


plot = FIGURES.plot
