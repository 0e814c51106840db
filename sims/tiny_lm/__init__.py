"""The trained tiny LM under 4-bit weights (and activations), with statistics over training seeds and two model
sizes: perplexity with NVFP4, RaZeR, MXFP4 and dithered-RHT weights vs float32; the fraction of NVFP4's
perplexity loss removed by RaZeR beside the paper's 29.4% (weight-only) and 32.3% (weight + activation); the
same fraction when a few input channels carry 8x larger weights (outlier channels); per-layer errors and
engine TV/KL. The RaZeR part of the quantization papers (``docs/papers/quantization.md``).

Papers: RaZeR ("Redundant zero remapping": NVFP4's negative zero remapped per block to a special value), NeurIPS
2026, for the formats and the perplexity claims (29.4% / 32.3% of NVFP4's loss removed); the TV-distance paper
(estimating the TV distance between autoregressive distributions, and between inference engines serving the same
model), NeurIPS 2026, for the engine comparison (``docs/papers/tv_distance.md``); the models' attention runs
through the project's ``flash_attention`` (the attention core of ``docs/papers/sparse_attention.md``).
Reproduced: the formats (NVFP4, RaZeR's weight and activation variants, MXFP4, dithered RHT), the loss-removed
measure and the engines' TV with logit access. A reconstruction: the models (tiny byte-level LMs, not the papers'
LLMs), the outlier channels (a synthetic transform) and the W4A4 setting's per-token activation scales.

Models (``jaxwb.models.tiny_lm.TinyLM``: byte-level, RoPE, causal attention through the project's
``jaxwb.pallas_kernels.attention.flash_attention``) are trained with AdamW on the shipped stdlib corpus
(``jaxwb.models.train.trained_model``; shipped for the JAX version that trained them, ``jaxwb.sims.core.weights``,
else trained on demand and cached outside git), ``seeds`` seeds per width in
``d_models`` (full: 5 seeds x d = 64 and d = 128, 2 layers, 800 steps; the d=128 model has 4x the block
parameters). Perplexity = exp(mean next-byte cross-entropy) on 256 held-out windows of 64 bytes.

Quantized variants (``jaxwb.sims.tiny_lm.quant``): weight-only NVFP4 / RaZeR / MXFP4 through the kernels' drop-in
layers (``jaxwb.pallas_kernels.quantize_model`` -> ``EqxQuantizedLinear``: packed FP4 weights, bf16-rounded
activations, W4A16), RHT-4 as float32 fake-quantized weights; W4A4 = the same weights with every block Linear's
input quantized per token (NVFP4 / RaZeR activation variant); outlier channels = 4 input channels per normed
layer input scaled x8 in the weights and /8 in the RMSNorm gain (the float model is bit-identical), 4 draws of the
channels per model, each on a quarter of the evaluation windows. The tied embedding/output matrix stays float32.

Every perplexity a claim reads is also recomputed independently (``reference.variant_loss_np``): per model and
variant (float, W4A16 NVFP4 / RaZeR / MXFP4, W4A4), the loss on the first 8 evaluation windows from a float64 NumPy
forward of the same weights round-tripped by ``theory.quantization.fp4_formats`` (bf16 inputs, per-token activation
round trips). MXFP4 against NVFP4 in perplexity is not resolved by the models (an ordering across 0): it is claimed
as the band the models support (``Config.mxfp4_band``).

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

Package layout (the result template of ``jaxwb.sims.core.contract``): ``config`` (NAME, TITLE, Config, presets,
constants), ``run`` (``run``: training, perplexities, the layer study, the engines), ``claims``, ``figures``
(``plot``, one function per figure), ``mutants`` (MUTANTS); ``quant`` (the quantized variants) and ``tables``
(text tables: ``summary``, ``layer_table``).

Figures (``figures/tiny_lm/``):
  perplexity.png    per size: perplexity above float32 per format and setting (bootstrap CIs); the RaZeR
                    fractions per setting and size beside the paper's 29.4% / 32.3%
  layer_errors.png  per-layer relative weight MSE and the perplexity increase when only that layer is quantized
  engines.png       TV and KL between the float32 engine and bf16 / NVFP4-weight / RaZeR-weight engines
"""

from __future__ import annotations

from jaxwb.sims.tiny_lm.claims import claims
from jaxwb.sims.tiny_lm.config import DISPLAY_ONLY, NAME, PRESETS, TITLE, Config
from jaxwb.sims.tiny_lm.figures import plot
from jaxwb.sims.tiny_lm.mutants import MUTANTS
from jaxwb.sims.tiny_lm.run import run

__all__ = ["DISPLAY_ONLY", "MUTANTS", "NAME", "PRESETS", "TITLE", "Config", "claims", "plot", "run"]
