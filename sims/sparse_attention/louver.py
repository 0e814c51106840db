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

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.pallas_kernels.attention import threshold_retrieve
from jaxwb.sims.sparse_attention.config import Config

BOUNDS = ("ball", "box")
# tightness slack of the float64 references: 1e-4 of the bound's (score's) magnitude, 10-20x the kernel's own
# float32 pad 4 (D + 2) eps_32 (5e-6 at D = 8, 9e-6 at D = 16)
TIGHT = 1e-4


def bounds64(q, k, block: int, bound: str):
    """Float64 per-block upper bounds of q.k and their magnitudes, from float32 q [..., L, H, D] and
    k [..., Lk, H, D]: (bound, magnitude) [..., H, L, Lk / block]. Ball: centre c = mean key of the block, radius
    r = max ||k - c||, bound q.c + ||q|| r. Box: centre m = (lo + hi) / 2, half-width w = (hi - lo) / 2,
    bound q.m + |q|.w. Magnitude: |q|.|centre| + the radius term (what the kernel's rounding pad scales with)."""
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    *lead, Lk, H, D = k.shape
    kb = np.moveaxis(k, -2, -3).reshape(*lead, H, Lk // block, block, D)  # [..., H, nb, b, D]
    qh = np.moveaxis(q, -2, -3)  # [..., H, L, D]
    if bound == "ball":
        c = kb.mean(axis=-2)
        r = np.sqrt(np.max(np.sum((kb - c[..., None, :]) ** 2, axis=-1), axis=-1))  # [..., H, nb]
        rad = np.linalg.norm(qh, axis=-1)[..., None] * r[..., None, :]
    else:
        lo, hi = kb.min(axis=-2), kb.max(axis=-2)
        c, w = 0.5 * (lo + hi), 0.5 * (hi - lo)
        rad = np.einsum("...qd,...nd->...qn", np.abs(qh), w)
    qc = np.einsum("...qd,...nd->...qn", qh, c)
    return qc + rad, np.einsum("...qd,...nd->...qn", np.abs(qh), np.abs(c)) + rad


def louver_study(qkv, cfg: Config) -> dict:
    """Threshold retrieval on every layer's q, k at the middle step of each prompt's dense run: ``qkv`` float32
    [N, nl, 3, H, L, D] (``trajectory.step_qkv`` of the states at step ``steps // 2``)."""
    qkv = np.asarray(qkv)
    q, k = np.swapaxes(qkv[:, :, 0], -3, -2), np.swapaxes(qkv[:, :, 1], -3, -2)  # [N, nl, L, H, D] float32
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

    mag64 = np.einsum("nlqhd,nlkhd->nlhqk", np.abs(q).astype(np.float64), np.abs(k).astype(np.float64))
    far_below = s64[:, :, None] < taus[..., None, None, None] - TIGHT * mag64[:, :, None]  # [N, nl, Q, H, L, L]
    out = {"tau": taus}
    for bound in BOUNDS:
        bm, km, touched = (np.asarray(a) for a in retrieve(jnp.asarray(q), jnp.asarray(k), jnp.asarray(taus), bound))
        need = s64[:, :, None] >= taus[:, :, :, None, None, None]  # [N, nl, Q, H, L, L]
        scored = np.repeat(bm, cfg.block, axis=-1)
        ub, ub_mag = bounds64(q, k, cfg.block, bound)  # [N, nl, H, L, nb]
        never = ub[:, :, None] < taus[..., None, None, None] - TIGHT * ub_mag[:, :, None]  # [N, nl, Q, H, L, nb]
        out[bound] = {
            "fn_block": np.sum(need & ~scored, axis=(-3, -2, -1)),  # needed keys in skipped blocks
            "fn_key": np.sum(need & ~km, axis=(-3, -2, -1)),  # needed keys not retrieved
            "excess_block": np.sum(bm & never, axis=(-3, -2, -1)),  # scored blocks far below tau in float64
            "excess_key": np.sum(km & far_below, axis=(-3, -2, -1)),  # retrieved keys with q.k far below tau
            "touched": touched,
            "needed": need.mean(axis=(-3, -2, -1)),
        }
    return out
