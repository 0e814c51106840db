"""Pallas kernels with pure-jnp references: attention (``jaxwb.pallas_kernels.attention``) and block-quantized
formats (``jaxwb.pallas_kernels.quant``); one implementation resolver and the checkify path in ``dispatch``.

The most used names are exported here too: :func:`checked` (the opt-in checkify path), the quantized drop-in
layers :class:`QuantizedLinear` and :func:`quantize_model` (from ``jaxwb.pallas_kernels.quant``) and the
attention drop-ins :func:`make_attention_fn` and :func:`swap_attention` (from
``jaxwb.pallas_kernels.attention``). The layers need equinox and flax and are imported on first access.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from jaxwb.pallas_kernels.dispatch import IMPLEMENTATIONS, Implementation, checked

if TYPE_CHECKING:
    from jaxwb.pallas_kernels.attention.layers import make_attention_fn, swap_attention
    from jaxwb.pallas_kernels.quant.layers import QuantizedLinear, quantize_model

LAZY = {
    "QuantizedLinear": "jaxwb.pallas_kernels.quant.layers",
    "quantize_model": "jaxwb.pallas_kernels.quant.layers",
    "make_attention_fn": "jaxwb.pallas_kernels.attention.layers",
    "swap_attention": "jaxwb.pallas_kernels.attention.layers",
}


def __getattr__(name: str) -> Any:
    """The drop-in layers (equinox and flax), imported on first access."""
    if name in LAZY:
        return getattr(importlib.import_module(LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "IMPLEMENTATIONS",
    "Implementation",
    "QuantizedLinear",
    "checked",
    "make_attention_fn",
    "quantize_model",
    "swap_attention",
]
