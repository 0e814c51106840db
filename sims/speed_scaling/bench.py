"""Speed-scaling sim: ``bench``, batched YDS + AVR + OA (jit(vmap)) against the pure-Python reference
(``jaxwb.sims.speed_scaling.reference``)."""

from __future__ import annotations

import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.sims.core.sweep import sweep
from jaxwb.sims.core.timing import BenchRow, time_call
from jaxwb.sims.speed_scaling import reference as ref
from jaxwb.theory import speed_scaling as ss

# ---------------------------------------------------------------------------------------------------------
# Benchmark: batched YDS + AVR + OA (jit(vmap)) vs the pure-Python reference, over many instances
# ---------------------------------------------------------------------------------------------------------


def _bench_row(key, *, n_jobs, horizon, alpha):
    r, d, w = ss.random_instance(n_jobs, horizon, 1, 10, 10.0, key=key)
    opt = ss.energy(ss.yds(r, d, w).profile, alpha)
    e_avr = ss.energy(ss.avr(r, d, w, n_slots=horizon).profile, alpha)
    e_oa = ss.energy(ss.oa(r, d, w, n_slots=horizon).profile, alpha)
    return jnp.stack([opt, e_avr, e_oa]), (r, d, w)


def bench(quick: bool = False) -> list[BenchRow]:
    """Energies of OPT (YDS), AVR and OA for a batch of random instances: one jit(vmap) program (median of 5
    runs after a compile) vs the pure-Python reference on the same instances (one run)."""
    n_inst = 40 if quick else 200
    n_jobs, horizon, alpha = 40, 100, 3.0
    keys = jax.random.split(jax.random.key(0), n_inst)
    fn = partial(_bench_row, n_jobs=n_jobs, horizon=horizon, alpha=alpha)
    t_ours = time_call(lambda k: sweep(fn, k), keys, repeats=5, warmup=1)
    ours, (r, d, w) = jax.block_until_ready(sweep(fn, keys))
    r, d, w = (np.asarray(x, dtype=float).tolist() for x in (r, d, w))
    t0 = time.perf_counter()
    base = []
    for i in range(n_inst):
        e_opt = ref.yds_python(r[i], d[i], w[i])[0](alpha)
        e_avr = ref.energy_python(ref.avr_python(r[i], d[i], w[i], horizon), 1.0, alpha)
        e_oa = ref.energy_python(ref.oa_python(r[i], d[i], w[i], horizon), 1.0, alpha)
        base.append((e_opt, e_avr, e_oa))
    t_base = time.perf_counter() - t0
    diff = np.max(np.abs(np.asarray(ours) - np.asarray(base)) / np.asarray(base))
    return [
        BenchRow(
            f"YDS+AVR+OA, {n_inst} inst x {n_jobs} jobs",
            "jit(vmap) sweep",
            "pure Python",
            t_ours,
            t_base,
            note=f"max rel. energy diff {diff:.1e}",
        )
    ]
