"""Step-dLLM's block-sparse mask policy for diffusion LMs, as pure functions.

Notes: ``docs/papers/sparse_attention.md``.

A bidirectional denoiser recomputes full attention at every step t = 0..T-1. Step-dLLM's observations: the
attention pattern is only locally consistent across steps (it shifts abruptly at transitions) and heads
differ in how concentrated their attention is. Its policy, reproduced here:

1. Block importance from pooled Q/K (``block_importance``): mean-pool the queries of each query block and the
   keys of each key block, ``A[h, I, J] = softmax_J(s * qbar_{h,I} . kbar_{h,J})`` (s = 1/sqrt(D)); cost
   O(Qb Kb D) instead of O(L^2 D).
2. Anchor refresh (``mask_trajectory``): the mask is recomputed at anchor steps t = 0, P, 2P, ... and reused
   in between (P = refresh period; P >= T is the "first-step-only" practice the paper improves on).
3. Head-adaptive global budget (``select_blocks(..., allocation="concentration")``): one budget of
   rho H Kb blocks per query-block row shared by all heads, split in proportion to each head's concentration
   ``1 - H(A_row)/log Kb`` (so concentrated heads get more blocks, as the paper prescribes). The baseline
   ``"uniform"`` gives every row k = round(rho Kb) blocks; ``"global"`` (our addition, mass-greedy) keeps the
   largest importances over all heads, which on our synthetic trajectory gives *diffuse* heads more blocks.

Measured quantities (``evaluate_masks``) against dense attention: relative output error
``||O_mask - O||_F / ||O||_F`` and recall = mean over queries of the dense attention mass inside the mask.
On real attention maps (``jaxwb.sims.sparse_attention`` records them from a trained diffusion LM):
``block_attention_mass`` (the dense attention pooled to blocks), ``mask_overlap`` (block-mask overlap between
two steps) and ``topk_mass`` (how concentrated a head is).

``synthetic_trajectory`` (a controlled toy: each head's queries of query block I aim at target key blocks,
slow drift and an abrupt re-draw of all targets at given transition steps) is kept **only for unit tests** of
the policy machinery: it builds the paper's conclusion in, so no claim is drawn from it.

Shapes: one sequence, heads first: q, k, v [H, L, D]; block masks [H, Qb, Kb] (bool). Batch with vmap.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from jaxwb.theory import validate as V


def _qkv(name: str, x, *, ndim: int = 3) -> None:
    """x must be a real, finite, non-empty array of rank ``ndim`` ([H, L, D], or [T, H, L, D] with ndim=4)."""
    V.array(name, x, ndim=ndim)


def _same_heads_dim(q_shape, k_shape) -> None:
    """q [..., L, D] and k [..., Lk, D] share their leading (head) axes and head_dim."""
    if tuple(q_shape[:-2]) != tuple(k_shape[:-2]) or q_shape[-1] != k_shape[-1]:
        raise ValueError(f"k must share heads and head_dim with q {tuple(q_shape)}, got {tuple(k_shape)}")


def _importance_array(name: str, a, *, ndim: int | None = 3) -> None:
    V.array(name, a, ndim=ndim, min_ndim=None if ndim else 2)
    V.check(name, a, lambda x: x >= 0, ">= 0 everywhere (block importances are attention masses)")


def _block_mask(name: str, m, ndim: int = 3) -> None:
    V.array(name, m, ndim=ndim, finite=False)
    if jnp.asarray(m).dtype != jnp.bool_:
        raise ValueError(f"{name} must be a bool array, got dtype {jnp.asarray(m).dtype}")


def _check_blocks(L: int, block: int, name: str):
    V.positive_int(name, block)
    if L % block:
        raise ValueError(f"{name} must divide the sequence length {L}, got {block}")


def pool_blocks(x: Float[ArrayLike, "*lead L D"], block: int) -> Float[Array, "*lead Lb D"]:
    """Mean over consecutive blocks of ``block`` tokens: [..., L, D] -> [..., L / block, D]."""
    V.array("x", x, min_ndim=2)
    _check_blocks(np.shape(x)[-2], block, "block")
    *lead, L, D = np.shape(x)
    return jnp.mean(jnp.asarray(x).reshape(*lead, L // block, block, D), axis=-2)


@partial(jax.jit, static_argnames=("block_q", "block_k"))
def _importance(q, k, block_q, block_k):
    qb, kb = pool_blocks(q, block_q), pool_blocks(k, block_k)
    s = jnp.einsum("hid,hjd->hij", qb, kb) / jnp.sqrt(q.shape[-1])
    return jax.nn.softmax(s, axis=-1)


def block_importance(
    q: Float[ArrayLike, "H Lq D"], k: Float[ArrayLike, "H Lk D"], *, block_q: int, block_k: int
) -> Float[Array, "H Qb Kb"]:
    """Pooled attention ``A [H, Qb, Kb]`` (rows sum to 1) from q, k [H, L, D] (step 1 of the policy)."""
    _qkv("q", q)
    _qkv("k", k)
    q, k = jnp.asarray(q), jnp.asarray(k)
    _same_heads_dim(q.shape, k.shape)
    _check_blocks(q.shape[-2], block_q, "block_q")
    _check_blocks(k.shape[-2], block_k, "block_k")
    return _importance(q, k, block_q, block_k)


def block_attention_mass(
    q: Float[ArrayLike, "H L D"], k: Float[ArrayLike, "H L D"], block: int
) -> Float[Array, "H Qb Kb"]:
    """Dense attention pooled to blocks: ``A[h, I, J] = mean_{i in I} sum_{j in J} softmax_j(q_i.k_j/sqrt(D))``.

    q, k [H, L, D] -> [H, L/block, L/block]; rows sum to 1 (the mass query block I puts on key block J).
    """
    _qkv("q", q)
    _qkv("k", k)
    q, k = jnp.asarray(q), jnp.asarray(k)
    V.same_shape("q", q, "k", k)
    _check_blocks(q.shape[-2], block, "block")
    return _attention_mass(q, k, block)


@partial(jax.jit, static_argnames=("block",))
def _attention_mass(q, k, block):
    H, L, D = q.shape
    p = jax.nn.softmax(jnp.einsum("hqd,hkd->hqk", q, k) / jnp.sqrt(D), axis=-1)
    return jnp.mean(jnp.sum(p.reshape(H, L // block, block, L // block, block), axis=-1), axis=2)


def mask_overlap(a: Bool[ArrayLike, "*lead Qb Kb"], b: Bool[ArrayLike, "*lead Qb Kb"]) -> Float[Array, "*lead"]:
    """Block-mask overlap ``|a & b| / |a|`` over the last two axes: bool [..., Qb, Kb] x2 -> [...] in [0, 1].

    For top-k masks with the same k per row it is symmetric (the fraction of a's blocks that b keeps)."""
    _block_mask("a", a, ndim=jnp.ndim(a) if jnp.ndim(a) >= 2 else 2)
    _block_mask("b", b, ndim=jnp.ndim(a) if jnp.ndim(a) >= 2 else 2)
    V.same_shape("a", a, "b", b)
    a, b = jnp.asarray(a), jnp.asarray(b)
    return jnp.sum(a & b, axis=(-2, -1)) / jnp.maximum(jnp.sum(a, axis=(-2, -1)), 1)


def topk_mass(importance: Float[ArrayLike, "*lead Qb Kb"], k: int) -> Float[Array, "*lead"]:
    """Mass in the top-``k`` key blocks of each row, averaged over rows: [..., Qb, Kb] -> [...] (1 = a head that
    puts all its attention on k blocks; k/Kb = uniform attention)."""
    V.array("importance", importance, min_ndim=2)
    V.positive_int("k", k)
    if k > jnp.shape(importance)[-1]:
        raise ValueError(f"k must be <= the number of key blocks {jnp.shape(importance)[-1]}, got {k}")
    return jnp.mean(jnp.sum(jax.lax.top_k(importance, k)[0], axis=-1), axis=-1)


def head_concentration(importance: Float[ArrayLike, "*lead H Qb Kb"]) -> Float[Array, "*lead H"]:
    """1 - (row entropy / log Kb), averaged over query blocks: [..., H, Qb, Kb] -> [..., H] in [0, 1]
    (0 = uniform attention over blocks, 1 = one block)."""
    _importance_array("importance", importance, ndim=None)
    importance = jnp.asarray(importance)
    kb = importance.shape[-1]
    if kb < 2:
        raise ValueError(f"importance must have >= 2 key blocks (concentration divides by log Kb), got {kb}")
    ent = -jnp.sum(jnp.where(importance > 0, importance * jnp.log(importance), 0.0), axis=-1)
    return 1.0 - jnp.mean(ent, axis=-1) / jnp.log(kb)


ALLOCATIONS = ("uniform", "concentration", "global")


def head_budgets(importance: Float[ArrayLike, "H Qb Kb"], budget: float | Float[ArrayLike, ""]) -> Int[Array, " H"]:
    """Blocks per row for each head under the paper's head-adaptive rule: the global budget of
    R = round(rho H Kb) blocks per query-block row is split across heads: one block each, the other R - H in
    proportion to their concentration c_h (largest-remainder rounding), capped at Kb, so sum_h k_h = R unless
    a cap binds. Returns int32 [H]."""
    V.check("budget", budget, lambda a: (a > 0) & (a <= 1), "in (0, 1]")
    importance = jnp.asarray(importance)
    H, _, Kb = importance.shape
    c = head_concentration(importance)
    w = jnp.where(jnp.sum(c) > 1e-12, c / jnp.maximum(jnp.sum(c), 1e-12), 1.0 / H)
    total = jnp.round(budget * H * Kb) - H  # one block per head is reserved first
    share = jnp.maximum(total, 0) * w
    base = jnp.floor(share)
    # largest remainders get the blocks left after flooring, so sum_h k_h == R before clipping
    left = (total - jnp.sum(base)).astype(jnp.int32)
    order = jnp.argsort(jnp.argsort(-(share - base), stable=True), stable=True)
    k = base.astype(jnp.int32) + (order < left).astype(jnp.int32)
    return jnp.clip(1 + k, 1, Kb)


def select_blocks(
    importance: Float[ArrayLike, "H Qb Kb"], budget: float | Float[ArrayLike, ""], *, allocation: str = "concentration"
) -> Bool[Array, "H Qb Kb"]:
    """Block mask [H, Qb, Kb] keeping about a fraction ``budget`` (rho in (0, 1]) of all blocks.

    Each kept row holds its top-k_h blocks by importance (ties broken by lower index); k_h by ``allocation``:
      "uniform":       k_h = max(1, round(rho Kb)) for every head (the prior practice);
      "concentration": the paper's head-adaptive global budget (``head_budgets``): more blocks to heads whose
                       pooled attention is more concentrated;
      "global":        a mass-greedy alternative: the K = round(rho H Qb Kb) largest importances over all
                       heads and rows, united with every row's best block (never an empty row).
    jit-compatible in ``budget``.
    """
    V.one_of("allocation", allocation, ALLOCATIONS)
    V.check("budget", budget, lambda a: (a > 0) & (a <= 1), "in (0, 1]")
    _importance_array("importance", importance)
    importance = jnp.asarray(importance)
    H, Qb, Kb = importance.shape
    if allocation == "global":
        best = jax.nn.one_hot(jnp.argmax(importance, axis=-1), Kb, dtype=bool)
        flat = importance.reshape(-1)
        kcount = jnp.clip(jnp.round(budget * flat.size).astype(jnp.int32), 1, flat.size)
        rank = jnp.argsort(jnp.argsort(-flat, stable=True), stable=True)  # 0 = largest
        return (rank < kcount).reshape(H, Qb, Kb) | best
    if allocation == "uniform":
        k_h = jnp.full((H,), jnp.clip(jnp.round(budget * Kb).astype(jnp.int32), 1, Kb))
    else:
        k_h = head_budgets(importance, budget)
    rank = jnp.argsort(jnp.argsort(-importance, axis=-1, stable=True), axis=-1, stable=True)
    return rank < k_h[:, None, None]


def anchor_steps(num_steps: int, period: int | Int[ArrayLike, ""]) -> Bool[Array, " T"]:
    """Bool [T]: True at anchor steps t = 0, P, 2P, ... (P >= T: only t = 0, "first-step-only")."""
    V.positive_int("num_steps", num_steps)
    # ``a % 1``, not ``jnp.floor``: a concrete period checked inside a jit trace must stay concrete
    V.check("period", period, lambda a: (a >= 1) & (a % 1 == 0), "an integer >= 1")
    return jnp.mod(jnp.arange(num_steps), period) == 0


def mask_trajectory(
    importances: Float[ArrayLike, "T H Qb Kb"],
    anchors: Bool[ArrayLike, " T"],
    budget: float | Float[ArrayLike, ""],
    *,
    allocation: str = "concentration",
) -> Bool[Array, "T H Qb Kb"]:
    """Masks [T, H, Qb, Kb]: recomputed from ``importances[t]`` at anchor steps, reused in between.

    importances [T, H, Qb, Kb]; anchors bool [T] (anchors[0] must be True: step 0 always computes a mask).
    """
    V.one_of("allocation", allocation, ALLOCATIONS)
    V.check("budget", budget, lambda a: (a > 0) & (a <= 1), "in (0, 1]")
    V.array("importances", importances, ndim=4)
    V.check("importances", importances, lambda x: x >= 0, ">= 0 everywhere (block importances are attention masses)")
    _block_mask("anchors", anchors, ndim=1)
    importances, anchors = jnp.asarray(importances), jnp.asarray(anchors)
    if anchors.shape[0] != importances.shape[0]:
        raise ValueError(f"anchors must have one entry per step ({importances.shape[0]}), got {anchors.shape[0]}")
    V.check("anchors", anchors[0], lambda a: a, "True at step 0 (step 0 always computes a mask)")

    def step(prev, inp):
        imp, anchor = inp
        new = jnp.where(anchor, select_blocks(imp, budget, allocation=allocation), prev)
        return new, new

    init = jnp.zeros(importances.shape[1:], bool)
    return jax.lax.scan(step, init, (importances, anchors))[1]


def masked_attention(
    q: Float[ArrayLike, "H L D"],
    k: Float[ArrayLike, "H Lk D"],
    v: Float[ArrayLike, "H Lk Dv"],
    block_mask: Bool[ArrayLike, "H Qb Kb"],
) -> tuple[Float[Array, "H L Dv"], Float[Array, "H L Dv"], Float[Array, "H L"]]:
    """Attention of q, k, v [H, L, D] restricted to the expanded block mask [H, Qb, Kb]; also the dense
    output and the dense probabilities' mass inside the mask. Returns (o_mask, o_dense, recall [H, L])."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        _qkv(name, x)
    _block_mask("block_mask", block_mask)
    q, k, v, block_mask = map(jnp.asarray, (q, k, v, block_mask))
    _check_step_shapes(q.shape, k.shape, v.shape, block_mask.shape, "block_mask")
    return _masked_attention(q, k, v, block_mask)


def _check_step_shapes(q_shape, k_shape, v_shape, mask_shape, mask_name: str) -> None:
    """Shapes of one step agree: q [H, L, D], k [H, Lk, D], v [H, Lk, Dv], mask [H, Qb, Kb] with Qb | L, Kb | Lk."""
    _same_heads_dim(q_shape, k_shape)
    if v_shape[:2] != k_shape[:2]:
        raise ValueError(f"v must share heads and length with k {tuple(k_shape)}, got {tuple(v_shape)}")
    (H, L, _), Lk, (Qb, Kb) = q_shape, k_shape[1], mask_shape[-2:]
    if mask_shape[0] != H or L % Qb or Lk % Kb:
        raise ValueError(
            f"{mask_name} must have shape (H={H}, Qb, Kb) with Qb dividing {L} and Kb dividing {Lk}, "
            f"got {tuple(mask_shape)}"
        )


def _masked_attention(q, k, v, block_mask):
    H, L, D = q.shape
    Qb, Kb = block_mask.shape[-2:]
    keep = jnp.repeat(jnp.repeat(block_mask, L // Qb, axis=-2), k.shape[-2] // Kb, axis=-1)
    s = jnp.einsum("hqd,hkd->hqk", q, k) / jnp.sqrt(D)
    p = jax.nn.softmax(s, axis=-1)
    sm = jnp.where(keep, s, -jnp.inf)
    m = jnp.max(jnp.where(keep, s, jnp.finfo(s.dtype).min), axis=-1, keepdims=True)
    e = jnp.where(keep, jnp.exp(sm - m), 0.0)
    z = jnp.sum(e, axis=-1, keepdims=True)
    pm = e / jnp.where(z == 0, 1.0, z)  # an empty row gives 0 (defined, no NaN)
    return pm @ v, p @ v, jnp.sum(jnp.where(keep, p, 0.0), axis=-1)


def evaluate_masks(
    q: Float[ArrayLike, "T H L D"],
    k: Float[ArrayLike, "T H L D"],
    v: Float[ArrayLike, "T H L Dv"],
    masks: Bool[ArrayLike, "T H Qb Kb"],
) -> tuple[Float[Array, " T"], Float[Array, " T"]]:
    """Per-step relative output error [T] and recall [T] of masks [T, H, Qb, Kb] on q, k, v [T, H, L, D]."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        _qkv(name, x, ndim=4)
    _block_mask("masks", masks, ndim=4)
    q, k, v, masks = map(jnp.asarray, (q, k, v, masks))
    steps = {q.shape[0], k.shape[0], v.shape[0], masks.shape[0]}
    if len(steps) != 1:
        raise ValueError(
            f"k, v and masks must share q's step axis {q.shape[0]}, got {k.shape}, {v.shape}, {masks.shape}"
        )
    _check_step_shapes(q.shape[1:], k.shape[1:], v.shape[1:], masks.shape[1:], "masks")

    def one(qt, kt, vt, mt):
        om, od, rec = _masked_attention(qt, kt, vt, mt)  # checked once above, not per step
        return jnp.linalg.norm(om - od) / jnp.linalg.norm(od), jnp.mean(rec)

    # lax.map, not vmap: one step's [H, L, L] scores live at a time (vmap over T under a vmapped sweep
    # multiplied the memory by T and was OOM-killed on the shared 23 GB machine)
    return jax.lax.map(lambda a: one(*a), (q, k, v, masks))


def synthetic_trajectory(
    *,
    key: jax.Array,
    num_steps: int,
    num_heads: int,
    seq_len: int,
    head_dim: int,
    block: int,
    transitions: tuple[int, ...],
    sharpness,
    num_targets: int = 2,
    drift: float = 0.05,
    noise: float = 0.3,
):
    """A controlled denoising trajectory with abrupt transitions: q, k, v [T, H, L, D] (unit tests only).

    Key block J carries a latent unit direction u_J (plus token noise ``noise``). In phase p (the steps
    between consecutive ``transitions``), query block I of head h aims at ``num_targets`` random key blocks
    S_{p,h,I}: q = sharpness_h * sqrt(D) * sum_{J in S} u_J + token noise, so its logits on target blocks
    exceed the others by ~sharpness_h. Between steps the queries drift (random walk of size ``drift``); at a
    transition every S is redrawn (the abrupt shift). ``sharpness [H]``: large = concentrated head.
    """
    V.prng_key("key", key)
    V.positive_int("num_steps", num_steps)
    V.positive_int("num_heads", num_heads)
    _check_blocks(seq_len, block, "block")
    V.positive_int("num_targets", num_targets)
    V.nonnegative("drift", drift)
    V.nonnegative("noise", noise)
    V.shape("sharpness", sharpness, (num_heads,))
    nb = seq_len // block
    if num_targets > nb:
        raise ValueError(f"num_targets must be <= number of blocks {nb}, got {num_targets}")
    for t in transitions:
        if not 0 < t < num_steps:
            raise ValueError(f"transitions must lie in (0, num_steps={num_steps}), got {t}")
    T, H, L, D = num_steps, num_heads, seq_len, head_dim
    k_u, k_kn, k_t, k_qn, k_dr, k_v = jax.random.split(key, 6)
    u = jax.random.normal(k_u, (H, nb, D))
    u = u / jnp.linalg.norm(u, axis=-1, keepdims=True)
    k = jnp.repeat(u, block, axis=1) * jnp.sqrt(D) + noise * jax.random.normal(k_kn, (H, L, D)) * jnp.sqrt(D)
    nphase = len(transitions) + 1
    # targets: a random subset of key blocks per (phase, head, query block)
    scores = jax.random.uniform(k_t, (nphase, H, nb, nb))
    targets = jnp.argsort(scores, axis=-1)[..., :num_targets]  # [P, H, Qb, m]
    chosen = jnp.sum(jax.nn.one_hot(targets, nb, dtype=u.dtype), axis=-2)  # [P, H, Qb, Kb] 0/1
    direction = jnp.einsum("phij,hjd->phid", chosen, u)  # sum of the target directions
    # (one-hot einsums instead of gathers/searchsorted: the gather form took minutes to compile on XLA:CPU)
    phase = jnp.sum(jnp.arange(T)[:, None] >= jnp.asarray(transitions, jnp.int32).reshape(1, -1), axis=1)
    base = jnp.repeat(
        jnp.einsum("tp,phid->thid", jax.nn.one_hot(phase, nphase, dtype=u.dtype), direction), block, axis=2
    )  # [T, H, L, D]
    walk = jnp.cumsum(drift * jax.random.normal(k_dr, (T, H, L, D)), axis=0)
    tok = noise * jax.random.normal(k_qn, (H, L, D))
    q = jnp.asarray(sharpness)[None, :, None, None] * (base + tok + walk)
    v = jax.random.normal(k_v, (H, L, D))
    return q, jnp.broadcast_to(k, (T, H, L, D)), jnp.broadcast_to(v, (T, H, L, D))
