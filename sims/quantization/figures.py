"""quantization: the figures, ``plot`` (what is measured: the package docstring)."""

from __future__ import annotations

import numpy as np

from jaxwb.sims.core import panels, style
from jaxwb.sims.quantization.config import Config
from jaxwb.sims.quantization.measures import fresh_worst, worst_ratio
from jaxwb.sims.quantization.run import FORMAT_BITS
from jaxwb.theory import dithered_quant as dq

FIGURES = panels.Figures()
plot = FIGURES.plot  # the figures below, in this order


@FIGURES.add
def plot_mse_vs_bits(results: dict, cfg: Config):
    """Worst-of-many MSE vs bits for one RHT and a dense rotation against the bound; the measured 1 + o(1)."""
    bits, bound, fl = (np.asarray(results[key]) for key in ("bits", "bound", "finite_level"))
    fig, (ax, ax2) = style.figure(1, 2, figsize=(12, 4.8))
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:purple"]
    series: list[tuple] = [
        (r, "o-", c, {}, f"one RHT, d={d}", f" (worst of {len(r['mse'])} vectors)")
        for (d, r), c in zip(results["rht"].items(), colors, strict=False)
    ]
    series.append((results["dense"], "s--", "tab:red", {"mfc": "none"}, f"dense Haar rotation, d={cfg.dense_d}", ""))
    for r, fmt, c, kw, label, more in series:
        w, _ = worst_ratio(r, bits)
        ax.semilogy(bits, w * bound, fmt, color=c, label=label + more, **kw)
        ax2.plot(bits, w, fmt, color=c, label=label, **kw)
    ax.semilogy(bits, bound, **style.prediction(), label="paper: (pi sqrt3 / 2) 4^-b")
    ax.semilogy(bits, fl, **style.prediction(linestyle=":"), label="theory: x (N/(N-1))^2 (finite levels)")
    lm = np.array(sorted(dq.LLOYD_MAX_GAUSSIAN.items()))
    ax.semilogy(lm[:, 0], lm[:, 1], "x", color="0.4", ms=8, label="Lloyd-Max Gaussian (no dither, TurboQuant)")
    title, xlabel = "Dithered quantization after one randomized Hadamard transform", "bits per coordinate b"
    panels.finish(ax, legend=8, xlabel=xlabel, ylabel="E ||x - x_hat||^2 for unit x (worst of many)", title=title)
    fr, fci, _ = fresh_worst(results, cfg)
    label = f"worst vector re-measured ({'/'.join(str(cfg.fresh_draws(d)) for d in cfg.dims)} fresh draws, 95% CI)"
    reference_label = "paper: ratio -> 1 as b grows"
    panels.ratio_panel(ax2, bits + 0.08, fr, yerr=fci, fmt="D", ms=4, label=label, reference_label=reference_label)
    ax2.plot(bits, fl / bound, **style.prediction(linestyle=":"), label="theory: (N/(N-1))^2")
    title = "The measured o(1) term (lines: first pass, biased up by the max)"
    ylabel = "worst MSE / ((pi sqrt3/2) 4^-b)  = 1 + o(1)"
    return panels.finish(ax2, legend=8, xlabel=xlabel, ylabel=ylabel, title=title, ylim=(0.6, 1.6)).figure


def format_labels(formats: dict) -> list[str]:
    """The formats compared (the dict entries of the first dataset's stats)."""
    first = formats[next(iter(formats))]
    return [k for k in first if isinstance(first[k], dict)]


@FIGURES.add
def plot_format_comparison(results: dict, cfg: Config):
    """Relative MSE of the 4-bit formats per dataset, bars and a table."""
    f = results["formats"]
    datasets, labels = list(f), format_labels(f)
    rel_mse = [[float(f[ds][lab]["rel_mse"]) for ds in datasets] for lab in labels]
    fig, (ax, axt) = style.figure(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [1.2, 1]})
    panels.grouped_bars(ax, datasets, rel_mse, labels=labels)
    ax.axhline(float(dq.mse_bound(4)), **style.prediction(), label="(pi sqrt3/2) 4^-4 (RHT bound)")
    title = f"4-bit formats on {cfg.fmt_rows}x{cfg.fmt_cols} matrices"
    panels.finish(ax, legend=7, yscale="log", ylabel="relative MSE ||X - X_hat||^2 / ||X||^2", title=title)
    rht_bits = 4 + 32 / cfg.rht_block
    cell = [
        [lab, f"{FORMAT_BITS.get(lab, rht_bits):.3g}"] + [f"{v:.2e}" for v in row]
        for lab, row in zip(labels, rel_mse, strict=True)
    ]
    axt.axis("off")
    tab = axt.table(cellText=cell, colLabels=["format", "bits/elt"] + datasets, loc="center", fontsize=8)
    tab.auto_set_font_size(False)
    tab.scale(1, 1.5)
    axt.set_title(f"Relative MSE at ~4.5 bits/element (RHT: b=4 on {cfg.rht_block}-vectors + fp32 scale)", fontsize=9)
    return fig


@FIGURES.add
def plot_error_histograms(results: dict, cfg: Config):
    """Per-element error distributions of the formats on Gaussian data."""
    f = results["formats"]
    labels = format_labels(f)
    fig, axes = style.figure(1, len(labels), figsize=(3 * len(labels), 3.4), sharey=True, squeeze=False)
    for axh, lab in zip(axes[0], labels, strict=True):
        e = np.asarray(f["gaussian"][lab]["err"])
        axh.hist(e, bins=101, range=(-0.4, 0.4), color="tab:blue", alpha=0.8)
        axh.set(title=f"{lab}\nrms {np.sqrt(np.mean(e**2)):.3f}", xlabel="error / rms(x)", yscale="log")
    axes[0, 0].set_ylabel("count (Gaussian data)")
    return fig


@FIGURES.add
def plot_inquant(results: dict, cfg: Config):
    """InQuant vs plain 4-bit vs 8-bit on heavy-tailed KV: per-channel error and total MSE."""
    iq = results["inquant"]
    fig, (ax, ax2) = style.figure(1, 2, figsize=(12, 4.4), gridspec_kw={"width_ratios": [2, 1]})
    for k, v in iq["channel_rmse"].items():
        ax.semilogy(np.asarray(v), label=k, lw=1.2)
    for o in np.asarray(iq["true_outliers"]):
        ax.axvline(o, color="0.8", lw=0.8, zorder=0)
    donors = np.asarray(iq["donors"])
    ax.plot(donors, np.asarray(iq["channel_rmse"]["InQuant (4.0x)"])[donors], "kv", ms=5)
    ax.plot([], [], "kv", label="donor channels (slot lent to an outlier)")
    title = f"Heavy-tailed KV (t, dof {cfg.kv_dof:g}), outlier channels {list(cfg.kv_outliers)} (grey)"
    panels.finish(ax, legend=8, xlabel="channel", ylabel="RMS reconstruction error", title=title)
    payload = int(iq["input_bytes_per_seed"][0]) / int(iq["payload_bytes_per_seed"][0])
    ax2.bar(list(iq["mse"]), [float(v) for v in iq["mse"].values()], color=["tab:blue", "tab:orange", "tab:green"])
    title = f"InQuant payload {payload:.1f}x (with scales {float(iq['total_ratio']):.2f}x)"
    ax2.set(yscale="log", ylabel="MSE", title=title)
    ax2.tick_params(axis="x", labelsize=8)
    return fig
