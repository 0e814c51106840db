"""``workbench bench attention``: our dense attention vs its peer, block-sparse vs dense across sparsity.

First rows: ``flash_attention`` (default implementation: the XLA path on CPU, the Pallas kernel on GPU/TPU)
against ``jax.nn.dot_product_attention`` on the same work (L=1024, H=8, D=64, with and without causal):
speedup >= 1 means ours is at least as fast as the peer.

On CPU the XLA paths are timed (block-sparse gathers only the listed key blocks, so its work really shrinks);
on GPU/TPU the Pallas kernels (block-sparse vs our dense flash kernel) and XLA's dense attention
(``jax.nn.dot_product_attention``). Each row reports speedup = baseline / ours and, in the note, the actual
sparsity s (1 - listed blocks / all blocks), the goal 0.8 / (1 - s) and the time per attention score
(query-key pair computed) of the dense baseline and of the block-sparse op. Since the sparse op computes
exactly (1 - s) of the dense scores, speedup = 1 / (1 - s) x (dense ns/score) / (sparse ns/score): a speedup
*above* the ideal 1 / (1 - s) means the sparse op pays less per score than the baseline, not that it skips
more than 1 - s of the work. On CPU the rows also give the same ratio in process CPU time. Why rows went
above the ideal (120x and 36x at s = 0.938, L = 1024 and 2048, ideal 16x, in one run at load ~10 on 2
cores): wall time. Measured alternately, best of 3 (L = 1024, H = 2, D = 64, blocks of 64, load ~9): dense
``jax.nn.dot_product_attention`` 12.7 ns/score in CPU time but 33.2 in wall time (CPU/wall 0.38; presumably its two
threads wait for each other when one is descheduled), the gather path 10.0-10.9 ns/score CPU, 14.2-16.4
wall (CPU/wall 0.6-0.8): in CPU time speedup = 1 / (1 - s) x ~1.2, in wall time x ~2.3 plus drift (the
baseline used to be timed once per L; it is now re-timed alternately with each row). Nothing skips more than
1 - s of the work.
"""

from __future__ import annotations

import time
from functools import partial

import jax
import jax.numpy as jnp

from jaxwb.pallas_kernels.attention import AttentionBlockSizes, block_sparse_attention, flash_attention
from jaxwb.pallas_kernels.attention.reference import mask_to_block_lists
from jaxwb.sims.core.timing import BenchRow, time_call


def _lists(key, B, H, n, cap):
    score = jax.random.uniform(key, (B, H, n, n))
    rank = jnp.argsort(jnp.argsort(-score, axis=-1), axis=-1)
    return mask_to_block_lists(rank < cap, cap)


def _peer_rows(key, *, repeats: int, dtype) -> list[BenchRow]:
    """flash_attention (default implementation) vs jax.nn.dot_product_attention, same inputs."""
    L, H, D = 1024, 8, 64
    q, k, v = (jax.random.normal(kx, (1, L, H, D), dtype) for kx in jax.random.split(jax.random.fold_in(key, 7), 3))
    rows = []
    for causal in (False, True):
        ours = jax.jit(partial(flash_attention, is_causal=causal))
        peer = jax.jit(partial(jax.nn.dot_product_attention, is_causal=causal))
        # alternate the two (3 rounds, best median each): the machine's load drifts between calls
        t_peer, t_ours = float("inf"), float("inf")
        for _ in range(3):
            t_peer = min(t_peer, time_call(peer, q, k, v, repeats=repeats))
            t_ours = min(t_ours, time_call(ours, q, k, v, repeats=repeats))
        tag = "xla" if jax.default_backend() == "cpu" else "default"
        rows.append(
            BenchRow(
                f"flash L={L} H={H} D={D}{' causal' if causal else ''}",
                f"flash_attention[{tag}]",
                "jax.nn.dot_product_attention",
                t_ours,
                t_peer,
                "speedup = peer / ours (>= 1: as fast)",
            )
        )
    return rows


def _cpu_call(fn, *args, repeats: int) -> float:
    """Process CPU seconds per call (all threads) after a warm-up: on a loaded host wall time also counts
    the time a multi-threaded op waits for its descheduled threads (dense attention: ~2.6x its CPU time at
    load ~9 on 2 cores, the gather path ~1.5x), CPU time does not."""
    jax.block_until_ready(fn(*args))
    t0 = time.process_time()
    for _ in range(repeats):
        jax.block_until_ready(fn(*args))
    return (time.process_time() - t0) / repeats


def _note(*, L, s, t_sparse, t_dense, scores_sparse, scores_dense) -> str:
    """Sparsity, goal and time per score of both sides: speedup = 1 / (1 - s) x their ratio (module doc)."""
    ns_dense, ns_sparse = 1e9 * t_dense / scores_dense, 1e9 * t_sparse / scores_sparse
    return (
        f"L={L} s={s:.3f} goal {0.8 / (1 - s):.1f}x; ns/score dense {ns_dense:.3f}, sparse {ns_sparse:.3f}: "
        f"speedup = 1/(1-s) x {ns_dense / ns_sparse:.2f}"
    )


def _keep_dtype_rows(key, *, L: int = 1024, s: float = 0.75, repeats: int = 3) -> list[BenchRow]:
    """CPU, bfloat16, s = 0.75: the XLA gather path with K/V kept in bfloat16 (``xla_keep_dtype=True``, float32
    accumulation) against the default (cast to float32) and against dense ``jax.nn`` (ideal 1 / (1 - s) = 4);
    best of 3 alternating rounds, in process CPU time as well (module docstring: wall time on a loaded host)."""
    block, H, D = 64, 2, 64
    q, k, v = (jax.random.normal(jax.random.fold_in(key, i), (1, L, H, D), jnp.bfloat16) for i in range(3))
    n = L // block
    cap = max(1, round((1 - s) * n))
    cnt, idx = _lists(key, 1, H, n, cap)
    sparse = partial(block_sparse_attention, block_sizes=AttentionBlockSizes(block, block), implementation="xla")
    fns = {
        "keep": jax.jit(partial(sparse, xla_keep_dtype=True)),
        "default": jax.jit(sparse),
    }
    dense = jax.jit(jax.nn.dot_product_attention)
    wall = dict.fromkeys([*fns, "dense"], float("inf"))
    cpu = dict(wall)
    for _ in range(3):
        for name, fn in fns.items():
            wall[name] = min(wall[name], time_call(fn, q, k, v, cnt, idx, repeats=repeats))
            cpu[name] = min(cpu[name], _cpu_call(fn, q, k, v, cnt, idx, repeats=repeats))
        wall["dense"] = min(wall["dense"], time_call(dense, q, k, v, repeats=repeats))
        cpu["dense"] = min(cpu["dense"], _cpu_call(dense, q, k, v, repeats=repeats))
    op = f"block_sparse bf16 L={L} s={1 - cap / n:.2f}"
    ours = "block_sparse[xla-gather, keep bf16]"
    return [
        BenchRow(op, ours, "dense[xla jax.nn]", wall["keep"], wall["dense"],
                 f"ideal {n / cap:.1f}x; in process CPU time {cpu['dense'] / cpu['keep']:.2f}x"),
        BenchRow(op, ours, "block_sparse[xla-gather, f32 cast] (default)", wall["keep"], wall["default"],
                 f"in process CPU time {cpu['default'] / cpu['keep']:.2f}x"),
    ]  # fmt: skip


def bench(quick: bool = True) -> list[BenchRow]:
    on_cpu = jax.default_backend() == "cpu"
    if on_cpu:
        lengths = (1024,) if quick else (1024, 2048, 4096)
        sparsities = (0.5, 0.9) if quick else (0.5, 0.75, 0.9, 0.95)
        block, H, D, dtype = 64, 2, 64, jnp.float32
    else:
        lengths = (2048,) if quick else (2048, 8192, 16384)
        sparsities = (0.5, 0.9) if quick else (0.5, 0.75, 0.9, 0.95)
        block, H, D, dtype = 128, 8, 128, jnp.bfloat16
    repeats = 3 if quick else 5
    impl = "xla" if on_cpu else {"gpu": "triton", "tpu": "mosaic_tpu"}[jax.default_backend()]
    key = jax.random.key(0, impl="unsafe_rbg")
    rows = _peer_rows(key, repeats=max(repeats, 5), dtype=dtype)
    if on_cpu:
        rows += _keep_dtype_rows(key, repeats=repeats)
    for L in lengths:
        kq, kk, kv, km = jax.random.split(jax.random.fold_in(key, L), 4)
        q, k, v = (jax.random.normal(kx, (1, L, H, D), dtype) for kx in (kq, kk, kv))
        n = L // block
        xla_dense = jax.jit(jax.nn.dot_product_attention)
        ours_dense = jax.jit(
            partial(flash_attention, implementation=impl, block_sizes=AttentionBlockSizes(block, block))
        )
        t_xla0 = time_call(xla_dense, q, k, v, repeats=repeats)
        t_dense0 = t_xla0 if on_cpu else time_call(ours_dense, q, k, v, repeats=repeats)
        for s in sparsities:
            cap = max(1, round((1 - s) * n))
            cnt, idx = _lists(km, 1, H, n, cap)
            fn = jax.jit(
                partial(block_sparse_attention, block_sizes=AttentionBlockSizes(block, block), implementation=impl)
            )
            # alternate with the dense baseline (3 rounds, best of each): a baseline timed once per L and
            # compared with later sparse timings made load drift show up as "speedups" far above 1 / (1 - s)
            t, t_xla, c, c_xla = float("inf"), t_xla0, float("inf"), float("inf")
            for _ in range(3):
                t = min(t, time_call(fn, q, k, v, cnt, idx, repeats=repeats))
                t_xla = min(t_xla, time_call(xla_dense, q, k, v, repeats=repeats))
                c = min(c, _cpu_call(fn, q, k, v, cnt, idx, repeats=repeats))
                c_xla = min(c_xla, _cpu_call(xla_dense, q, k, v, repeats=repeats))
            t_dense = t_xla if on_cpu else t_dense0
            s_act = 1 - cap / n
            note = partial(_note, L=L, s=s_act, t_sparse=t, scores_dense=H * L * L, scores_sparse=H * L * cap * block)
            tag = "xla-gather" if on_cpu else impl
            rows.append(
                BenchRow(
                    f"block_sparse L={L} s={s_act:.2f}",
                    f"block_sparse[{tag}]",
                    "dense[xla jax.nn]",
                    t,
                    t_xla,
                    note(t_dense=t_xla) + f"; in process CPU time: 1/(1-s) x {c_xla / c * (1 - s_act):.2f}",
                )
            )
            if not on_cpu:
                rows.append(
                    BenchRow(
                        f"block_sparse L={L} s={s_act:.2f}",
                        "block_sparse[pallas]",
                        "flash[pallas] (ours)",
                        t,
                        t_dense,
                        note(t_dense=t_dense),
                    )
                )
    return rows
