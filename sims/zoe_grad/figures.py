"""zoe_grad: the figures, ``plot`` (what is measured: the package docstring)."""

from __future__ import annotations

import numpy as np

from jaxwb.sims.core import panels, style
from jaxwb.sims.zoe_grad.claims import perplexity
from jaxwb.sims.zoe_grad.config import COLORS, GRIDS, KERNEL_ANCHOR_SCALE, MC_LAWS, Config
from jaxwb.theory import zoe_grad as zg


def plot_estimators(results: dict, cfg: Config):
    """Monte Carlo means of the estimators vs the closed-form surrogate, both grids, every law."""
    e = results["estimators"]
    fig, axes = style.figure(2, 4, figsize=(17, 7.5))
    for r, grid in enumerate(GRIDS):
        g = e[grid]
        xs = np.asarray(g["x"][:-1])
        for c, law in enumerate(MC_LAWS):
            ax = axes[r, c]
            ax.plot(xs, np.asarray(g[law]["closed"][:-1]), **style.prediction(), label="closed form (eq. 3)")
            for est, mk, col in (("score", "o", COLORS[law]), ("two_point", "s", "k")):
                label = f"MC {est.replace('_', '-')} (95% CI, {cfg.mc_seeds} seeds)"
                mc = np.asarray(g[law][est][:, :-1])
                panels.errorbars(ax, xs, mc, fmt=mk, ms=3.5, capsize=2, color=col, alpha=0.8, label=label)
            for b in np.asarray(zg.boundaries(g["levels"])):
                ax.axvline(b, color="0.85", lw=0.6, zorder=0)
            ylabel = "surrogate dQ_sigma/dx"
            xlabel = f"x ({'grid steps' if grid == 'int' else 'block-scale units'})"
            panels.finish(ax, legend=7, xlabel=xlabel, ylabel=ylabel, title=f"{law}, {grid} grid, sigma={cfg.sigma:g}")
        ax, u = axes[r, 3], g["uniform"]
        ax.plot(xs, np.asarray(u["closed_ste"][:-1]), **style.prediction(), label="uniform closed form, sigma=1/sqrt12")
        label = "edge estimator (eq. 6), sigma=1/sqrt12"
        ax.plot(xs, np.asarray(u["edge_ste"][:-1]), "o", ms=3, color=COLORS["uniform"], label=label)
        label = f"uniform closed form, sigma={cfg.sigma:g}"
        ax.plot(xs, np.asarray(u["closed_sigma"][:-1]), color="tab:purple", lw=1, label=label)
        title = f"uniform law ({grid}): STE as the degenerate case"
        panels.finish(ax, legend=7, xlabel="x", ylabel="surrogate", title=title)
    return fig


def plot_sigma_sweep(results: dict, cfg: Config):
    """The bump sum at a level and a boundary vs sigma, with the characteristic-function prediction."""
    sw = results["sweep"]
    sig = np.asarray(sw["sigmas"])
    fig, axes = style.figure(1, 3, figsize=(16, 4.6))
    cmap = style.plt.get_cmap("viridis")
    for ax, grid in zip(axes[:2], GRIDS, strict=True):
        cu = sw["curves"][grid]
        for i, s in enumerate(sig):
            color = cmap(i / max(1, len(sig) - 1))
            ax.plot(np.asarray(cu["x"]), np.asarray(cu["g"][i]), color=color, lw=1, label=f"sigma={s:.3g}")
        ax.axhline(1.0, color="0.5", ls=":", lw=1, label="STE (= 1)")
        panels.finish(
            ax,
            legend={"fontsize": 6, "ncol": 2},
            xlabel="x",
            ylabel="Gaussian surrogate g_sigma(x)",
            yscale="log",
            ylim=(1e-3, None),
            title=f"sigma sweep, {grid} grid: bumps on the boundaries -> flat",
        )
    ax = axes[2]
    for law in MC_LAWS:
        for at, mk in (("boundary", "o"), ("level", "s")):
            closed = np.asarray(sw[law][at])
            ax.plot(sig, closed, "-" if at == "boundary" else "--", color=COLORS[law], lw=1)
            m, h = panels.mean_ci_columns(sw[law][f"{at}_mc"])
            ax.errorbar(
                sig,
                np.maximum(m, 1e-4),
                yerr=h,
                fmt=mk,
                ms=4,
                capsize=2,
                color=COLORS[law],
                mfc="none" if at == "level" else COLORS[law],
                label=f"{law} at a {at}: MC two-point (95% CI) / closed form (line)",
            )
    ax.axhline(1.0, color="0.5", ls=":", lw=1, label="STE (= 1)")
    ax.axvline(zg.STE_SIGMA, color="0.5", ls="-.", lw=0.8, label="sigma = 1/sqrt12 (uniform: exact STE)")
    title = f"boundary / level vs sigma: MC ({cfg.mc_seeds} seeds) vs closed form"
    ylabel = "surrogate g_sigma (wide INT-8 grid)"
    ax.set(xscale="log", yscale="log", xlabel="sigma (grid steps)", ylabel=ylabel, ylim=(1e-4, 20), title=title)
    ax.legend(fontsize=6)
    return fig


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


def plot_convergence(results: dict, cfg: Config):
    """The convergence bound (eq. 10) and the bias bound (eq. 9) on the toy objective."""
    t = results["toy"]
    fig, (ax, ax2) = style.figure(1, 2, figsize=(12, 4.4))
    gn = np.asarray(t["grad_norm_sq"])
    run_mean = np.cumsum(gn, axis=1) / np.arange(1, gn.shape[1] + 1)
    tt = np.arange(1, gn.shape[1] + 1)
    mu, sd = run_mean.mean(0), run_mean.std(0, ddof=1)
    label = f"(1/t) sum |grad F_sigma|^2 (mean of {gn.shape[0]} seeds); +-2 sd over seeds shaded"
    panels.band(ax, tt, mu, mu - 2 * sd, mu + 2 * sd, color="tab:blue", label=label)
    cst = {kk: float(vv) for kk, vv in t["constants"].items()}
    bound_t = [
        float(
            zg.convergence_bound(
                float(t["f0"]),
                eta=cst["eta"],
                smooth=cst["L"],
                steps_t=int(i),
                bias_sq=cfg.toy_dim * cst["B"] ** 2,
                var=cst["V"],
            )
        )
        for i in tt
    ]
    ax.plot(tt, bound_t, **style.prediction(), label="eq. 10 with sup constants (loose; not a claim)")
    label = "eq. 10 with its proof's realized terms at T (the claim)"
    realized = np.asarray(t["realized_bound"]).reshape(-1, 1)
    panels.errorbars(ax, [tt[-1]], realized, fmt="D", color="tab:red", capsize=4, label=label)
    title = f"toy: d={cfg.toy_dim}, INT-{cfg.int_bits}, Gaussian sigma={cfg.toy_sigma:g}, eta=1/(4L)"
    xlabel = "SGD step t"
    panels.finish(ax, legend=7, log="xy", xlabel=xlabel, ylabel="average squared gradient of F_sigma", title=title)
    ax2.plot(np.asarray(t["bias_w"]), np.asarray(t["bias"]), color="tab:orange", label="|Q - Q_sigma| g_sigma")
    ax2.axhline(cst["B"], **style.prediction(), label="B = sup|Q - Q_sigma| sup g_sigma (eq. 9)")
    ylabel = "per-coordinate bias of the surrogate gradient"
    return panels.finish(ax2, legend=7, xlabel="w (grid steps)", ylabel=ylabel, title="bias bound").figure


def plot_qat(results: dict, cfg: Config):
    """Validation perplexity of the quantized tiny LM: PTQ, float fine-tune + PTQ, QAT per surrogate."""
    q = results["qat"]
    arms = ["ptq", "fp_ptq", *cfg.qat_surrogates]
    fig, ax = style.figure(figsize=(9, 4.6))
    labels = ["PTQ\n(pretrained)", "float fine-tune\n+ PTQ"] + [f"QAT\n{a}" for a in cfg.qat_surrogates]
    # means as points (the perplexity axis does not start at 0, so bars would exaggerate the gaps); PTQ of the
    # pretrained model is one number, every other arm one per seed
    ptq = float(perplexity(q["ptq"]))
    ax.errorbar(0, ptq, yerr=0.0, fmt="o", ms=8, capsize=6, color=COLORS.get("ptq", "0.5"))
    ppl = np.stack([perplexity(q[a]) for a in arms[1:]], 1)  # (seeds, arms after PTQ)
    seeds = {"color": "k", "ms": 4, "alpha": 0.6}
    for i, a in enumerate(arms[1:], start=1):
        color = COLORS.get(a, "0.5")
        panels.errorbars(
            ax, [i], ppl[:, i - 1 : i], show_seeds=seeds, seed_shift=0.15, fmt="o", ms=8, capsize=6, color=color
        )
    m, h = panels.mean_ci_columns(ppl)
    vals, errs = [ptq, *m], [0.0, *h]
    ax.set_xticks(range(len(arms)), labels)
    ax.plot([], [], "k.", ms=4, alpha=0.6, label="one seed")
    ax.axhline(float(perplexity(q["fp"])), color="0.4", ls=":", label=f"float model {float(perplexity(q['fp'])):.3f}")
    lo = min(vals + [float(perplexity(q["fp"]))])
    ax.set(
        ylim=(lo * 0.98, max(v_ + e_ for v_, e_ in zip(vals, errs, strict=True)) * 1.01),
        ylabel="validation perplexity of the quantized model (per byte)",
        title=f"QAT of the tiny LM, {cfg.qat_format}{cfg.qat_bits if cfg.qat_format == 'int' else ''} weights, "
        f"{cfg.qat_steps} steps, 95% CI over {cfg.qat_seeds} seeds, sigma={cfg.qat_sigma:g}",
    )
    ax.legend(fontsize=8)
    return fig


def plot(results: dict, cfg: Config) -> dict:
    figs = {
        "estimators": plot_estimators(results, cfg),
        "sigma_sweep": plot_sigma_sweep(results, cfg),
        "kernel_check": plot_kernel_check(results, cfg),
        "convergence": plot_convergence(results, cfg),
    }
    if "qat" in results:
        figs["qat"] = plot_qat(results, cfg)
    return figs
