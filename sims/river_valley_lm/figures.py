"""Figures and benchmark of ``sims.river_valley_lm``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from models import corpus
from models import train as tr
from models.tiny_lm import TinyLM
from sims.core import style
from sims.core.claims import mean_ci
from sims.core.harness import BenchRow, time_call
from sims.core.sweep import grid, sweep


def plot(results: dict, cfg) -> dict:
    from sims.river_valley_lm import edges

    figs = {}
    s, a = results["sgd"], results["adam"]
    lam = float(results["hessian"]["lambda_max"])
    mults, betas = np.asarray(s["lr_mult"]), np.asarray(s["beta"])
    fl, div = np.asarray(s["final_loss"]), np.asarray(s["diverged"])
    uni, init = float(results["unigram_loss"]), float(results["init_loss"])
    fig, (ax, ax2, ax3) = style.figure(1, 3, figsize=(15, 4.6))
    for j, b in enumerate(betas):
        (line,) = ax.semilogx(mults, fl[:, j], "o-", label=f"SGD heavy ball beta={b:g}")
        if div[:, j].any():
            ax.plot(mults[div[:, j]], np.full(div[:, j].sum(), init), "x", color=line.get_color(), ms=9)
        ax.axvline(1.0 + b, **style.prediction(color=line.get_color()))
    ax.axhline(uni, color="0.5", lw=1, ls=":", label=f"unigram baseline {uni:.2f}")
    ax.axhline(init, color="0.7", lw=1, label=f"loss at init {init:.2f}")
    ax.plot([], [], **style.PREDICTION, label="theory edge lr lambda_max = 2(1+beta)")
    ax.plot([], [], "x", color="k", label="diverged (drawn at the init loss)")
    ax.set(
        xlabel="learning rate / (2 / lambda_max(init))",
        ylabel="validation loss after training (nats/byte)",
        title=f"SGD+HB, {cfg.steps} steps, lambda_max(init) = {lam:.3g}",
    )
    ax.legend(fontsize=7)
    im = ax2.pcolormesh(betas, mults, np.ma.masked_invalid(fl), shading="nearest", cmap="viridis")
    ax2.pcolormesh(
        betas, mults, np.ma.masked_where(~div, div.astype(float)), shading="nearest", cmap="Greys", vmin=0, vmax=1.4
    )
    bf = np.linspace(0, max(betas.max(), 0.01), 50)
    ax2.plot(bf, 1 + bf, **style.PREDICTION, label="theory: lr = 2(1+beta)/lambda_max")
    for b, ed in zip(betas, edges(results), strict=True):
        ax2.plot(b, ed, "w*", ms=12)
    ax2.plot([], [], "k*", label="measured edge (largest stable grid lr)")
    ax2.set(
        yscale="log", xlabel="momentum beta", ylabel="lr / (2/lambda_max)", title="(lr, beta) map (grey = diverged)"
    )
    ax2.legend(fontsize=7, loc="lower right")
    fig.colorbar(im, ax=ax2, label="final loss")
    alr, ab1 = np.asarray(a["lr"]), np.asarray(a["beta1"])
    afl = np.asarray(a["final_loss"])
    for j, b in enumerate(ab1):
        ax3.semilogx(alr, afl[:, j], "o-", label=f"AdamW beta1={b:g}")
    ax3.axhline(uni, color="0.5", lw=1, ls=":", label="unigram baseline")
    ax3.set(
        xlabel="AdamW learning rate",
        ylabel="validation loss (nats/byte)",
        title=f"AdamW check, {cfg.steps} steps (missing points diverged)",
    )
    ax3.legend(fontsize=8)
    figs["lr_beta_grid"] = fig

    d = results["decomposition"]
    ev = np.asarray(results["hessian"]["eigenvalues"])
    fig, axs = style.figure(1, 3, figsize=(15, 4.4))
    val = np.asarray(d["valley"][0])
    for i in range(val.shape[1]):
        axs[0].plot(val[:, i], lw=1, label=f"valley coordinate v{i + 1}.d_t (lambda_{i + 1} = {ev[i]:.3g})")
    axs[0].plot(np.asarray(d["river"][0]), "k", lw=2, label="river distance |(I - V V^T) d_t|")
    axs[0].set(
        xlabel="step",
        ylabel="displacement from init (parameter norm)",
        title=f"HB beta={cfg.decomp_beta:g}, lr = {cfg.decomp_lr_mult:g} x 2/lambda_max: d_t split",
    )
    axs[0].legend(fontsize=7)
    for i, (name, c) in enumerate(((f"HB beta={cfg.decomp_beta:g}", "tab:green"), ("GD (beta=0)", "tab:blue"))):
        axs[1].plot(np.asarray(d["loss"][i]), color=c, label=f"{name}: loss")
        axs[1].plot(np.asarray(d["loss_river_only"][i]), color=c, ls=":", label=f"{name}: valley part removed")
    axs[1].axhline(uni, color="0.5", lw=1, ls=":", label="unigram baseline")
    axs[1].set(
        xlabel="step",
        ylabel="loss on the Hessian batch (nats)",
        ylim=(None, init * 1.3),
        title=f"Full-batch, same lr = {float(d['lr']):.3g} (GD's quadratic limit x {cfg.decomp_lr_mult:g})",
    )
    axs[1].legend(fontsize=7)
    axs[2].bar(np.arange(1, len(ev) + 1), ev, color="tab:purple")
    axs[2].set(
        xlabel="eigenvalue index",
        ylabel="Hessian eigenvalue at init (Lanczos on HVPs)",
        title=f"gradient share in top-{len(ev)}: {float(d['grad_frac_top']):.0%}; "
        f"HB displacement share: {float(d['disp_frac_top'][0]):.1%}",
    )
    figs["decomposition"] = fig
    figs["edges"] = _plot_edges(results, cfg)
    figs["edge_of_stability"] = _plot_eos(results, cfg)
    return figs


def _plot_edges(results, cfg):
    from sims.river_valley_lm import seed_edges

    ed = seed_edges(results)  # [B, S]
    betas = np.asarray(cfg.betas)
    fig, (ax, ax2) = style.figure(1, 2, figsize=(11, 4.4))
    for label, scale, a in (
        ("raw lr", np.ones_like(betas), ax),
        ("effective lr lr/(1-beta)", 1.0 / (1.0 - betas), ax2),
    ):
        e = ed * scale[:, None]
        for s in range(e.shape[1]):
            a.plot(betas, e[:, s], "o", color="0.6", ms=4, label="seeds (bisected edge)" if s == 0 else None)
        stats = [mean_ci(np.log2(row)) for row in e]
        m = np.array([x[0] for x in stats])
        h = np.array([x[1] for x in stats])
        a.errorbar(
            betas,
            2**m,
            yerr=[2**m - 2 ** (m - h), 2 ** (m + h) - 2**m],
            fmt="s-",
            color="tab:red",
            capsize=4,
            label="geometric mean, 95% CI over seeds",
        )
        bf = np.linspace(0, betas.max(), 50)
        e0 = 2 ** m[list(cfg.betas).index(0.0)]
        pred = (1 + bf) * (1.0 if a is ax else 1.0 / (1.0 - bf))
        a.plot(
            bf,
            e0 * pred,
            **style.PREDICTION,
            label="quadratic theory x measured GD edge: (1+beta)" + ("" if a is ax else "/(1-beta)"),
        )
        a.plot(bf, pred, **style.prediction(color="0.4", linestyle=":"), label="quadratic theory from lambda_max(init)")
        a.set(
            yscale="log",
            xlabel="momentum beta",
            ylabel=f"divergence edge, {label} / (2/lambda_max(init))",
            title=f"mini-batch SGD+HB, {cfg.edge_steps} steps, bracket {cfg.edge_bracket}, {cfg.edge_iters} bisections",
        )
        a.legend(fontsize=7)
    return fig


def _plot_eos(results, cfg):
    from sims.river_valley_lm import eos_rows

    e = results["eos"]
    rows = eos_rows(cfg)
    lam = np.asarray(e["lam"])  # [R, S, T]
    lr = np.asarray(e["lr"])  # [R, S]
    t = np.arange(lam.shape[-1]) * cfg.eos_every
    colors = {0: "tab:blue", 1: "tab:green", 2: "tab:orange"}
    n_m = len(cfg.eos_mults)
    fig, axs = style.figure(n_m, 4, figsize=(19, 4.2 * n_m), squeeze=False)
    for i in range(n_m):
        ax, ax2, ax3, ax4 = axs[i]
        for c in range(3):
            r = 3 * i + c
            label, beta, mult = rows[r]
            col = colors[c]
            for s in range(lam.shape[1]):
                kw = dict(color=col, lw=1, alpha=0.7, label=label if s == 0 else None)
                ax.plot(t, lam[r, s], **kw)
                ax2.plot(t, lr[r, s] * lam[r, s], **kw)
                ax3.plot(t, np.asarray(e["loss"][r, s]), **kw)
                ax4.plot(t, np.asarray(e["param_norm"][r, s]), **kw)
                ax4.plot(t, np.asarray(e["norm_scale"][r, s]), **{**kw, "ls": "--", "label": None})
            lr0 = float(np.mean(lr[r]))
            ax.axhline(
                2 * (1 + beta) / lr0,
                **style.prediction(color=col),
            )
        ax.plot([], [], **style.PREDICTION, label="2/lr (GD), 2(1+beta)/lr (HB), seed-mean lr")
        ax.set(
            yscale="log",
            xlabel="step",
            ylabel="lambda_max(H(theta_t)) (power iteration on HVPs)",
            title=f"full batch ({cfg.hvp_batch} windows), lr = {cfg.eos_mults[i]:g} x 2/lambda_max(init)",
        )
        ax.legend(fontsize=6)
        ax2.axhline(2.0, **style.prediction(color=colors[0]))
        ax2.axhline(2.0 * (1 + cfg.eos_beta), **style.prediction(color=colors[1]))
        ax2.set(
            xlabel="step",
            ylabel="lr * lambda_max(theta_t)",
            title="sharpness in units of the edge (dashed: 2 and 2(1+beta))",
        )
        ax3.set(xlabel="step", ylabel="full-batch loss (nats/byte)", title=f"{lam.shape[1]} seeds per row")
        ax4.set(xlabel="step", ylabel="norm", title="parameter norm (solid), RMSNorm-scale norm (dashed)")
    return fig


# ---------------------------------------------------------------------------------------------------------
# Benchmark: the vmapped grid vs a Python loop of jitted single runs
# ---------------------------------------------------------------------------------------------------------


def bench(quick: bool = False) -> list[BenchRow]:
    from sims.river_valley_lm import PRESETS, _grid_runner

    cfg = PRESETS["quick"]
    mc = cfg.model
    model = TinyLM(mc, key=jax.random.key(0))
    tok, val = corpus.load_corpus(max_bytes=cfg.corpus_bytes)
    data = jnp.asarray(tok)
    ex, ey = tr.eval_windows(val, mc.ctx, cfg.eval_windows)
    steps = 30 if quick else 100
    g = grid(lr=jnp.geomspace(0.01, 0.3, 4), beta=jnp.asarray([0.0, 0.5, 0.9]))
    fn = _grid_runner(
        model, data, jax.random.key(1), ex, ey, kind="sgd", steps=steps, batch_size=cfg.batch_size, blowup=cfg.blowup
    )
    ours = time_call(lambda: sweep(fn, g)["final_loss"], repeats=2)
    one = jax.jit(fn)
    n = g["lr"].shape[0]
    base = time_call(lambda: [one({k: x[i] for k, x in g.items()})["final_loss"] for i in range(n)], repeats=2)
    return [
        BenchRow(f"{n}-point (lr, beta) grid x {steps} steps", "jit(vmap) sweep", "loop of jitted runs", ours, base)
    ]
