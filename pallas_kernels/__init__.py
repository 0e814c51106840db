"""Pallas kernels with pure-jnp references: attention (``jaxwb.pallas_kernels.attention``) and block-quantized
formats (``jaxwb.pallas_kernels.quant``); one implementation resolver and the checkify path in ``dispatch``."""

from jaxwb.pallas_kernels.dispatch import IMPLEMENTATIONS, Implementation, checked

__all__ = ["IMPLEMENTATIONS", "Implementation", "checked"]
