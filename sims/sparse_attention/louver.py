"""Louver threshold retrieval on the model's real q, k (the ``louver`` part of ``run``).

Louver (``jaxwb.pallas_kernels.attention.threshold``): what is reproduced is **one flat level of per-block upper
bounds over contiguous key blocks** of ``block`` keys: a ball (centre c, radius r: max q.k <= q.c + ||q|| r) or
an axis-aligned box (max q.k <= q.m + |q|.w), padded for float32 rounding; a block is scored only if its bound
reaches tau. Not reproduced: the paper's own index (its partitioning of keys, any hierarchy or clustering,
its construction cost and CPU/GPU optimisations) and its speed; the keys are not reordered. The zero-false-
negative property is checked *exactly as stated*: against q.k recomputed in float64 from the float32 inputs
(products exact, a sum of ``D <= 64`` terms with relative error < 1e-14), no key with q.k >= tau lies in a
skipped block or outside the retrieved key set.
"""

from __future__ import annotations

from functools import partial

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.pallas_kernels.attention import threshold_retrieve
from jaxwb.sims.sparse_attention.config import Config

BOUNDS = ("ball", "box")


def louver_study(model, states, cfg: Config) -> dict:
    """Threshold retrieval on every layer's q, k at the middle step of each prompt's dense run."""
    t = cfg.steps // 2

    @eqx.filter_jit
    def qk(m, xs):
        return jax.vmap(lambda x: jnp.stack([jnp.stack([q, k]) for q, k, _ in m.qkv(x)]))(xs)  # [N, nl, 2, L, H, D]

    qk = np.asarray(qk(model, states[:, t]))
    q, k = qk[:, :, 0], qk[:, :, 1]  # [N, nl, L, H, D] float32
    s64 = np.einsum("nlqhd,nlkhd->nlhqk", q.astype(np.float64), k.astype(np.float64))
    s32 = np.einsum("nlqhd,nlkhd->nlhqk", q, k)
    taus = np.quantile(s32.reshape(*s32.shape[:2], -1), np.asarray(cfg.tau_quantiles), axis=-1)  # [Q, N, nl]
    taus = np.moveaxis(taus, 0, -1).astype(np.float32)  # [N, nl, Q]

    @partial(jax.jit, static_argnames=("bound",))
    def retrieve(q, k, taus, bound):
        def one(qq, kk, tau):
            r = threshold_retrieve(qq[None], kk[None], tau, block_size=cfg.block, bound=bound, implementation="xla")
            return r.block_mask[0], r.key_mask[0], r.touched_fraction

        per_tau = lambda qq, kk, ts: jax.lax.map(lambda tau: one(qq, kk, tau), ts)
        return jax.vmap(jax.vmap(per_tau))(q, k, taus)

    out = {"tau": taus}
    for bound in BOUNDS:
        bm, km, touched = (np.asarray(a) for a in retrieve(jnp.asarray(q), jnp.asarray(k), jnp.asarray(taus), bound))
        need = s64[:, :, None] >= taus[:, :, :, None, None, None]  # [N, nl, Q, H, L, L]
        scored = np.repeat(bm, cfg.block, axis=-1)
        out[bound] = {
            "fn_block": np.sum(need & ~scored, axis=(-3, -2, -1)),  # needed keys in skipped blocks
            "fn_key": np.sum(need & ~km, axis=(-3, -2, -1)),  # needed keys not retrieved
            "touched": touched,
            "needed": need.mean(axis=(-3, -2, -1)),
        }
    return out
