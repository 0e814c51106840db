"""river_valley_lm: the figures, ``plot``, one function per figure (what is measured: the package docstring)."""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxwb.sims.core import panels, style
from jaxwb.sims.core.claims import mean_ci
from jaxwb.sims.river_valley_lm import measures
from jaxwb.sims.river_valley_lm.claims import GAP_RATIO
from jaxwb.sims.river_valley_lm.config import Config
from jaxwb.sims.river_valley_lm.run import eos_rows

FIGURES = panels.Figures()
MEAN: dict[str, Any] = {"fmt": "s-", "color": "tab:red", "capsize": 4}  # a mean over seeds with its interval


@FIGURES.add
def plot_scan(results: dict, cfg: Config):
    """The width scan: heavy ball's raw-lr edge over GD's and the largest consecutive eigenvalue ratio at init, per
    width (the study's own width from its main parts), against the paper's picture (1+beta; a gap >= 2)."""
    sc, b = results["scan"], cfg.scan_beta
    edge, widths = measures.bracket_edges(sc), np.asarray(sc["width"])  # edge: [W, 2, S]
    ratios = {int(w): np.log2(edge[i, 1] / edge[i, 0]) for i, w in enumerate(widths)}
    gaps = {int(w): measures.largest_gap(np.asarray(sc["spectrum"])[i]) for i, w in enumerate(widths)}
    ratios[cfg.d_model] = measures.log2_edge_ratios(results, cfg)[b]
    gaps[cfg.d_model] = measures.largest_gap(results["hessian"]["spectrum"])
    res_oct = measures.bracket_octaves(cfg.edge_bracket, cfg)
    fig, (ax, ax2) = style.figure(1, 2, figsize=(11, 4.4))
    mean_kw: dict[str, Any] = {**MEAN, "pred_label": "the paper's picture"}
    for a, data, widen, pred, lab in (
        (ax, ratios, res_oct, float(np.log2(1 + b)), f"log2 edge(beta={b:g}) / edge(GD)"),
        (ax2, gaps, 0.0, GAP_RATIO, "largest lambda_k / lambda_(k+1), top of the spectrum at init"),
    ):
        ws = sorted(data)
        for w in ws:
            a.plot(np.full(len(data[w]), w), data[w], "o", color="0.6", ms=4)
        st = np.array([mean_ci(data[w])[:2] for w in ws])
        label = "mean, 95% CI over seeds" + (" + bisection resolution" if widen else "")
        panels.measured_vs_predicted(a, ws, st[:, 0], pred, yerr=st[:, 1] + widen, label=label, **mean_kw)
        panels.finish(a, legend=7, log="x", xlabel="d_model (width)", ylabel=lab)
        panels.integer_ticks(a, ws)
    ax.axhline(0.0, color="0.5", lw=1)
    ax.set_title(f"raw-lr edge ratio, mini-batch, {cfg.steps} steps ({cfg.d_model}: the main study)")
    ax2.set_title(f"valley/river gap, top {cfg.spectrum_k} eigenvalues")
    return fig


def _mean_band(x):
    """Mean and 95% half-width over the last axis (seeds), per leading index; NaN half-width where a seed is
    missing (diverged)."""
    x = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore"):
        m = np.where(np.isfinite(x).any(-1), np.nansum(x, -1) / np.sum(~np.isnan(x), -1), np.nan)
    h = panels.mean_ci_columns(x, axis=-1)[1]
    return m, np.where(np.isfinite(h), h, np.nan)


@FIGURES.add
def plot_lr_beta_grid(results: dict, cfg: Config):
    """Final validation loss over (lr, beta) for SGD+HB and (lr, beta1) for AdamW, mean and CI."""
    s, a = results["sgd"], results["adam"]
    mults, betas = np.asarray(s["lr_mult"]), np.asarray(s["beta"])
    fl, div = np.asarray(s["final_loss"]), np.asarray(s["diverged"])  # [L, B, S]
    n_s = fl.shape[-1]
    uni, init = float(results["unigram_loss"]), float(np.mean(results["init_loss"]))
    fig, (ax, ax2, ax3) = style.figure(1, 3, figsize=(16, 4.8))
    m, h = _mean_band(fl)
    for j, b in enumerate(betas):
        line = ax.errorbar(mults, m[:, j], yerr=h[:, j], fmt="o-", capsize=3, label=f"SGD heavy ball beta={b:g}")
        anyd = div[:, j].any(axis=-1)
        if anyd.any():
            ax.plot(mults[anyd], np.full(anyd.sum(), init), "x", color=line[0].get_color(), ms=9)
        ax.axvline((1.0 + b) / (1.0 - b), **style.prediction(color=line[0].get_color()))
    ax.axhline(uni, color="0.5", lw=1, ls=":", label=f"unigram baseline {uni:.2f}")
    ax.axhline(init, color="0.7", lw=1, label=f"loss at init (mean over seeds) {init:.2f}")
    panels.prediction_key(ax, "quadratic edge: effective lr x lambda_max = 2(1+beta)/(1-beta)")
    ax.plot([], [], "x", color="k", label=">= 1 seed diverged (drawn at the init loss)")
    title = f"SGD+HB, {cfg.steps} steps, {n_s} seeds: mean, 95% CI (trained seeds)"
    ylabel = "validation loss after training (nats/byte)"
    xlabel = "effective lr lr/(1-beta), in units of 2 / lambda_max(init) (per seed)"
    panels.finish(ax, legend=7, xscale="log", xlabel=xlabel, ylabel=ylabel, title=title)
    bf = np.linspace(0, max(betas.max(), 0.01), 50)
    edge, quad = (bf, (1 + bf) / (1 - bf)), "quadratic: lr/(1-beta) = 2(1+beta)/((1-beta) lambda_max)"
    cbar = "final loss (mean over seeds)"
    panels.stability_map(
        ax2, betas, mults, m, unstable=div.mean(axis=-1), edge=edge, edge_label=quad, colorbar_label=cbar
    )
    ge = np.log2(measures.edges(results))  # [B, S]
    for j, b in enumerate(betas):
        em, eh, _ = mean_ci(ge[j])
        eh = eh if np.isfinite(eh) else 0.0
        ax2.errorbar(b, 2**em, yerr=[[2**em - 2 ** (em - eh)], [2 ** (em + eh) - 2**em]], fmt="w*", ms=12, capsize=4)
    ax2.plot([], [], "k*", label="largest stable grid lr, geo. mean + CI")
    title = "(lr, beta) map: seed-mean loss; grey = share diverged"
    ylabel = "effective lr lr/(1-beta) / (2/lambda_max(init))"
    legend = {"fontsize": 7, "loc": "lower right"}
    panels.finish(ax2, legend=legend, yscale="log", xlabel="momentum beta", ylabel=ylabel, title=title)
    alr, ab1 = np.asarray(a["lr"]), np.asarray(a["beta1"])
    am, ah = _mean_band(a["final_loss"])
    for j, b in enumerate(ab1):
        ax3.errorbar(alr, am[:, j], yerr=ah[:, j], fmt="o-", capsize=3, label=f"AdamW beta1={b:g}")
    ax3.axhline(uni, color="0.5", lw=1, ls=":", label="unigram baseline")
    title = f"AdamW check, {cfg.steps} steps, {n_s} seeds (95% CI; no bar: a seed diverged)"
    ylabel = "validation loss (nats/byte)"
    return panels.finish(ax3, legend=8, xscale="log", xlabel="AdamW learning rate", ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_decomposition(results: dict, cfg: Config):
    """Valley coordinates (seed 0), river distance, losses over seeds; the spectrum over seeds."""
    d, spec = results["decomposition"], np.asarray(results["hessian"]["spectrum"])  # spec: [S, K]
    t, ev = np.asarray(d["step"]), spec[0, : cfg.top_k]
    uni, init = float(results["unigram_loss"]), float(np.mean(results["init_loss"]))
    fig, axs = style.figure(1, 3, figsize=(16, 4.6))
    val = np.asarray(d["valley"][0, 0])  # HB, seed 0: [T, k]
    for i in range(val.shape[1]):
        axs[0].plot(t, val[:, i], lw=1, label=f"valley coordinate v{i + 1}.d_t (lambda_{i + 1} = {ev[i]:.3g})")
    axs[0].plot(t, np.asarray(d["river"][0, 0]), "k", lw=2, label="river distance |(I - V V^T) d_t|")
    title = f"HB beta={cfg.decomp_beta:g}, lr = {cfg.decomp_lr_mult:g} x 2/lambda_max, seed 0: d_t split"
    panels.finish(axs[0], legend=7, xlabel="step", ylabel="displacement from init (parameter norm)", title=title)
    for i, (name, c) in enumerate(((f"HB beta={cfg.decomp_beta:g}", "tab:green"), ("GD (beta=0)", "tab:blue"))):
        for key, ls, lab in (("loss", "-", "loss"), ("loss_river_only", ":", "valley part removed")):
            m, h = _mean_band(np.moveaxis(np.asarray(d[key][i]), 0, -1))
            panels.band(axs[1], t, m, m - h, m + h, color=c, ls=ls, label=f"{name}: {lab}")
    axs[1].axhline(uni, color="0.5", lw=1, ls=":", label="unigram baseline")
    title = f"Full batch, same lr = {cfg.decomp_lr_mult:g} x 2/lambda_max(init): mean, 95% CI, {spec.shape[0]} seeds"
    ylabel = "loss on the Hessian batch (nats/byte)"
    panels.finish(axs[1], legend=7, xlabel="step", ylabel=ylabel, ylim=(None, init * 1.3), title=title)
    k = np.arange(1, spec.shape[1] + 1)
    axs[2].plot(np.broadcast_to(k, spec.shape).T, spec.T, "o", color="0.6", ms=3)[0].set_label("seeds")
    sm, sh = _mean_band(spec.T)
    axs[2].errorbar(k, sm, yerr=sh, fmt="s-", color="tab:purple", capsize=3, label="mean, 95% CI")
    axs[2].axvline(cfg.top_k + 0.5, color="0.4", ls="--", lw=1, label=f"top-{cfg.top_k} split used (a choice)")
    gm, _ = _mean_band(np.asarray(d["grad_frac_top"])[None])
    dm, _ = _mean_band(np.asarray(d["disp_frac_top"])[:1])
    title = f"no gap; gradient share in top-{cfg.top_k}: {float(gm[0]):.0%}, HB displacement: {float(dm[0]):.1%}"
    ylabel = "Hessian eigenvalue at init (Lanczos on HVPs)"
    return panels.finish(axs[2], legend=7, yscale="log", xlabel="eigenvalue index", ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_edges(results: dict, cfg: Config):
    """Bisected edges per seed, geometric mean and interval, raw and effective lr, theory lines."""
    ed = measures.seed_edges(results)  # [B, S]
    betas = np.asarray(cfg.betas)
    fig, (ax, ax2) = style.figure(1, 2, figsize=(11, 4.4))
    seeds = {"marker": "o", "color": "0.6", "ms": 4, "alpha": 1.0, "label": "seeds (bisected edge)"}
    mean_kw: dict[str, Any] = {**MEAN, "label": "geometric mean, 95% CI over seeds"}
    bf = np.linspace(0, betas.max(), 50)
    title = f"mini-batch SGD+HB, {cfg.steps} steps, bracket {cfg.edge_bracket}, {cfg.edge_iters} bisections"
    for which, scale, a in (("raw lr", np.ones_like(betas), ax), ("effective lr lr/(1-beta)", 1 / (1 - betas), ax2)):
        e = ed * scale[:, None]
        panels.errorbars(a, betas, e.T, geometric=True, show_seeds=seeds, **mean_kw)
        e0 = np.exp(np.mean(np.log(e[list(cfg.betas).index(0.0)])))
        pred = (1 + bf) * (1.0 if a is ax else 1.0 / (1.0 - bf))
        label = "quadratic theory x measured GD edge: (1+beta)" + ("" if a is ax else "/(1-beta)")
        a.plot(bf, e0 * pred, **style.PREDICTION, label=label)
        a.plot(bf, pred, **style.prediction(color="0.4", linestyle=":"), label="quadratic theory from lambda_max(init)")
        ylabel = f"divergence edge, {which} / (2/lambda_max(init))"
        panels.finish(a, legend=7, yscale="log", xlabel="momentum beta", ylabel=ylabel, title=title)
    return fig


@FIGURES.add
def plot_edge_of_stability(results: dict, cfg: Config):
    """lambda_max(t) against 2/lr and 2(1+beta)/lr, lr * lambda_max(t), loss, parameter/RMSNorm norms."""
    e, rows = results["eos"], eos_rows(cfg)
    lam, lr = np.asarray(e["lam"]), np.asarray(e["lr"])  # [R, S, T], [R, S]
    t = np.arange(lam.shape[-1]) * cfg.eos_every
    colors = ("tab:blue", "tab:green", "tab:orange")
    n_m = len(cfg.eos_mults)
    fig, axs = style.figure(n_m, 4, figsize=(20, 4.4 * n_m), squeeze=False)
    for i, mult in enumerate(cfg.eos_mults):
        ax, ax2, ax3, ax4 = axs[i]
        for c, color in enumerate(colors):
            r = 3 * i + c
            label, beta, _ = rows[r]
            kw = dict(color=color, lw=0.8, alpha=0.6)
            for a, y in ((ax, lr[r][:, None] * lam[r]), (ax3, e["loss"][r]), (ax4, e["param_norm"][r])):
                a.plot(t, np.asarray(y).T, **kw)[0].set_label(label)
            ax2.plot(t, lam[r].T, **kw)
            ax4.plot(t, np.asarray(e["norm_scale"][r]).T, ls="--", **kw)
            lz = np.stack([np.asarray(e["lanczos_mid"][r]), np.asarray(e["lanczos_end"][r])])  # [2, S]
            lz_lines = ax2.plot([int(e["mid"]) * cfg.eos_every, t[-1]], lz, "k+", ms=8)
            lz_lines[0].set_label("Lanczos check" if c == 0 else None)
            ax2.axhline(2 * (1 + beta) / float(np.mean(lr[r])), **style.prediction(color=color))
        ax.axhline(2.0, **style.prediction(color=colors[0]), label="2 (GD's quadratic edge)")
        label = f"2(1+beta) = {2 * (1 + cfg.eos_beta):g} (HB's)"
        ax.axhline(2.0 * (1 + cfg.eos_beta), **style.prediction(color=colors[1], linestyle="-."), label=label)
        title = f"full batch ({cfg.hvp_batch} windows), lr = {mult:g} x 2/lambda_max(init), every {cfg.eos_every} steps"
        panels.finish(ax, legend=6, xlabel="step", ylabel="lr * lambda_max(H(theta_t))", title=title)
        title = "sharpness; dashed 2(1+beta)/lr (seed-mean lr); + Lanczos"
        ylabel = "lambda_max(H(theta_t))\n(warm-started Lanczos on HVPs)"
        panels.finish(ax2, legend=7, yscale="log", xlabel="step", ylabel=ylabel, title=title)
        title = f"{lam.shape[1]} seeds per row"
        panels.finish(ax3, legend=6, xlabel="step", ylabel="full-batch loss (nats/byte)", title=title)
        ax4.set(xlabel="step", ylabel="norm", title="parameter norm (solid), RMSNorm-scale norm (dashed)")
    return fig


plot = FIGURES.plot
