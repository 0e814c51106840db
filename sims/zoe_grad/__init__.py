"""ZOE-Grad: quantizer surrogate gradients are expectations of zeroth-order estimators; QAT on the tiny LM.

Paper: *ZOE-Grad: a zeroth-order expectation view of quantization surrogate gradients* (NeurIPS 2026; only the
abstract is available to the project). Reproduced: the abstract's statements
(surrogate gradients = expectations of zeroth-order estimators; QAT with continuous surrogates vs STE). The
estimators, the closed forms and the convergence bound are a *reconstruction* from the abstract, derived in
``theory/zoe_grad.py``.

What is measured (every random quantity is decided on a Student-t interval over independent seeds):

1. Monte Carlo means of the score-function (eq. 4) and two-point (eq. 5) estimators, built only from
   evaluations of the *hard* quantizer (``jnp.round`` for unit-step INT-b, the kernels' E2M1 codec
   ``fp4.e2m1_encode/decode`` for FP4), against the closed-form bump sum (eq. 3, built from the laws' densities):
   Gaussian, logistic and triangular laws, across x, on both grids. The uniform law's degenerate estimator
   (eq. 6) is drawn beside them and claimed equal to its bump sum; at sigma = 1/sqrt(12) both are the clipped STE
   for every x. The Gaussian and logistic second moments against eq. 7; the mean of the perturbed hard quantizer
   against the smoothed quantizer Q_sigma (eq. 2).
2. sigma sweep: the two-point estimator's Monte Carlo mean at a level and at a boundary of a wide INT-8 grid
   against the bump sum at every sigma, claimed at the concentration peak (a boundary, smallest sigma) and in the
   flat, STE-like limit (a level, largest sigma). (The Poisson-summation series of eq. 8 is a second closed form
   of the same function: a unit test in ``tests/theory/test_zoe_grad.py``.)
3. The op ``jaxwb.pallas_kernels.quant.fake_quant``: its custom_vjp backward (closed form, no sampling) against the
   theory's bump sum at z = x / scale on the E2M1 levels, and against the Monte Carlo mean of the two-point
   estimator through the *real* NVFP4 quantize -> dequantize kernels, on blocks whose block scale is pinned by an
   anchor element (scale 0.1: the scale must cancel from the gradient).
4. The convergence bound (eq. 10), the bias bound (eq. 9), the per-step bias and the constant B (against scipy)
   on a separable toy objective
   f(q) = |q - c|^2 / 2 over INT-3 weights, SGD with the Gaussian score estimator as the backward.
5. QAT of the tiny LM (``models/tiny_lm.py``): from a pretrained float model, fine-tune with fake-quantized
   block weights (every matmul weight of the blocks; the tied embedding stays in float) with STE and with the
   continuous surrogates, against post-training quantization (PTQ) of the pretrained model and of the float
   model fine-tuned for the same steps (the control for the extra training). Validation perplexity of the
   quantized model, one value per seed (the fine-tuning data order), CI over seeds.

Measured on the full preset (seed 0; ``python -m jaxwb.sims.core.cli run zoe_grad``, ~20 s on 2 loaded cores): every
Monte Carlo mean lies inside its interval around the closed form (e.g. Gaussian score estimator on INT-3 at
x = 0.65: 1.1976 +- 0.015 vs 1.1984; second moments 6.489 +- 0.12 vs 6.496); the sweep's two-point means
match the bump sum at the boundary peak and in the flat limit; fake_quant's NVFP4 backward equals the
zeroth-order mean
through the kernels (1.1151 +- 0.008 vs 1.1144, Gaussian); the bias bound is tight (0.507 <= 0.530) and the
convergence bound with its proof's realized terms has slack 8 (12.6 +- 0.4 <= 104.5; the same theorem with sup
constants is ~700x loose and is only drawn).

QAT (INT-2 = ternary absmax weights per block of 16, d=32, 1 layer, 80 Adam steps, 40 seeds): perplexity PTQ 11.27,
float fine-tune + PTQ 11.13 +- 0.08, QAT 9.30-9.35 for every surrogate (float model 8.73): QAT beats float
fine-tuning + PTQ by 1.79-1.84 perplexity (paired intervals 0.09-0.11) for STE and every continuous law. **Not
reproduced:** the paper's "continuous surrogates beat STE" (LLMs): ppl_STE - ppl_law = -0.024 +- 0.073 (Gaussian),
-0.007 +- 0.071 (logistic), -0.052 +- 0.069 (triangular); what the seeds support is claimed instead, |ppl_STE -
ppl_law| < 0.3 (``Config.qat_ste_bound``, with its power), a fifth of QAT's gain. The quick preset runs the same
study for 10 steps from a model pretrained for 200 steps, 5 seeds: QAT beats float fine-tuning + PTQ by 1.87 +- 0.69
for every surrogate; the surrogates differ from STE by -0.008 +- 0.009 to -0.013 +- 0.026, claimed |.| < 0.12.
The triangular law's score has infinite variance: its claimed Monte Carlo means take ``Config.heavy_samples``
draws per seed (``config.HEAVY_TAILED``), or their intervals' width fails its cap at some keys.
Note: under Adam a surrogate that is a constant multiple of STE trains identically (Adam is invariant to the
gradient's scale): the uniform law at sigma = 0.3 is 0.962 x the clipped STE on ternary levels and reproduces
STE's runs exactly in 4 of 5 seeds; only the *shape* of a surrogate can matter. The evaluation of the QAT study
(the tiny LM's forward, the attention op, the loss, the INT fake quantizer) is checked against an independent
float64 NumPy forward of the same weights (``reference``).

Package layout (the template of ``jaxwb.sims.core.contract``): ``config`` (NAME, TITLE, Config, PRESETS,
constants), ``estimators`` (hard quantizers, the Monte Carlo of the estimators, the sigma sweep: 1-2),
``kernel_check`` (3), ``toy`` (4), ``qat`` (5), ``reference`` (the NumPy forward of 5's check, the bias constant of
4's check, perplexity), ``run`` (the five in turn), ``claims``, ``figures`` (``plot``, one function per figure),
``mutants``.
"""

from __future__ import annotations

from jaxwb.sims.zoe_grad.claims import claims
from jaxwb.sims.zoe_grad.config import (
    COLORS,
    DISPLAY_ONLY,
    ESTIMATORS,
    GRIDS,
    KERNEL_ANCHOR_SCALE,
    MC_LAWS,
    NAME,
    PRESETS,
    TITLE,
    Config,
)
from jaxwb.sims.zoe_grad.estimators import claim_point, grid_levels, hard_quantizer, run_estimators, run_sweep, x_grid
from jaxwb.sims.zoe_grad.figures import plot
from jaxwb.sims.zoe_grad.kernel_check import kernel_blocks, run_kernel_check
from jaxwb.sims.zoe_grad.mutants import MUTANTS
from jaxwb.sims.zoe_grad.qat import QATModel, qat_wrap, run_qat
from jaxwb.sims.zoe_grad.run import run
from jaxwb.sims.zoe_grad.toy import run_toy, toy_constants

__all__ = [
    "COLORS",
    "Config",
    "DISPLAY_ONLY",
    "ESTIMATORS",
    "GRIDS",
    "KERNEL_ANCHOR_SCALE",
    "MC_LAWS",
    "MUTANTS",
    "NAME",
    "PRESETS",
    "QATModel",
    "TITLE",
    "claim_point",
    "claims",
    "grid_levels",
    "hard_quantizer",
    "kernel_blocks",
    "plot",
    "qat_wrap",
    "run",
    "run_estimators",
    "run_kernel_check",
    "run_qat",
    "run_sweep",
    "run_toy",
    "toy_constants",
    "x_grid",
]
