"""river_valley: the benchmark, the jitted, vmapped phase-diagram sweep vs a NumPy loop over the same grid."""

from __future__ import annotations

from functools import partial

import jax.numpy as jnp
import numpy as np

from jaxwb.sims.core.sweep import grid, sweep
from jaxwb.sims.core.timing import BenchRow, time_call
from jaxwb.sims.river_valley.config import PRESETS
from jaxwb.sims.river_valley.run import phase_point
from jaxwb.theory import river_valley as rv


def numpy_phase(lrs, betas, lam, mu, x0, y0, steps):
    """The phase diagram's river progress by a plain NumPy loop (the baseline of ``bench``)."""
    curv = np.array([mu, lam])
    progress = np.empty((len(lrs), len(betas)))
    for i, lr in enumerate(lrs):
        for j, beta in enumerate(betas):
            x = np.array([x0, y0])
            xp = x.copy()
            ok = True
            tail = []
            for t in range(steps):
                xn = x - lr * curv * x + beta * (x - xp)
                if not np.all(np.abs(xn) < 1e6 * (1 + max(abs(x0), abs(y0)))):
                    ok = False
                    break
                xp, x = x, xn
                if t >= steps - max(1, steps // 10):
                    tail.append(abs(x[0]))
            progress[i, j] = 1 - max(tail) / abs(x0) if ok else 0.0
    return progress


def bench(quick: bool = False) -> list[BenchRow]:
    cfg = PRESETS["quick" if quick else "full"]
    n = 16 if quick else 40
    lrs, betas = np.geomspace(*cfg.lr_range, n), np.linspace(0, cfg.beta_max, n)
    straight = rv.straight_valley(cfg.mu, cfg.lam)
    theta0 = jnp.array([cfg.x0, cfg.y0])
    fn = partial(phase_point, valley=straight, theta0=theta0, steps=cfg.phase_steps)
    g = grid(lr=jnp.asarray(lrs, jnp.float32), beta=jnp.asarray(betas, jnp.float32))
    ours = time_call(lambda: sweep(fn, g)["progress"], repeats=3)
    base = time_call(
        lambda: numpy_phase(lrs, betas, cfg.lam, cfg.mu, cfg.x0, cfg.y0, cfg.phase_steps), repeats=1, warmup=0
    )
    a = np.asarray(sweep(fn, g)["progress"]).reshape(n, n)
    b = numpy_phase(lrs, betas, cfg.lam, cfg.mu, cfg.x0, cfg.y0, cfg.phase_steps)
    return [
        BenchRow(
            f"phase diagram {n}x{n}x{cfg.phase_steps}",
            "jit(vmap) sweep",
            "NumPy loop",
            ours,
            base,
            note=f"max |progress diff| {np.max(np.abs(a - b)):.1e}; target >= 20x",
        )
    ]
