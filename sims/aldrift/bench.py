"""ALDRIFT sim: benchmark of one temperature of m IMH chains, vmap + scan vs NumPy loops."""

from __future__ import annotations

import math
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.sims.aldrift.config import PRESETS
from jaxwb.sims.aldrift.pieces import problem
from jaxwb.sims.core.timing import BenchRow, time_call
from jaxwb.theory import aldrift as al

# ---------------------------------------------------------------------------------------------------------
# Benchmark: one temperature of m IMH chains, vmap + scan vs NumPy loops
# ---------------------------------------------------------------------------------------------------------


def _numpy_chains(mu_d, A, w, x0, mu0, tau, mean, var, m, M, n, rng, vectorised):
    def cost(x):
        return 0.5 * mu_d * np.sum(x**2, -1) + A * np.sum(2 * np.sin(0.5 * w * x) ** 2, -1)

    def logw(x):
        return -0.5 * mu0 * np.sum((x - x0) ** 2, -1) - tau * cost(x) + 0.5 * np.sum((x - mean) ** 2, -1) / var

    if vectorised:
        x = mean + math.sqrt(var) * rng.standard_normal((m, n))
        lw = logw(x)
        for _ in range(M):
            y = mean + math.sqrt(var) * rng.standard_normal((m, n))
            ly = logw(y)
            acc = np.log(rng.uniform(size=m)) < ly - lw
            x[acc], lw[acc] = y[acc], ly[acc]
        return x
    out = np.empty((m, n))
    for c in range(m):
        x = mean + math.sqrt(var) * rng.standard_normal(n)
        lw = logw(x)
        for _ in range(M):
            y = mean + math.sqrt(var) * rng.standard_normal(n)
            ly = logw(y)
            if math.log(rng.uniform()) < ly - lw:
                x, lw = y, ly
        out[c] = x
    return out


def bench(quick: bool = False) -> list[BenchRow]:
    cfg = PRESETS["quick" if quick else "full"]
    n, m, M = cfg.n, cfg.m, cfg.M
    mu_d, A, w, x0, mu0 = cfg.settings[0]
    tau = 1.0
    var = 2.0 / (mu0 + tau * mu_d)
    cost, prior = problem(cfg.settings[0], n)
    model = al.Gaussian.from_cov(jnp.full((n,), 2.0), var * jnp.eye(n))
    fn = jax.jit(lambda k: al.imh_chains(cost, prior, tau, model, m=m, M=M, key=k)[0])
    key = jax.random.key(0)
    ours = time_call(fn, key, repeats=5)
    rng = np.random.default_rng(0)
    args = (mu_d, A, w, x0, mu0, tau, 2.0, var, m, M, n, rng)
    t0 = time.perf_counter()
    xs_loop = _numpy_chains(*args, vectorised=False)
    loop = time.perf_counter() - t0
    vec = time_call(lambda: _numpy_chains(*args, vectorised=True), repeats=3)
    xs_ours = np.asarray(fn(key))
    note = (
        f"mean cost of final states: jax {float(np.mean(np.asarray(cost(xs_ours)))):.3f}, "
        f"numpy {float(np.mean(np.asarray(cost(jnp.asarray(xs_loop))))):.3f}"
    )
    return [
        BenchRow(
            f"IMH {m} chains x {M} steps, n={n}", "jit(vmap(scan))", "NumPy loop (chains, steps)", ours, loop, note=note
        ),
        BenchRow(f"IMH {m} chains x {M} steps, n={n}", "jit(vmap(scan))", "NumPy vectorised over chains", ours, vec),
    ]
