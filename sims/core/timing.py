"""Benchmark rows (ours vs a baseline, timed in the same run) and the timer they use."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import jax
import numpy as np


@dataclasses.dataclass(frozen=True)
class BenchRow:
    """One timing comparison: ``ours`` vs ``baseline`` seconds in the same run (ratio = baseline / ours)."""

    op: str
    ours: str
    baseline: str
    ours_s: float
    baseline_s: float
    note: str = ""

    @property
    def speedup(self) -> float:
        return self.baseline_s / self.ours_s if self.ours_s > 0 else float("inf")


def format_bench(rows: Sequence[BenchRow]) -> str:
    lines = [f"{'op':<28} {'ours':<26} {'baseline':<26} {'ours s':>10} {'base s':>10} {'speedup':>9}"]
    for r in rows:
        lines.append(
            f"{r.op:<28} {r.ours:<26} {r.baseline:<26} {r.ours_s:>10.4g} {r.baseline_s:>10.4g} "
            f"{r.speedup:>8.1f}x" + (f"  {r.note}" if r.note else "")
        )
    return "\n".join(lines)


def time_call(fn, *args, repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn(*args)`` in seconds, blocking on JAX outputs; ``warmup`` calls first."""
    for _ in range(warmup):
        jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


# ---------------------------------------------------------------------------------------------------------
# Presets and execution
