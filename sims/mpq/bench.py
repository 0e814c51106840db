"""mpq benchmark: GPTQ (JAX) and MPQ time and peak memory per layer against the NumPy port of the published GPTQ
(the same work: the same layer, calibration inputs, INT-4 groups of 128, lazy batches of 128 columns)."""

from __future__ import annotations

import time
import tracemalloc

import jax
import numpy as np

from jaxwb.sims.core.timing import BenchRow
from jaxwb.sims.mpq.reference_np import gptq_numpy
from jaxwb.theory import mpq as M


def _median_time(fn, rounds: int) -> float:
    jax.block_until_ready(fn())  # compile / warm up
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def _numpy_peak(fn) -> float:
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def _jax_temp(w, h, book) -> float:
    """XLA's temp allocation (MiB) of the compiled GPTQ (``memory_analysis``; NaN where unavailable)."""
    try:
        lowered = M.solvers.gptq_from_factor.lower(w, M.solvers.gptq_factor(h), book.grid, 128)
        ma = lowered.compile().memory_analysis()
        if ma is None:  # unavailable on this backend
            return float("nan")
        return float(ma.temp_size_in_bytes + ma.output_size_in_bytes) / 2**20
    except Exception:
        return float("nan")


def bench(quick: bool = False) -> list[BenchRow]:
    """Per layer shape (rows x d): GPTQ jit vs the NumPy port (median of rounds, compile excluded) and MPQ jit vs
    the NumPy GPTQ; peak memory: NumPy's traced peak (tracemalloc) and XLA's temp + output bytes. MPQ runs with the
    library's defaults (diagonal VAMP) up to d = 256; on the 512 x 1024 layer with ``precision="scalar"``: the
    diagonal form inverts a (d, d) matrix per row and iteration, ~1.6e13 flops for 30 iterations there."""
    shapes = [(128, 256)] if quick else [(256, 256), (512, 1024)]
    rows = []
    for m, d in shapes:
        kw, kx = jax.random.split(jax.random.key(0))
        w = jax.random.normal(kw, (m, d))
        x = jax.random.normal(kx, (4 * d, d))
        h = M.proxy_hessian(x)
        book = M.int_codebook(w, bits=4, group=128)
        wn, xn = np.asarray(w), np.asarray(x)
        rounds = 3 if quick else 5
        base = lambda wn=wn, xn=xn: gptq_numpy(wn, xn, bits=4, group=128)
        t_np = _median_time(base, rounds)
        t_g = _median_time(lambda w=w, h=h, book=book: M.gptq(w, h, book), rounds)
        prec = "diagonal" if d <= 256 else "scalar"
        t_m = _median_time(lambda w=w, h=h, book=book, p=prec: M.mpq(w, h, book, precision=p), rounds)
        mem = f"peak memory: NumPy {_numpy_peak(base):.1f} MiB (tracemalloc), XLA GPTQ {_jax_temp(w, h, book):.1f} MiB"
        rows.append(BenchRow(f"GPTQ INT-4 layer {m}x{d}", "jit GPTQ (float32)", "NumPy port (float64)", t_g, t_np,
                             note=f"median of {rounds}, compile excluded; {mem}"))  # fmt: skip
        rows.append(BenchRow(f"MPQ INT-4 layer {m}x{d}", f"MPQ ({prec} VAMP 30 it + BCD)", "NumPy GPTQ", t_m, t_np,
                             note=f"median of {rounds}, compile excluded; MPQ's work is not GPTQ's"))  # fmt: skip
    return rows
