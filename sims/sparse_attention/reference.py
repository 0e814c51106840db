"""Independent float64 NumPy references for what the run measures at one denoising step (the ``reference`` part of
``run`` and the claims on it): the quantities every policy comparison rests on, recomputed from the model's own
q, k, v with none of ``jaxwb.theory.sparse_attention``'s code, so that a bug in the measured pipeline (the pooled
maps, Step-dLLM's pooled-Q/K importance, the head concentration, the top-k and mass-greedy selections, the masked
attention's output error) shows up as a disagreement with its definition in the papers.

Shapes: heads first, any leading axes: q, k, v [..., H, L, D]; block maps and masks [..., H, Qb, Kb].
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Bool, Float, Int


def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _blocks(L: int, block: int) -> int:
    if block <= 0 or L % block:
        raise ValueError(f"block must be a positive divisor of the sequence length {L}, got {block}")
    return L // block


def scores(
    q: Float[np.ndarray, "*lead H L D"], k: Float[np.ndarray, "*lead H L D"]
) -> Float[np.ndarray, "*lead H L L"]:
    """Scaled dot products ``q.k / sqrt(D)`` in float64 (the softmax logits of dense attention)."""
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    return np.einsum("...qd,...kd->...qk", q, k) / np.sqrt(q.shape[-1])


def block_mass(
    q: Float[np.ndarray, "*lead H L D"], k: Float[np.ndarray, "*lead H L D"], block: int
) -> Float[np.ndarray, "*lead H Qb Kb"]:
    """Dense attention pooled to blocks: the mean over the queries of block I of the softmax mass on key block J
    (Step-dLLM's block attention map; rows sum to 1)."""
    p = _softmax(scores(q, k))
    *lead, L, _ = p.shape
    nb = _blocks(L, block)
    return p.reshape(*lead, nb, block, nb, block).sum(axis=-1).mean(axis=-2)


def pooled_importance(
    q: Float[np.ndarray, "*lead H L D"], k: Float[np.ndarray, "*lead H L D"], block: int
) -> Float[np.ndarray, "*lead H Qb Kb"]:
    """Step-dLLM's cheap block importance: ``softmax_J(qbar_I . kbar_J / sqrt(D))`` with qbar, kbar the mean
    query / key of each block."""
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    *lead, L, D = q.shape
    nb = _blocks(L, block)
    qb = q.reshape(*lead, nb, block, D).mean(axis=-2)
    kb = k.reshape(*lead, nb, block, D).mean(axis=-2)
    return _softmax(scores(qb, kb))


def topk_mass(maps: Float[np.ndarray, "*lead Qb Kb"], k: int) -> Float[np.ndarray, "*lead"]:
    """Mass in the ``k`` largest key blocks of each row, averaged over rows, in float64 (a full sort, not a top-k
    selection): the head-concentration statistic of the map analysis."""
    if not 0 < k <= np.shape(maps)[-1]:
        raise ValueError(f"k must lie in [1, {np.shape(maps)[-1]}], got {k}")
    return np.sort(np.asarray(maps, np.float64), axis=-1)[..., -k:].sum(axis=-1).mean(axis=-1)


def concentration(importance: Float[np.ndarray, "*lead H Qb Kb"]) -> Float[np.ndarray, "*lead H"]:
    """Head concentration ``1 - H(row) / log Kb`` averaged over query-block rows (0 = uniform, 1 = one block)."""
    a = np.asarray(importance, np.float64)
    ent = -np.sum(np.where(a > 0, a * np.log(np.where(a > 0, a, 1.0)), 0.0), axis=-1)
    return 1.0 - ent.mean(axis=-1) / np.log(a.shape[-1])


def topk_violations(
    importance: Float[np.ndarray, "*lead Qb Kb"], mask: Bool[np.ndarray, "*lead Qb Kb"], k: int, *, tol: float
) -> Int[np.ndarray, ""]:
    """Rows of ``mask`` that are not a top-``k`` set of ``importance``: rows keeping a number of blocks other than
    ``k``, or keeping a block whose importance is below a dropped block's by more than ``tol`` (ties within
    ``tol``, float32 rounding of the measured importance, may go either way)."""
    a, m = np.asarray(importance, np.float64), np.asarray(mask, bool)
    if a.shape != m.shape:
        raise ValueError(f"mask must have the importance's shape {a.shape}, got {m.shape}")
    count = m.sum(axis=-1) != k
    kept_min = np.where(m, a, np.inf).min(axis=-1)
    dropped_max = np.where(m, -np.inf, a).max(axis=-1)
    return np.asarray(np.sum(count | (kept_min < dropped_max - tol)))


def greedy_violations(
    importance: Float[np.ndarray, "*lead H Qb Kb"],
    mask: Bool[np.ndarray, "*lead H Qb Kb"],
    budget: float,
    *,
    tol: float,
) -> Int[np.ndarray, ""]:
    """Blocks where ``mask`` departs from the mass-greedy allocation of one layer: the K = round(rho H Qb Kb)
    largest importances over all heads and rows (K clipped to [1, H Qb Kb]), united with every row's largest
    block. Counted: a kept block below both the K-th largest importance and its row's maximum by more than ``tol``,
    a dropped block above the K-th largest by more than ``tol``, and a row keeping no block within ``tol`` of its
    maximum (ties within ``tol``, float32 rounding, may go either way)."""
    a, m = np.asarray(importance, np.float64), np.asarray(mask, bool)
    if a.shape != m.shape or a.ndim < 3:
        raise ValueError(f"mask must have the importance's shape [..., H, Qb, Kb], got {m.shape} and {a.shape}")
    flat = a.reshape(*a.shape[:-3], -1)
    n = flat.shape[-1]
    kth = -np.sort(-flat, axis=-1)[..., min(max(int(np.round(budget * n)), 1), n) - 1]
    kth = kth.reshape(*kth.shape, 1, 1, 1)
    row_max = a.max(axis=-1, keepdims=True)
    extra = m & (a < kth - tol) & (a < row_max - tol)
    missing = ~m & (a > kth + tol)
    no_best = ~np.any(m & (a >= row_max - tol), axis=-1)
    return np.asarray(extra.sum() + missing.sum() + no_best.sum())


def masked_output_error(
    q: Float[np.ndarray, "*lead H L D"],
    k: Float[np.ndarray, "*lead H L D"],
    v: Float[np.ndarray, "*lead H L Dv"],
    mask: Bool[np.ndarray, "*lead H Qb Kb"],
) -> Float[np.ndarray, "*lead"]:
    """Relative attention-output error ``||O_mask - O||_F / ||O||_F`` over the heads, queries and value dims of
    one layer: O = softmax(q k^T / sqrt(D)) v, O_mask the same softmax restricted to the blocks ``mask`` keeps
    (renormalised over the kept keys; a query keeping no key gets 0)."""
    s = scores(q, k)
    *lead, L, Lk = s.shape
    Qb, Kb = np.shape(mask)[-2:]
    keep = np.repeat(np.repeat(np.asarray(mask, bool), L // Qb, axis=-2), Lk // Kb, axis=-1)
    v = np.asarray(v, np.float64)
    o = _softmax(s) @ v
    e = np.where(keep, np.exp(s - np.where(keep, s, -np.inf).max(axis=-1, keepdims=True)), 0.0)
    z = e.sum(axis=-1, keepdims=True)
    om = (e / np.where(z == 0, 1.0, z)) @ v
    return np.sqrt(np.sum((om - o) ** 2, axis=(-3, -2, -1)) / np.sum(o**2, axis=(-3, -2, -1)))


def transition_steps(
    states: Int[np.ndarray, "T L"], final: Int[np.ndarray, " L"], prompt_len: int, gen_block: int, mask_id: int
) -> tuple[int, ...]:
    """Steps at which a decoding run starts committing bytes of a later decoding block than at the step before,
    measured from its recorded states ``[T, L]`` (state t = the input of step t) and its output ``[L]``."""
    states, final = np.asarray(states), np.asarray(final)
    nxt = np.concatenate([states[1:], final[None]], axis=0)
    committed = (states == mask_id) & (nxt != mask_id)  # [T, L]
    if not committed.any(axis=-1).all():
        raise ValueError("every step must commit at least one position")
    pos = np.arange(states.shape[-1])
    block = np.where(committed, (pos - prompt_len) // gen_block, -1).max(axis=-1)  # [T]
    return tuple(int(t) for t in np.flatnonzero(np.diff(block) > 0) + 1)
