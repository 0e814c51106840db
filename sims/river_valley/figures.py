"""river_valley: the figures, ``plot`` (what is measured: the package docstring)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.sims.core import style
from jaxwb.sims.core.claims import mean_ci
from jaxwb.sims.river_valley.config import Config
from jaxwb.theory import river_valley as rv

# ---------------------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------------------


def plot_trajectories(results: dict, cfg: Config):
    """GD vs HB on the curved valley from random starts, and their losses."""
    lam, mu = cfg.lam, cfg.mu
    tr = results["trajectories"]
    fig, (ax, ax2) = style.figure(1, 2, figsize=(11, 4.4))
    xs = np.linspace(-3.5, 1.0, 300)
    ys = np.linspace(-2.0, 2.0, 240)
    X, Y = np.meshgrid(xs, ys)
    curved = rv.curved_valley(mu * 10, lam, cfg.curved_a, cfg.curved_k)
    Z = jax.vmap(rv.valley_loss, (0, None))(jnp.stack([X.ravel(), Y.ravel()], -1), curved).reshape(X.shape)
    ax.contour(X, Y, np.log10(np.asarray(Z) + 1e-3), levels=18, colors="0.75", linewidths=0.6)
    labels = {
        "gd_safe": "GD, lr = 0.9 x 2/lam (stable)",
        "gd_aggressive": "GD, aggressive lr (diverges)",
        "hb_aggressive": f"heavy ball beta={cfg.traj_beta}, same aggressive lr",
    }
    for name, color in zip(labels, ("tab:blue", "tab:red", "tab:green"), strict=True):
        d = tr[name]
        ths, divs = np.asarray(d["theta"]), np.asarray(d["diverged"])
        losses = np.maximum(np.asarray(d["loss"], np.float64), 1e-12)
        for i, (th, dv) in enumerate(zip(ths, divs, strict=True)):
            n_show = len(th) if not bool(dv) else min(len(th), 12)
            ax.plot(
                th[:n_show, 0],
                th[:n_show, 1],
                "-",
                color=color,
                lw=0.7,
                alpha=0.6,
                label=f"{labels[name]} (lr={float(d['lr']):.4f})" if i == 0 else None,
            )
        steps = np.arange(losses.shape[1])
        lo, med, hi = np.percentile(losses, [0, 50, 100], axis=0)
        ax2.semilogy(steps, med, color=color, label=f"{labels[name]}: median, min-max band over {len(losses)} starts")
        ax2.fill_between(steps, lo, hi, color=color, alpha=0.2)
    st = np.asarray(tr["starts"])
    ax.plot(st[:, 0], st[:, 1], "k.", ms=5, label=f"{len(st)} random starts (seeded)")
    ax.plot(0, 0, "k*", ms=10, label="minimum x* = 0")
    ax.set(
        xlim=(-3.5, 1.0),
        ylim=(-2.0, 2.0),
        xlabel="river coordinate x",
        ylabel="valley coordinate y",
        title=f"Curved valley lam={lam:g}, mu={10 * mu:g}, y = {cfg.curved_a:g} sin({cfg.curved_k:g} x)",
    )
    ax.legend(loc="lower right")
    ax2.set(xlabel="step", ylabel="loss", title="Loss (GD at the aggressive lr blows up and stops)")
    ax2.legend(fontsize=7)
    return fig


def plot_phase_diagram(results: dict, cfg: Config):
    """(lr, beta) map of river progress and divergence, with the theory boundary."""
    lam, mu = cfg.lam, cfg.mu
    ph = results["phase"]
    lrs, betas = np.asarray(ph["lr"]), np.asarray(ph["beta"])
    prog = np.where(np.asarray(ph["diverged"]), np.nan, np.asarray(ph["progress"]))
    fig, ax = style.figure(figsize=(7.6, 5.2))
    mesh = ax.pcolormesh(betas, lrs, np.ma.masked_invalid(prog), shading="nearest", cmap="viridis", vmin=0, vmax=1)
    div = np.asarray(ph["diverged"]).astype(float)
    ax.pcolormesh(betas, lrs, np.ma.masked_where(div < 0.5, div), shading="nearest", cmap="Greys", vmin=0, vmax=1.4)
    bfine = np.linspace(0, cfg.beta_max, 200)
    ax.plot(
        bfine,
        np.asarray(rv.hb_threshold(lam, bfine)),
        **style.PREDICTION,
        label="theory: divergence at lr = 2(1+beta)/lam",
    )
    ax.plot(
        bfine,
        (1 - np.sqrt(bfine)) ** 2 / mu,
        color="white",
        ls=":",
        lw=1.4,
        label="river mode overdamped below lr = (1-sqrt beta)^2/mu",
    )
    gd = rv.hb_guidance(lam, mu)
    ax.plot(
        float(gd.beta),
        float(gd.lr),
        marker="*",
        color="orange",
        ms=14,
        ls="none",
        label=f"guidance: beta={float(gd.beta):.2f}, lr={float(gd.lr):.3f}",
    )
    ax.set(
        yscale="log",
        ylim=(lrs[0], lrs[-1]),
        xlabel="momentum beta",
        ylabel="learning rate lr",
        title=f"Heavy ball on a straight valley (lam={lam:g}, mu={mu:g}): river progress after "
        f"{cfg.phase_steps} steps\n(grey = diverged; progress uses the max distance over the last 10%)",
    )
    fig.colorbar(mesh, ax=ax, label="river progress 1 - |x_T - x*| / |x_0 - x*|")
    ax.legend(loc="lower left", fontsize=8)
    return fig


def plot_river_progress(results: dict, cfg: Config):
    """Distance along the river vs steps, straight and high-dimensional valleys, closed forms dashed."""
    lam, mu = cfg.lam, cfg.mu
    pr = results["progress"]
    fig, (ax, ax2) = style.figure(1, 2, figsize=(11, 4.4))
    for i, (b, lr) in enumerate(zip(np.asarray(pr["beta"]), np.asarray(pr["lr"]), strict=True)):
        name = "GD" if b == 0 else f"HB beta={b:g}"
        (line,) = ax.semilogy(
            np.asarray(pr["distance"][i]), lw=3.5, alpha=0.45, label=f"{name}, lr={lr:.4f} (0.9 x threshold)"
        )
        ax.semilogy(np.asarray(pr["theory"][i]), **style.prediction(color=line.get_color()))
    ax.plot([], [], **style.PREDICTION, label="closed form A r1^t + B r2^t (river mode)")
    ax.set(
        xlabel="step",
        ylabel="distance along the river |x_t - x*|",
        title=f"Straight valley: progress along the river (lam={lam:g}, mu={mu:g})",
    )
    ax.legend(fontsize=8)
    hd = results["high_dim"]
    steps = np.arange(np.asarray(hd["gd"]["distance"]).shape[1])
    for label, color, b in (("gd", "tab:blue", 0.0), ("hb", "tab:green", cfg.traj_beta)):
        d = np.asarray(hd[label]["distance"])
        lo, med, hi = np.percentile(d, [10, 50, 90], axis=0)
        name = "GD" if label == "gd" else f"HB beta={b:g}"
        ax2.semilogy(
            steps, med, color=color, lw=3.5, alpha=0.45, label=f"{name} (median of {d.shape[0]} seeds, 10-90% band)"
        )
        ax2.fill_between(steps, lo, hi, color=color, alpha=0.25)
        ax2.semilogy(steps, np.asarray(hd[label]["theory"]), **style.prediction(color=color))
    ax2.plot([], [], **style.PREDICTION, label="closed form (river mode; decoupled, so seed-independent)")
    ax2.set(
        xlabel="step",
        ylabel="|x_t - x*|",
        title=f"High-dimensional valley: {cfg.hd_dim} curvatures in [{cfg.hd_lam_min:g}, {lam:g}]",
    )
    ax2.legend(fontsize=8)
    return fig


def plot_stability_boundary(results: dict, cfg: Config):
    """Measured stable lr vs beta for HB and Nesterov against the closed forms; Polyak's rate."""
    lam = cfg.lam
    b = results["boundary"]
    fig, (ax, ax2) = style.figure(1, 2, figsize=(12.5, 4.6))
    bfine = np.linspace(0, 0.99, 200)
    ax.plot(
        bfine,
        lam * np.asarray(rv.hb_threshold(lam, bfine)),
        **style.prediction(color="tab:blue"),
        label="theory HB: lr lam = 2(1+beta)",
    )
    ax.plot(
        bfine,
        lam * np.asarray(rv.nesterov_threshold(lam, bfine)),
        **style.prediction(color="tab:red"),
        label="theory Nesterov: lr lam = 2(1+beta)/(1+2beta)",
    )
    ax.plot(np.asarray(b["beta"]), lam * np.asarray(b["hb"]), "o", color="tab:blue", label="measured HB")
    ax.plot(np.asarray(b["beta"]), lam * np.asarray(b["nesterov"]), "s", color="tab:red", label="measured Nesterov")
    ax.axhline(2.0, color="0.5", lw=1, label="GD: lr lam = 2")
    ax.set(
        xlabel="momentum beta",
        ylabel="largest stable lr x lam (dimensionless)",
        title=f"Stability boundary (bisection, {cfg.boundary_steps} steps per test)",
    )
    ax.legend()
    p = results["polyak"]
    norms, cf = np.asarray(p["norms"], np.float64), np.asarray(p["norms_theory"])
    steps = np.arange(len(norms))
    ax2.semilogy(steps, norms, lw=3.5, alpha=0.45, color="tab:purple", label="simulated ||theta_t|| (float32)")
    ax2.semilogy(
        steps, cf, **style.prediction(color="tab:purple"), label="closed form: double roots, r^t (1 + (1 -+ r) t)"
    )
    r = float(p["rate_theory"])
    ax2.semilogy(
        steps, cf[0] * r**steps, color="0.5", ls=":", lw=1.2, label=f"r^t, r = (sqrt k-1)/(sqrt k+1) = {r:.4f}"
    )
    ax2.set(
        xlabel="step",
        ylabel="||theta_t - theta*||",
        title=f"Polyak-optimal HB on [mu, lam]: lr={float(p['lr']):.4g}, beta={float(p['beta']):.4f}\n"
        f"1 - rate over [T/2, T]: measured {1 - float(p['rate_measured']):.5f}, closed form "
        f"{1 - float(p['rate_closed_form']):.5f}, 1 - r = {1 - r:.5f}",
    )
    ax2.legend(fontsize=8)
    return fig


def plot_curved_river(results: dict, cfg: Config):
    """Distance covered along a curved river vs steps (every start), and the mean speed vs the closed form."""
    c = results["curved_river"]
    a, k = cfg.curved_a, cfg.curved_k
    fig, (ax, ax2) = style.figure(1, 2, figsize=(12, 4.4))
    arms = (("gd", "tab:blue", 0.0), ("hb", "tab:green", cfg.traj_beta))
    for label, color, b in arms:
        d = np.asarray(c[label]["distance"])
        t = np.arange(d.shape[1])
        for i, row in enumerate(d):
            ax.plot(
                t,
                row,
                color=color,
                lw=2.5,
                alpha=0.35,
                label=f"{label.upper()} (beta={b:g}), {d.shape[0]} starts" if i == 0 else None,
            )
        v = float(rv.curved_river_speed(float(c[label]["lr"]), 1.0, b, a, k))
        ax.plot(t, v * t, **style.prediction(color=color))
    ax.plot([], [], **style.PREDICTION, label="t lr/(1-beta)/(1 + a^2 k^2/2) (adiabatic closed form)")
    ax.set(
        xlabel="step",
        ylabel="river distance covered (x units)",
        yscale="log",
        xscale="log",
        ylim=(1e-2, None),
        title=f"Curved river: slope 1, floor y = {a:g} sin({k:g} x), lam = {cfg.lam:g}",
    )
    ax.legend(fontsize=8)
    names, ratio, errs, speeds = [], [], [], []
    for label, _, b in arms:
        m, h, _n = mean_ci(np.asarray(c[label]["speed"], np.float64))
        lr = float(c[label]["lr"])
        flat = float(rv.curved_river_speed(lr, 1.0, b, 0.0, 0.0))  # lr g / (1 - beta): the straight river
        names.append(f"{label.upper()}\nlr={lr:.4g}, beta={b:g}")
        ratio.append(m / flat)
        errs.append(h / flat)
        speeds.append(m)
    xi = np.arange(len(names))
    ax2.errorbar(xi, ratio, yerr=errs, fmt="o", ms=8, capsize=6, color="k", label="measured (95% CI over starts)")
    geo = float(rv.curved_river_speed(1.0, 1.0, 0.0, a, k))
    ax2.axhline(geo, **style.prediction(), label=f"closed form 1/(1 + a^2 k^2/2) = {geo:.4f}")
    ax2.axhline(1.0, color="tab:red", ls=":", label="straight river (no geometry)")
    ax2.set_xticks(xi, names)
    ax2.set(
        xlim=(-0.5, len(names) - 0.5),
        ylim=(geo - 0.03, 1.01),
        ylabel="mean speed / (lr g/(1-beta))  (dimensionless)",
        title=f"Speed relative to lr/(1-beta); HB/GD speed ratio {speeds[1] / speeds[0]:.3f}",
    )
    ax2.legend(fontsize=8)
    return fig


def plot(results: dict, cfg: Config) -> dict:
    return {
        "trajectories": plot_trajectories(results, cfg),
        "phase_diagram": plot_phase_diagram(results, cfg),
        "river_progress": plot_river_progress(results, cfg),
        "stability_boundary": plot_stability_boundary(results, cfg),
        "curved_river": plot_curved_river(results, cfg),
    }
