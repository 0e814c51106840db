"""The trained tiny LM under 4-bit weights (and activations), with statistics over training seeds and two model
sizes: perplexity with NVFP4, RaZeR, MXFP4 and dithered-RHT weights vs float32; the fraction of NVFP4's
perplexity loss removed by RaZeR beside the paper's 29.4% (weight-only) and 32.3% (weight + activation); the
same fraction when a few input channels carry 8x larger weights (outlier channels); per-layer errors and
engine TV/KL. The RaZeR part of ``shared/papers/quantization.md``.

Models (``jaxwb.models.tiny_lm.TinyLM``: byte-level, RoPE, causal attention through the project's
``jaxwb.pallas_kernels.attention.flash_attention``) are trained with AdamW on the shipped stdlib corpus
(``jaxwb.models.train.trained_model``: trained on demand, cached outside git), ``seeds`` seeds per width in
``d_models`` (full: 5 seeds x d = 64 and d = 128, 2 layers, 800 steps; the d=128 model has 4x the block
parameters). Perplexity = exp(mean next-byte cross-entropy) on 256 held-out windows of 64 bytes.

Quantized variants (``jaxwb.sims.tiny_lm.quant``): weight-only NVFP4 / RaZeR / MXFP4 through the kernels' drop-in
layers (``jaxwb.pallas_kernels.quantize_model`` -> ``EqxQuantizedLinear``: packed FP4 weights, bf16-rounded
activations, W4A16), RHT-4 as float32 fake-quantized weights; W4A4 = the same weights with every block Linear's
input quantized per token (NVFP4 / RaZeR activation variant); outlier channels = 4 input channels per normed
layer input scaled x8 in the weights and /8 in the RMSNorm gain (the float model is bit-identical). The tied
embedding/output matrix stays float32.

Formats (bits per weight, counting block scales):
  NVFP4     E2M1 codes, E4M3 scale per 16                 4.5
  RaZeR     E2M1 codes with -0 remapped per block to one of {+-5, +-8}, E3M3 scale per 16 (weight variant) 4.5
  MXFP4     E2M1 codes, E8M0 power-of-two scale per 32    4.25
  RHT-4     dithered randomized-Hadamard 4-bit, one FP32 scale per group of g = min(64, in), 4 + 32/g
"Fraction of NVFP4's loss removed" = 1 - (ppl_RaZeR - ppl_fp) / (ppl_NVFP4 - ppl_fp), per trained model; claims
use its mean over models with a 95% percentile-bootstrap interval; the other claims use Student-t intervals
over seeds (``Claim.from_samples``).

What differs from the paper's setting: the paper averages over LLMs of billions of parameters with token
vocabularies, trained on trillions of tokens, whose weights and activations have the heavy-tailed outlier
channels RaZeR's special values are designed for; here byte-level models of 0.1-0.4M parameters trained for
800 steps on 1.9 MB of Python (stdlib), whose weights are close to Gaussian, and perplexity losses of ~0.1 (not ~1).

Engines (``theory/tv_distance/``), on the first size's seed-0 model: the float32 model is engine A; engine B is
the same model in bfloat16, or with NVFP4 / RaZeR drop-in weights. TV(A, B) over n-byte continuations of a
prompt with logit access (plain estimator), KL(A || B) from the same sequences; +-2 standard errors.

Figures (``figures/tiny_lm/``):
  perplexity.png    per size: perplexity above float32 per format and setting (bootstrap CIs); the RaZeR
                    fractions per setting and size beside the paper's 29.4% / 32.3%
  layer_errors.png  per-layer relative weight MSE and the perplexity increase when only that layer is quantized
  engines.png       TV and KL between the float32 engine and bf16 / NVFP4-weight / RaZeR-weight engines
"""

from __future__ import annotations

from jaxwb.sims.core.audit import Mutant
from jaxwb.sims.tiny_lm.claims import claims, summary
from jaxwb.sims.tiny_lm.config import (
    ENGINES,
    FORMATS,
    NAME,
    PAPER_RAZER_REDUCTION,
    PAPER_RAZER_REDUCTION_WA,
    PRESETS,
    PROMPT,
    TITLE,
    WA_FORMATS,
    Config,
)
from jaxwb.sims.tiny_lm.plot import layer_table, plot
from jaxwb.sims.tiny_lm.quant import bits_per_weight, fake_quantize, quantized_model, quantized_weights
from jaxwb.sims.tiny_lm.run import _eval, as_ar_model, engine_distances, run

__all__ = [
    "ENGINES",
    "FORMATS",
    "MUTANTS",
    "NAME",
    "PAPER_RAZER_REDUCTION",
    "PAPER_RAZER_REDUCTION_WA",
    "PRESETS",
    "PROMPT",
    "TITLE",
    "WA_FORMATS",
    "Config",
    "_eval",
    "as_ar_model",
    "bits_per_weight",
    "claims",
    "engine_distances",
    "fake_quantize",
    "layer_table",
    "plot",
    "quantized_model",
    "quantized_weights",
    "run",
    "summary",
]


def _no_special_value(f):
    """RaZeR's code 0x8 decodes to -0 again (its special value dropped): RaZeR degenerates to an NVFP4-like
    format (E3M3 scales) whose remapped elements read back as 0."""
    import jax.numpy as jnp

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
