"""Drop-in ``flax.nnx`` and ``equinox`` attention over the functional ops (dense flash or block-sparse).

* :func:`make_attention_fn`: an ``attention_fn`` for ``nnx.MultiHeadAttention`` (same call contract as
  ``nnx.dot_product_attention``: ``[batch..., L, H, D]``, ``mask``, ``is_causal``, dropout arguments). Without
  block lists it runs :func:`flash_attention`; with ``kv_num_blocks``/``kv_indices`` (FlexAttention lists,
  ``[B, H, Qb, cap]`` or unbatched ``[H, Qb, cap]``) it runs :func:`block_sparse_attention`.
* :class:`NnxSparseAttention`: ``nnx.MultiHeadAttention`` with that ``attention_fn`` (same arguments, same
  order, same call signature).
* :class:`EqxSparseAttention`: unbatched like ``eqx.nn.MultiheadAttention`` (``query [Lq, E]``, ``key_``,
  ``value``, ``mask``, ``key=None``, ``inference``), with ``eqx.nn.Linear`` projections;
  :meth:`EqxSparseAttention.from_mha` builds one from an ``eqx.nn.MultiheadAttention`` (same weights).
* :func:`swap_attention`: every ``eqx.nn.MultiheadAttention`` / ``nnx.MultiHeadAttention`` of a model onto
  these ops, with no change to the model's code.

A ``mask`` (anything else than the causal one) is applied by the XLA path of ``jax.nn.dot_product_attention``
(the kernels take block lists instead). Dropout is not supported (inference adapters): a nonzero
``dropout_rate`` outside ``deterministic`` mode raises.
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from flax import nnx
from jaxtyping import Array, Float

from jaxwb.pallas_kernels.attention.kernel import AttentionBlockSizes
from jaxwb.pallas_kernels.attention.ops import block_sparse_attention, flash_attention
from jaxwb.pallas_kernels.dispatch import Implementation


def _attend(q, k, v, *, mask, is_causal, scale, block_sizes, kv_num_blocks, kv_indices, implementation):
    """q [B, Lq, H, D], k/v [B, Lk, Hkv, D] -> [B, Lq, H, D]."""
    if mask is not None:
        return jax.nn.dot_product_attention(q, k, v, mask=mask, scale=scale, is_causal=is_causal)
    if kv_indices is None:
        return flash_attention(
            q, k, v, is_causal=is_causal, scale=scale, block_sizes=block_sizes, implementation=implementation
        )
    B, H = q.shape[0], q.shape[2]
    if kv_indices.ndim == 3:  # unbatched lists: the same for every batch element
        kv_num_blocks = jnp.broadcast_to(kv_num_blocks, (B, *kv_num_blocks.shape))
        kv_indices = jnp.broadcast_to(kv_indices, (B, *kv_indices.shape))
    if block_sizes is None:
        raise ValueError("block-sparse attention needs block_sizes=AttentionBlockSizes(block_q, block_k)")
    del H
    return block_sparse_attention(
        q,
        k,
        v,
        kv_num_blocks,
        kv_indices,
        block_sizes=block_sizes,
        is_causal=is_causal,
        scale=scale,
        implementation=implementation,
    )


def make_attention_fn(
    *,
    block_sizes: AttentionBlockSizes | None = None,
    kv_num_blocks=None,
    kv_indices=None,
    implementation: Implementation = None,
    scale: float | None = None,
) -> Callable:
    """An ``attention_fn`` for ``nnx.MultiHeadAttention(..., attention_fn=make_attention_fn(...))``.

    Dense (no lists): ``flash_attention``; block-sparse (``kv_num_blocks``/``kv_indices`` given, with
    ``block_sizes``): ``block_sparse_attention``. Query ``[batch..., Lq, H, D]`` (any number of batch axes,
    or none), key/value ``[batch..., Lk, Hkv, D]``; returns ``[batch..., Lq, H, D]``."""
    if (kv_num_blocks is None) != (kv_indices is None):
        raise ValueError("give both kv_num_blocks and kv_indices (or neither)")

    def attention_fn(
        query,
        key,
        value,
        bias=None,
        mask=None,
        broadcast_dropout: bool = True,
        dropout_rng=None,
        dropout_rate: float = 0.0,
        deterministic: bool = False,
        dtype=None,
        precision=None,
        module=None,
        promote_dtype=None,
        is_causal: bool = False,
        **kwargs,
    ):
        del broadcast_dropout, dropout_rng, precision, promote_dtype, kwargs
        if bias is not None:
            raise ValueError("attention_fn: an additive bias is not supported by the kernels (pass mask)")
        if dropout_rate > 0.0 and not deterministic:
            raise ValueError("attention_fn: dropout is not supported (use deterministic=True or dropout_rate=0)")
        if module is not None:
            raise ValueError("attention_fn: sow_weights is not supported (the kernels never form the weights)")
        if dtype is not None:
            query, key, value = (jnp.asarray(a, dtype) for a in (query, key, value))
        lead = query.shape[:-3]
        q, k, v = (a.reshape(-1, *a.shape[-3:]) for a in (query, key, value))
        m = None
        if mask is not None:
            m = jnp.broadcast_to(mask, (*lead, *mask.shape[-3:])).reshape(-1, *mask.shape[-3:])
        out = _attend(
            q,
            k,
            v,
            mask=m,
            is_causal=is_causal,
            scale=scale,
            block_sizes=block_sizes,
            kv_num_blocks=kv_num_blocks,
            kv_indices=kv_indices,
            implementation=implementation,
        )
        return out.reshape(*lead, *out.shape[1:])

    return attention_fn


class NnxSparseAttention(nnx.MultiHeadAttention):
    """``nnx.MultiHeadAttention`` (same arguments in the same order, same call) whose attention runs the
    kernels: ``flash_attention``, or ``block_sparse_attention`` over the lists given here."""

    def __init__(
        self,
        num_heads: int,
        in_features: int,
        qkv_features: int | None = None,
        out_features: int | None = None,
        num_kv_heads: int | None = None,
        *,
        block_sizes: AttentionBlockSizes | None = None,
        kv_num_blocks=None,
        kv_indices=None,
        implementation: Implementation = None,
        rngs: nnx.Rngs,
        **kwargs,
    ):
        fn = make_attention_fn(
            block_sizes=block_sizes, kv_num_blocks=kv_num_blocks, kv_indices=kv_indices, implementation=implementation
        )
        super().__init__(
            num_heads,
            in_features,
            qkv_features,
            out_features,
            num_kv_heads,
            attention_fn=fn,
            rngs=rngs,
            **kwargs,
        )


class EqxSparseAttention(eqx.Module):
    """Unbatched multi-head attention like ``eqx.nn.MultiheadAttention`` (vmap it over a batch), over the
    kernels. ``__call__(query [Lq, Eq], key_ [Lk, Ek], value [Lk, Ev], mask=None, *, kv_num_blocks=None,
    kv_indices=None, key=None, inference=None)``; lists are unbatched ``[H, Qb, cap]``."""

    query_proj: eqx.nn.Linear
    key_proj: eqx.nn.Linear
    value_proj: eqx.nn.Linear
    output_proj: eqx.nn.Linear
    num_heads: int = eqx.field(static=True)
    num_kv_heads: int = eqx.field(static=True)
    qk_size: int = eqx.field(static=True)
    vo_size: int = eqx.field(static=True)
    is_causal: bool = eqx.field(static=True)
    block_sizes: AttentionBlockSizes | None = eqx.field(static=True)
    implementation: Implementation = eqx.field(static=True)

    def __init__(
        self,
        num_heads: int,
        query_size: int,
        key_size: int | None = None,
        value_size: int | None = None,
        output_size: int | None = None,
        qk_size: int | None = None,
        vo_size: int | None = None,
        use_query_bias: bool = False,
        use_key_bias: bool = False,
        use_value_bias: bool = False,
        use_output_bias: bool = False,
        *,
        num_kv_heads: int | None = None,
        is_causal: bool = False,
        block_sizes: AttentionBlockSizes | None = None,
        implementation: Implementation = None,
        key: jax.Array,
    ):
        key_size = key_size or query_size
        value_size = value_size or query_size
        output_size = output_size or query_size
        qk_size = qk_size or query_size // num_heads
        vo_size = vo_size or query_size // num_heads
        hkv = num_kv_heads or num_heads
        if num_heads % hkv:
            raise ValueError(f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({hkv})")
        kq, kk, kv, ko = jax.random.split(key, 4)
        self.query_proj = eqx.nn.Linear(query_size, num_heads * qk_size, use_bias=use_query_bias, key=kq)
        self.key_proj = eqx.nn.Linear(key_size, hkv * qk_size, use_bias=use_key_bias, key=kk)
        self.value_proj = eqx.nn.Linear(value_size, hkv * vo_size, use_bias=use_value_bias, key=kv)
        self.output_proj = eqx.nn.Linear(num_heads * vo_size, output_size, use_bias=use_output_bias, key=ko)
        self.num_heads, self.num_kv_heads, self.qk_size, self.vo_size = num_heads, hkv, qk_size, vo_size
        self.is_causal, self.block_sizes, self.implementation = is_causal, block_sizes, implementation

    @classmethod
    def from_mha(
        cls,
        mha: eqx.nn.MultiheadAttention,
        *,
        is_causal: bool = False,
        block_sizes: AttentionBlockSizes | None = None,
        implementation: Implementation = None,
    ) -> EqxSparseAttention:
        """The same layer (same projections, weights shared) as an ``eqx.nn.MultiheadAttention``."""
        if not isinstance(mha, eqx.nn.MultiheadAttention):
            raise ValueError(f"mha must be an eqx.nn.MultiheadAttention, got {type(mha).__name__}")
        if mha.qk_size != mha.vo_size:
            raise ValueError(f"the kernels need qk_size == vo_size, got {mha.qk_size} and {mha.vo_size}")
        if getattr(mha, "dropout", None) is not None and mha.dropout.p > 0 and not mha.dropout.inference:
            raise ValueError("dropout is not supported: build the eqx.nn.MultiheadAttention with dropout_p=0")
        self = object.__new__(cls)
        for name in ("query_proj", "key_proj", "value_proj", "output_proj"):
            object.__setattr__(self, name, getattr(mha, name))
        for name, val in (
            ("num_heads", mha.num_heads),
            ("num_kv_heads", mha.num_heads),
            ("qk_size", mha.qk_size),
            ("vo_size", mha.vo_size),
            ("is_causal", is_causal),
            ("block_sizes", block_sizes),
            ("implementation", implementation),
        ):
            object.__setattr__(self, name, val)
        return self

    def __call__(
        self,
        query: Float[Array, "Lq Eq"],
        key_: Float[Array, "Lk Ek"],
        value: Float[Array, "Lk Ev"],
        mask=None,
        *,
        kv_num_blocks=None,
        kv_indices=None,
        key: jax.Array | None = None,
        inference: bool | None = None,
        deterministic: bool | None = None,
    ) -> Float[Array, "Lq Eo"]:
        del key, inference, deterministic
        if query.ndim != 2 or key_.ndim != 2 or value.ndim != 2:
            raise ValueError(
                f"EqxSparseAttention is unbatched (vmap over a batch): query [Lq, E], key_/value [Lk, E]; got "
                f"{query.shape}, {key_.shape}, {value.shape}"
            )
        lq, lk = query.shape[0], key_.shape[0]
        q = jax.vmap(self.query_proj)(query).reshape(1, lq, self.num_heads, self.qk_size)
        k = jax.vmap(self.key_proj)(key_).reshape(1, lk, self.num_kv_heads, self.qk_size)
        v = jax.vmap(self.value_proj)(value).reshape(1, lk, self.num_kv_heads, self.vo_size)
        m = None
        if mask is not None:
            m = mask[None, None] if mask.ndim == 2 else mask[None]
        if kv_indices is not None:
            kv_num_blocks, kv_indices = kv_num_blocks[None], kv_indices[None]
        o = _attend(
            q,
            k,
            v,
            mask=m,
            is_causal=self.is_causal,
            scale=None,
            block_sizes=self.block_sizes,
            kv_num_blocks=kv_num_blocks,
            kv_indices=kv_indices,
            implementation=self.implementation,
        )
        return jax.vmap(self.output_proj)(o.reshape(lq, self.num_heads * self.vo_size))


def swap_attention(
    model,
    *,
    is_causal: bool = False,
    block_sizes: AttentionBlockSizes | None = None,
    kv_num_blocks=None,
    kv_indices=None,
    implementation: Implementation = None,
):
    """Route every attention layer of ``model`` through the kernels, without touching the model's code.

    equinox: returns a copy with each ``eqx.nn.MultiheadAttention`` replaced by
    :meth:`EqxSparseAttention.from_mha` (same weights). flax.nnx: sets ``attention_fn`` of every
    ``nnx.MultiHeadAttention`` in place (and returns the model)."""
    if isinstance(model, nnx.Module):
        fn = make_attention_fn(
            block_sizes=block_sizes, kv_num_blocks=kv_num_blocks, kv_indices=kv_indices, implementation=implementation
        )
        for _, m in _iter_modules(model):
            if isinstance(m, nnx.MultiHeadAttention):
                m.attention_fn = fn
        return model
    if kv_indices is not None:
        raise ValueError("equinox: pass kv_num_blocks/kv_indices at call time to EqxSparseAttention")
    is_mha = lambda x: isinstance(x, eqx.nn.MultiheadAttention)
    return jax.tree_util.tree_map(
        lambda x: (
            EqxSparseAttention.from_mha(x, is_causal=is_causal, block_sizes=block_sizes, implementation=implementation)
            if is_mha(x)
            else x
        ),
        model,
        is_leaf=is_mha,
    )


def _iter_modules(model):
    """``nnx.iter_modules`` (flax >= 0.12) or the older method."""
    it = getattr(nnx, "iter_modules", None)
    return it(model) if it is not None else model.iter_modules()
