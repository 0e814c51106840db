"""river_valley: the figures, ``plot`` (what is measured: the package docstring)."""

from __future__ import annotations

from typing import cast

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.sims.core import panels, style
from jaxwb.sims.river_valley.config import Config
from jaxwb.theory import river_valley as rv

FIGURES = panels.Figures()
THICK = {"lw": 3.5, "alpha": 0.45}  # a measured curve under its dashed closed form
EDGES = (("hb", "o", "tab:blue", "HB", "2(1+beta)"), ("nesterov", "s", "tab:red", "Nesterov", "2(1+beta)/(1+2beta)"))


@FIGURES.add
def plot_trajectories(results: dict, cfg: Config):
    """GD vs HB on the curved valley from random starts, and their losses."""
    lam, mu, tr = cfg.lam, cfg.mu, results["trajectories"]
    fig, (ax, ax2) = style.figure(1, 2, figsize=(11, 4.4))
    X, Y = np.meshgrid(np.linspace(-3.5, 1.0, 300), np.linspace(-2.0, 2.0, 240))
    curved = rv.curved_valley(mu * 10, lam, cfg.curved_a, cfg.curved_k)
    Z = jax.vmap(rv.valley_loss, (0, None))(jnp.stack([X.ravel(), Y.ravel()], -1), curved).reshape(X.shape)
    ax.contour(X, Y, np.log10(np.asarray(Z) + 1e-3), levels=18, colors="0.75", linewidths=0.6)
    arms = {
        "gd_safe": ("tab:blue", "GD, lr = 0.9 x 2/lam (stable)"),
        "gd_aggressive": ("tab:red", "GD, aggressive lr (diverges)"),
        "hb_aggressive": ("tab:green", f"heavy ball beta={cfg.traj_beta}, same aggressive lr"),
    }
    for name, (color, what) in arms.items():
        d = tr[name]
        losses = np.maximum(np.asarray(d["loss"], np.float64), 1e-12)
        for i, (th, dv) in enumerate(zip(d["theta"], d["diverged"], strict=True)):
            label = f"{what} (lr={float(d['lr']):.4f})" if i == 0 else None
            ax.plot(*(th[:12] if dv else th).T, "-", color=color, lw=0.7, alpha=0.6, label=label)
        label = f"{what}: median, min-max band over {len(losses)} starts"
        panels.quantile_band(ax2, np.arange(losses.shape[1]), losses, color=color, label=label)
    ax.plot(*tr["starts"].T, "k.", ms=5, label=f"{len(tr['starts'])} random starts (seeded)")
    ax.plot(0, 0, "k*", ms=10, label="minimum x* = 0")
    title = f"Curved valley lam={lam:g}, mu={10 * mu:g}, y = {cfg.curved_a:g} sin({cfg.curved_k:g} x)"
    labels = {"xlabel": "river coordinate x", "ylabel": "valley coordinate y", "title": title}
    panels.finish(ax, legend={"loc": "lower right"}, xlim=(-3.5, 1.0), ylim=(-2.0, 2.0), **labels)
    title = "Loss (GD at the aggressive lr blows up and stops)"
    return panels.finish(ax2, legend=7, log="y", xlabel="step", ylabel="loss", title=title).figure


@FIGURES.add
def plot_phase_diagram(results: dict, cfg: Config):
    """(lr, beta) map of river progress and divergence, with the theory boundary."""
    lam, mu, ph = cfg.lam, cfg.mu, results["phase"]
    lrs, betas = ph["lr"], ph["beta"]
    fig, ax = style.figure(figsize=(7.6, 5.2))
    bfine = np.linspace(0, cfg.beta_max, 200)
    edge = (bfine, np.asarray(rv.hb_threshold(lam, bfine)))
    labels = {"edge_label": "theory: divergence at lr = 2(1+beta)/lam"}
    labels["colorbar_label"] = "river progress 1 - |x_T - x*| / |x_0 - x*|"
    panels.stability_map(ax, betas, lrs, ph["progress"], unstable=ph["diverged"], edge=edge, vmin=0, vmax=1, **labels)
    label = "river mode overdamped below lr = (1-sqrt beta)^2/mu"
    ax.plot(bfine, (1 - np.sqrt(bfine)) ** 2 / mu, color="white", ls=":", lw=1.4, label=label)
    gd = rv.hb_guidance(lam, mu)
    label = f"guidance: beta={float(gd.beta):.2f}, lr={float(gd.lr):.3f}"
    ax.plot(float(gd.beta), float(gd.lr), marker="*", color="orange", ms=14, ls="none", label=label)
    title = (
        f"Heavy ball on a straight valley (lam={lam:g}, mu={mu:g}): river progress after {cfg.phase_steps} steps\n"
        "(grey = diverged; progress uses the max distance over the last 10%)"
    )
    labels, legend = {"xlabel": "momentum beta", "ylabel": "learning rate lr"}, {"loc": "lower left", "fontsize": 8}
    return panels.finish(ax, legend=legend, log="y", ylim=(lrs[0], lrs[-1]), **labels, title=title).figure


@FIGURES.add
def plot_river_progress(results: dict, cfg: Config):
    """Distance along the river vs steps, straight and high-dimensional valleys, closed forms dashed."""
    lam, mu, pr = cfg.lam, cfg.mu, results["progress"]
    fig, (ax, ax2) = style.figure(1, 2, figsize=(11, 4.4))
    for b, lr, distance, theory in zip(pr["beta"], pr["lr"], pr["distance"], pr["theory"], strict=True):
        name = "GD" if b == 0 else f"HB beta={b:g}"
        (line,) = ax.semilogy(distance, **THICK, label=f"{name}, lr={lr:.4f} (0.9 x threshold)")
        ax.semilogy(theory, **style.prediction(color=line.get_color()))
    panels.prediction_key(ax, "closed form A r1^t + B r2^t (river mode)")
    title = f"Straight valley: progress along the river (lam={lam:g}, mu={mu:g})"
    panels.finish(ax, legend=8, xlabel="step", ylabel="distance along the river |x_t - x*|", title=title)
    hd = results["high_dim"]
    for label, color, name in (("gd", "tab:blue", "GD"), ("hb", "tab:green", f"HB beta={cfg.traj_beta:g}")):
        d = hd[label]["distance"]
        steps = np.arange(d.shape[1])
        lab = f"{name} (median of {d.shape[0]} seeds, 10-90% band)"
        panels.quantile_band(ax2, steps, d, (0.1, 0.5, 0.9), color=color, **THICK, fill_alpha=0.25, label=lab)
        ax2.plot(steps, hd[label]["theory"], **style.prediction(color=color))
    panels.prediction_key(ax2, "closed form (river mode; decoupled, so seed-independent)")
    title = f"High-dimensional valley: {cfg.hd_dim} curvatures in [{cfg.hd_lam_min:g}, {lam:g}]"
    return panels.finish(ax2, legend=8, yscale="log", xlabel="step", ylabel="|x_t - x*|", title=title).figure


@FIGURES.add
def plot_stability_boundary(results: dict, cfg: Config):
    """Measured stable lr vs beta for HB and Nesterov against the closed forms; Polyak's rate."""
    lam, b = cfg.lam, results["boundary"]
    fig, (ax, ax2) = style.figure(1, 2, figsize=(12.5, 4.6))
    bfine, beta = np.linspace(0, 0.99, 200), b["beta"]
    for key, fmt, color, name, formula in EDGES:
        threshold = lam * np.asarray(getattr(rv, f"{key}_threshold")(lam, bfine))
        labels = {"label": f"measured {name}", "pred_label": f"theory {name}: lr lam = {formula}"}
        panels.measured_vs_predicted(ax, beta, lam * b[key], threshold, pred_x=bfine, fmt=fmt, color=color, **labels)
    ax.axhline(2.0, color="0.5", lw=1, label="GD: lr lam = 2")
    title = f"Stability boundary (bisection, {cfg.boundary_steps} steps per test)"
    panels.finish(ax, xlabel="momentum beta", ylabel="largest stable lr x lam (dimensionless)", title=title)
    p = results["polyak"]
    norms, cf = np.asarray(p["norms"], np.float64), np.asarray(p["norms_theory"])
    steps, r = np.arange(len(norms)), float(p["rate_theory"])
    ax2.plot(steps, norms, **THICK, color="tab:purple", label="simulated ||theta_t|| (float32)")
    ax2.plot(steps, cf, **style.prediction(color="tab:purple"), label="closed form: double roots, r^t (1 + (1 -+ r) t)")
    ax2.plot(steps, cf[0] * r**steps, color="0.5", ls=":", lw=1.2, label=f"r^t, r = (sqrt k-1)/(sqrt k+1) = {r:.4f}")
    title = (
        f"Polyak-optimal HB on [mu, lam]: lr={float(p['lr']):.4g}, beta={float(p['beta']):.4f}\n1 - rate over "
        f"[T/2, T]: measured {1 - float(p['rate_measured']):.5f}, closed form {1 - float(p['rate_closed_form']):.5f}, "
        f"1 - r = {1 - r:.5f}"
    )
    return panels.finish(ax2, legend=8, log="y", xlabel="step", ylabel="||theta_t - theta*||", title=title).figure


@FIGURES.add
def plot_curved_river(results: dict, cfg: Config):
    """Distance covered along a curved river vs steps (every start), and the mean speed vs the closed form."""
    c, a, k = results["curved_river"], cfg.curved_a, cfg.curved_k
    fig, (ax, ax2) = style.figure(1, 2, figsize=(12, 4.4))
    arms = (("gd", "tab:blue", 0.0), ("hb", "tab:green", cfg.traj_beta))
    for label, color, b in arms:
        d = c[label]["distance"]
        t = np.arange(d.shape[1])
        lines = ax.plot(t, d.T, color=color, lw=2.5, alpha=0.35)
        lines[0].set_label(f"{label.upper()} (beta={b:g}), {d.shape[0]} starts")
        v = float(cast(float, rv.curved_river_speed(float(c[label]["lr"]), 1.0, b, a, k)))
        ax.plot(t, v * t, **style.prediction(color=color))
    panels.prediction_key(ax, "t lr/(1-beta)/(1 + a^2 k^2/2) (adiabatic closed form)")
    title = f"Curved river: slope 1, floor y = {a:g} sin({k:g} x), lam = {cfg.lam:g}"
    labels = {"xlabel": "step", "ylabel": "river distance covered (x units)"}
    panels.finish(ax, legend=8, **labels, log="xy", ylim=(1e-2, None), title=title)
    # per start: speed relative to the straight river's lr g / (1 - beta), shape (starts, arms)
    flat = [float(cast(float, rv.curved_river_speed(float(c[lab]["lr"]), 1.0, b, 0.0, 0.0))) for lab, _, b in arms]
    speeds = np.stack([np.asarray(c[lab]["speed"], np.float64) for lab, _, _ in arms], axis=1)
    names = [f"{lab.upper()}\nlr={float(c[lab]['lr']):.4g}, beta={b:g}" for lab, _, b in arms]
    geo, xi = float(cast(float, rv.curved_river_speed(1.0, 1.0, 0.0, a, k))), np.arange(len(names))
    labels = {"label": "measured (95% CI over starts)", "reference_label": f"closed form 1/(1 + a^2 k^2/2) = {geo:.4f}"}
    panels.ratio_panel(ax2, xi, speeds / flat, reference=geo, ms=8, capsize=6, **labels)
    ax2.axhline(1.0, color="tab:red", ls=":", label="straight river (no geometry)")
    ax2.set_xticks(xi, names)
    mean_speed = speeds.mean(0)
    title = f"Speed relative to lr/(1-beta); HB/GD speed ratio {mean_speed[1] / mean_speed[0]:.3f}"
    labels = {"ylabel": "mean speed / (lr g/(1-beta))  (dimensionless)", "title": title}
    return panels.finish(ax2, legend=8, xlim=(-0.5, len(names) - 0.5), ylim=(geo - 0.03, 1.01), **labels).figure


plot = FIGURES.plot
