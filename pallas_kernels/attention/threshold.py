"""Louver-style threshold retrieval: every key with ``q . k >= tau``, zero false negatives by construction.

Index (``build_key_index``): the keys of each kv head are cut into blocks of ``block_size``; per block either
  ball: centre ``c = mean(k)`` and radius ``r = max ||k - c||``   ->  max_k q.k <= q.c + ||q|| r
  box : per-dim ``lo, hi``; with ``m = (lo+hi)/2, w = (hi-lo)/2``  ->  max_k q.k <= q.m + |q|.w
(Cauchy-Schwarz resp. coordinatewise bounds). A query skips a block only if its bound is ``< tau``, so no key
with ``q.k >= tau`` is ever skipped (halfspace range search, Louver). Floating point: the radius is inflated
and the bound padded by ``4 (D + 2) eps32 (|q|.|c| + radius term)``, which covers the float32 rounding of both
the bound and the scores, so the guarantee holds for the exactly computed ``q.k`` too (property-tested). All
products are float32 (``Precision.HIGHEST``) on every backend: the margins are proven for float32 rounding,
not for a GPU's default TF32.

``threshold_retrieve`` returns the candidate blocks (the work done: keys scored), the retrieved keys
(``fl(q.k) >= tau - M`` inside candidate blocks, ``M`` the proven float32 rounding margin of
:func:`score_margin`: a superset of the exact ``q.k >= tau``, so zero false negatives for the exact scores,
with extra keys only within ``M`` of tau) and the upper bounds. The bound
computation (a [block_q, D] x [D, nb] product per program) is a Pallas kernel; the rest is jnp.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

# imported eagerly: importing them inside the first trace changes JAX's trace context and makes the
# second call of a jitted op recompile
from jax.experimental.pallas import tpu as pltpu
from jax.experimental.pallas import triton as pltriton
from jaxtyping import Array, Float

from jaxwb.pallas_kernels import dispatch as dp
from jaxwb.pallas_kernels.attention import reference as ref
from jaxwb.pallas_kernels.attention.ops import bhld, check_qkv, pow2_divisor
from jaxwb.pallas_kernels.dispatch import Implementation

BOUNDS = ("ball", "box")
_EPS = float(np.finfo(np.float32).eps)
# Every product here is float32 (HIGHEST), whatever jax_default_matmul_precision says: the margins are proven
# for float32 rounding, and a GPU's default float32 dot is TF32 (inputs rounded to 10 mantissa bits), whose
# error exceeds them: on an H200 (2026-12-04) the default precision dropped keys with q.k >= tau.
_F32 = jax.lax.Precision.HIGHEST


class KeyIndex(NamedTuple):
    """Per key block: ``centre [B, Hkv, nb, D]`` (ball centre or box midpoint) and ``spread``: ball radius
    ``[B, Hkv, nb]`` or box half-widths ``[B, Hkv, nb, D]``; ``bound`` in {"ball", "box"}."""

    centre: jax.Array
    spread: jax.Array
    block_size: int
    bound: str


class Retrieval(NamedTuple):
    """``key_mask [B, H, Lq, Lk]``: keys with q.k >= tau; ``block_mask [B, H, Lq, nb]``: blocks scored;
    ``upper_bound [B, H, Lq, nb]``; ``touched_fraction``: fraction of (query, key) pairs scored."""

    key_mask: jax.Array
    block_mask: jax.Array
    upper_bound: jax.Array
    touched_fraction: jax.Array


def build_key_index(k: Float[Array, "B Lk Hkv D"], *, block_size: int = 16, bound: str = "ball") -> KeyIndex:
    """Block summaries of ``k [B, Lk, Hkv, D]`` (Lk a multiple of ``block_size``)."""
    if bound not in BOUNDS:
        raise ValueError(f"bound must be one of {BOUNDS}, got {bound!r}")
    dp.check_array("k", k, ndim=4)
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size <= 0 or k.shape[1] % block_size:
        raise ValueError(f"block_size must be a positive integer dividing Lk={k.shape[1]}, got {block_size!r}")
    B, Lk, Hkv, D = k.shape
    kb = bhld(k).astype(jnp.float32).reshape(B, Hkv, Lk // block_size, block_size, D)
    infl = 1.0 + 4 * (D + 2) * _EPS
    if bound == "ball":
        c = jnp.mean(kb, axis=3)
        r = jnp.sqrt(jnp.max(jnp.sum((kb - c[:, :, :, None]) ** 2, axis=-1), axis=-1)) * infl
        return KeyIndex(c, r, block_size, bound)
    lo, hi = jnp.min(kb, axis=3), jnp.max(kb, axis=3)
    m = 0.5 * lo + 0.5 * hi
    w = jnp.maximum(hi - m, m - lo) * infl
    return KeyIndex(m, w, block_size, bound)


def _bound_terms_xla(qh, index: KeyIndex):
    """Upper bound ``[B, H, Lq, nb]`` without and with the rounding pad (q head-major [B, H, Lq, D])."""
    H, Hkv = qh.shape[1], index.centre.shape[1]
    c = jnp.repeat(index.centre, H // Hkv, axis=1)
    sp = jnp.repeat(index.spread, H // Hkv, axis=1)
    qc = jnp.einsum("bhqd,bhnd->bhqn", qh, c, precision=_F32)
    qa = jnp.abs(qh)
    mag = jnp.einsum("bhqd,bhnd->bhqn", qa, jnp.abs(c), precision=_F32)
    if index.bound == "ball":
        rad = jnp.sqrt(jnp.sum(qh * qh, axis=-1))[..., None] * sp[:, :, None, :]
    else:
        rad = jnp.einsum("bhqd,bhnd->bhqn", qa, sp, precision=_F32)
    D = qh.shape[-1]
    return qc + rad + 4 * (D + 2) * _EPS * (mag + rad)


def _bound_kernel(q_ref, c_ref, s_ref, o_ref, *, ball: bool, D: int):
    q = q_ref[...].astype(jnp.float32)
    c = c_ref[...]
    nt = (((1,), (1,)), ((), ()))
    qc = jax.lax.dot_general(q, c, nt, precision=_F32, preferred_element_type=jnp.float32)
    qa = jnp.abs(q)
    mag = jax.lax.dot_general(qa, jnp.abs(c), nt, precision=_F32, preferred_element_type=jnp.float32)
    if ball:
        rad = jnp.sqrt(jnp.sum(q * q, axis=1))[:, None] * s_ref[...]  # s: [1, nb]
    else:
        rad = jax.lax.dot_general(qa, s_ref[...], nt, precision=_F32, preferred_element_type=jnp.float32)
    o_ref[...] = qc + rad + 4 * (D + 2) * _EPS * (mag + rad)


def _bound_pallas(qh, index: KeyIndex, *, block_q: int, backend: str, interpret: bool):
    B, H, Lq, D = qh.shape
    Hkv, nb = index.centre.shape[1], index.centre.shape[2]
    g = H // Hkv
    nb2 = max(16, pl.next_power_of_2(nb))  # Triton: power-of-two dot dims >= 16; padded blocks sliced off
    pad = nb2 - nb
    c = jnp.pad(index.centre, ((0, 0), (0, 0), (0, pad), (0, 0)))
    ball = index.bound == "ball"
    if ball:
        s = jnp.pad(index.spread, ((0, 0), (0, 0), (0, pad)))[:, :, None, :]  # [B, Hkv, 1, nb2]
        s_spec = pl.BlockSpec((None, None, 1, nb2), lambda b, h, i, *_: (b, h // g, 0, 0))
    else:
        s = jnp.pad(index.spread, ((0, 0), (0, 0), (0, pad), (0, 0)))
        s_spec = pl.BlockSpec((None, None, nb2, D), lambda b, h, i, *_: (b, h // g, 0, 0))
    kernel = functools.partial(_bound_kernel, ball=ball, D=D)
    q_spec = pl.BlockSpec((None, None, block_q, D), lambda b, h, i, *_: (b, h, i, 0))
    c_spec = pl.BlockSpec((None, None, nb2, D), lambda b, h, i, *_: (b, h // g, 0, 0))
    o_spec = pl.BlockSpec((None, None, block_q, nb2), lambda b, h, i, *_: (b, h, i, 0))
    params: pltpu.CompilerParams | pltriton.CompilerParams
    if backend == "tpu":
        params = pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "parallel"))
    else:
        params = pltriton.CompilerParams(num_warps=4, num_stages=1)
    out = pl.pallas_call(
        kernel,
        grid=(B, H, Lq // block_q),
        in_specs=[q_spec, c_spec, s_spec],
        out_specs=o_spec,
        out_shape=jax.ShapeDtypeStruct((B, H, Lq, nb2), jnp.float32),
        interpret=interpret,
        compiler_params=params,
        name="louver_block_bound",
    )(qh, c, s)
    return out[..., :nb]


def score_margin(mag, tau, D: int):
    """Rounding margin of a float32 dot product of length D: ``M >= |fl(q.k) - q.k|`` for the exact q.k.

    Any summation order (pairwise, blocked, FMA) satisfies ``|fl(q.k) - q.k| <= gamma_D sum_i |q_i k_i|``,
    ``gamma_D = D u / (1 - D u)``, ``u = 2^-24`` (Higham, Accuracy and Stability, eq. 3.5). ``mag`` is that sum
    computed in float32 (all terms >= 0, so ``mag >= (1 - gamma_D) sum |q_i k_i|``). We take
    ``M = (D + 2) eps32 mag + 2 eps32 |tau| + D 2^-126``: the first term is ``>= 2 gamma_D mag`` (factor 2 of
    slack for the rounding of ``mag`` and of M itself), the second absorbs the rounding of ``tau - M``, the
    third flushed subnormal products. Then ``q.k >= tau`` implies ``fl(q.k) >= fl(tau - M)``.
    """
    return (D + 2) * _EPS * mag + 2 * _EPS * jnp.abs(tau) + D * np.float32(2.0**-126)


def threshold_retrieve(
    q: Float[Array, "B Lq H D"],
    k: Float[Array, "B Lk Hkv D"],
    tau,
    *,
    block_size: int = 16,
    bound: str = "ball",
    block_q: int | None = None,
    implementation: Implementation = None,
    backend: str | None = None,
) -> Retrieval:
    """All keys with ``q . k >= tau`` (raw dot product, no softmax scale), via per-block upper bounds.

    q [B, Lq, H, D], k [B, Lk, Hkv, D]; ``tau`` a finite scalar or an array broadcastable to [B, H, Lq].
    A key block is scored only when its upper bound reaches tau; no key with q.k >= tau is skipped.
    Zero false negatives hold for the *exact* q.k of the inputs: the key filter compares the float32 score
    with ``tau - M`` (:func:`score_margin`), so ``key_mask`` is a superset of the exact answer, with extra keys
    only where ``|q.k - tau| <= M`` (a few float32 ulps of ``|q|.|k|``).
    """
    check_qkv(q, k, k)
    B, Lq, H, D = q.shape
    dp.check_block("block_size", block_size)
    if bound not in BOUNDS:
        raise ValueError(f"bound must be one of {BOUNDS}, got {bound!r}")
    if k.shape[1] % block_size:
        raise ValueError(f"block_size must divide Lk={k.shape[1]}, got {block_size}")
    if jnp.iscomplexobj(tau) or not jnp.issubdtype(jnp.result_type(tau), jnp.number):
        raise ValueError(f"tau must be a real number or array, got dtype {jnp.result_type(tau)}")
    tau = jnp.asarray(tau, jnp.float32) if not dp.is_traced(tau) else tau.astype(jnp.float32)
    if tau.ndim:
        try:
            jnp.broadcast_shapes(tau.shape, (B, H, Lq))
        except ValueError:
            raise ValueError(
                f"tau must be a scalar or broadcastable to (B, H, Lq) = {(B, H, Lq)}, got shape {tau.shape}"
            ) from None
    dp.check_finite("tau", tau)
    bq = block_q or pow2_divisor(Lq)
    dp.check_block("block_q", bq)

    def refusal(p):
        if Lq % bq:
            return f"block_q={bq} must divide Lq={Lq}"
        if p == "gpu" and (bq & (bq - 1) or bq < 16 or D & (D - 1) or D < 16):
            return f"the GPU kernel needs block_q and head_dim powers of two >= 16, got {bq} and {D}"
        return None

    impl, plat = dp.resolve(
        implementation,
        op="threshold_retrieve",
        backend=backend,
        refusal=lambda b: refusal(dp.BACKEND_PLATFORM[b]),
        inputs=(q, k),
    )
    index = build_key_index(k, block_size=block_size, bound=bound)
    qh = bhld(q).astype(jnp.float32)
    tau_b = jnp.broadcast_to(tau, (B, H, Lq)) if tau.ndim else tau
    if impl == "xla":
        ub = _bound_terms_xla(qh, index)
    else:
        ub = _bound_pallas(qh, index, block_q=bq, backend=plat, interpret=impl == "interpret")
    tau_q = tau_b[..., None] if tau.ndim else tau
    block_mask = ub >= tau_q
    kh = jnp.repeat(bhld(k).astype(jnp.float32), H // k.shape[2], axis=1)
    scores = jnp.einsum("bhqd,bhkd->bhqk", qh, kh, precision=_F32)
    mag = jnp.einsum("bhqd,bhkd->bhqk", jnp.abs(qh), jnp.abs(kh), precision=_F32)
    keys_in = jnp.repeat(block_mask, block_size, axis=-1)
    key_mask = keys_in & (scores >= tau_q - score_margin(mag, tau_q, D))
    return Retrieval(key_mask, block_mask, ub, jnp.mean(block_mask.astype(jnp.float32)))


def threshold_attention(
    q: Float[Array, "B Lq H D"],
    k: Float[Array, "B Lk Hkv D"],
    v: Float[Array, "B Lk Hkv D"],
    tau,
    *,
    block_size: int = 16,
    bound: str = "ball",
    scale: float | None = None,
    implementation: Implementation = None,
):
    """Attention restricted to the retrieved keys (q.k >= tau); queries retrieving nothing get 0.

    Returns (output [B, Lq, H, D], Retrieval)."""
    check_qkv(q, k, v)
    r = threshold_retrieve(q, k, tau, block_size=block_size, bound=bound, implementation=implementation)
    return ref.attention_reference(q, k, v, scale=scale, mask=r.key_mask), r


def retrieval_block_lists(retrieval: Retrieval, *, block_q: int, capacity: int | None = None):
    """Block lists for ``block_sparse_attention`` from a retrieval: query block i lists every key block that
    some query in it must score (union of candidate blocks). Returns (kv_num_blocks, kv_indices)."""
    bm = retrieval.block_mask
    B, H, Lq, nb = bm.shape
    dp.check_block("block_q", block_q)
    if Lq % block_q:
        raise ValueError(f"block_q={block_q} must divide Lq={Lq}")
    union = jnp.any(bm.reshape(B, H, Lq // block_q, block_q, nb), axis=3)
    return ref.mask_to_block_lists(union, capacity)
