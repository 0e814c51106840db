"""Timing, records, budget and the autotuner: ``Recorder.measure`` times each config of a small grid while the
section's share of the budget lasts, keeps the best and checks it against the XLA path."""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
import time
from pathlib import Path


@dataclasses.dataclass
class Settings:
    dry_run: bool
    out: Path
    budget_s: float  # wall-clock budget of the benchmark section (autotuning stops when it is spent)
    skip_tests: bool = False
    pytest_args: tuple[str, ...] = ()
    reps: int = 10
    trials: int = 3
    skip_impls: frozenset[str] = frozenset()  # implementations not measured (e.g. a kernel that may hang)
    fwht_ds: tuple[int, ...] | None = None  # None: the section's default sizes
    matmul_ms: tuple[int, ...] | None = None
    t0: float = dataclasses.field(default_factory=time.perf_counter)

    @property
    def kernel(self) -> str:
        """The implementation the kernel benchmarks and the forced test step run: the compiled Triton kernel
        ("interpret" in a dry run on CPU)."""
        return "interpret" if self.dry_run else "triton"

    section_deadline: float | None = None

    def start_section(self, share: float) -> None:
        """Give the next section ``share`` of the whole budget (autotuning in it stops when that is spent)."""
        self.section_deadline = time.perf_counter() + share * self.budget_s

    def left(self) -> float:
        """Seconds left for autotuning in the current section (the whole budget if no section started)."""
        end = self.section_deadline if self.section_deadline is not None else self.t0 + self.budget_s
        return end - time.perf_counter()


def time_fn(fn, *args, reps: int, trials: int) -> float:
    """Seconds per call of a jitted ``fn``: one compile+warm-up call, then the best of ``trials`` batches of
    ``reps`` back-to-back calls (one ``block_until_ready`` per batch, so dispatch overlaps execution)."""
    import jax

    jax.block_until_ready(fn(*args))
    best = math.inf
    for _ in range(trials):
        t = time.perf_counter()
        out = None
        for _ in range(reps):
            out = fn(*args)
        jax.block_until_ready(out)
        best = min(best, (time.perf_counter() - t) / reps)
    return best


def error_line(e: BaseException) -> str:
    """``"Type: first line of the message"`` (at most 200 characters) for a record or a log line."""
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200] if str(e).strip() else ''}"


class Recorder:
    def __init__(self, s: Settings, peaks: dict | None, ceilings: dict | None = None):
        self.s, self.peaks, self.records, self.tuned = s, peaks, [], {}
        self.ceilings = ceilings or {}  # measured on the device: copy bytes/s, bf16 matmul FLOP/s
        self.on_add = None  # called after each record (the check saves its json there)

    def add(
        self,
        section,
        op,
        impl,
        shape,
        *,
        config=None,
        time_s=None,
        flops=None,
        bytes_moved=None,
        note=None,
        error=None,
        **extra,
    ):
        rec = dict(
            section=section,
            op=op,
            impl=impl,
            shape=shape,
            config=config,
            time_s=time_s,
            note=note,
            error=error,
            **extra,
        )
        if time_s:
            if flops is not None:
                rec["tflops"] = flops / time_s / 1e12
                if self.peaks:
                    rec["frac_peak_flops"] = flops / time_s / self.peaks["bf16_flops"]
                if self.ceilings.get("bf16_matmul_flops"):
                    rec["frac_measured_flops"] = flops / time_s / self.ceilings["bf16_matmul_flops"]
            if bytes_moved is not None:
                rec["gbps"] = bytes_moved / time_s / 1e9
                if self.peaks:
                    rec["frac_peak_hbm"] = bytes_moved / time_s / self.peaks["hbm_bytes_per_s"]
                ceiling = self.ceilings.get("ceiling_bytes_per_s") or self.ceilings.get("copy_bytes_per_s")
                if ceiling:  # the largest measured bandwidth ceiling (peaks.measure_ceilings)
                    rec["frac_measured_hbm"] = bytes_moved / time_s / ceiling
        self.records.append(rec)
        if self.on_add is not None:
            self.on_add()
        t = f"{time_s * 1e6:.1f}us" if time_s else "-"
        print(f"[gpu_check]   {op} {impl} {shape}: {t} {config or ''} {error or ''}", file=sys.stderr, flush=True)
        return rec

    def measure(self, section, op, impl, shape, make, configs, *, flops=None, bytes_moved=None, check=None, **extra):
        """Autotune: time ``make(config)`` (a jitted fn and its args) for each config while the budget lasts
        (always the first); keep the best. ``check(out)`` -> max abs error vs the XLA path (first shape)."""
        if impl in self.s.skip_impls:
            return {}
        best = None
        errors = []
        config_times = {}  # every config's time: a default is changed on a margin, not on a winner alone
        for i, cfg in enumerate(configs):
            if i and self.s.left() < 0:
                errors.append("autotune stopped: budget spent")
                break
            try:
                fn, args = make(cfg)
                t = time_fn(fn, *args, reps=self.s.reps, trials=self.s.trials)
                config_times[str(cfg)] = t
                if best is None or t < best[0]:
                    best = (t, cfg, fn, args)
            except Exception as e:
                errors.append(f"{cfg}: {error_line(e)}")
        if best is None:
            return self.add(section, op, impl, shape, error="; ".join(errors) or "no config", **extra)
        t, cfg, fn, args = best
        if len(configs) > 1:
            self.tuned[f"{op}/{impl}/{shape}"] = str(cfg)
        chk = None
        if check is not None:
            try:
                chk = float(check(fn(*args)))
            except Exception as e:
                errors.append(f"check: {error_line(e)}")
        return self.add(
            section,
            op,
            impl,
            shape,
            config=str(cfg),
            time_s=t,
            flops=flops,
            bytes_moved=bytes_moved,
            max_abs_err_vs_xla=chk,
            n_configs=len(configs),
            config_times=config_times if len(configs) > 1 else None,
            note="; ".join(errors) or None,
            **extra,
        )


def max_abs_diff(a, b) -> float:
    """Largest absolute elementwise difference of two arrays, compared in float32."""
    import numpy as np

    return float(np.max(np.abs(np.asarray(a, np.float32) - np.asarray(b, np.float32))))


def jitted(fn, *args, **kwargs):
    """``fn`` with ``args`` and ``kwargs`` bound (a kernel and its settings), jitted."""
    import jax

    return jax.jit(functools.partial(fn, *args, **kwargs))


def fixed(fn, *args):
    """The ``make`` of a measurement without configs: ``(fn, args)`` whatever the config."""
    return lambda cfg: (fn, args)


def against(want):
    """The ``check`` of an output: max abs error vs ``want``; None when there is no reference."""
    return None if want is None else (lambda out: max_abs_diff(out, want))
