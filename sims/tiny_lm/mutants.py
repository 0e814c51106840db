"""Mutants of the tiny-LM study: plausible bugs in the formats and the quantized variants that a claim must catch
(``workbench audit``)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxwb.sims.core.audit import Mutant


def _no_special_value(f):
    """RaZeR's code 0x8 decodes to -0 again (its special value dropped): RaZeR degenerates to an NVFP4-like
    format (E3M3 scales) whose remapped elements read back as 0."""
    return lambda byte, fmt: jnp.zeros(byte.shape, jnp.float32)


MUTANTS = [
    Mutant(
        "razer_special_value_dropped",
        "jaxwb.pallas_kernels.quant.reference:razer_special_value",
        _no_special_value,
        "RaZeR's special value dropped: code 0x8 decodes to 0, as NVFP4's -0",
    ),
    Mutant(
        "activations_not_quantized",
        "jaxwb.sims.tiny_lm.quant:quantize_activations",
        lambda f: lambda x, fmt: x,
        "the W4A4 setting forgets to quantize the activations (W4A16 twice)",
    ),
    Mutant(
        "razer_layers_get_nvfp4",
        "jaxwb.sims.tiny_lm.quant:LAYER_FORMAT",
        lambda d: {**d, "razer": "nvfp4"},
        "the format map hands NVFP4 to the RaZeR drop-in layers (RaZeR weight-only = NVFP4)",
    ),
]
