# ruff: noqa: B023 - every closure over a loop variable is called by Recorder.measure in that same iteration
"""The prepared hardware check: one command that tests, benchmarks and autotunes every kernel on a GPU.

    python -m pallas_kernels.gpu_check                  # on a GPU: ~8 min on an H200, writes figures/kernels_gpu/
    python -m pallas_kernels.gpu_check --dry-run        # on CPU: interpret mode, tiny sizes, a temp dir (~30 s)
    python -m pallas_kernels.gpu_check --out DIR --skip-tests

What it does, in this order (benchmarks first, so a slow test step cannot cost the numbers):
  1. device, jax version and the device's peaks (``PEAKS``: bf16 dense tensor-core FLOP/s and HBM bytes/s from
     NVIDIA's data sheets; any other device is "unknown" and only raw GB/s, TFLOP/s are reported);
  2. benchmarks, each op against its XLA path and the best peer on the machine, with a correctness check of
     the kernel against the XLA path at the first shape:
       - dense attention: Pallas (Triton), Mosaic GPU (``attention/mosaic_gpu.py``), XLA,
         ``jax.nn.dot_product_attention(implementation="cudnn")``, JAX's FA3 ``attention_mgpu``; FLOP/s;
       - block-sparse attention at L = 4K/8K/16K, sparsity 0.5/0.75/0.9/0.95: speedup over the project's
         dense flash kernel (same kernel family, same L), against 1/(1-s);
       - NVFP4 / MXFP4 / RaZeR quantize and dequantize, FWHT (vs a dense rotation ``x @ H``), InQuant unpack:
         achieved HBM bandwidth (bytes read + written / time) as a fraction of peak;
       - ``fp4_matmul`` (W4A16) at decode (M = 1, 16) and prefill (M = 4096) shapes vs a bf16 dense matmul;
     block sizes are autotuned over a small grid per shape (the best is kept and written to the json) while
     the time budget lasts;
  3. the kernel test suite with ``implementation="pallas"``: a pytest subprocess over ``tests/kernels`` with
     this module loaded as a plugin (``-p pallas_kernels.gpu_check``) and ``PALLAS_KERNELS_FORCE_IMPLEMENTATION``
     set, which maps every ``implementation="interpret"`` of the public ops to ``"pallas"`` (the compiled kernel);
  4. ``figures/kernels_gpu/kernels_gpu.{png,json}`` (device name, jax version, every measurement, the tuned
     configs, the goals of issue 20 met or missed) and a table on stdout.

``--dry-run`` runs the very same code path on CPU: "pallas" means the Pallas interpreter, the Mosaic GPU kernel
runs in Mosaic GPU interpret mode, peers that need a GPU are recorded as unavailable, sizes are tiny, and the
pytest step runs a small selection. Its timings mean nothing; it exists so the script is known to work before
a GPU is there (``tests/kernels/test_gpu_check.py``).

All calls into the public ops go through the adapters in the "Adapters" section below: when an op's name or
keyword changes (``causal`` -> ``is_causal``, ``blocks`` -> ``block_sizes``), fix it there, in one place.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FORCE_ENV = "PALLAS_KERNELS_FORCE_IMPLEMENTATION"
REPO_ROOT = Path(__file__).resolve().parent.parent

# Peaks by device: dense (non-sparse) bf16 tensor-core FLOP/s and HBM bandwidth in bytes/s.
# H100 SXM5 80GB: 989.4 TFLOP/s bf16 dense (1979 "with sparsity"), 3.35 TB/s HBM3 (NVIDIA H100 data sheet).
# H200 SXM 141GB: 989.4 TFLOP/s bf16 dense, 4.8 TB/s HBM3e (NVIDIA H200 data sheet).
PEAKS = {
    "H100 SXM": {"bf16_flops": 989.4e12, "hbm_bytes_per_s": 3.35e12},
    "H200": {"bf16_flops": 989.4e12, "hbm_bytes_per_s": 4.8e12},
}


def peaks_for(device_kind: str) -> tuple[str, dict | None]:
    """(name, peaks) for a jax ``device_kind``; ("unknown", None) for anything not in ``PEAKS``."""
    kind = device_kind.upper()
    if "H200" in kind:
        return "H200", PEAKS["H200"]
    if "H100" in kind and ("SXM" in kind or "HBM3" in kind) and "PCIE" not in kind and "NVL" not in kind:
        return "H100 SXM", PEAKS["H100 SXM"]
    return "unknown", None


# ---------------------------------------------------------------------------------------------------------
# Adapters: the only place that knows the public ops' names and keywords
# ---------------------------------------------------------------------------------------------------------


def _flash(q, k, v, *, causal, implementation, block_sizes=None):
    from pallas_kernels.attention import flash_attention

    return flash_attention(q, k, v, causal=causal, implementation=implementation, block_sizes=block_sizes)


def _attention_block_sizes(block_q, block_k):
    from pallas_kernels.attention import BlockSizes

    return BlockSizes(block_q, block_k)


def _block_sparse(q, k, v, cnt, idx, *, block_q, block_k, causal, implementation):
    from pallas_kernels.attention import block_sparse_attention

    return block_sparse_attention(
        q, k, v, cnt, idx, block_q=block_q, block_k=block_k, causal=causal, implementation=implementation
    )


def _mosaic_flash(q, k, v, *, causal, block_q, block_k, steps, interpret):
    from pallas_kernels.attention.mosaic_gpu import MosaicBlockSizes, flash_attention_mgpu

    bs = MosaicBlockSizes(block_q, block_k, steps)
    return flash_attention_mgpu(q, k, v, causal=causal, block_sizes=bs, interpret=interpret)


def _mosaic_block_sparse(q, k, v, cnt, idx, *, block_q, block_k, steps, causal, interpret):
    from pallas_kernels.attention.mosaic_gpu import block_sparse_attention_mgpu

    return block_sparse_attention_mgpu(
        q,
        k,
        v,
        cnt,
        idx,
        block_q=block_q,
        block_k=block_k,
        causal=causal,
        max_concurrent_steps=steps,
        interpret=interpret,
    )


def _quant_block_sizes(rows, cols):
    from pallas_kernels.quant import BlockSizes

    return BlockSizes(rows, cols)


def _quantize(fmt, x, g, *, implementation, block_sizes=None):
    from pallas_kernels import quant

    if fmt == "nvfp4":
        return quant.nvfp4_quantize(x, global_scale=g, implementation=implementation, block_sizes=block_sizes)
    if fmt == "mxfp4":
        return quant.mxfp4_quantize(x, implementation=implementation, block_sizes=block_sizes)
    if fmt == "razer_activation":
        return quant.razer_quantize(
            x, variant="activation", global_scale=g, implementation=implementation, block_sizes=block_sizes
        )
    raise ValueError(f"unknown format {fmt!r}")


def _dequantize(fmt, qa, *, dtype, implementation, block_sizes=None):
    from pallas_kernels import quant

    fn = {"nvfp4": quant.nvfp4_dequantize, "mxfp4": quant.mxfp4_dequantize}.get(fmt, quant.razer_dequantize)
    return fn(qa, dtype=dtype, implementation=implementation, block_sizes=block_sizes)


def _hadamard_blocks(dense_max, tile, block_rows, num_warps):
    from pallas_kernels.quant import HadamardBlocks

    return HadamardBlocks(dense_max=dense_max, tile=tile, block_rows=block_rows, num_warps=num_warps)


def _fwht(x, *, implementation, blocks=None):
    from pallas_kernels.quant import fwht

    return fwht(x, implementation=implementation, blocks=blocks)


def _inquant_pack(x, *, key):
    from pallas_kernels.quant import inquant_pack

    return inquant_pack(x, key=key, implementation="xla")


def _inquant_unpack(packed, *, dtype, implementation, block_rows=32):
    from pallas_kernels.quant import inquant_unpack

    return inquant_unpack(packed, dtype=dtype, implementation=implementation, block_rows=block_rows)


def _matmul_block_sizes(bm, bn, bk):
    from pallas_kernels.quant import MatmulBlockSizes

    return MatmulBlockSizes(bm, bn, bk)


def _fp4_matmul(x, w, *, implementation, block_sizes=None):
    from pallas_kernels.quant import fp4_matmul

    return fp4_matmul(x, w, implementation=implementation, block_sizes=block_sizes)


# ---------------------------------------------------------------------------------------------------------
# The pytest plugin: implementation="interpret" -> the forced implementation (the compiled kernel on a GPU)
# ---------------------------------------------------------------------------------------------------------


def _public_ops():
    """Every (module, name, function) of ``pallas_kernels`` with an ``implementation`` parameter."""
    import importlib
    import inspect
    import pkgutil

    import pallas_kernels

    mods = []
    for info in pkgutil.walk_packages(pallas_kernels.__path__, "pallas_kernels."):
        if info.name == __name__ or info.name.endswith(".gpu_check"):
            continue
        mods.append(importlib.import_module(info.name))
    found = []
    for mod in mods:
        for name, obj in list(vars(mod).items()):
            if not inspect.isfunction(obj) or not obj.__module__.startswith("pallas_kernels"):
                continue
            try:
                params = inspect.signature(obj).parameters
            except (TypeError, ValueError):
                continue
            if "implementation" in params:
                found.append((mod, name, obj))
    return found


@contextlib.contextmanager
def forced_implementation(target: str):
    """Patch every public op so that ``implementation="interpret"`` runs ``target`` instead (restored on
    exit). Every module that imported an op by name is patched too (as the mutation audit does)."""
    wrapped = {}
    patched = []
    for mod, name, fn in _public_ops():
        if fn not in wrapped:

            def make(f):
                @functools.wraps(f)
                def w(*args, **kwargs):
                    if kwargs.get("implementation") == "interpret":
                        kwargs["implementation"] = target
                    return f(*args, **kwargs)

                w.__wrapped_for_gpu_check__ = True
                return w

            wrapped[fn] = make(fn)
        patched.append((mod, name, fn))
        setattr(mod, name, wrapped[fn])
    import jax

    jax.clear_caches()  # jitted callers traced before the patch would keep the old implementation
    try:
        yield len(wrapped)
    finally:
        for mod, name, fn in patched:
            setattr(mod, name, fn)
        jax.clear_caches()


def pytest_configure(config):  # pytest plugin hook (``-p pallas_kernels.gpu_check``)
    target = os.environ.get(FORCE_ENV)
    if target:
        cm = forced_implementation(target)
        n = cm.__enter__()
        config._gpu_check_force = cm
        print(f"[gpu_check] implementation='interpret' -> {target!r} in {n} public ops", file=sys.stderr)


def pytest_unconfigure(config):
    cm = getattr(config, "_gpu_check_force", None)
    if cm is not None:
        cm.__exit__(None, None, None)


# ---------------------------------------------------------------------------------------------------------
# Timing, records, budget
# ---------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Settings:
    dry_run: bool
    out: Path
    budget_s: float  # wall-clock budget of the benchmark section (autotuning stops when it is spent)
    skip_tests: bool = False
    pytest_args: tuple[str, ...] = ()
    reps: int = 10
    trials: int = 3
    t0: float = dataclasses.field(default_factory=time.perf_counter)

    @property
    def pallas(self) -> str:
        return "interpret" if self.dry_run else "pallas"

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


def _err(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200] if str(e).strip() else ''}"


class Recorder:
    def __init__(self, s: Settings, peaks: dict | None):
        self.s, self.peaks, self.records, self.tuned = s, peaks, [], {}

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
            if bytes_moved is not None:
                rec["gbps"] = bytes_moved / time_s / 1e9
                if self.peaks:
                    rec["frac_peak_hbm"] = bytes_moved / time_s / self.peaks["hbm_bytes_per_s"]
        self.records.append(rec)
        t = f"{time_s * 1e6:.1f}us" if time_s else "-"
        print(f"[gpu_check]   {op} {impl} {shape}: {t} {config or ''} {error or ''}", file=sys.stderr, flush=True)
        return rec

    def measure(self, section, op, impl, shape, make, configs, *, flops=None, bytes_moved=None, check=None, **extra):
        """Autotune: time ``make(config)`` (a jitted fn and its args) for each config while the budget lasts
        (always the first); keep the best. ``check(out)`` -> max abs error vs the XLA path (first shape)."""
        best = None
        errors = []
        for i, cfg in enumerate(configs):
            if i and self.s.left() < 0:
                errors.append("autotune stopped: budget spent")
                break
            try:
                fn, args = make(cfg)
                t = time_fn(fn, *args, reps=self.s.reps, trials=self.s.trials)
                if best is None or t < best[0]:
                    best = (t, cfg, fn, args)
            except Exception as e:  # noqa: BLE001 - a failing config is a result, not a crash
                errors.append(f"{cfg}: {_err(e)}")
        if best is None:
            return self.add(section, op, impl, shape, error="; ".join(errors) or "no config", **extra)
        t, cfg, fn, args = best
        if len(configs) > 1:
            self.tuned[f"{op}/{impl}/{shape}"] = str(cfg)
        chk = None
        if check is not None:
            try:
                chk = float(check(fn(*args)))
            except Exception as e:  # noqa: BLE001
                errors.append(f"check: {_err(e)}")
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
            note="; ".join(errors) or None,
            **extra,
        )


def _max_abs(a, b) -> float:
    import numpy as np

    return float(np.max(np.abs(np.asarray(a, np.float32) - np.asarray(b, np.float32))))


# ---------------------------------------------------------------------------------------------------------
# Benchmarks
# ---------------------------------------------------------------------------------------------------------


def _attn_sizes(s: Settings):
    if s.dry_run:
        return dict(B=1, H=1, Hkv=1, D=64, Ls=(128,))
    return dict(B=1, H=16, Hkv=16, D=128, Ls=(4096, 8192, 16384))


def bench_attention(rec: Recorder, s: Settings, on_gpu: bool) -> dict:
    """Dense attention; returns {L: (best pallas time, best mosaic time)} for the block-sparse baselines."""
    import jax
    import jax.numpy as jnp

    z = _attn_sizes(s)
    B, H, Hkv, D = z["B"], z["H"], z["Hkv"], z["D"]
    dense = {}
    for n, L in enumerate(z["Ls"]):
        ks = jax.random.split(jax.random.key(L), 3)
        q = jax.random.normal(ks[0], (B, L, H, D), jnp.bfloat16)
        k = jax.random.normal(ks[1], (B, L, Hkv, D), jnp.bfloat16)
        v = jax.random.normal(ks[2], (B, L, Hkv, D), jnp.bfloat16)
        shape = f"B{B} L{L} H{H}/{Hkv} D{D} bf16"
        flops = 4 * B * H * L * L * D
        want = None
        xla_bytes = 3 * B * H * L * L * 4  # scores, probabilities, a temporary (float32)
        if xla_bytes < (24e9 if on_gpu else 1e9):
            want_fn = jax.jit(functools.partial(_flash, causal=False, implementation="xla"))
            r = rec.measure(
                "attention", "flash_attention", "xla", shape, lambda c: (want_fn, (q, k, v)), [None], flops=flops, L=L
            )
            want = want_fn(q, k, v) if r.get("error") is None and n == 0 else None
        else:
            rec.add("attention", "flash_attention", "xla", shape, note=f"skipped: ~{xla_bytes / 1e9:.0f} GB", L=L)
        check = (lambda out: _max_abs(out, want)) if want is not None else None

        grid = [(64, 64), (128, 64)] if s.dry_run else [(64, 64), (128, 64), (64, 128), (128, 128)]

        def make_pallas(cfg):
            f = functools.partial(
                _flash, causal=False, implementation=s.pallas, block_sizes=_attention_block_sizes(*cfg)
            )
            return jax.jit(f), (q, k, v)

        r = rec.measure(
            "attention",
            "flash_attention",
            "pallas_triton",
            shape,
            make_pallas,
            [c for c in grid if c[0] <= L and c[1] <= L],
            flops=flops,
            check=check,
            L=L,
        )
        tp = r.get("time_s")

        tm = None
        if on_gpu or n == 0:  # Mosaic GPU interpret mode is slow: one shape in a dry run
            mgrid = [(64, 128, 2)] if s.dry_run else [(64, 128, 2), (64, 64, 2), (64, 128, 3), (64, 256, 2)]

            def make_mosaic(cfg):
                f = functools.partial(
                    _mosaic_flash, causal=False, block_q=cfg[0], block_k=cfg[1], steps=cfg[2], interpret=not on_gpu
                )
                return jax.jit(f), (q, k, v)

            r = rec.measure(
                "attention",
                "flash_attention",
                "mosaic_gpu",
                shape,
                make_mosaic,
                [c for c in mgrid if c[1] <= L],
                flops=flops,
                check=check,
                L=L,
            )
            tm = r.get("time_s")
        dense[L] = (tp, tm)

        if on_gpu:
            cudnn = jax.jit(functools.partial(jax.nn.dot_product_attention, implementation="cudnn"))
            rec.measure(
                "attention",
                "flash_attention",
                "cudnn",
                shape,
                lambda c: (cudnn, (q, k, v)),
                [None],
                flops=flops,
                check=check,
                L=L,
            )
            try:
                from jax.experimental.pallas.ops.gpu import attention_mgpu as fa3

                def make_fa3(cfg):
                    tc = fa3.TuningConfig(block_q=64, block_kv=cfg, max_concurrent_steps=2)
                    return jax.jit(functools.partial(fa3.attention, config=tc)), (q, k, v)

                rec.measure(
                    "attention",
                    "flash_attention",
                    "jax_fa3_mgpu",
                    shape,
                    make_fa3,
                    [128, 64],
                    flops=flops,
                    check=check,
                    L=L,
                )
            except Exception as e:  # noqa: BLE001
                rec.add("attention", "flash_attention", "jax_fa3_mgpu", shape, error=_err(e), L=L)
        else:
            for peer in ("cudnn", "jax_fa3_mgpu"):
                rec.add("attention", "flash_attention", peer, shape, note="unavailable: needs a GPU", L=L)
    return dense


def _random_lists(key, B, H, nq, nk, keep):
    """Exactly ``keep`` distinct random key blocks per (b, h, query block): counts [B,H,nq], idx [B,H,nq,keep]."""
    import jax
    import jax.numpy as jnp

    order = jnp.argsort(jax.random.uniform(key, (B, H, nq, nk)), axis=-1)[..., :keep]
    idx = jnp.sort(order, axis=-1).astype(jnp.int32)
    return jnp.full((B, H, nq), keep, jnp.int32), idx


SPARSITIES = (0.5, 0.75, 0.9, 0.95)
DRY_SPARSITIES = (0.5,)


def bench_block_sparse(rec: Recorder, s: Settings, on_gpu: bool, dense: dict):
    import jax
    import jax.numpy as jnp

    z = _attn_sizes(s)
    B, H, Hkv, D = z["B"], z["H"], z["Hkv"], z["D"]
    bq, bk = 64, (64 if s.dry_run else 128)
    for n, L in enumerate(z["Ls"]):
        ks = jax.random.split(jax.random.key(L + 1), 4)
        q = jax.random.normal(ks[0], (B, L, H, D), jnp.bfloat16)
        k = jax.random.normal(ks[1], (B, L, Hkv, D), jnp.bfloat16)
        v = jax.random.normal(ks[2], (B, L, Hkv, D), jnp.bfloat16)
        nq, nk = L // bq, L // bk
        tp_dense, tm_dense = dense.get(L, (None, None))
        sps = DRY_SPARSITIES if s.dry_run else SPARSITIES
        for m, sp in enumerate(sps):
            keep = max(1, round((1 - sp) * nk))
            s_eff = 1 - keep / nk
            cnt, idx = _random_lists(ks[3], B, H, nq, nk, keep)
            shape = f"B{B} L{L} H{H} D{D} s{sp}"
            flops = 4 * B * H * L * keep * bk * D
            want = None
            if n == 0 and m == len(sps) - 1:  # one XLA check (the gathering path is memory hungry)
                xla = jax.jit(
                    functools.partial(_block_sparse, block_q=bq, block_k=bk, causal=False, implementation="xla")
                )
                want = xla(q, k, v, cnt, idx)
            check = (lambda out: _max_abs(out, want)) if want is not None else None
            extra = dict(L=L, sparsity=sp, sparsity_effective=s_eff, ideal_speedup=1 / (1 - s_eff))

            def make_pallas(cfg):
                f = functools.partial(_block_sparse, block_q=bq, block_k=bk, causal=False, implementation=s.pallas)
                return jax.jit(f), (q, k, v, cnt, idx)

            r = rec.measure(
                "block_sparse",
                "block_sparse_attention",
                "pallas_triton",
                shape,
                make_pallas,
                [(bq, bk)],
                flops=flops,
                check=check,
                **extra,
            )
            if r.get("time_s") and tp_dense:
                r["speedup_vs_dense"] = tp_dense / r["time_s"]
            if on_gpu or (n == 0 and m == 0):

                def make_mosaic(cfg):
                    f = functools.partial(
                        _mosaic_block_sparse, block_q=bq, block_k=bk, steps=cfg, causal=False, interpret=not on_gpu
                    )
                    return jax.jit(f), (q, k, v, cnt, idx)

                r = rec.measure(
                    "block_sparse",
                    "block_sparse_attention",
                    "mosaic_gpu",
                    shape,
                    make_mosaic,
                    [2] if s.dry_run else [2, 3],
                    flops=flops,
                    check=check,
                    **extra,
                )
                if r.get("time_s") and tm_dense:
                    r["speedup_vs_dense"] = tm_dense / r["time_s"]


def _quant_grid(s: Settings):
    return [(16, 512), (8, 256)] if s.dry_run else [(16, 512), (32, 512), (16, 1024), (8, 1024), (32, 1024)]


def bench_quant(rec: Recorder, s: Settings):
    import jax
    import jax.numpy as jnp

    M, K = (32, 512) if s.dry_run else (8192, 8192)
    x = jax.random.normal(jax.random.key(0), (M, K), jnp.float32).astype(jnp.bfloat16)
    shape = f"{M}x{K} bf16"
    fmts = (("nvfp4", 16),) if s.dry_run else (("nvfp4", 16), ("mxfp4", 32), ("razer_activation", 16))
    for fmt, block in fmts:
        g = jnp.float32(float(jnp.max(jnp.abs(x.astype(jnp.float32)))) / (448 * 6))  # fixed: time the kernel
        q_bytes = M * K * 2 + M * K // 2 + M * K // block
        d_bytes = M * K // 2 + M * K // block + M * K * 2
        xla_q = jax.jit(functools.partial(_quantize, fmt, implementation="xla"))
        ref_q = xla_q(x, g)
        for impl in ("xla", "pallas"):

            def make_q(cfg, impl=impl):
                if impl == "xla":
                    return xla_q, (x, g)
                f = functools.partial(_quantize, fmt, implementation=s.pallas, block_sizes=_quant_block_sizes(*cfg))
                return jax.jit(f), (x, g)

            check = (lambda out: _max_abs(out.codes, ref_q.codes)) if impl == "pallas" else None
            rec.measure(
                "quant",
                f"{fmt}_quantize",
                impl,
                shape,
                make_q,
                [None] if impl == "xla" else _quant_grid(s),
                bytes_moved=q_bytes,
                check=check,
            )

            xla_d = jax.jit(functools.partial(_dequantize, fmt, dtype=jnp.bfloat16, implementation="xla"))

            def make_d(cfg, impl=impl):
                if impl == "xla":
                    return xla_d, (ref_q,)
                f = functools.partial(
                    _dequantize, fmt, dtype=jnp.bfloat16, implementation=s.pallas, block_sizes=_quant_block_sizes(*cfg)
                )
                return jax.jit(f), (ref_q,)

            want = xla_d(ref_q)
            check = (lambda out: _max_abs(out, want)) if impl == "pallas" else None
            rec.measure(
                "quant",
                f"{fmt}_dequantize",
                impl,
                shape,
                make_d,
                [None] if impl == "xla" else _quant_grid(s),
                bytes_moved=d_bytes,
                check=check,
            )


def bench_fwht(rec: Recorder, s: Settings):
    import jax
    import jax.numpy as jnp

    total = 2**12 if s.dry_run else 2**25
    ds = (64,) if s.dry_run else (256, 1024, 4096, 16384)
    grid = (
        [(128, 128, 32, 4)]
        if s.dry_run
        else [(128, 128, 32, 4), (256, 128, 32, 8), (128, 64, 64, 4), (128, 128, 64, 8)]
    )
    for d in ds:
        n = total // d
        x = jax.random.normal(jax.random.key(d), (n, d), jnp.float32)
        shape = f"{n}x{d} f32"
        nbytes = 2 * n * d * 4
        xla = jax.jit(functools.partial(_fwht, implementation="xla"))
        want = xla(x)
        extra = dict(d=d, goal_speedup=d / (4 * math.log2(d)))
        rec.measure("fwht", "fwht", "xla", shape, lambda c: (xla, (x,)), [None], bytes_moved=nbytes, **extra)

        def make(cfg):
            f = functools.partial(_fwht, implementation=s.pallas, blocks=_hadamard_blocks(*cfg))
            return jax.jit(f), (x,)

        rec.measure(
            "fwht",
            "fwht",
            "pallas",
            shape,
            make,
            grid,
            bytes_moved=nbytes,
            check=lambda out: _max_abs(out, want),
            **extra,
        )
        h = jax.jit(functools.partial(_fwht, implementation="xla"))(jnp.eye(d, dtype=jnp.float32))  # H (symmetric)
        dense = jax.jit(lambda x, h: jnp.dot(x, h, precision=jax.lax.Precision.HIGHEST))
        rec.measure(
            "fwht",
            "fwht",
            "dense_rotation",
            shape,
            lambda c: (dense, (x, h)),
            [None],
            flops=2 * n * d * d,
            bytes_moved=nbytes + d * d * 4,
            check=lambda out: _max_abs(out, want),
            **extra,
        )


def bench_inquant(rec: Recorder, s: Settings):
    import jax
    import jax.numpy as jnp

    T, C = (64, 64) if s.dry_run else (2**20, 128)
    x = jax.random.normal(jax.random.key(7), (T, C), jnp.float32).astype(jnp.bfloat16)
    packed = _inquant_pack(x, key=jax.random.key(8))
    shape = f"T{T} C{C} bf16"
    nbytes = T * C // 2 + T * 2 * 2 + T * C * 2
    xla = jax.jit(functools.partial(_inquant_unpack, dtype=jnp.bfloat16, implementation="xla"))
    want = xla(packed)
    rec.measure("inquant", "inquant_unpack", "xla", shape, lambda c: (xla, (packed,)), [None], bytes_moved=nbytes)

    def make(rows):
        f = functools.partial(_inquant_unpack, dtype=jnp.bfloat16, implementation=s.pallas, block_rows=rows)
        return jax.jit(f), (packed,)

    rec.measure(
        "inquant",
        "inquant_unpack",
        "pallas",
        shape,
        make,
        [32] if s.dry_run else [32, 64, 128, 256],
        bytes_moved=nbytes,
        check=lambda out: _max_abs(out, want),
    )


def bench_matmul(rec: Recorder, s: Settings):
    import jax
    import jax.numpy as jnp

    N = K = 256 if s.dry_run else 8192
    Ms = (1,) if s.dry_run else (1, 16, 4096)
    w = jax.random.normal(jax.random.key(3), (N, K), jnp.float32).astype(jnp.bfloat16)
    g = jnp.float32(float(jnp.max(jnp.abs(w.astype(jnp.float32)))) / (448 * 6))
    wq = _quantize("nvfp4", w, g, implementation="xla")
    w_bytes_fp4 = N * K // 2 + N * K // 16
    for M in Ms:
        x = jax.random.normal(jax.random.key(M), (M, K), jnp.float32).astype(jnp.bfloat16)
        shape = f"M{M} N{N} K{K} nvfp4"
        flops = 2 * M * N * K
        io = M * K * 2 + M * N * 2
        xla = jax.jit(functools.partial(_fp4_matmul, implementation="xla"))
        want = xla(x, wq)
        rec.measure(
            "matmul",
            "fp4_matmul",
            "xla",
            shape,
            lambda c: (xla, (x, wq)),
            [None],
            flops=flops,
            bytes_moved=w_bytes_fp4 + io,
            M=M,
        )
        decode = M <= 16
        if s.dry_run:
            grid = [(16, 64, 128)]
        elif decode:
            grid = [(16, 64, 256), (16, 128, 256), (16, 64, 512), (16, 256, 128)]
        else:
            grid = [(64, 64, 128), (128, 128, 128), (64, 128, 256), (128, 64, 256)]

        def make(cfg, x=x):
            f = functools.partial(_fp4_matmul, implementation=s.pallas, block_sizes=_matmul_block_sizes(*cfg))
            return jax.jit(f), (x, wq)

        rec.measure(
            "matmul",
            "fp4_matmul",
            "pallas",
            shape,
            make,
            grid,
            flops=flops,
            bytes_moved=w_bytes_fp4 + io,
            check=lambda out: _max_abs(out, want),
            M=M,
        )
        dense = jax.jit(lambda x, w: jnp.dot(x, w.T, preferred_element_type=jnp.float32).astype(jnp.bfloat16))
        rec.measure(
            "matmul",
            "fp4_matmul",
            "bf16_dense",
            shape,
            lambda c: (dense, (x, w)),
            [None],
            flops=flops,
            bytes_moved=N * K * 2 + io,
            M=M,
        )


# ---------------------------------------------------------------------------------------------------------
# Goals of issue 20, tests, figure, table
# ---------------------------------------------------------------------------------------------------------


def _find(records, **kw):
    return [r for r in records if all(r.get(k) == v for k, v in kw.items())]


def goals(records, peaks, dry_run: bool) -> list[dict]:
    """Each goal: measured, target, met (None when not measured, not applicable, or a dry run)."""
    out = []

    def goal(name, measured, target, met, why=""):
        out.append(dict(goal=name, measured=measured, target=target, met=None if dry_run else met, note=why))

    for r in _find(records, section="quant", impl="pallas"):
        f = r.get("frac_peak_hbm")
        goal(
            f"{r['op']} >= 70% of HBM peak",
            f,
            0.7,
            None if f is None else f >= 0.7,
            "" if peaks else "peak unknown for this device",
        )
    Lmax = max((r.get("L", 0) for r in _find(records, section="block_sparse")), default=0)
    for r in _find(records, section="block_sparse", L=Lmax):
        sp = r.get("speedup_vs_dense")
        target = 0.8 * r["ideal_speedup"]
        goal(
            f"block-sparse {r['impl']} L={Lmax} s={r['sparsity']}: speedup >= 0.8/(1-s)",
            sp,
            target,
            None if sp is None else sp >= target,
        )
    for r in _find(records, section="matmul", impl="pallas"):
        if r.get("M", 0) > 16 or not r.get("time_s"):
            continue
        peer = _find(records, section="matmul", impl="bf16_dense", shape=r["shape"])
        tb = peer[0].get("time_s") if peer else None
        goal(
            f"fp4_matmul faster than bf16 dense at {r['shape']}",
            None if tb is None else tb / r["time_s"],
            1.0,
            None if tb is None else tb > r["time_s"],
        )
    for r in _find(records, section="fwht", impl="pallas"):
        if r.get("d", 0) < 4096 or not r.get("time_s"):
            continue
        peer = _find(records, section="fwht", impl="dense_rotation", shape=r["shape"])
        td = peer[0].get("time_s") if peer else None
        sp = None if td is None else td / r["time_s"]
        goal(
            f"fwht speedup over dense rotation at d={r['d']} >= d/(4 log2 d)",
            sp,
            r["goal_speedup"],
            None if sp is None else sp >= r["goal_speedup"],
        )
    return out


def run_tests(s: Settings, timeout_s: float) -> dict:
    """pytest over tests/kernels (a small selection in a dry run) with interpret -> pallas forced."""
    if s.skip_tests:
        return dict(skipped=True)
    if s.pytest_args:
        args = list(s.pytest_args)
    elif s.dry_run:  # the plugin loads and patches; one cheap test (the suite itself runs in CI on CPU)
        args = ["tests/kernels/test_hadamard.py::test_kron_split"]
    else:
        args = ["tests/kernels", "--ignore=tests/kernels/test_gpu_check.py"]
    workers = (["-n", "4"] if not s.dry_run else ["-n0"]) if _has_xdist() else []
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "pallas_kernels.gpu_check", *workers, *args]
    env = {
        **os.environ,
        FORCE_ENV: s.pallas,
        "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
        "XLA_PYTHON_CLIENT_MEM_FRACTION": ".2",
    }
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=max(10, timeout_s))
        rc, tail, timed_out = p.returncode, (p.stdout + p.stderr)[-4000:], False
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"") + (e.stderr or b"")
        tail = out.decode(errors="replace")[-4000:] if isinstance(out, bytes) else str(out)[-4000:]
        rc, timed_out = None, True
    summary = [ln for ln in tail.splitlines() if " passed" in ln or " failed" in ln or " error" in ln][-1:]
    return dict(
        command=" ".join(cmd),
        forced=s.pallas,
        rc=rc,
        timed_out=timed_out,
        wall_s=time.perf_counter() - t,
        summary=summary[0] if summary else None,
        tail=tail[-1500:],
    )


def _has_xdist() -> bool:
    try:
        import xdist  # noqa: F401

        return True
    except ImportError:
        return False


def plot(result: dict, path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    recs = result["records"]
    peaks = result["peaks"]
    fig, axs = plt.subplots(2, 3, figsize=(17, 9.5))
    title = f"Kernels on {result['device']['kind']} ({result['device']['peak_table']}), jax {result['jax_version']}"
    if result["dry_run"]:
        title = "DRY RUN (CPU, interpret mode, tiny sizes): timings are meaningless. " + title
    fig.suptitle(title, fontsize=11)

    ax = axs[0, 0]
    key = "frac_peak_flops" if peaks else "tflops"
    for impl in ("pallas_triton", "mosaic_gpu", "xla", "cudnn", "jax_fa3_mgpu"):
        pts = [(r["L"], r[key]) for r in _find(recs, section="attention", impl=impl) if r.get(key)]
        if pts:
            ax.plot(*zip(*pts, strict=True), "o-", label=impl)
    ax.set(
        xscale="log",
        xlabel="sequence length L (tokens)",
        ylabel="fraction of bf16 peak FLOP/s" if peaks else "TFLOP/s",
        title="dense attention (non-causal)",
    )
    ax.legend(fontsize=8)

    ax = axs[0, 1]
    sp = np.array(SPARSITIES)
    ax.plot(sp, 1 / (1 - sp), "k--", label="ideal 1/(1-s)")
    ax.plot(sp, 0.8 / (1 - sp), "k:", label="goal 0.8/(1-s)")
    for impl, mk in (("pallas_triton", "o-"), ("mosaic_gpu", "s-")):
        for L in sorted({r["L"] for r in _find(recs, section="block_sparse", impl=impl)}):
            pts = [
                (r["sparsity"], r["speedup_vs_dense"])
                for r in _find(recs, section="block_sparse", impl=impl, L=L)
                if r.get("speedup_vs_dense")
            ]
            if pts:
                ax.plot(*zip(*pts, strict=True), mk, label=f"{impl} L={L}")
    ax.set(
        yscale="log",
        xlabel="block sparsity s",
        ylabel="speedup over the same family's dense kernel",
        title="block-sparse attention",
    )
    ax.legend(fontsize=7)

    ax = axs[0, 2]
    key = "frac_peak_hbm" if peaks else "gbps"
    ops = []
    for sec in ("quant", "fwht", "inquant"):
        for r in _find(recs, section=sec):
            if r.get(key) and r["impl"] in ("pallas", "xla"):
                ops.append((f"{r['op']}\n{r['shape']}" if sec == "fwht" else r["op"], r["impl"], r[key]))
    labels = list(dict.fromkeys(o[0] for o in ops))
    for j, impl in enumerate(("pallas", "xla")):
        vals = [next((o[2] for o in ops if o[0] == lab and o[1] == impl), 0.0) for lab in labels]
        ax.barh(np.arange(len(labels)) + 0.4 * j, vals, height=0.4, label=impl)
    if peaks:
        ax.axvline(0.7, color="k", ls=":", label="goal 70% (quantizers)")
    ax.set_yticks(np.arange(len(labels)) + 0.2, labels, fontsize=6)
    ax.set(xlabel="fraction of HBM peak" if peaks else "GB/s", title="memory-bound kernels: achieved bandwidth")
    ax.legend(fontsize=8)

    ax = axs[1, 0]
    ds = sorted({r["d"] for r in _find(recs, section="fwht")})
    spd = []
    for d in ds:
        p = [r for r in _find(recs, section="fwht", impl="pallas", d=d) if r.get("time_s")]
        q = [r for r in _find(recs, section="fwht", impl="dense_rotation", d=d) if r.get("time_s")]
        spd.append(q[0]["time_s"] / p[0]["time_s"] if p and q else np.nan)
    if ds:
        ax.plot(ds, spd, "o-", label="measured: dense rotation time / fwht time")
        ax.plot(ds, [d / (4 * math.log2(d)) for d in ds], "k^:", label="goal d / (4 log2 d)")
    ax.set(
        xscale="log", yscale="log", xlabel="transform length d", ylabel="speedup", title="FWHT vs dense rotation x @ H"
    )
    ax.legend(fontsize=8)

    ax = axs[1, 1]
    for impl in ("pallas", "xla", "bf16_dense"):
        pts = [(r["M"], r["time_s"] * 1e6) for r in _find(recs, section="matmul", impl=impl) if r.get("time_s")]
        if pts:
            ax.plot(*zip(*pts, strict=True), "o-", label=impl)
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="rows M of x (1, 16 = decode)",
        ylabel="time per call (us)",
        title="fp4_matmul (W4A16, NVFP4 weight) vs bf16 dense",
    )
    ax.legend(fontsize=8)

    ax = axs[1, 2]
    ax.axis("off")
    lines = []
    for g in result["goals"]:
        mark = {True: "MET ", False: "MISS", None: " -- "}[g["met"]]
        m = "n/a" if g["measured"] is None else f"{g['measured']:.3g}"
        lines.append(f"[{mark}] {g['goal'][:60]}: {m} (target {g['target']:.3g})")
    t = result.get("tests") or {}
    lines.append(
        f"tests ({t.get('forced', '')}): {t.get('summary') or ('skipped' if t.get('skipped') else t.get('rc'))}"
    )
    ax.text(0, 1, "\n".join(lines[:34]) or "no goals", va="top", family="monospace", fontsize=6.5)
    ax.set_title("goals of issue 20")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(result: dict) -> str:
    rows = [
        f"{'section':<12} {'op':<26} {'impl':<15} {'shape':<28} {'time':>10} {'TFLOP/s':>8} {'GB/s':>8} "
        f"{'%peak':>6} {'x dense':>7} {'err':>8}  config / note"
    ]
    for r in result["records"]:
        t = f"{r['time_s'] * 1e6:.1f}us" if r.get("time_s") else "-"
        frac = r.get("frac_peak_flops") or r.get("frac_peak_hbm")
        err = r.get("max_abs_err_vs_xla")
        rows.append(
            f"{r['section']:<12} {r['op']:<26} {r['impl']:<15} {r['shape']:<28} {t:>10} "
            f"{r.get('tflops', 0) or 0:>8.2f} {r.get('gbps', 0) or 0:>8.1f} "
            f"{'' if frac is None else f'{100 * frac:.1f}':>6} "
            f"{'' if r.get('speedup_vs_dense') is None else f'{r["speedup_vs_dense"]:.2f}':>7} "
            f"{'' if err is None else f'{err:.1e}':>8}  {r.get('config') or ''} {r.get('error') or r.get('note') or ''}"
        )
    for g in result["goals"]:
        mark = {True: "MET", False: "MISSED", None: "not evaluated"}[g["met"]]
        m = "n/a" if g["measured"] is None else f"{g['measured']:.3g}"
        rows.append(f"goal: {g['goal']}: measured {m}, target {g['target']:.3g}: {mark} {g['note']}")
    return "\n".join(rows)


# Share of the benchmark budget each section may spend autotuning (the first config always runs).
SECTION_SHARES = dict(attention=0.25, block_sparse=0.25, quant=0.2, fwht=0.1, inquant=0.05, matmul=0.15)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m pallas_kernels.gpu_check", description=__doc__.split("\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="CPU: interpret mode, tiny sizes, temp output dir")
    ap.add_argument("--out", type=Path, default=None, help="output dir (default figures/kernels_gpu, dry: temp)")
    ap.add_argument("--skip-tests", action="store_true", help="do not run the pytest step")
    ap.add_argument("--budget-s", type=float, default=None, help="benchmark wall budget (default 270 s GPU)")
    ap.add_argument("--test-timeout-s", type=float, default=None, help="pytest step timeout (default 180 s GPU)")
    ap.add_argument("--sections", default="attention,block_sparse,quant,fwht,inquant,matmul")
    ap.add_argument("pytest_args", nargs="*", help="after --: pytest arguments replacing the default selection")
    a = ap.parse_args(argv)

    import jax

    dev = jax.devices()[0]
    on_gpu = dev.platform == "gpu" and not a.dry_run
    if dev.platform != "gpu" and not a.dry_run:
        ap.error(f"no GPU (platform {dev.platform!r}): run with --dry-run on CPU")
    out = a.out or (Path(tempfile.mkdtemp(prefix="kernels_gpu_")) if a.dry_run else REPO_ROOT / "figures/kernels_gpu")
    s = Settings(
        dry_run=a.dry_run,
        out=Path(out),
        budget_s=a.budget_s or (60.0 if a.dry_run else 270.0),
        skip_tests=a.skip_tests,
        pytest_args=tuple(a.pytest_args),
        reps=1 if a.dry_run else 10,
        trials=1 if a.dry_run else 3,
    )
    table_name, peaks = peaks_for(dev.device_kind)
    rec = Recorder(s, peaks)
    sections = set(a.sections.split(","))
    t_start = time.perf_counter()
    dense = {}
    import jaxlib

    def make_result(tests, bench_s, partial):
        return dict(
            device=dict(kind=dev.device_kind, platform=dev.platform, name=str(dev), peak_table=table_name),
            jax_version=jax.__version__,
            jaxlib_version=jaxlib.__version__,
            dry_run=s.dry_run,
            partial=partial,
            peaks=peaks,
            records=rec.records,
            tuned=rec.tuned,
            goals=goals(rec.records, peaks, s.dry_run),
            tests=tests,
            bench_wall_s=bench_s,
            wall_s=time.perf_counter() - t_start,
            command=" ".join(["python -m pallas_kernels.gpu_check", *(argv if argv is not None else sys.argv[1:])]),
        )

    s.out.mkdir(parents=True, exist_ok=True)
    save = lambda r: (s.out / "kernels_gpu.json").write_text(json.dumps(r, indent=1, default=str))
    for name, fn in (
        ("attention", lambda: bench_attention(rec, s, on_gpu)),
        ("block_sparse", lambda: bench_block_sparse(rec, s, on_gpu, dense)),
        ("quant", lambda: bench_quant(rec, s)),
        ("fwht", lambda: bench_fwht(rec, s)),
        ("inquant", lambda: bench_inquant(rec, s)),
        ("matmul", lambda: bench_matmul(rec, s)),
    ):
        if name not in sections:
            continue
        t, c = time.perf_counter(), time.process_time()
        s.start_section(SECTION_SHARES[name])
        try:
            res = fn()
            if name == "attention":
                dense.update(res)
        except Exception as e:  # noqa: BLE001 - one broken section must not lose the others
            rec.add(name, name, "-", "-", error=_err(e))
        print(
            f"[gpu_check] {name}: {time.perf_counter() - t:.1f}s ({time.process_time() - c:.1f}s CPU)", file=sys.stderr
        )
        save(make_result(None, time.perf_counter() - t_start, partial=True))  # a crash later keeps what was measured
    bench_s = time.perf_counter() - t_start
    tests = run_tests(s, a.test_timeout_s or (120.0 if a.dry_run else 180.0))
    result = make_result(tests, bench_s, partial=False)
    save(result)
    plot(result, s.out / "kernels_gpu.png")
    print(table(result))
    print(f"[gpu_check] wrote {s.out}/kernels_gpu.{{json,png}} in {result['wall_s']:.1f}s", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
