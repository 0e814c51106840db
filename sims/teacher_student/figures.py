"""Teacher-student: the figures, ``plot``, one function per figure."""

from __future__ import annotations

import matplotlib
import numpy as np

from jaxwb.sims.core import panels, style
from jaxwb.sims.core.claims import largest_difference
from jaxwb.sims.teacher_student.config import RECON, Config
from jaxwb.sims.teacher_student.measures import measurements, student_errors, windows
from jaxwb.sims.teacher_student.reference import asymptotic_eps
from jaxwb.theory import teacher_student as ts

COLORS = {0.75: "tab:green", 1.0: "tab:blue", 1.5: "tab:red"}
FIGURES = panels.Figures()


@FIGURES.add
def plot_staircase(results: dict, cfg: Config):
    """Overlaps m_i vs alpha at beta = 1 with the closed form m+(c) and the bisected thresholds."""
    st = results["staircase"]
    alpha, m, de = (np.asarray(st[f]) for f in ("alpha", "m", "delta_eff"))
    a2 = np.asarray(ts.amplitudes(cfg.k, 1.0))
    fig, ax = style.figure(figsize=(11, 5))
    F = m.shape[1]
    for i in range(F):
        col = matplotlib.colormaps["viridis"](i / max(F - 1, 1))
        labelled = F <= 10 or i < 6 or i == F - 1  # every feature up to 10, else the first six and the last
        ax.plot(alpha, m[:, i], color=col, lw=2.2, alpha=0.8, label=f"m_{i + 1}" if labelled else None)
        # closed form on the learned branch, with the solver's Delta_eff: m+(alpha a_i^2 / Delta_eff)
        c = alpha * a2[i] / de
        ax.plot(alpha, np.where(c >= ts.C_IT, np.asarray(ts.m_plus(c)), 0.0), **style.prediction(linewidth=0.9))
        ax.axvline(float(st["threshold"][i]), color=col, lw=0.6, ls=":")
    ax.axhline(ts.M_JUMP, color="0.4", lw=1, ls="-.", label=f"m+(c_IT) = {ts.M_JUMP:.3f}")
    panels.prediction_key(ax, "closed form m+(c), c = alpha a_i^2/Delta_eff\n(learned iff c >= c_IT)")
    title = (
        f"Features learned one by one through jumps (beta=1, k={cfg.k}, Delta={cfg.delta:g})\n"
        f"{RECON}; dotted: bisected thresholds alpha_i"
    )
    legend = {"loc": "center left", "bbox_to_anchor": (1.01, 0.5), "fontsize": 8}
    labels = {"xlabel": "alpha = n/d (samples per input dimension)", "ylabel": "overlap m_i"}
    return panels.finish(ax, legend=legend, log="x", ylim=(-0.03, 1.03), title=title, **labels).figure


@FIGURES.add
def plot_scaling(results: dict, cfg: Config):
    """eps_BO vs alpha per beta: fitted and predicted slopes, the finite-k continuum formula."""
    meas = measurements(results, cfg)
    sc = results["scaling"]
    fl, ref = windows(results, cfg)
    fig, ax = style.figure(figsize=(8.5, 5.6))
    for b, beta in enumerate(cfg.betas):
        col = COLORS.get(beta, f"C{b}")
        al, eps, de = (np.asarray(sc[f][b], np.float64) for f in ("alpha", "eps", "delta_eff"))
        label = f"beta={beta:g}: eps_BO (fitted slopes {meas['slope_fl'][b]:.3f} | {meas['slope_ref'][b]:.3f})"
        ax.loglog(al, eps, color=col, lw=2.5, alpha=0.75, label=label)
        ax.loglog(al, np.maximum(sc["k_c"][b], 1) * de / al, color=col, lw=1, ls=":")
        if fl[b].any():
            ax.loglog(al[fl[b]], asymptotic_eps(al[fl[b]], beta, cfg.k, cfg.delta), color="k", lw=1, ls="-.")
        for mask, slope in ((fl[b], 0.5 / beta - 1.0), (ref[b], -1.0)):
            if mask.any():  # the predicted slope through the curve's point at the window's geometric centre, x1.6
                x0 = np.sqrt(al[mask][0] * al[mask][-1])
                y0 = 1.6 * np.exp(np.interp(np.log(x0), np.log(al), np.log(eps)))
                xs = np.geomspace(al[mask][0] / 3, al[mask][-1] * 3, 10)
                ax.plot(xs, y0 * (xs / x0) ** slope, **style.prediction(color=col))
    panels.prediction_key(ax, "predicted slopes 1/(2beta)-1, then -1 (offset x1.6)")
    ax.plot([], [], color="0.3", lw=1, ls=":", label="k_c Delta_eff / alpha  (= k_c d Delta_eff / n)")
    ax.plot([], [], color="k", lw=1, ls="-.", label="continuum finite-k formula (fit window; predicts the slopes)")
    title = f"Bayes-optimal scaling laws (k={cfg.k}, Delta={cfg.delta:g}); {RECON}"
    xlabel, ylabel = "alpha = n/d  (n samples at fixed d)", "Bayes-optimal error eps_BO"
    legend = {"fontsize": 8, "loc": "lower left"}
    return panels.finish(ax, legend=legend, xlabel=xlabel, ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_effective_width(results: dict, cfg: Config):
    """k_c vs alpha from the solver against its closed form."""
    sc = results["scaling"]
    fig, ax = style.figure(figsize=(8, 5))
    for b, beta in enumerate(cfg.betas):
        col = COLORS.get(beta, f"C{b}")
        al, kc = np.asarray(sc["alpha"][b], np.float64), np.asarray(sc["k_c"][b])
        ax.loglog(al[kc > 0], kc[kc > 0], color=col, lw=2.5, alpha=0.7, label=f"beta={beta:g}: solver k_c")
        kcf = np.asarray(ts.k_c_closed_form(al, beta, cfg.k, np.asarray(sc["delta_eff"][b], np.float64)))
        ax.loglog(al, np.maximum(kcf, 0.5), **style.prediction(color=col))
    panels.prediction_key(ax, "(alpha / (c_IT Delta_eff Z))^(1/(2 beta)), capped at k")
    ax.axhline(cfg.k, color="0.5", lw=1, label=f"k = {cfg.k} (refinement above)")
    title = f"Effective width grows as n^(1/(2 beta)) until k_c = k; {RECON}"
    ylabel = "effective width k_c (features with m_i > 1/2)"
    return panels.finish(ax, legend=8, xlabel="alpha = n/d", ylabel=ylabel, ylim=(0.7, 2 * cfg.k), title=title).figure


@FIGURES.add
def plot_reference(results: dict, cfg: Config):
    """The solver against the independent float64 multi-start reference."""
    rf = results["reference"]
    fig, ax = style.figure(figsize=(8, 5))
    ra, eps_ref, eps_solver, multi = (np.asarray(rf[f]) for f in ("alpha", "eps_ref", "eps_solver", "coexist"))
    ax.loglog(ra, eps_ref, **style.prediction(), label="independent float64 reference (multi-start)")
    label = f"ts.solve (float32), max rel diff {largest_difference(eps_solver, eps_ref, relative='each'):.1e}"
    ax.loglog(ra, eps_solver, "o", ms=4, mfc="none", color="tab:blue", label=label)
    label = "alphas where the solver found >= 2 self-consistent points (largest Phi kept)"
    ax.loglog(ra[multi], eps_ref[multi], "x", color="tab:red", ms=7, label=label)
    title = (
        f"Global maximiser of Phi vs an independent solver (k={cfg.ref_k}, beta={cfg.st_beta:g}, "
        f"Delta={cfg.st_delta:g}; reconstruction)"
    )
    return panels.finish(ax, legend=8, xlabel="alpha = n/d", ylabel="Bayes error eps_BO", title=title).figure


@FIGURES.add
def plot_amp(results: dict, cfg: Config):
    """AMP on sampled spiked cubic tensors: MSE vs c over seeds against 1 - m+(c)."""
    c, mse = (np.asarray(results["amp"][f], np.float64) for f in ("c", "mse"))
    fig, ax = style.figure(figsize=(8, 5))
    cc = np.geomspace(c[0], c[-1], 300)
    label = f"AMP on sampled tensors, n={cfg.amp_n}: mean MSE, 95% CI over {mse.shape[0]} seeds"
    pred_label = "1 - m+(c): learned branch (ends at the spinodal c = 4/3, jump to MSE 1)"
    branch = np.where(cc >= 4 / 3, 1 - np.asarray(ts.m_plus(cc)), 1.0)
    panels.measured_vs_predicted(ax, c, mse, branch, pred_x=cc, color="tab:blue", label=label, pred_label=pred_label)
    ax.plot(np.broadcast_to(c, mse.shape).ravel(), mse.ravel(), ".", ms=4, color="tab:blue", alpha=0.3)
    ax.axvline(4 / 3, color="0.5", ls=":", lw=1, label="spinodal c = 4/3")
    ax.axvline(ts.C_IT, color="0.3", ls="-.", lw=1, label=f"c_IT = {ts.C_IT:.4f} (Bayes-optimal jump)")
    title = (
        f"AMP on data (spiked cubic tensor = the reconstruction's per-feature channel), {cfg.amp_iters} iterations "
        f"from overlap {cfg.amp_m0:g}"
    )
    xlabel = "per-feature SNR c = alpha a_i^2 / Delta_eff"
    return panels.finish(ax, legend=8, log="xy", xlabel=xlabel, ylabel="MSE (1 - overlap)", title=title).figure


@FIGURES.add
def plot_student(results: dict, cfg: Config):
    """MAP students (random init / warm start at the teacher) vs eps_BO as d grows."""
    ds = np.asarray(results["student"]["d"])
    fig, ax = style.figure(figsize=(8, 5))
    names = ("random init, early-stopped (validation)", "warm start at the teacher, trained to the end")
    for r, name, col, off in zip(student_errors(results), names, ("tab:blue", "tab:orange"), (0.97, 1.03), strict=True):
        label = f"MAP/Adam student, {name} (mean, 95% CI, {r.shape[1]} seeds)"  # r: (d, seeds)
        panels.errorbars(ax, ds * off, r, axis=1, show_seeds={"ms": 4}, fmt="o-", color=col, label=label)
    ax.axhline(1.0, **style.prediction(linewidth=1), label="eps_BO (reconstruction, d -> infinity)")
    ax.axhline(1.5, color="0.6", lw=0.8, ls=":", label="'small gap' (within 50%)")
    title = (
        f"The Adam gap: alpha={cfg.st_alpha:g}, beta={cfg.st_beta:g}, Delta={cfg.st_delta:g}, teacher from the "
        "Gaussian prior"
    )
    xlabel = "input dimension d (k = d/4 features, n = alpha d)"
    legend = {"fontsize": 8, "loc": "upper center", "bbox_to_anchor": (0.5, -0.12), "ncol": 2}  # below: off the data
    panels.finish(ax, legend=legend, log="xy", xlabel=xlabel, ylabel="test error / eps_BO", title=title)
    return panels.integer_ticks(ax, ds).figure  # only the measured d are labelled


plot = FIGURES.plot
