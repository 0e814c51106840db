"""Sparse-attention core: dense flash attention, block-sparse flash attention, threshold retrieval.

Public ops (layout [B, L, H, D] as ``jax.nn.dot_product_attention``):
  flash_attention(q, k, v, *, is_causal, scale, block_sizes, implementation)
  block_sparse_attention(q, k, v, kv_num_blocks, kv_indices, *, block_sizes | block_q, block_k, is_causal,
                         implementation)
  threshold_retrieve(q, k, tau, *, block_size, bound, implementation)

Drop-in layers (``layers.py``, needs equinox and flax; imported on first use): :func:`make_attention_fn`
(an ``attention_fn`` for ``nnx.MultiHeadAttention``), :class:`NnxSparseAttention`,
:class:`EqxSparseAttention` (``EqxSparseAttention.from_mha``) and :func:`swap_attention`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from jaxwb.pallas_kernels.attention.kernel import AttentionBlockSizes
from jaxwb.pallas_kernels.attention.ops import block_sparse_attention, flash_attention
from jaxwb.pallas_kernels.attention.reference import (
    attention_reference,
    block_lists_to_mask,
    expand_block_mask,
    mask_to_block_lists,
)
from jaxwb.pallas_kernels.attention.threshold import (
    Retrieval,
    build_key_index,
    retrieval_block_lists,
    threshold_attention,
    threshold_retrieve,
)

if TYPE_CHECKING:
    from jaxwb.pallas_kernels.attention.layers import (
        EqxSparseAttention,
        NnxSparseAttention,
        make_attention_fn,
        swap_attention,
    )

LAYER_NAMES = ("EqxSparseAttention", "NnxSparseAttention", "make_attention_fn", "swap_attention")


def __getattr__(name: str) -> Any:
    """The drop-in layers (``layers.py``: equinox and flax), imported on first access."""
    if name in LAYER_NAMES:
        return getattr(importlib.import_module("jaxwb.pallas_kernels.attention.layers"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EqxSparseAttention",
    "NnxSparseAttention",
    "make_attention_fn",
    "swap_attention",
    "AttentionBlockSizes",
    "Retrieval",
    "attention_reference",
    "block_lists_to_mask",
    "block_sparse_attention",
    "build_key_index",
    "expand_block_mask",
    "flash_attention",
    "mask_to_block_lists",
    "retrieval_block_lists",
    "threshold_attention",
    "threshold_retrieve",
]
