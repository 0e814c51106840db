"""Benchmark: the jitted, vmapped Monte Carlo against a NumPy loop over seeds (``workbench bench
interpolation``)."""

from __future__ import annotations

from functools import partial
from typing import cast

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.sims.core.sweep import sweep
from jaxwb.sims.core.timing import BenchRow, time_call
from jaxwb.sims.interpolation.config import PRESETS
from jaxwb.sims.interpolation.rows import mc_row
from jaxwb.theory import interpolation as ip


def _to32(tree):
    return jax.tree.map(
        lambda a: jnp.asarray(np.asarray(a), jnp.float32) if np.asarray(a).dtype.kind == "f" else a, tree
    )


# ---------------------------------------------------------------------------------------------------------
# Benchmark: vmapped multi-seed Monte Carlo vs a NumPy loop over seeds
# ---------------------------------------------------------------------------------------------------------


def numpy_mc(A, b, x_star, probs, weights, lr, beta, B, steps, seeds, rng):
    n, d = A.shape
    out = np.empty((seeds, steps + 1))
    for s in range(seeds):
        x = np.zeros(d)
        xp = x.copy()
        out[s, 0] = np.sum((x - x_star) ** 2)
        for t in range(steps):
            idx = rng.choice(n, size=B, p=probs)
            a = A[idx]
            g = a.T @ ((a @ x - b[idx]) * weights[idx]) / B
            x, xp = x - lr * g + beta * (x - xp), x
            out[s, t + 1] = np.sum((x - x_star) ** 2)
    return out


def bench(quick: bool = False) -> list[BenchRow]:
    cfg = PRESETS["quick" if quick else "full"]
    seeds, steps, B = (64, 300, 4) if quick else (256, 1000, 8)
    problem = _to32(ip.random_problem(cfg.n, cfg.d, cond=cfg.cond, sampling=cfg.sampling, key=jax.random.key(0)))
    c = ip.constants(problem)
    lr_a, beta_a = cast(tuple[jax.Array, jax.Array], ip.momentum_rule(float(c.mu), float(c.L), float(c.L_max), B, "hb"))
    lr, beta = float(lr_a), float(beta_a)
    rows = {
        "lr": np.full(seeds, lr, np.float32),
        "beta": np.full(seeds, beta, np.float32),
        "gamma": np.zeros(seeds, np.float32),
        "key": jax.random.split(jax.random.key(1), seeds),
    }
    fn = partial(mc_row, problem=problem, batch_size=B, steps=steps, record_every=1)
    ours = time_call(lambda: sweep(fn, rows)[0], repeats=3)
    A, b, x_star, probs, weights = (
        np.asarray(a, np.float64) for a in (problem.A, problem.b, problem.x_star, problem.probs, problem.weights)
    )
    probs = probs / probs.sum()
    npp = (A, b, x_star, probs, weights)
    base_seeds = max(4, seeds // 8)
    base = (
        time_call(
            lambda: numpy_mc(*npp, lr, beta, B, steps, base_seeds, np.random.default_rng(0)),
            repeats=1,
            warmup=0,
        )
        * seeds
        / base_seeds
    )
    ref = numpy_mc(*npp, lr, beta, B, steps, 64, np.random.default_rng(1)).mean(0)
    mc = np.asarray(sweep(fn, rows)[0]).mean(0)
    dev = float(np.max(np.abs(np.log(mc[: steps // 2]) - np.log(ref[: steps // 2]))))
    return [
        BenchRow(
            f"SHB MC {seeds} seeds x {steps} steps, B={B}, d={cfg.d}",
            "jit(vmap) sweep",
            f"NumPy loop (timed on {base_seeds} seeds, scaled)",
            ours,
            base,
            note=f"max |log mean diff| first half {dev:.2f} (MC noise, 64 NumPy seeds)",
        )
    ]
