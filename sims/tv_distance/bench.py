"""Benchmark: the jitted plain TV estimate against a Python loop per sequence (``workbench bench tv_distance``)."""

from __future__ import annotations

import math
import time

import jax
import numpy as np

from jaxwb.sims.core.timing import BenchRow
from jaxwb.sims.tv_distance.pieces import markov_pair
from jaxwb.theory import tv_distance as tv

# ---------------------------------------------------------------------------------------------------------
# Benchmark: jitted, lax.scan-decoded, vmapped estimator vs a Python loop over sequences
# ---------------------------------------------------------------------------------------------------------


def _python_loop_tv(table_p, table_q, n, m, rng):
    """Plain estimator with a Python loop over sequences and positions (NumPy tables, context index K=BOS)."""
    K = table_p.shape[-1]
    zs = np.empty(m)
    for i in range(m):
        prev, L = K, 0.0
        for _ in range(n):
            lp, lq = table_p[prev], table_q[prev]
            x = rng.choice(K, p=np.exp(lp) / np.exp(lp).sum())
            L += lp[x] - lq[x]
            prev = x
        zs[i] = max(0.0, -math.expm1(-L))
    return zs.mean()


def bench(quick: bool = False) -> list[BenchRow]:
    K, n = 4, 6
    m = 2000 if quick else 20000
    p, q = markov_pair(jax.random.key(0), K, 1.0, 0.6)
    exact = float(tv.exact_tv(p, q, n))
    f = lambda k: tv.tv_logit_z(p, q, n, m, "plain", key=k).mean()
    jax.block_until_ready(f(jax.random.key(1)))
    reps = []
    for i in range(3):
        t0 = time.perf_counter()
        ours_val = float(jax.block_until_ready(f(jax.random.key(2 + i))))
        reps.append(time.perf_counter() - t0)
    ours = float(np.median(reps))
    tp, tq = np.asarray(p.params, np.float64), np.asarray(q.params, np.float64)
    mb = m // 10
    t0 = time.perf_counter()
    base_val = _python_loop_tv(tp, tq, n, mb, np.random.default_rng(0))
    base = (time.perf_counter() - t0) * (m / mb)
    return [
        BenchRow(
            f"plain TV estimate, m={m}, n={n}, K={K}",
            "jit lax.scan + vmap",
            "Python loop/sequence",
            ours,
            base,
            note=f"baseline timed on m/10 and scaled; exact {exact:.4f}, ours {ours_val:.4f}, loop {base_val:.4f}",
        )
    ]
