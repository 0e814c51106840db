"""distillation: the figures, ``plot`` (what is measured: the package docstring)."""

from __future__ import annotations

import numpy as np

from jaxwb.sims.core import panels, style
from jaxwb.sims.distillation.config import Config
from jaxwb.sims.distillation.run import generation_configs
from jaxwb.theory import distillation as dm

COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")
FIGURES = panels.Figures()
plot = FIGURES.plot


@FIGURES.add
def plot_spectrum(results: dict, cfg: Config):
    """Eigenvalues of the training Gram (each n) and of the population Gram, with the Gaussian-equivalent bulks."""
    p = cfg.p_grid[-1]
    lam_t, lam_p = (results["timescales"][k][f"p{p}"] for k in ("lam_train", "lam_pop"))  # (seed, n, p), (seed, p)
    fig, ax = style.figure(figsize=(8.6, 4.8))
    lo = np.log10(max(min(lam_t[lam_t > 0].min(), lam_p[lam_p > 0].min()), 1e-12))
    bins = np.linspace(np.floor(lo), np.log10(max(lam_t.max(), lam_p.max())) + 0.2, 70)
    ge = dm.gaussian_equivalent(cfg.t_fixed)
    v_sq, s_sq, a_sq = (float(ge[k]) for k in ("v_sq", "s_sq", "a_sq"))
    for j, n in enumerate(cfg.n_grid):
        h, _ = np.histogram(np.log10(np.maximum(lam_t[:, j].ravel(), 1e-12)), bins)
        ax.stairs(h / lam_t[:, j].size, bins, color=COLORS[j], label=f"training Gram, n = {n}")
        ax.axvline(np.log10(v_sq * p / n + s_sq), **style.prediction(color=COLORS[j], linewidth=1))
    h, _ = np.histogram(np.log10(np.maximum(lam_p.ravel(), 1e-12)), bins)
    ax.stairs(h / lam_p.size, bins, color="k", lw=2, label="population Gram (n = inf)")
    ax.axvline(np.log10(a_sq * p / cfg.d), **style.prediction(color="k"), label="GE: linear bulk a^2 p/d")
    ax.axvline(np.log10(s_sq), color="0.5", ls=":", label="GE: floor s_t^2 (d -> inf)")
    panels.prediction_key(ax, "GE: training-set bulk v_t^2 p/n + s_t^2", color="0.3", linewidth=1)
    legend = {"fontsize": 7, "loc": "lower left", "framealpha": 0.9}
    xlabel, ylabel = "log10 eigenvalue of the feature Gram U (dimensionless)", "fraction of the p eigenvalues per bin"
    title = f"Feature Gram spectrum at t = {cfg.t_fixed:g}, p = {p}, d = {cfg.d} ({lam_t.shape[0]} seeds pooled)"
    return panels.finish(ax, legend=legend, log="y", xlabel=xlabel, ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_timescales(results: dict, cfg: Config):
    """Loss curves over GD steps (p max) and tau_gen, tau_mem against n with the Gaussian-equivalent predictions."""
    ts = results["timescales"]
    steps = np.asarray(ts["steps"])
    fig, (ax, ax2) = style.figure(1, 2, figsize=(13, 4.8))
    for j, n in enumerate(cfg.n_grid):
        ax.semilogx(steps, ts["test"][-1, :, j].mean(0), color=COLORS[j], label=f"test (population), n = {n}")
        ax.semilogx(steps, ts["train"][-1, :, j].mean(0), color=COLORS[j], ls=":", label=f"train, n = {n}")
    ax.axhline(float(dm.bayes_loss(cfg.t_fixed)), color="k", lw=1, label="Bayes loss e^(-2t) (true score)")
    title = f"Loss curves, p = {cfg.p_grid[-1]}, t = {cfg.t_fixed:g} (mean over seeds)"
    xlabel, ylabel = "GD steps k (lr = 1/p)", "denoising loss per dimension"
    panels.finish(ax, legend={"fontsize": 7, "ncol": 2}, xlabel=xlabel, ylabel=ylabel, title=title, ylim=(0.0, 1.05))
    ns = np.asarray(cfg.n_grid, np.float64)
    for i, p in enumerate(cfg.p_grid):
        tg, tm = (np.asarray(a) for a in dm.predicted_timescales(ns, p, cfg.d, cfg.t_fixed, cfg.lr_times_p / p))
        for key, marker, pred in (("tau_mem", "o", tm), ("tau_gen", "s", tg)):
            panels.errorbars(ax2, ns, ts[key][i], fmt=marker, color=COLORS[i], label=f"{key}, p = {p}")
            ax2.plot(ns, pred, **style.prediction(color=COLORS[i], linestyle="--" if key == "tau_mem" else ":"))
    panels.prediction_key(ax2, "GE: 1/(lr (v^2 p/n + s^2))")
    panels.prediction_key(ax2, "GE: e d (linear bulk)", linestyle=":")
    ax2.plot(ns, ns / ns[0] * np.nanmean(ts["tau_mem"][-1, :, 0]), color="0.6", lw=0.8, label="~ n")
    title = "tau_mem ~ n, tau_gen ~ const (95% CI over seeds)"
    return panels.finish(ax2, legend=7, log="xy", xlabel="training-set size n", ylabel="GD steps", title=title).figure


@FIGURES.add
def plot_memorisation(results: dict, cfg: Config):
    """Copy fraction and energy distance of the teacher over training, the student beside it."""
    g = results["generation"]
    ck = np.asarray(cfg.teacher_checkpoints, np.float64)
    fig, (ax, ax2) = style.figure(1, 2, figsize=(13, 4.8))
    for j, (name, (n, p)) in enumerate(generation_configs(cfg).items()):
        r = g[name]
        label = f"n = {n}, p = {p}"
        for a, m in ((ax, "copy"), (ax2, "energy")):
            panels.errorbars(a, ck, r["teacher"][m], fmt="-o", ms=4, color=COLORS[j], label=f"teacher, {label}")
            student = np.asarray(r["student"][m]).reshape(-1, 1)
            lab = f"student (K = {cfg.distill_steps} from the last teacher), {label}"
            panels.errorbars(a, [ck[-1] * 1.6], student, fmt="*", ms=13, color=COLORS[j], label=lab)
        ax.axhline(float(np.mean(r["fresh"]["copy"])), color=COLORS[j], lw=0.8, ls=":")
    ax.plot([], [], color="0.4", lw=0.8, ls=":", label="fresh data (a generalising model's level)")
    title = "Memorisation over training; the distilled student at the right (95% CI)"
    ylabel = "copy fraction (d1/d2 < 1/3)"
    panels.finish(ax, legend=7, xscale="log", xlabel="teacher GD steps", ylabel=ylabel, title=title)
    title, ylabel = "Sample quality (lower is better; fresh data: 0)", "energy distance to fresh N(0, I) data"
    ax2.set(xscale="log", yscale="log", ylim=(5e-3, 2.0), xlabel="teacher GD steps", ylabel=ylabel, title=title)
    return fig


@FIGURES.add
def plot_distillation(results: dict, cfg: Config):
    """Which directions the student keeps: per-direction retention against lr lam, with eq. retention; and the
    memorisation-quality plane."""
    g = results["generation"]
    n, p = generation_configs(cfg)["small_n"]
    fig, (ax, ax2) = style.figure(1, 2, figsize=(13, 4.8))
    x, y = (np.asarray(g["small_n"]["retention"][k]).ravel() for k in ("lr_lam", "per_direction"))
    keep = x > 0
    ax.semilogx(x[keep], y[keep], ".", ms=2, alpha=0.25, color="tab:blue", label="measured, each direction")
    xs = np.logspace(np.log10(max(x[keep].min(), 1e-9)), 0, 200)
    retention = np.asarray(dm.predicted_retention(xs * p, steps=cfg.distill_steps, lr=1.0 / p))
    label = f"eq. retention 1 - (1 - lr lam)^K, K = {cfg.distill_steps}"
    ax.semilogx(xs, retention, **style.prediction(), label=label)
    for xv, text in ((1.0 / cfg.tau_gen, "1/tau_gen"), (1.0 / cfg.teacher_steps, "1/teacher steps")):
        ax.axvline(xv, color="0.5", lw=0.8, ls=":")
        ax.text(xv * 1.3, 1.22, text, fontsize=7, ha="left")
    title = (
        f"Student vs teacher per eigen-direction (n = {n}, p = {p}, all grid times and seeds)\n"
        "left of 1/tau_gen: memorised directions; right: generalising"
    )
    xlabel, ylabel = "lr x eigenvalue of the teacher's Gram (per GD step)", "fraction of the teacher's component kept"
    panels.finish(
        ax, legend={"fontsize": 8, "loc": "upper left"}, ylim=(-0.3, 1.3), xlabel=xlabel, ylabel=ylabel, title=title
    )
    first = list(cfg.teacher_checkpoints).index(cfg.tau_gen)
    for j, (name, (nn, pp)) in enumerate(generation_configs(cfg).items()):
        rr = g[name]
        cx, ey = (panels.mean_ci_columns(rr["teacher"][m][:, first:])[0] for m in ("copy", "energy"))
        ax2.plot(cx, ey, "-o", ms=3, color=COLORS[j], label=f"teacher from tau_gen on, n = {nn}, p = {pp}")
        for text, xy, xytext in (("tau_gen", 0, (4, -10)), (f"{cfg.teacher_steps:.0e}", -1, (-10, 6))):
            ax2.annotate(text, (cx[xy], ey[xy]), fontsize=7, xytext=xytext, textcoords="offset points")
        for m, marker, ms, mfc, lab in (
            ("student", "*", 11, COLORS[j], "student"),
            ("student_pred", "P", 8, "none", "expected student (eq. student)"),
            ("teacher_projected", "X", 8, "none", "teacher without memorised directions"),
        ):
            copy, energy = np.mean(rr[m]["copy"]), np.mean(rr[m]["energy"])
            ax2.plot(copy, energy, marker, ms=ms, color=COLORS[j], mfc=mfc, label=lab if j == 0 else None)
    title = "Memorisation-quality plane (means over seeds)"
    xlabel, ylabel = "copy fraction (memorisation)", "energy distance to fresh data (quality)"
    return panels.finish(ax2, legend=7, yscale="log", xlabel=xlabel, ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_samples(results: dict, cfg: Config):
    """Samples of the teacher and the student (first two coordinates) beside the training points, one seed."""
    s = results["generation"]["small_n"]["samples"]
    n, p = generation_configs(cfg)["small_n"]
    X = np.asarray(s["train"][0])
    fig, axes = style.figure(1, 2, figsize=(11, 5.0), sharex=True, sharey=True)
    legend = {"fontsize": 8, "loc": "upper right"}
    for ax, who, title in (
        (axes[0], "teacher", f"teacher after {cfg.teacher_steps:.0e} GD steps"),
        (axes[1], "student", f"student, {cfg.distill_steps} consistency-distillation steps"),
    ):
        x = np.asarray(s[who][0])
        ax.plot(x[:, 0], x[:, 1], ".", ms=3, alpha=0.5, color="tab:blue", label=f"{len(x)} samples")
        ax.plot(X[:, 0], X[:, 1], "x", ms=9, mew=2, color="tab:red", label=f"the n = {n} training points")
        title = f"{title} (n = {n}, p = {p}, seed 0)"
        panels.finish(ax, legend=legend, xlabel="coordinate 1", ylabel="coordinate 2", title=title)
    return fig
