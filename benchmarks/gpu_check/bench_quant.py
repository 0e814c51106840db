"""Quantization-side benchmarks: NVFP4 / MXFP4 / RaZeR quantize and dequantize, FWHT (vs a dense rotation
``x @ H``) and InQuant unpack as achieved HBM bandwidth (bytes read + written / time); ``fp4_matmul`` (W4A16)
at decode (M = 1, 16) and prefill (M = 4096) shapes vs a bf16 dense matmul.

Old and new variants side by side, each its own ``impl``: ``fp4_matmul`` "triton" (today's
interleaved decode), "triton_bitplace" (``decode="bitplace"``) and, for M > 16, "triton_dequant_dot"
(``dequantize_above_m=0``: dequantize once + XLA dot); the quantizers' "triton" autotunes over tiles and
``num_warps`` (the config is recorded) and "triton_masked" runs the default tile with ``edge="mask"``; the
FWHT's "xla_kron" (``xla_method="kron"``) beside the XLA butterfly, with the float32 kernel's error against a
float64 reference (``rel_err_f64``)."""

from __future__ import annotations

import math

from benchmarks.gpu_check import adapters
from benchmarks.gpu_check.autotune import Recorder, Settings, against, fixed, jitted, max_abs_diff


def _quant_grid(s: Settings):
    if s.dry_run:
        return [(16, 512), (8, 256, 2)]
    return [(16, 512), (16, 512, 8), (32, 512, 8), (8, 512, 2), (16, 1024, 8), (8, 1024, 4), (32, 1024, 8)]


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
        xla_q = jitted(adapters.quantize, fmt, implementation="xla")
        ref_q = xla_q(x, g)
        xla_d = jitted(adapters.dequantize, fmt, dtype=jnp.bfloat16, implementation="xla")
        want = xla_d(ref_q)

        def make_q(cfg, *, fmt=fmt, g=g):
            return jitted(
                adapters.quantize, fmt, implementation=s.kernel, block_sizes=adapters.quant_block_sizes(*cfg)
            ), (x, g)

        def make_d(cfg, *, fmt=fmt, ref_q=ref_q):
            return jitted(
                adapters.dequantize,
                fmt,
                dtype=jnp.bfloat16,
                implementation=s.kernel,
                block_sizes=adapters.quant_block_sizes(*cfg),
            ), (ref_q,)

        for impl in ("xla", "triton"):
            kernel = impl == "triton"
            rec.measure(
                "quant",
                f"{fmt}_quantize",
                impl,
                shape,
                make_q if kernel else fixed(xla_q, x, g),
                _quant_grid(s) if kernel else [None],
                bytes_moved=q_bytes,
                check=(lambda out, ref=ref_q.codes: max_abs_diff(out.codes, ref)) if kernel else None,
            )
            rec.measure(
                "quant",
                f"{fmt}_dequantize",
                impl,
                shape,
                make_d if kernel else fixed(xla_d, ref_q),
                _quant_grid(s) if kernel else [None],
                bytes_moved=d_bytes,
                check=against(want) if kernel else None,
            )
        masked = adapters.quant_block_sizes(16, 512, edge="mask")
        mq = jitted(adapters.quantize, fmt, implementation=s.kernel, block_sizes=masked)
        md = jitted(adapters.dequantize, fmt, dtype=jnp.bfloat16, implementation=s.kernel, block_sizes=masked)
        rec.measure("quant", f"{fmt}_quantize", "triton_masked", shape, fixed(mq, x, g), [None], bytes_moved=q_bytes)
        rec.measure("quant", f"{fmt}_dequantize", "triton_masked", shape, fixed(md, ref_q), [None], bytes_moved=d_bytes)


# On 2026-12-04 (H200, jax 0.11.2) XLA's GEMM autotuning of the d = 16384 float32 rotation (a 1 GiB H) ran past
# the step's 200 s limit and cost the sections after it: the dense peer stops at d = 4096.
DENSE_ROTATION_MAX_D = 4096
DENSE_ROTATION_SKIP = "skipped: d > 4096 (XLA's GEMM autotuning of a 16384^2 f32 rotation ran > 100 s on an H200)"


def bench_fwht(rec: Recorder, s: Settings):
    import jax
    import jax.numpy as jnp

    total = 2**12 if s.dry_run else 2**25
    ds = (64,) if s.dry_run else (s.fwht_ds or (256, 1024, 4096, 16384))
    # (dense_max, tile, block_rows, num_warps); the GPU defaults first (tile 64 with 4 warps below d = 4096, 8
    # from 4096: hadamard.default_block_sizes, from the 2026-12-04 H200 runs); below 4096 the tile does not
    # change the kernel
    grid = (
        [(128, 128, 32, 4)] if s.dry_run else [(128, 64, 64, 4), (128, 64, 64, 8), (128, 32, 64, 4), (128, 128, 32, 4)]
    )
    for d in ds:
        n = total // d
        x = jax.random.normal(jax.random.key(d), (n, d), jnp.float32)
        shape = f"{n}x{d} f32"
        nbytes = 2 * n * d * 4
        xla = jitted(adapters.fwht, implementation="xla")
        want = xla(x)
        extra = dict(d=d, goal_speedup=d / (4 * math.log2(d)))
        rec.measure("fwht", "fwht", "xla", shape, fixed(xla, x), [None], bytes_moved=nbytes, **extra)
        kron = jitted(adapters.fwht, implementation="xla", xla_method="kron")
        rec.measure(
            "fwht", "fwht", "xla_kron", shape, fixed(kron, x), [None], bytes_moved=nbytes, check=against(want), **extra
        )

        def make(cfg, *, x=x):
            return jitted(adapters.fwht, implementation=s.kernel, block_sizes=adapters.hadamard_block_sizes(*cfg)), (x,)

        r = rec.measure("fwht", "fwht", "triton", shape, make, grid, bytes_moved=nbytes, check=against(want), **extra)
        r["rel_err_f64"] = _rel_err_f64(x, lambda v: adapters.fwht(v, implementation=s.kernel))
        if d > DENSE_ROTATION_MAX_D:
            rec.add("fwht", "fwht", "dense_rotation", shape, note=DENSE_ROTATION_SKIP, **extra)
            continue
        h = jitted(adapters.fwht, implementation="xla")(jnp.eye(d, dtype=jnp.float32))  # H (symmetric)
        # the default precision: what a user's x @ H runs (TF32 on a GPU); HIGHEST would be six bf16 passes
        dense = jax.jit(lambda x, h: jnp.dot(x, h))
        rec.measure(
            "fwht",
            "fwht",
            "dense_rotation",
            shape,
            fixed(dense, x, h),
            [None],
            flops=2 * n * d * d,
            bytes_moved=nbytes + d * d * 4,
            check=against(want),
            **extra,
        )


def _rel_err_f64(x, fn, rows: int = 8) -> float | None:
    """max |fn(x) - exact| / max |exact| on the first ``rows`` rows, exact = float64 ``x @ H / sqrt(d)``."""
    import numpy as np

    from jaxwb.pallas_kernels.quant.hadamard import hadamard_matrix_np

    d = x.shape[-1]
    if d > 8192:
        return None
    try:
        xs = x[:rows]
        exact = np.asarray(xs, np.float64) @ hadamard_matrix_np(d).astype(np.float64) / np.sqrt(d)
        return float(np.abs(np.asarray(fn(xs), np.float64) - exact).max() / np.abs(exact).max())
    except Exception:
        return None


def bench_inquant(rec: Recorder, s: Settings):
    import jax
    import jax.numpy as jnp

    T, C = (64, 64) if s.dry_run else (2**20, 128)
    x = jax.random.normal(jax.random.key(7), (T, C), jnp.float32).astype(jnp.bfloat16)
    packed = adapters.inquant_pack(x, key=jax.random.key(8))
    shape = f"T{T} C{C} bf16"
    nbytes = T * C // 2 + T * 2 * 2 + T * C * 2
    xla = jitted(adapters.inquant_unpack, dtype=jnp.bfloat16, implementation="xla")
    want = xla(packed)
    rec.measure("inquant", "inquant_unpack", "xla", shape, fixed(xla, packed), [None], bytes_moved=nbytes)

    def make(rows):
        return jitted(adapters.inquant_unpack, dtype=jnp.bfloat16, implementation=s.kernel, block_rows=rows), (packed,)

    rec.measure(
        "inquant",
        "inquant_unpack",
        "triton",
        shape,
        make,
        [32] if s.dry_run else [64, 128, 32, 256],
        bytes_moved=nbytes,
        check=against(want),
    )


def _matmul_grid(s: Settings, M: int):
    if s.dry_run:
        return [(16, 64, 128)]
    if M <= 16:  # decode: on the 2026-12-04 H200 run (16, 64, 256) was best of these four but 2.2x bf16 dense;
        # narrower N tiles (more programs for 132 SMs) and longer K chunks (fewer loop trips) are tried first
        return [(16, 32, 512), (16, 16, 512), (16, 32, 1024), (16, 16, 1024), (16, 64, 512), (16, 64, 256)]
    return [(64, 64, 128), (128, 128, 128), (64, 128, 256), (128, 64, 256)]


def bench_matmul(rec: Recorder, s: Settings):
    import jax
    import jax.numpy as jnp

    # 16384^2: the NVFP4 weight (144 MB) is over twice the H200's 60 MB L2, so repeated calls read HBM
    N = K = 256 if s.dry_run else 16384
    Ms = (1,) if s.dry_run else (s.matmul_ms or (1, 16, 4096))
    w = jax.random.normal(jax.random.key(3), (N, K), jnp.float32).astype(jnp.bfloat16)
    g = jnp.float32(float(jnp.max(jnp.abs(w.astype(jnp.float32)))) / (448 * 6))
    wq = adapters.quantize("nvfp4", w, g, implementation="xla")
    w_bytes_fp4 = N * K // 2 + N * K // 16
    for M in Ms:
        x = jax.random.normal(jax.random.key(M), (M, K), jnp.float32).astype(jnp.bfloat16)
        shape = f"M{M} N{N} K{K} nvfp4"
        flops = 2 * M * N * K
        io = M * K * 2 + M * N * 2
        xla = jitted(adapters.fp4_matmul, implementation="xla")
        want = xla(x, wq)
        rec.measure(
            "matmul",
            "fp4_matmul",
            "xla",
            shape,
            fixed(xla, x, wq),
            [None],
            flops=flops,
            bytes_moved=w_bytes_fp4 + io,
            M=M,
        )

        def make(cfg, *, x=x):
            return jitted(
                adapters.fp4_matmul, implementation=s.kernel, block_sizes=adapters.matmul_block_sizes(*cfg)
            ), (x, wq)

        rec.measure(
            "matmul",
            "fp4_matmul",
            "triton",
            shape,
            make,
            _matmul_grid(s, M),
            flops=flops,
            bytes_moved=w_bytes_fp4 + io,
            check=against(want),
            M=M,
        )

        def make_bitplace(cfg, *, x=x):
            return jitted(
                adapters.fp4_matmul,
                implementation=s.kernel,
                block_sizes=adapters.matmul_block_sizes(*cfg),
                decode="bitplace",
            ), (x, wq)

        common = dict(flops=flops, bytes_moved=w_bytes_fp4 + io, check=against(want), M=M)
        r = rec.measure("matmul", "fp4_matmul", "triton_bitplace", shape, make_bitplace, _matmul_grid(s, M), **common)
        if s.dry_run:  # matmul.py, "Variants": the CPU interpreter flushes bfloat16 subnormals
            r["note"] = "dry run: XLA:CPU flushes bf16 subnormals, so codes +-0.5 decode to 0 (error expected)"
        if M > 16 or s.dry_run:
            f = jitted(adapters.fp4_matmul, implementation=s.kernel, dequantize_above_m=0)
            rec.measure("matmul", "fp4_matmul", "triton_dequant_dot", shape, fixed(f, x, wq), [None], **common)
        dense = jax.jit(lambda x, w: jnp.dot(x, w.T, preferred_element_type=jnp.float32).astype(jnp.bfloat16))
        rec.measure(
            "matmul",
            "fp4_matmul",
            "bf16_dense",
            shape,
            fixed(dense, x, w),
            [None],
            flops=flops,
            bytes_moved=N * K * 2 + io,
            M=M,
        )
