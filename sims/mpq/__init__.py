"""Message-passing post-training quantization (MPQ) against GPTQ and round-to-nearest (A RECONSTRUCTION).

Paper: the MPQ seed abstract (NeurIPS 2026; no public text): row-wise PTQ is posterior
inference over discrete codebooks; GPTQ / LDLQ / block coordinate descent are its zero-temperature hard-decision
limit; MPQ keeps soft posteriors with VAMP (Rangan, Schniter, Fletcher 2019) and refines a hard initialisation by
exact block coordinate descent, and is said to beat the hard-decision baselines on perplexity. The paper's
algorithm and numbers are not public: ``jaxwb.theory.mpq`` is the standard formulation the abstract names.

What is measured (``run``):
  se     VAMP on planted problems (w = q0 + (beta H)^-1/2 z, H Wishart: rotationally invariant, q0 uniform on 4
         levels): the per-iteration MSE of x1 against q0 over draws, beside the state evolution (their Thm. 1).
  tiny   rows of d <= 8 with INT-2 grids: every solver's objective against the exact minimum by enumeration, and
         VAMP's marginals against the exact posterior at three inverse temperatures.
  lm     the tiny LM (the ``tiny_lm`` result's full-preset models, first size: d=64, two blocks, 800 steps,
         cached): every block Linear
         quantized to INT-3 / INT-4 (groups of 32, min-max scales from the float weight) by RTN, GPTQ and MPQ on
         the proxy Hessian of 64 calibration windows, with and without a random-Hadamard rotation first; per-row
         objectives and perplexity per seed (seed s: model s, its own calibration windows and rotation signs);
         GPTQ against the independent NumPy port of the published algorithm (``reference_np``). The quick
         preset: the same models, 3 bits with the rotation, block 0's Linears only (``Config.lm_blocks``).
  synth  with ``Config.with_lm=False`` (no preset), a stand-in for the LM layers that needs no trained model:
         synthetic layers (Gaussian weights, correlated inputs), RTN and GPTQ objectives and GPTQ against the
         NumPy port, per seed.

What holds and what does not (full preset, ``figures/mpq/``): see ``docs/papers/mpq.md``. In short: state
evolution, exact-minimum bounds, GPTQ = NumPy port and RTN >= GPTQ hold; MPQ as reconstructed here does NOT beat
GPTQ on the tiny LM (layer objective or perplexity): those ``paper`` claims are ``expected="fail"`` with the reason.
VAMP with one scalar precision per stage is exact to first order in beta only for H with equal diagonal entries,
so its marginals keep a first-order error on the tiny problems (claimed as a measured bound, not as -> 0).

Figures: methods.png (objective relative to RTN and perplexity by method, bits, rotation), state_evolution.png
(VAMP MSE vs state evolution; tiny problems' objective over the exact minimum).
"""

from __future__ import annotations

from jaxwb.sims.mpq.bench import bench
from jaxwb.sims.mpq.claims import claims
from jaxwb.sims.mpq.config import DISPLAY_ONLY, NAME, PRESETS, TITLE, Config
from jaxwb.sims.mpq.figures import plot
from jaxwb.sims.mpq.mutants import MUTANTS
from jaxwb.sims.mpq.run import run

__all__ = ["DISPLAY_ONLY", "MUTANTS", "NAME", "PRESETS", "TITLE", "Config", "bench", "claims", "plot", "run"]
