"""zoe_grad: the hard quantizers, the Monte Carlo of the zeroth-order estimators (1) and the sigma sweep (2)."""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.pallas_kernels.quant import fp4
from jaxwb.sims.zoe_grad.config import ESTIMATORS, GRIDS, HEAVY_TAILED, MC_LAWS, Config
from jaxwb.theory import zoe_grad as zg

# ---------------------------------------------------------------------------------------------------------
# Hard quantizers for the Monte Carlo (independent of theory.zoe_grad's level tables)
# ---------------------------------------------------------------------------------------------------------


def hard_quantizer(grid: str, bits: int):
    """The hard quantizer on unit-scale levels: ``round`` clipped to +-M (INT) or the kernels' E2M1 codec."""
    if grid == "int":
        m = float(2 ** (bits - 1) - 1)
        return lambda z: jnp.clip(jnp.round(z), -m, m)
    return lambda z: fp4.e2m1_decode(fp4.e2m1_encode(z.astype(jnp.float32)))


def grid_levels(grid: str, bits: int):
    return zg.int_levels(bits) if grid == "int" else zg.e2m1_levels()


def x_grid(grid: str, bits: int, n: int):
    top = float(2 ** (bits - 1) - 1) + 1.0 if grid == "int" else 7.0
    # offset by 1/97 step so no grid point sits exactly on a level (where the uniform law's window edges touch
    # two boundaries: a measure-zero tie)
    return jnp.linspace(-top, top, n) + top / 97.0 / n


def claim_point(grid: str, sigma: float) -> float:
    """Where the point claims look: half a sigma above a boundary (0.5 on INT, 2.5 on E2M1), on the bump's flank."""
    return (0.5 if grid == "int" else 2.5) + 0.5 * sigma


def mc_means(q_fn, xs, sigma, law, estimator, key, n_seeds, n):
    """Per-seed means (and second moments) of one estimator at every x: arrays (n_seeds, len(xs))."""
    fn = zg.score_estimator if estimator == "score" else zg.two_point_estimator

    def one(k):
        g = fn(q_fn, xs, sigma, law=law, key=k, n=n)
        return jnp.mean(g, axis=0), jnp.mean(g * g, axis=0)

    return jax.lax.map(one, jax.random.split(key, n_seeds))


def smoothed_mc(q_fn, x, sigma, law, key, n_seeds, n):
    """Per-seed Monte Carlo means of the hard quantizer under the perturbation, E[Q(x + sigma u)] (eq. 2): shape
    (n_seeds, *x.shape). Draws with ``zg.sample``; the closed form it estimates is ``zg.smoothed``."""

    def one(k):
        u = zg.sample((n, *jnp.shape(x)), law, key=k)
        return jnp.mean(q_fn(x + sigma * u), axis=0)

    return jax.lax.map(one, jax.random.split(key, n_seeds))


@functools.partial(jax.jit, static_argnums=(0, 1))
def grid_estimators(grid: str, cfg: Config, key) -> dict:
    gi = GRIDS.index(grid)
    q_fn = hard_quantizer(grid, cfg.int_bits)
    lv = grid_levels(grid, cfg.int_bits)
    xs = jnp.concatenate([x_grid(grid, cfg.int_bits, cfg.n_x), jnp.asarray([claim_point(grid, cfg.sigma)])])
    g = {"x": xs, "levels": lv}
    x_c = xs[-1:]  # the claim point
    for li, law in enumerate(MC_LAWS):
        g[law] = {"closed": zg.surrogate_grad(xs, lv, cfg.sigma, law=law)}
        if law in ("gaussian", "logistic"):
            g[law]["second_moment"] = zg.score_second_moment(xs, lv, cfg.sigma, law=law)
        for ei, est in enumerate(ESTIMATORS):
            k = jax.random.fold_in(key, 100 * gi + 10 * li + ei)
            m, m2 = mc_means(q_fn, xs, cfg.sigma, law, est, k, cfg.mc_seeds, cfg.mc_samples)
            g[law][est] = m
            if est == "score" and law in ("gaussian", "logistic"):  # eq. 7 exists for these; two-point: none
                g[law]["score_m2"] = m2
            if law in HEAVY_TAILED:  # the claim point again, with heavy_samples draws per seed
                k = jax.random.fold_in(key, 1000 + 100 * gi + 10 * li + ei)
                g[law][f"{est}_claim"] = mc_means(q_fn, x_c, cfg.sigma, law, est, k, cfg.mc_seeds, cfg.heavy_samples)[
                    0
                ][:, 0]
        # the smoothed quantizer itself (the forward of the smoothed objective), at the claim point
        k = jax.random.fold_in(key, 100 * gi + 10 * li + 9)
        g[law]["smoothed"] = zg.smoothed(x_c, lv, cfg.sigma, law=law)
        g[law]["smoothed_mc"] = smoothed_mc(q_fn, x_c, cfg.sigma, law, k, cfg.mc_seeds, cfg.mc_samples)
    # the uniform law: degenerate edge estimator at the Monte Carlo sigma and at the STE width
    g["uniform"] = {}
    for tag, s in (("sigma", cfg.sigma), ("ste", zg.STE_SIGMA)):
        g["uniform"][f"closed_{tag}"] = zg.surrogate_grad(xs, lv, s, law="uniform")
        g["uniform"][f"edge_{tag}"] = zg.two_point_estimator(q_fn, xs, s, law="uniform", key=key, n=1)[0]
    return g


def run_estimators(cfg: Config, key) -> dict:
    return {grid: grid_estimators(grid, cfg, key) for grid in GRIDS}


@functools.partial(jax.jit, static_argnums=0)
def run_sweep(cfg: Config, key) -> dict:
    """The closed-form surrogate at a level and a boundary of a wide INT-8 grid across ``cfg.sweep_sigmas``, with
    the Monte Carlo mean of the two-point estimator (eq. 5, hard ``round``) at every sigma: concentration on the
    boundaries as sigma -> 0, flat (STE-like) as sigma grows. Per law: ``level``/``boundary`` (n_sigma,),
    ``level_mc``/``boundary_mc`` (mc_seeds, n_sigma) with mc_samples // 4 draws per seed; for the laws of
    ``HEAVY_TAILED`` also ``boundary_claim`` (smallest sigma) and ``level_claim`` (largest sigma), (mc_seeds,) with
    heavy_samples draws per seed: what the claims read."""
    lv = zg.int_levels(8)  # 255 levels: the centre is far from the clip ends
    q_fn = hard_quantizer("int", 8)
    sig = jnp.asarray(cfg.sweep_sigmas, jnp.float32)
    xs = jnp.asarray([0.0, 0.5], jnp.float32)  # a level, a boundary
    n = max(1, cfg.mc_samples // 4)
    out: dict[str, Any] = {"sigmas": sig}
    for li, law in enumerate(MC_LAWS):
        closed = jax.vmap(lambda s, law=law: zg.surrogate_grad(xs, lv, s, law=law))(sig)  # (n_sigma, 2)

        def per_sigma(s, k, law=law):
            return mc_means(q_fn, xs, s, law, "two_point", k, cfg.mc_seeds, n)[0]  # (mc_seeds, 2)

        keys = jax.random.split(jax.random.fold_in(key, li), len(cfg.sweep_sigmas))
        mc = jax.lax.map(lambda a: per_sigma(*a), (sig, keys))  # (n_sigma, mc_seeds, 2)
        out[law] = {
            "level": closed[:, 0],
            "boundary": closed[:, 1],
            "level_mc": mc[:, :, 0].T,
            "boundary_mc": mc[:, :, 1].T,
        }
        if law in HEAVY_TAILED:  # the two claimed points again, with heavy_samples draws per seed
            i_min, i_max = int(np.argmin(cfg.sweep_sigmas)), int(np.argmax(cfg.sweep_sigmas))
            for at, i, x in (("boundary", i_min, 1), ("level", i_max, 0)):
                k = jax.random.fold_in(key, 100 + 10 * li + x)
                m = mc_means(q_fn, xs[x : x + 1], sig[i], law, "two_point", k, cfg.mc_seeds, cfg.heavy_samples)[0]
                out[law][f"{at}_claim"] = m[:, 0]
    # curves for the figure
    curves = {}
    for grid in GRIDS:
        lvg = grid_levels(grid, cfg.int_bits)
        xg = x_grid(grid, cfg.int_bits, 801)
        curves[grid] = {
            "x": xg,
            "g": jax.vmap(lambda s, lvg=lvg, xg=xg: zg.surrogate_grad(xg, lvg, s, law="gaussian"))(sig),
        }
    out["curves"] = curves
    return out
