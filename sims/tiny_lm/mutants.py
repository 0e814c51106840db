"""Mutants of the tiny-LM study: plausible bugs in the formats and the quantized variants that a claim must catch
(``workbench audit``)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxwb.sims.core.audit import Mutant


def _no_special_value(f):
    """RaZeR's code 0x8 decodes to -0 again (its special value dropped): RaZeR degenerates to an NVFP4-like
    format (E3M3 scales) whose remapped elements read back as 0."""
    return lambda byte, fmt: jnp.zeros(byte.shape, jnp.float32)


def _mxfp4_as_nvfp4(f):
    """The fake-quantizer's MXFP4 branch copy-pasted from NVFP4's (the layer study's MXFP4 is NVFP4)."""
    return lambda w, fmt, *, key, rht_group=64: f(w, "nvfp4" if fmt == "mxfp4" else fmt, key=key, rht_group=rht_group)


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
    Mutant(
        "fake_quantize_mxfp4_is_nvfp4",
        "jaxwb.sims.tiny_lm.quant:fake_quantize",
        _mxfp4_as_nvfp4,
        "the fake-quantizer's MXFP4 branch quantizes in NVFP4 (layer study only: no perplexity claim reads it; the "
        "per-layer weight-error claim does)",
    ),
]
