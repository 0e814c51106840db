"""zoe_grad: the figures, ``plot`` (what is measured: the package docstring)."""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxwb.sims.core import panels, style
from jaxwb.sims.zoe_grad.config import COLORS, GRIDS, KERNEL_ANCHOR_SCALE, MC_LAWS, Config
from jaxwb.sims.zoe_grad.reference import perplexity
from jaxwb.theory import zoe_grad as zg

FIGURES = panels.Figures()
plot = FIGURES.plot


@FIGURES.add
def plot_estimators(results: dict, cfg: Config):
    """Monte Carlo means of the estimators vs the closed-form surrogate, both grids, every law."""
    fig, axes = style.figure(2, 4, figsize=(17, 7.5))
    ylabel = "surrogate dQ_sigma/dx"
    for r, grid in enumerate(GRIDS):
        g = results["estimators"][grid]
        xs = np.asarray(g["x"][:-1])
        xlabel = f"x ({'grid steps' if grid == 'int' else 'block-scale units'})"
        for ax, law in zip(axes[r, :3], MC_LAWS, strict=True):
            ax.plot(xs, np.asarray(g[law]["closed"][:-1]), **style.prediction(), label="closed form (eq. 3)")
            for est, mk, col in (("score", "o", COLORS[law]), ("two_point", "s", "k")):
                label = f"MC {est.replace('_', '-')} (95% CI, {cfg.mc_seeds} seeds)"
                mc = np.asarray(g[law][est][:, :-1])
                panels.errorbars(ax, xs, mc, fmt=mk, ms=3.5, capsize=2, color=col, alpha=0.8, label=label)
            for b in np.asarray(zg.boundaries(g["levels"])):
                ax.axvline(b, color="0.85", lw=0.6, zorder=0)
            panels.finish(ax, legend=7, xlabel=xlabel, ylabel=ylabel, title=f"{law}, {grid} grid, sigma={cfg.sigma:g}")
        ax, u = axes[r, 3], g["uniform"]
        ax.plot(xs, np.asarray(u["closed_ste"][:-1]), **style.prediction(), label="uniform closed form, sigma=1/sqrt12")
        label = "edge estimator (eq. 6), sigma=1/sqrt12"
        ax.plot(xs, u["edge_ste"][:-1], "o", ms=3, color=COLORS["uniform"], label=label)
        ax.plot(xs, u["closed_sigma"][:-1], color="tab:purple", lw=1, label=f"uniform closed form, sigma={cfg.sigma:g}")
        title = f"uniform law ({grid}): STE as the degenerate case"
        panels.finish(ax, legend=7, xlabel="x", ylabel="surrogate", title=title)
    return fig


@FIGURES.add
def plot_sigma_sweep(results: dict, cfg: Config):
    """The bump sum at a level and a boundary vs sigma, with the characteristic-function prediction."""
    sw = results["sweep"]
    sig = np.asarray(sw["sigmas"])
    fig, axes = style.figure(1, 3, figsize=(16, 4.6))
    cmap = style.plt.get_cmap("viridis")
    for ax, grid in zip(axes[:2], GRIDS, strict=True):
        cu = sw["curves"][grid]
        for i, s in enumerate(sig):
            ax.plot(cu["x"], cu["g"][i], color=cmap(i / max(1, len(sig) - 1)), lw=1, label=f"sigma={s:.3g}")
        ax.axhline(1.0, color="0.5", ls=":", lw=1, label="STE (= 1)")
        title = f"sigma sweep, {grid} grid: bumps on the boundaries -> flat"
        legend, ylabel = {"fontsize": 6, "ncol": 2}, "Gaussian surrogate g_sigma(x)"
        panels.finish(ax, legend=legend, log="y", xlabel="x", ylabel=ylabel, ylim=(1e-3, None), title=title)
    ax = axes[2]
    for law in MC_LAWS:
        for at, ls, mk, mfc in (("boundary", "-", "o", COLORS[law]), ("level", "--", "s", "none")):
            ax.plot(sig, np.asarray(sw[law][at]), ls, color=COLORS[law], lw=1)
            m, h = panels.mean_ci_columns(sw[law][f"{at}_mc"])
            label = f"{law} at a {at}: MC two-point (95% CI) / closed form (line)"
            marker = {"fmt": mk, "ms": 4, "capsize": 2, "color": COLORS[law], "mfc": mfc}
            ax.errorbar(sig, np.maximum(m, 1e-4), yerr=h, **marker, label=label)
    ax.axhline(1.0, color="0.5", ls=":", lw=1, label="STE (= 1)")
    ax.axvline(zg.STE_SIGMA, color="0.5", ls="-.", lw=0.8, label="sigma = 1/sqrt12 (uniform: exact STE)")
    title = f"boundary / level vs sigma: MC ({cfg.mc_seeds} seeds) vs closed form"
    ylabel = "surrogate g_sigma (wide INT-8 grid)"
    panels.finish(ax, legend=6, log="xy", xlabel="sigma (grid steps)", ylabel=ylabel, ylim=(1e-4, 20), title=title)
    return fig


@FIGURES.add
def plot_kernel_check(results: dict, cfg: Config):
    """fake_quant's NVFP4 backward vs the score estimator's mean through the kernels."""
    k = results["kernel"]
    fig, ax = style.figure(figsize=(8, 4.4))
    z = np.asarray(k["z"])
    for law in MC_LAWS:
        ax.plot(z, np.asarray(k[law]["vjp"]), "-", color=COLORS[law], lw=1, label=f"fake_quant vjp ({law})")
        ax.plot(z, np.asarray(k[law]["closed"]), **style.prediction(color=COLORS[law]))
        label = f"MC through NVFP4 kernels ({law}, 95% CI)"
        panels.errorbars(ax, z, k[law]["mc"], fmt="o", ms=3, capsize=2, color=COLORS[law], label=label)
    panels.prediction_key(ax, "theory: bump sum g_sigma(z) on the E2M1 levels (eq. 3)")
    title = f"fake_quant backward vs zeroth-order MC through the kernels (scale {KERNEL_ANCHOR_SCALE})"
    return panels.finish(ax, legend=7, xlabel="z = x / block scale", ylabel="dQ/dx", title=title).figure


@FIGURES.add
def plot_convergence(results: dict, cfg: Config):
    """The convergence bound (eq. 10) and the bias bound (eq. 9) on the toy objective."""
    t = results["toy"]
    fig, (ax, ax2) = style.figure(1, 2, figsize=(12, 4.4))
    gn = np.asarray(t["grad_norm_sq"])
    tt = np.arange(1, gn.shape[1] + 1)
    run_mean = np.cumsum(gn, axis=1) / tt
    mu, sd = run_mean.mean(0), run_mean.std(0, ddof=1)
    label = f"(1/t) sum |grad F_sigma|^2 (mean of {gn.shape[0]} seeds); +-2 sd over seeds shaded"
    panels.band(ax, tt, mu, mu - 2 * sd, mu + 2 * sd, color="tab:blue", label=label)
    cst = {kk: float(vv) for kk, vv in t["constants"].items()}
    sup = {"eta": cst["eta"], "smooth": cst["L"], "bias_sq": cfg.toy_dim * cst["B"] ** 2, "var": cst["V"]}
    bound_t = np.array([zg.convergence_bound(float(t["f0"]), steps_t=int(i), **sup) for i in tt])
    ax.plot(tt, bound_t, **style.prediction(), label="eq. 10 with sup constants (loose; not a claim)")
    label = "eq. 10 with its proof's realized terms at T (the claim)"
    realized = np.asarray(t["realized_bound"]).reshape(-1, 1)
    panels.errorbars(ax, [tt[-1]], realized, fmt="D", color="tab:red", capsize=4, label=label)
    title = f"toy: d={cfg.toy_dim}, INT-{cfg.int_bits}, Gaussian sigma={cfg.toy_sigma:g}, eta=1/(4L)"
    ylabel = "average squared gradient of F_sigma"
    panels.finish(ax, legend=7, log="xy", xlabel="SGD step t", ylabel=ylabel, title=title)
    ax2.plot(np.asarray(t["bias_w"]), np.asarray(t["bias"]), color="tab:orange", label="|Q - Q_sigma| g_sigma")
    ax2.axhline(cst["B"], **style.prediction(), label="B = sup|Q - Q_sigma| sup g_sigma (eq. 9)")
    ylabel = "per-coordinate bias of the surrogate gradient"
    return panels.finish(ax2, legend=7, xlabel="w (grid steps)", ylabel=ylabel, title="bias bound").figure


@FIGURES.add
def plot_qat(results: dict, cfg: Config):
    """Validation perplexity of the quantized tiny LM: PTQ, float fine-tune + PTQ, QAT per surrogate (None without
    the QAT study)."""
    if "qat" not in results:
        return None
    q = results["qat"]
    arms = ["fp_ptq", *cfg.qat_surrogates]  # one perplexity per seed; PTQ of the pretrained model is one number
    fig, ax = style.figure(figsize=(9, 4.6))
    # means as points: the perplexity axis does not start at 0, so bars would exaggerate the gaps
    ptq, fp = float(perplexity(q["ptq"])), float(perplexity(q["fp"]))
    marker: dict[str, Any] = {"fmt": "o", "ms": 8, "capsize": 6}
    ax.errorbar(0, ptq, yerr=0.0, color=COLORS.get("ptq", "0.5"), **marker)
    ppl = np.stack([perplexity(q[a]) for a in arms], 1)  # (seeds, arms)
    seeds = {"color": "k", "ms": 4, "alpha": 0.6}
    for i, color in enumerate(COLORS.get(a, "0.5") for a in arms):
        panels.errorbars(ax, [i + 1], ppl[:, i : i + 1], show_seeds=seeds, seed_shift=0.15, color=color, **marker)
    m, h = panels.mean_ci_columns(ppl)
    labels = ["PTQ\n(pretrained)", "float fine-tune\n+ PTQ"] + [f"QAT\n{a}" for a in cfg.qat_surrogates]
    ax.set_xticks(range(len(labels)), labels)
    ax.plot([], [], "k.", ms=4, alpha=0.6, label="one seed")
    ax.axhline(fp, color="0.4", ls=":", label=f"float model {fp:.3f}")
    fmt = f"{cfg.qat_format}{cfg.qat_bits if cfg.qat_format == 'int' else ''}"
    title = (
        f"QAT of the tiny LM, {fmt} weights, {cfg.qat_steps} steps, 95% CI over {cfg.qat_seeds} seeds, "
        f"sigma={cfg.qat_sigma:g}"
    )
    ylabel = "validation perplexity of the quantized model (per byte)"
    ylim = (min(ptq, *m, fp) * 0.98, max(ptq, *(m + h)) * 1.01)
    return panels.finish(ax, legend=8, ylim=ylim, ylabel=ylabel, title=title).figure
