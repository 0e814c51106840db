"""Pallas kernels with pure-jnp references: attention (``pallas_kernels.attention``) and block-quantized
formats (``pallas_kernels.quant``); one implementation resolver and the checkify path in ``_dispatch``."""

from pallas_kernels._dispatch import IMPLEMENTATIONS, Implementation, checked

__all__ = ["IMPLEMENTATIONS", "Implementation", "checked"]
