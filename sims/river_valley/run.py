"""river_valley: the simulation, ``run`` and its parts (what is measured: the package docstring)."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.sims.core.sweep import grid, sweep
from jaxwb.sims.river_valley.config import Config
from jaxwb.theory import river_valley as rv

# ---------------------------------------------------------------------------------------------------------
# Pieces of the simulation (pure, jitted through the harness sweep)
# ---------------------------------------------------------------------------------------------------------


def phase_point(row, *, valley, theta0, steps):
    traj, diverged = rv.optimize(valley, theta0, lr=row["lr"], beta=row["beta"], steps=steps, method="hb")
    # envelope over the last 10% of steps, so an oscillating iterate caught near x* does not count as arrived
    tail = rv.river_distance(traj[-max(1, steps // 10) :], valley)
    progress = 1.0 - jnp.max(tail) / rv.river_distance(theta0, valley)
    return {"progress": jnp.where(diverged, 0.0, progress), "diverged": diverged}  # diverged: 0 progress


def measured_boundary(valley, theta0, beta, *, method, steps, iters, lo=1e-4, hi=1.0):
    """Largest lr that does not diverge within ``steps`` steps, by bisection in log(lr) on [lo, hi]."""

    def diverges(lr):
        return rv.optimize(valley, theta0, lr=lr, beta=beta, steps=steps, method=method)[1]

    def body(_, bracket):
        a, b = bracket
        m = jnp.sqrt(a * b)
        bad = diverges(m)
        return jnp.where(bad, a, m), jnp.where(bad, m, b)

    a, b = jax.lax.fori_loop(0, iters, body, (jnp.asarray(lo), jnp.asarray(hi)))
    return jnp.sqrt(a * b)


def _river_speed(lr, beta, *, valley, steps, window=100):
    traj, _ = rv.optimize(valley, jnp.zeros(2), lr=lr, beta=beta, steps=steps, method="hb")
    return (traj[-window - 1, 0] - traj[-1, 0]) / window


def _hd_progress(y0, *, valley, lr, beta, steps):
    theta0 = jnp.concatenate([jnp.ones(1), y0])
    traj, diverged = rv.optimize(valley, theta0, lr=lr, beta=beta, steps=steps, method="hb")
    return rv.river_distance(traj, valley), diverged


def closed_form_distance(steps, x0, lr, lam, beta, method="hb"):
    """|x_t| for t = 0..steps from the closed-form eigen-solution (float64), shape broadcast(lr, beta) + (steps+1,).

    Independent of ``rv.optimize``: no recursion is iterated (``rv.quadratic_closed_form``)."""
    with jax.enable_x64(True):
        t = jnp.arange(steps + 1, dtype=jnp.float64)
        lr = jnp.asarray(np.asarray(lr, np.float64))[..., None]
        beta = jnp.asarray(np.asarray(beta, np.float64))[..., None]
        return np.abs(np.asarray(rv.quadratic_closed_form(t, float(x0), lr, float(lam), beta, method)))


# one compiled closed form per (shape, method) for the many-point predictions below (eager, it compiles every op)
_closed_form = jax.jit(rv.quadratic_closed_form, static_argnames=("method",))


def divergence_scale(theta0, blowup: float = 1e6) -> float:
    """The |theta| above which ``rv.optimize`` calls a run diverged: blowup (1 + max|theta0|) (its docstring)."""
    return float(blowup * (1.0 + np.max(np.abs(np.asarray(theta0, np.float64)))))


def horizon_edge(steps: int, y0: float, scale: float, lam: float, beta, lr_lo, method: str = "hb", n: int = 2048):
    """The finite-horizon stability edge: the smallest lr in [lr_lo, 1.05 lr_lo] at which the closed-form valley
    iterate (float64, ``rv.quadratic_closed_form``, no recursion iterated) exceeds ``scale`` within ``steps``
    steps, i.e. where bisection on ``rv.optimize``'s divergence flag must land. Past the asymptotic edge the
    unstable root's envelope grows geometrically, so the max over t <= steps is at t = steps - 1 or steps. Two
    passes of an ``n``-point grid (relative resolution ~(0.05 / n)^2). ``beta``, ``lr_lo``: (B,) -> (B,)."""
    beta = np.asarray(beta, np.float64)[:, None]
    lo = np.asarray(lr_lo, np.float64)[:, None]
    width = 0.05 * lo
    t = np.asarray([steps - 1, steps], np.float64)
    for _ in range(2):
        lrs = lo + width * np.linspace(0.0, 1.0, n)[None, :]  # (B, n)
        with jax.enable_x64(True):
            y = np.asarray(_closed_form(t, y0, lrs[..., None], lam, beta[..., None], method=method))
        bad = ~(np.max(np.abs(y), axis=-1) <= scale)  # inf / NaN (overflow) count as diverged
        first = np.argmax(bad, axis=1)  # the first diverging grid point (0 if none: the bracket is wrong)
        first = np.where(bad.any(axis=1), first, n - 1)
        i = np.maximum(first - 1, 0)
        lo = np.take_along_axis(lrs, i[:, None], 1)
        width = np.take_along_axis(lrs, first[:, None], 1) - lo
    return (lo + 0.5 * width)[:, 0]


def curved_starts(cfg: Config, key: jax.Array) -> jax.Array:
    """Random curved-valley starts, shape (n_seeds, 2): x ~ U(start_x_range), y = floor(x) + 0.05 + sd N(0,1)."""
    kx, ky = jax.random.split(key)
    x = jax.random.uniform(kx, (cfg.n_seeds,), minval=cfg.start_x_range[0], maxval=cfg.start_x_range[1])
    y = cfg.curved_a * jnp.sin(cfg.curved_k * x) + 0.05 + cfg.start_y_sd * jax.random.normal(ky, (cfg.n_seeds,))
    return jnp.stack([x, y], -1)


def phase_diagram(cfg: Config, straight, theta0) -> dict:
    """(lr, beta) phase diagram: one vmapped sweep over the flattened grid."""
    lrs = jnp.geomspace(*cfg.lr_range, cfg.n_lr)
    betas = jnp.linspace(0.0, cfg.beta_max, cfg.n_beta)
    g = grid(lr=lrs, beta=betas)
    phase = sweep(partial(phase_point, valley=straight, theta0=theta0, steps=cfg.phase_steps), g)
    # the closed-form prediction of every cell (float64, no recursion iterated): river progress from the mu mode,
    # divergence where the lam mode exceeds the divergence scale within the horizon
    lr2, b2 = np.meshgrid(np.asarray(lrs, np.float64), np.asarray(betas, np.float64), indexing="ij")
    with jax.enable_x64(True):
        t = np.arange(cfg.phase_steps + 1, dtype=np.float64)
        x_cf, y_cf = (
            np.abs(np.asarray(_closed_form(t, x0, lr2[..., None], curv, b2[..., None], method="hb")))
            for x0, curv in ((cfg.x0, cfg.mu), (cfg.y0, cfg.lam))
        )
    tail = np.max(x_cf[..., -max(1, cfg.phase_steps // 10) :], axis=-1)
    return {
        "lr": lrs,
        "beta": betas,
        "progress": phase["progress"].reshape(cfg.n_lr, cfg.n_beta),
        "diverged": phase["diverged"].reshape(cfg.n_lr, cfg.n_beta),
        "progress_theory": 1.0 - tail / abs(cfg.x0),
        "diverged_theory": ~(np.max(y_cf[..., 1:], axis=-1) <= divergence_scale(theta0)),
    }


def stability_boundary(cfg: Config, straight, theta0) -> dict:
    """Stability boundary by bisection, vmapped over beta, for HB and Nesterov."""
    bb = jnp.asarray(cfg.boundary_betas)
    boundary = {"beta": bb}
    for method in ("hb", "nesterov"):
        fn = partial(
            measured_boundary, straight, theta0, method=method, steps=cfg.boundary_steps, iters=cfg.bisection_iters
        )
        boundary[method] = jax.jit(jax.vmap(fn))(bb)
        edge = rv.hb_threshold(cfg.lam, bb) if method == "hb" else rv.nesterov_threshold(cfg.lam, bb)
        boundary[f"{method}_horizon"] = horizon_edge(
            cfg.boundary_steps, cfg.y0, divergence_scale(theta0), cfg.lam, bb, edge, method
        )
    return boundary


def river_speed(cfg: Config, straight, theta0, river) -> dict:
    """Largest stable river speed on a linear river, at speed_margin x the *measured* boundary."""
    sb = jnp.asarray(cfg.speed_betas)
    lr_gd = cfg.speed_margin * measured_boundary(
        straight, theta0, 0.0, method="hb", steps=cfg.boundary_steps, iters=cfg.bisection_iters
    )
    lr_hb = cfg.speed_margin * jax.vmap(
        partial(measured_boundary, straight, theta0, method="hb", steps=cfg.boundary_steps, iters=cfg.bisection_iters)
    )(sb)
    speed = partial(_river_speed, valley=river, steps=cfg.speed_steps)
    v_gd = speed(lr_gd, 0.0)
    v_hb = jax.vmap(speed)(lr_hb, sb)
    return {
        "beta": sb,
        "lr_hb": lr_hb,
        "lr_gd": lr_gd,
        "speed_hb": v_hb,
        "speed_gd": v_gd,
        "gain": v_hb / v_gd,
    }


def linear_transient(cfg: Config, river) -> dict:
    """Exact linear-river transient vs simulation."""
    t = jnp.arange(cfg.speed_steps + 1)
    lr_t, beta_t = 0.5 * rv.hb_threshold(cfg.lam, cfg.traj_beta), cfg.traj_beta
    sim, _ = rv.optimize(river, jnp.zeros(2), lr=lr_t, beta=beta_t, steps=cfg.speed_steps, method="hb")
    return {"t": t, "simulated": sim[:, 0], "formula": rv.linear_river_transient(t, 0.0, lr_t, 1.0, beta_t)}


def river_progress(cfg: Config, straight, theta0) -> dict:
    """River progress curves on the straight valley at 0.9 x each method's threshold, with the exact 1-D theory."""
    pb = jnp.asarray((0.0, *cfg.progress_betas))
    lr_p = 0.9 * rv.hb_threshold(cfg.lam, pb)
    curves = jax.vmap(
        lambda lr, b: rv.optimize(straight, theta0, lr=lr, beta=b, steps=cfg.progress_steps, method="hb")[0]
    )(lr_p, pb)
    theory = closed_form_distance(cfg.progress_steps, cfg.x0, lr_p, cfg.mu, pb)
    return {"beta": pb, "lr": lr_p, "distance": jnp.abs(curves[..., 0]), "theory": theory}


def high_dim_progress(cfg: Config, key: jax.Array) -> dict:
    """High-dimensional valley: a spectrum of valley curvatures, random valley offsets (one per seed, vmapped)."""
    lams = rv.valley_spectrum(cfg.hd_dim, cfg.hd_lam_min, cfg.lam)
    hd = rv.high_dim_valley(cfg.mu, lams)
    y0 = cfg.y0 * jax.random.normal(key, (cfg.n_seeds, cfg.hd_dim))
    hd_out = {}
    for label, b in (("gd", 0.0), ("hb", cfg.traj_beta)):
        fn = partial(_hd_progress, valley=hd, lr=0.9 * rv.hb_threshold(cfg.lam, b), beta=b, steps=cfg.progress_steps)
        dist, div = sweep(fn, y0)
        hd_out[label] = {
            "distance": dist,
            "diverged": div,
            "theory": closed_form_distance(cfg.progress_steps, 1.0, fn.keywords["lr"], cfg.mu, b),
        }
    return hd_out


def curved_trajectories(cfg: Config, key: jax.Array) -> dict:
    """GD vs HB trajectories on a curved valley at an aggressive lr, from random starts."""
    lam = cfg.lam
    curved = rv.curved_valley(cfg.mu * 10, lam, cfg.curved_a, cfg.curved_k)
    lam_eff = lam * (1.0 + (cfg.curved_a * cfg.curved_k) ** 2)  # largest curvature across the curved floor
    lr_aggr = 0.8 * rv.hb_threshold(lam_eff, cfg.traj_beta)
    starts = curved_starts(cfg, key)
    tr: dict[str, Any] = {"starts": starts}
    for label, lr, b in (
        ("gd_safe", 0.9 * rv.gd_threshold(lam_eff), 0.0),
        ("gd_aggressive", lr_aggr, 0.0),
        ("hb_aggressive", lr_aggr, cfg.traj_beta),
    ):
        traj, div = jax.vmap(
            lambda s0, lr=lr, b=b: rv.optimize(curved, s0, lr=lr, beta=b, steps=cfg.traj_steps, method="hb")
        )(starts)
        loss = jax.vmap(jax.vmap(rv.valley_loss, (0, None)), (0, None))(traj, curved)
        tr[label] = {"theta": traj, "diverged": div, "lr": jnp.asarray(lr), "loss": loss}
    return tr


def curved_river_speed(cfg: Config, key: jax.Array) -> dict:
    """Speed along a curved river (``rv.curved_river``: slope 1, floor a sin(k x)) for GD at 0.9 x 2/lam_eff and
    HB at the aggressive lr 0.8 x 2(1+beta)/lam_eff, from random starts (phase on the floor uniform over a
    period, valley offset 0.05 + start_y_sd N(0, 1)). Per start: the river distance covered over the largest
    whole number of floor periods after ``curve_burn`` steps, divided by the steps it took (interpolated), so
    the mean over the floor's geometry is exact. ``speed``: (n_seeds,) per method; ``distance``: (n_seeds,
    curve_steps + 1) for the figure."""
    lam, a, k = cfg.lam, cfg.curved_a, cfg.curved_k
    river = rv.curved_river(1.0, lam, a, k)
    lam_eff = lam * (1.0 + (a * k) ** 2)
    period = 2 * np.pi / k
    kx, ky = jax.random.split(key)
    x0 = jax.random.uniform(kx, (cfg.n_seeds,), minval=0.0, maxval=period)
    y0 = a * jnp.sin(k * x0) + 0.05 + cfg.start_y_sd * jax.random.normal(ky, (cfg.n_seeds,))
    starts = jnp.stack([x0, y0], -1)
    out: dict[str, Any] = {"period": jnp.asarray(period)}
    for label, lr, b in (
        ("gd", 0.9 * rv.gd_threshold(lam_eff), 0.0),
        ("hb", 0.8 * rv.hb_threshold(lam_eff, cfg.traj_beta), cfg.traj_beta),
    ):
        traj, div = jax.vmap(
            lambda s0, lr=lr, b=b: rv.optimize(river, s0, lr=lr, beta=b, steps=cfg.curve_steps, method="hb")
        )(starts)
        dist = np.asarray(traj[..., 0], np.float64)
        dist = dist[:, :1] - dist  # river distance covered (x decreases down the slope)
        t = np.arange(cfg.curve_steps + 1, dtype=np.float64)
        speed = []
        for d in dist:
            d0 = d[cfg.curve_burn]
            n_per = np.floor((d[-1] - d0) / period)
            t_end = np.interp(d0 + n_per * period, d[cfg.curve_burn :], t[cfg.curve_burn :])
            speed.append(n_per * period / (t_end - cfg.curve_burn) if n_per >= 1 else np.nan)
        out[label] = {"lr": jnp.asarray(lr), "speed": np.asarray(speed), "distance": dist, "diverged": div}
    return out


def polyak_rate(cfg: Config, straight, theta0) -> dict:
    """Polyak's optimal heavy ball on [mu, lam]: measured rate vs (sqrt k - 1)/(sqrt k + 1)."""
    mu, lam = cfg.mu, cfg.lam
    lr_o, beta_o, rate_o = rv.hb_optimal_params(mu, lam)
    traj, _ = rv.optimize(straight, theta0, lr=lr_o, beta=beta_o, steps=cfg.polyak_steps, method="hb")
    norms = jnp.linalg.norm(traj, axis=-1)
    half = cfg.polyak_steps // 2
    # closed form of both modes (river mu from x0, valley lam from y0), float64, no recursion iterated
    cf = np.hypot(
        closed_form_distance(cfg.polyak_steps, cfg.x0, lr_o, mu, beta_o),
        closed_form_distance(cfg.polyak_steps, cfg.y0, lr_o, lam, beta_o),
    )
    return {
        "rate_theory": rate_o,
        "rate_measured": (norms[-1] / norms[half]) ** (1.0 / half),
        "rate_closed_form": (cf[-1] / cf[half]) ** (1.0 / half),
        "norms": norms,
        "norms_theory": cf,
        "lr": lr_o,
        "beta": beta_o,
    }


def run(cfg: Config, *, key: jax.Array) -> dict:
    straight = rv.straight_valley(cfg.mu, cfg.lam)
    river = rv.linear_river(1.0, cfg.lam)
    theta0 = jnp.array([cfg.x0, cfg.y0])
    k_hd, k_start = jax.random.split(key)
    return {
        "phase": phase_diagram(cfg, straight, theta0),
        "boundary": stability_boundary(cfg, straight, theta0),
        "river_speed": river_speed(cfg, straight, theta0, river),
        "transient": linear_transient(cfg, river),
        "progress": river_progress(cfg, straight, theta0),
        "high_dim": high_dim_progress(cfg, k_hd),
        "trajectories": curved_trajectories(cfg, k_start),
        "curved_river": curved_river_speed(cfg, jax.random.fold_in(key, 2)),
        "polyak": polyak_rate(cfg, straight, theta0),
    }
