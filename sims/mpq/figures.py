"""mpq: the figures, ``plot`` (what is measured: the package docstring)."""

from __future__ import annotations

import numpy as np

from jaxwb.sims.core import panels, style
from jaxwb.sims.core.claims import bootstrap_ci, mean_ci
from jaxwb.sims.mpq.config import COLORS, METHODS, Config

LABELS = {"rtn": "RTN", "gptq": "GPTQ", "gptq_bcd": "GPTQ+BCD", "mpq": "MPQ"}
FIGURES = panels.Figures()


@FIGURES.add
def plot_state_evolution(results: dict, cfg: Config):
    """Measured per-iteration MSE of VAMP (mean and 95% CI over draws) beside its state evolution; tiny problems:
    every solver's objective over the exact minimum, and VAMP's marginal error against the exact posterior by
    beta (scalar and diagonal precisions, equal and unequal diagonal of H)."""
    se, t = results["se"], results["tiny"]
    mse = np.asarray(se["mse"])
    it = np.arange(1, mse.shape[1] + 1)
    fig, (ax, ax2, ax3) = style.figure(1, 3, figsize=(19, 4.8))
    panels.errorbars(ax, it, mse, color="tab:red", label=f"VAMP measured ({cfg.se_draws} draws, d={cfg.se_d})")
    ax.plot(it, np.asarray(se["se"]).mean(0), **style.prediction(), label="state evolution (Rangan et al. 2019)")
    title = f"VAMP vs state evolution, Wishart H, beta={cfg.se_beta:g}"
    panels.finish(ax, xlabel="iteration", ylabel="MSE of x1 vs q0 (per coordinate)", title=title)
    exact, names = np.asarray(t["exact"]), list(t["objective"])
    ax2.boxplot([np.asarray(t["objective"][s]) / exact for s in names], tick_labels=[s.upper() for s in names])
    ax2.axhline(1.0, **style.prediction(), label="exact minimum (enumeration)")
    title = f"Tiny problems (d={cfg.tiny_d}, INT-{cfg.tiny_bits}, {cfg.tiny_problems} rows)"
    panels.finish(ax2, ylabel="objective / exact minimum", yscale="log", title=title)
    for label, err, dist, betas, color in (
        ("diagonal VAMP, unequal diagonal", "diag_err", "diag_dist", cfg.diag_betas, "tab:red"),
        ("scalar VAMP, unequal diagonal", "scalar_unequal_err", "diag_dist", cfg.diag_betas, "tab:gray"),
        ("scalar VAMP, unit diagonal", "marg_err", "marg_dist", cfg.marg_betas, "tab:blue"),
    ):
        panels.errorbars(ax3, betas, np.asarray(t[err]) / np.asarray(t[dist]), fmt="o-", color=color, label=label)
    title = f"VAMP marginals vs enumeration ({cfg.tiny_problems} rows, 95% CI)"
    xlabel, ylabel = "beta (absolute; H with unit mean diagonal)", "max |p_VAMP - p_exact| / max |p_exact - prior|"
    return panels.finish(ax3, legend=8, log="xy", xlabel=xlabel, ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_methods(results: dict, cfg: Config):
    """Layer objective (relative to RTN, all layers pooled) and perplexity by method, bits and rotation (the tiny
    LM: only with ``cfg.with_lm``)."""
    if not cfg.with_lm:
        return None
    lm, tags = results["lm"], list(results["lm"]["ppl"])
    fig, (ax, ax2) = style.figure(1, 2, figsize=(13, 4.8))
    rel, pp = np.zeros((2, len(METHODS), len(tags))), np.zeros((2, len(METHODS), len(tags)))  # (mean, half-width)
    for j, m in enumerate(METHODS):
        for i, t in enumerate(tags):
            obj = lm["objective"][t]
            per_seed = np.mean([np.mean(obj[m][n], axis=1) / np.mean(obj["rtn"][n]) for n in obj[m]], axis=0)
            rel[:, j, i] = mean_ci(per_seed)[:2]
            pp[:, j, i] = bootstrap_ci(np.asarray(lm["ppl"][t][m]) - np.asarray(lm["fp_ppl"]))[:2]
    names, colors = [LABELS[m] for m in METHODS], [COLORS[m] for m in METHODS]
    for a, (mean, half) in ((ax, rel), (ax2, pp)):
        yerr = np.where(np.isfinite(half), half, 0.0)
        panels.grouped_bars(a, tags, mean, labels=names, yerr=yerr, colors=colors, capsize=3)
    ax2.axhline(0.0, color="k", linestyle="--", label=f"float32 (mean ppl {float(np.mean(lm['fp_ppl'])):.3f})")
    scope = f"; {cfg.lm_scope} quantized" if cfg.lm_blocks else ""
    title = f"Layer objective, tiny LM ({cfg.lm_seeds} seeds, 95% t-CI){scope}"
    panels.finish(ax, legend=8, ylabel="(w - q)^T H (w - q) / RTN's (mean over layers, rows)", title=title)
    title = "Perplexity increase after PTQ (95% bootstrap CI over seeds)"
    panels.finish(ax2, legend=8, ylabel="perplexity - float32's (same model, per seed)", title=title)
    return fig


plot = FIGURES.plot
