"""Figures of the sparse-attention result (matplotlib, the project style): one function per figure, registered in
``FIGURES``, each reading the results as NumPy arrays."""

from __future__ import annotations

import jax
import numpy as np
from matplotlib.ticker import NullFormatter

from jaxwb.sims.core import panels, style
from jaxwb.sims.core.claims import mean_ci
from jaxwb.sims.sparse_attention.config import Config
from jaxwb.sims.sparse_attention.measures import row

FIGURES = panels.Figures()
COLORS = {"uniform": "tab:gray", "concentration": "tab:red"}
LABELS = {"uniform": "uniform budget", "concentration": "head-adaptive budget (paper)"}
KL_LABEL = "KL(dense || sparse)  (nats per masked position)"
NLL_LABEL = "NLL(sparse) - NLL(dense)  (nats/byte)"


def _numpy(tree):
    return jax.tree.map(np.asarray, tree)


def _transitions(ax, cfg: Config, label=True):
    for i, t in enumerate(cfg.transitions):
        lab = "transition (next decoding block)" if label and i == 0 else None
        ax.axvline(t, color="black", lw=0.8, ls=":", alpha=0.7, label=lab)


def _shown_periods(cfg: Config) -> list[tuple[int, str, str]]:
    """(refresh period, line style, label) of the lines drawn per allocation: every step, the main period, and
    first-step-only."""
    first, P = max(cfg.periods), cfg.main_period
    return [(1, "-", "refresh every step"), (P, "--", f"refresh every {P}"), (first, ":", "first-step-only")]


def _legend_below(fig, ax, **kw):
    """One legend under the panels of ``ax``'s entries, one row by default (inside a panel it covered the lines)."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", **{"ncol": len(handles), **kw})


def _per_prompt(p, rows, fields=("err", "kl", "dnll")) -> list[np.ndarray]:
    """``fields`` of one policy's results at ``rows``, per row and prompt [R, N]: the attention-output error
    averaged over steps and layers, the end-to-end scores over steps."""
    return [p[f][rows].mean(axis=(2, 3) if f == "err" else 2) for f in fields]


@FIGURES.add
def plot_maps(results, cfg: Config):
    """Example block-pooled maps around the first transition (last layer, prompt 0)."""
    T, tr0 = cfg.steps, cfg.transitions[0]
    steps = sorted({0, max(tr0 - 2, 0), tr0 - 1, tr0, min(tr0 + 1, T - 1), T - 1})
    ex = _numpy(results["example_maps"])  # [T, H, Qb, Kb]
    H = ex.shape[1]
    fig, axes = style.figure(H, len(steps), figsize=(2.1 * len(steps), 2.1 * H))
    for (h, j), ax in np.ndenumerate(np.asarray(axes).reshape(H, len(steps))):
        t = steps[j]
        ax.imshow(ex[t, h], cmap="viridis", vmin=0, vmax=max(float(ex[:, h].max()), 1e-6))
        ax.set(xticks=[], yticks=[])
        if h == 0:
            ax.set_title(f"step {t}" + (" (transition)" if t in cfg.transitions else ""), fontsize=8)
        if j == 0:
            ax.set_ylabel(f"head {h}\nquery block", fontsize=8)
        if h == H - 1:
            ax.set_xlabel("key block", fontsize=8)
    fig.suptitle(f"block-pooled attention (block = {cfg.block} tokens), last layer, prompt 0", fontsize=10)
    return fig


@FIGURES.add
def plot_overlap(results, cfg: Config):
    """Overlap per step and by lag (with the shuffled null), and the heads' concentration."""
    T, k = cfg.steps, cfg.main_k
    m = _numpy(results["maps"])
    fig, axes = style.figure(1, 3, figsize=(15, 4.2))
    nm, _, _ = mean_ci(m["null"])
    ylabel = f"top-{k} block-mask overlap"
    for ax, x, key, label, null_label in (
        (axes[0], np.arange(1, T), "per_step", "overlap(step t-1, step t)", "null: next map shuffled over key blocks"),
        (axes[1], np.arange(T), "overlap_lag", "overlap(step t, step t + lag)", "shuffled null"),
    ):
        panels.errorbars(ax, x, m[key], fmt="-", marker="o", ms=3, capsize=2, color="tab:blue", label=label)
        ax.axhline(nm, color="gray", ls="--", label=null_label)
    _transitions(axes[0], cfg)
    axes[1].axvline(cfg.far_lag, color="tab:orange", ls="--", lw=1, label=f"'distant' = lag >= {cfg.far_lag}")
    for ax, xlabel, title in (
        (axes[0], "denoising step t", "consecutive-step overlap (mean, 95% CI over prompts)"),
        (axes[1], "lag (steps)", "overlap decays with lag"),
    ):
        panels.finish(ax, legend=7, xlabel=xlabel, ylabel=ylabel, title=title, ylim=(0, 1.02))
    tm = m["topk_mass"].mean(axis=1).reshape(m["topk_mass"].shape[0], -1)  # [N, nl*H], mean over steps
    order = np.argsort(panels.mean_ci_columns(tm)[0])  # heads by their mean over prompts
    x, label = np.arange(tm.shape[1]), "per head (95% CI over prompts)"
    pred = f"uniform attention: {k}/{cfg.num_blocks}"
    panels.measured_vs_predicted(
        axes[2], x, tm[:, order], k / cfg.num_blocks, color="tab:red", label=label, pred_label=pred
    )
    axes[2].set_xticks(x, [f"L{i // cfg.n_heads}H{i % cfg.n_heads}" for i in order], rotation=60, fontsize=7)
    title = f"heads differ in concentration (permutation p = {float(results['head_spread']['p_value']):.3g})"
    ylabel = f"attention mass in top-{k} blocks"
    return panels.finish(axes[2], legend=7, xlabel="layer/head (sorted)", ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_policy_budget(results, cfg: Config):
    """Output error, KL and held-out NLL vs block density, per allocation and refresh period."""
    pol = _numpy(results["policy"])
    fig, axes = style.figure(1, 3, figsize=(17, 5.4))
    for a in ("uniform", "concentration"):
        for per, ls, lab in _shown_periods(cfg):
            rows = [row(cfg, per, b) for b in cfg.budgets]
            d = pol[a]["density"][rows]
            for ax, val in zip(axes, _per_prompt(pol[a], rows), strict=True):  # [B, N]
                label = f"{LABELS[a]}, {lab}"
                panels.errorbars(ax, d, val, axis=1, fmt=ls, marker="o", ms=3, capsize=2, color=COLORS[a], label=label)
    for name, mk, col, lab in (
        ("oracle", "*", "black", "oracle: top-k of the true pooled attention"),
        ("stale", "x", "black", f"mask {cfg.far_lag} steps old (uniform)"),
        ("global", "D", "tab:blue", f"mass-greedy global allocation, refresh every {cfg.main_period}"),
    ):
        p = pol[name]
        for ax, val, ref_label in zip(axes, _per_prompt(p, [0]), (lab, None, None), strict=True):  # one legend entry
            panels.errorbars(ax, p["density"][0], val.T, fmt=mk, ms=7, capsize=0, color=col, label=ref_label)
    axes[2].axhline(0, color="black", lw=0.6)
    title = "output error vs density\n(mean over layers, steps; 95% CI over prompts)"
    axes[0].set(xlabel="block density (fraction of blocks kept)", ylabel="relative attention-output error", title=title)
    title = (
        "end to end along the dense trajectory: KL of the\ntoken distributions, block_sparse_attention in every layer"
    )
    axes[1].set(xlabel="block density", ylabel=KL_LABEL, yscale="log", title=title)
    title = "end to end, teacher-forced on the held-out text:\nNLL of the held-out bytes"
    axes[2].set(xlabel="block density", ylabel=NLL_LABEL, title=title)
    _legend_below(fig, axes[0], ncol=3, fontsize=7)
    return fig


@FIGURES.add
def plot_refresh_period(results, cfg: Config):
    """The refresh-period sweep at the main budget, offline scores and (reported) free running."""
    pol, on = _numpy(results["policy"]), _numpy(results["online"])
    fig, axes = style.figure(2, 3, figsize=(17, 9.5))
    axes = axes.ravel()
    per = np.asarray(cfg.periods)
    for a in ("uniform", "concentration"):
        rows = [row(cfg, p, cfg.main_budget) for p in cfg.periods]
        vals = _per_prompt(pol[a], rows, ("err", "kl", "dnll", "dacc"))
        vals += [on[a]["agreement"], on[a]["dpath_nll"]] if a in on else []
        for ax, val in zip(axes, vals, strict=False):
            panels.errorbars(ax, per, val, axis=1, fmt="-", marker="o", color=COLORS[a], label=LABELS[a])
    for i in (2, 3, 5):  # the differences from dense attention
        axes[i].axhline(0.0, **style.prediction(label="dense attention" if i == 2 else None))
    axes[4].plot(per, np.full(per.shape, 1.0), **style.prediction())
    reported = "REPORTED, not decided: free running"
    texts = (  # (y label, title) per panel
        ("relative attention-output error", "output error"),
        (KL_LABEL, "end to end along the dense trajectory"),
        (NLL_LABEL, "teacher-forced on the held-out text: NLL"),
        ("accuracy(sparse) - accuracy(dense)", "teacher-forced on the held-out text: accuracy"),
        (
            "generated bytes equal to the dense decoder's",
            f"{reported}, same sampling key\n(diverges after the first differing sample)",
        ),
        (
            "dense NLL of sparse output - of dense output\n(nats/byte, along each run's own order)",
            f"{reported}, scored by the dense model",
        ),
    )
    for ax, (yl, ti) in zip(axes, texts, strict=True):
        title = f"{ti}\n(rho={cfg.main_budget:g}; mean, 95% CI over prompts)"
        ax.set(xscale="log", xlabel=f"refresh period P (steps; P={per[-1]} = first-step-only)", ylabel=yl, title=title)
        ax.set_xticks(per, [str(p) for p in per])
        ax.xaxis.set_minor_formatter(NullFormatter())
    _legend_below(fig, axes[2], fontsize=8)
    return fig


@FIGURES.add
def plot_per_step(results, cfg: Config):
    """Per-step output error and KL across the transitions (legend outside the axes: it covered the lines)."""
    pol = _numpy(results["policy"])
    fig, axes = style.figure(2, 1, figsize=(10, 7.5), sharex=True)
    ts = np.arange(cfg.steps)
    for a in ("uniform", "concentration"):
        for p, ls, lab in _shown_periods(cfg):
            rr = row(cfg, p, cfg.main_budget)
            axes[0].plot(ts, pol[a]["err"][rr].mean(axis=-1).mean(0), ls, color=COLORS[a], label=f"{LABELS[a]}, {lab}")
            panels.ci_band(axes[1], ts, pol[a]["kl"][rr], color=COLORS[a], ls=ls, fill_alpha=0.12)  # [T]
    axes[0].plot(ts, pol["oracle"]["err"][0].mean(axis=-1).mean(0), "k*-", ms=4, lw=0.8, label="oracle top-k")
    axes[1].plot(ts, pol["oracle"]["kl"][0].mean(0), "k*-", ms=4, lw=0.8)
    for ax in axes:
        _transitions(ax, cfg, label=ax is axes[0])
    title = f"per step (rho={cfg.main_budget:g}): attention-output error (mean over prompts and layers)"
    axes[0].set(ylabel="relative attention-output error", title=title)
    title = "end to end along the dense trajectory: KL of the token distributions (mean, 95% CI over prompts)"
    axes[1].set(xlabel="denoising step", ylabel=KL_LABEL, title=title)
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return fig


@FIGURES.add
def plot_louver(results, cfg: Config):
    """Louver: recall of keys with q.k >= tau, and the work done."""
    lv = _numpy(results["louver"])
    qs = np.asarray(cfg.tau_quantiles)
    fig, axes = style.figure(1, 2, figsize=(11, 4.2))
    for bound, c in (("ball", "tab:purple"), ("box", "tab:green")):
        x = lv[bound]
        missed = (x["fn_block"] + x["fn_key"]) / np.maximum(x["needed"] * (cfg.n_heads * cfg.seq_len**2), 1)
        axes[0].plot(qs, 1.0 - missed.mean(axis=(0, 1)), "o-", color=c, label=f"{bound} bound")
        axes[1].plot(qs, x["touched"].mean(axis=(0, 1)), "o-", color=c, label=f"pairs scored, {bound} index")
    axes[1].plot(qs, lv["ball"]["needed"].mean(axis=(0, 1)), "k--", label="pairs with q.k >= tau (ideal work)")
    axes[0].axhline(1.0, **style.prediction(label="guarantee: recall = 1"))
    title = "zero false negatives on the model's q, k"
    xlabel = "tau (quantile of the layer's q.k scores)"
    ylabel = "recall of keys with q.k >= tau (float64)"
    panels.finish(axes[0], legend=7, xlabel=xlabel, ylabel=ylabel, ylim=(0.9, 1.02), title=title)
    title, ylabel = f"work: flat index of {cfg.block}-key blocks", "fraction of (query, key) pairs"
    return panels.finish(axes[1], legend=7, xlabel="tau quantile", ylabel=ylabel, yscale="log", title=title).figure


@FIGURES.add
def plot_speed(results, cfg: Config):
    """Speedups vs sparsity: process CPU time, every baseline re-timed beside its sparse row."""
    sp = _numpy(results["speed"])
    fig, ax = style.figure(figsize=(7.5, 4.8))
    order = np.argsort(sp["sparsity"])
    s = sp["sparsity"][order]
    ss = np.linspace(min(0.45, s.min()), max(0.97, s.max()), 60)
    where = "CPU (XLA), process time" if bool(sp["cpu"]) else "accelerator (XLA), process time of the host"
    ax.plot(ss, 1 / (1 - ss), **style.prediction(label="ideal 1/(1-s) (work ratio)"))
    listed = "vs the same block-sparse op, every block listed"
    for baseline, sparse, mk, color, lab in (  # the speedup: the baseline's time over the sparse call's
        ("whole_full_list_s", "whole_sparse_s", "o-", "tab:red", f"{listed}, whole-sequence call"),
        ("chunked_full_list_s", "chunked_sparse_s", "^-", "tab:blue", f"{listed}, called per query block"),
        ("jaxnn_s", "whole_sparse_s", "s--", "tab:gray", "whole call vs dense jax.nn.dot_product_attention"),
    ):
        ax.plot(s, sp[baseline][order] / sp[sparse][order], mk, color=color, label=f"{lab}: {where}")
    title = (
        f"block-sparse speed, L={cfg.speed_len}, H={cfg.speed_heads}, D={cfg.speed_dim}, block {cfg.speed_block}\n"
        f"(process CPU time, fastest of {cfg.speed_repeats}, baselines re-timed per row; no GPU numbers drawn)"
    )
    xlabel = "block sparsity s (fraction of key blocks skipped)"
    ylabel = "speedup of block-sparse attention (CPU-time ratio)"
    return panels.finish(ax, legend=7, yscale="log", xlabel=xlabel, ylabel=ylabel, title=title).figure


plot = FIGURES.plot
