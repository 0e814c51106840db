"""Figures of the tiny-LM quantization study, one function per figure; error bars are 95% bootstrap intervals over
training seeds."""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxwb.sims.core import panels, style
from jaxwb.sims.core.claims import bootstrap_ci
from jaxwb.sims.tiny_lm.config import (
    COLORS,
    ENGINES,
    FORMATS,
    PAPER_RAZER_REDUCTION,
    PAPER_RAZER_REDUCTION_WA,
    PROMPT,
    Config,
)
from jaxwb.theory import dithered_quant as dq

FIGURES = panels.Figures()


def _ci(v):
    est, half, _ = bootstrap_ci(np.asarray(v, dtype=np.float64))
    return est, half


@FIGURES.add
def plot_perplexity(results: dict, cfg: Config):
    """Per size: perplexity above float32 per format and setting; the RaZeR fractions per setting and size beside
    the paper's."""
    fp, d_models = np.asarray(results["fp_ppl"]), np.asarray(results["d_models"])
    n_sizes, n_seeds = fp.shape
    fig, axes = style.figure(1, n_sizes + 1, figsize=(5.2 * (n_sizes + 1), 4.6))
    for s, ax in enumerate(axes[:-1]):
        # excess perplexity over the float32 model of the same seed (the paired difference); the outlier transform
        # leaves the float model unchanged: its excess is over the same float32 perplexity
        cols = [
            (f"{f}\n{tag}", *_ci(np.asarray(results[key][f])[s] - fp[s]), COLORS[f], hatch)
            for key, tag, hatch in (("ppl", "W4A16", None), ("ppl_wa", "W4A4", "//"), ("ppl_outlier", "outliers", "xx"))
            for f in (FORMATS if key == "ppl" else results[key])
        ]
        labels, est, half, colors, hatches = zip(*cols, strict=True)
        ax.bar(labels, est, yerr=half, capsize=4, color=colors, hatch=hatches, edgecolor="k", lw=0.5)
        ax.tick_params(axis="x", labelsize=7)
        e_fp, h_fp = _ci(fp[s])
        ax.axhline(0.0, color="0.3", lw=0.8)
        title = f"d={int(d_models[s])}, {cfg.n_layers} layers: float32 ppl {e_fp:.3f}+-{h_fp:.3f} ({n_seeds} seeds)"
        ax.set(ylabel="perplexity - float32 perplexity (same seed)", title=title)
    ax = axes[-1]
    settings = {"weight": "W4A16", "wa": "W4A4", "outlier": "W4A16, outlier channels"}
    ci = 100 * np.array([[_ci(np.asarray(results["reduction"][k])[s]) for k in settings] for s in range(n_sizes)])
    sizes = [f"d={int(d)} (mean, 95% bootstrap CI)" for d in d_models]
    shades = [["tab:green", "tab:olive", "tab:cyan", "tab:gray"][s % 4] for s in range(n_sizes)]
    bar_kw: dict[str, Any] = {"tick_kw": {"fontsize": 8}, "capsize": 4, "edgecolor": "k", "lw": 0.5}
    panels.grouped_bars(ax, list(settings.values()), ci[..., 0], labels=sizes, yerr=ci[..., 1], colors=shades, **bar_kw)
    for i, paper in enumerate((PAPER_RAZER_REDUCTION, PAPER_RAZER_REDUCTION_WA)):  # across the group's bars
        label = f"paper (LLM average): {100 * paper:.1f}%"
        ax.plot([i - 0.4, i + 0.4], [100 * paper] * 2, **style.PREDICTION, label=label)
    title = "1 - (ppl_RaZeR - ppl_fp) / (ppl_NVFP4 - ppl_fp)"
    ylabel = "fraction of NVFP4's perplexity loss removed by RaZeR (%)"
    return panels.finish(ax, legend=7, ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_layer_errors(results: dict, cfg: Config):
    """Per-layer relative weight MSE and the perplexity increase when only that layer is quantized (seed 0)."""
    fp0 = float(np.asarray(results["fp_ppl"])[0, 0])
    names = [str(n) for n in np.asarray(results["layer_names"])]
    mse = [np.asarray(results["layer_rel_mse"][f]) for f in FORMATS]
    fig, (ax, ax2) = style.figure(1, 2, figsize=(13, 4.6))
    ticks = {"rotation": 30, "ha": "right", "fontsize": 8}
    bars: dict[str, Any] = {"labels": list(FORMATS), "colors": [COLORS[f] for f in FORMATS], "tick_kw": ticks}
    panels.grouped_bars(ax, names, mse, **bars)
    panels.grouped_bars(ax2, names, [np.asarray(results["layer_ppl"][f]) - fp0 for f in FORMATS], **bars)
    rht_bound = float(dq.finite_level_factor(4) * dq.mse_bound(4))  # the claim's bound (dithered-RHT theory)
    ax.axhline(rht_bound, color=COLORS["rht4"], ls="--", lw=1, label="rht4 theory bound (N/(N-1))^2 (pi sqrt3/2) 4^-4")
    title = f"Per-layer weight error (d={cfg.d_models[0]}, seed 0)"
    panels.finish(ax, legend=8, ylabel="relative weight MSE |W - Q(W)|^2 / |W|^2", yscale="log", title=title)
    top = max(rht_bound, *(float(np.max(m)) for m in mse))
    ax.set_ylim(top=3.0 * top)  # room for the legend above the bars (log scale)
    ylabel, title = "perplexity increase (only this layer quantized)", "Per-layer perplexity cost (seed 0)"
    return panels.finish(ax2, legend=8, ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_engines(results: dict, cfg: Config):
    """TV and KL between the float32 engine and the bf16 / NVFP4-weight / RaZeR-weight engines."""
    e, names = results["engines"], list(ENGINES[1:])
    tv, kl, tv_se, kl_se = ([float(e[n][k]) for n in names] for k in ("tv", "kl", "tv_se", "kl_se"))
    fig, (ax, ax2) = style.figure(1, 2, figsize=(11, 4.2))
    label = "TV estimate (logit access, +-2 se)"
    ax.bar(names, tv, yerr=[2 * s for s in tv_se], capsize=5, color="tab:blue", label=label)
    pinsker = [np.sqrt(max(k, 0) / 2) for k in kl]
    ax.plot(names, pinsker, "k_", ms=30, mew=2, label="Pinsker bound sqrt(KL/2) (KL point estimate)")
    title = f"Engine TV over {cfg.tv_n}-byte continuations of {PROMPT!r}, m={cfg.tv_m}"
    ylim, legend = (0, 1.35 * max(max(pinsker), max(tv), 1e-3)), {"fontsize": 8, "loc": "upper left"}
    panels.finish(ax, legend=legend, ylim=ylim, ylabel="TV(float32 engine, other engine)", title=title)
    ax2.bar(names, kl, yerr=[2 * s for s in kl_se], capsize=5, color="tab:orange")
    ax2.set(ylabel="KL(float32 || other) (nats per sequence)", title="KL estimate (+-2 se), same sequences")
    return fig


plot = FIGURES.plot
