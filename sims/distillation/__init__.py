"""Consistency distillation and memorisation in a random-feature score model (RECONSTRUCTION).

Paper: the seed abstract "Consistency distillation and memorisation" (NeurIPS 2026): consistency distillation of a
teacher that memorised its data significantly reduces transferred memorisation while preserving, sometimes
improving, sample quality; in the random-feature model of Bonnaire, Urfin, Biroli & Mezard ("Why Diffusion Models
Don't Memorize", NeurIPS 2025, arXiv 2505.17638, section 4) it suppresses unstable feature directions associated
with memorisation and keeps the stable, generalisable modes. The distillation paper's equations are not public: the
distillation loss and its prediction are ours (``jaxwb.theory.distillation.distill``).

Setting: data N(0, I_d), d = 8; score s_A(x) = A sqrt(2) sin(W x/sqrt d + b)/sqrt p, one readout per diffusion time;
the noise average of the denoising loss is exact (closed-form moments), so gradient descent on A is a linear
dynamics in the eigenbasis of the feature Gram U (computed exactly; checked against iterated GD).

Figures (``figures/distillation/``):
  spectrum.png      eigenvalues of the training Gram (each n) and the population Gram, Gaussian-equivalent bulks
  timescales.png    train/test loss over GD steps; tau_mem and tau_gen against n, with the GE predictions
  memorisation.png  copy fraction and energy distance of the teacher over its training, the student beside it
  distillation.png  the fraction of each teacher eigen-direction the student keeps against lr lam (eq. retention);
                    the memorisation-quality plane
  samples.png       teacher and student samples beside the training points

What agrees: tau_gen flat and tau_mem growing ~ n (exponent 1.04 +- 0.09 over n = 8..64 at p = 384); tau_gen within
the Marchenko-Pastur spread of the Gaussian-equivalent linear bulk, tau_mem between the relaxation times of the
training-set bulk's edges (above its centre, towards the slow edge as n/p grows); test loss above the Bayes loss,
training loss below it at the end of training (memorisation); the teacher copies more with longer training, fewer
data and more features (the paper's statements). The student distilled for K steps keeps 1 - (1 - lr lam)^K of each
eigen-direction of the teacher's Gram (measured with stochastic distillation against the closed form): ~97% of the
fast generalising directions, a few percent of the slow memorised ones; its copy fraction drops to near the fresh-
data level and its energy distance is lower than the memorising teacher's (the abstract's statements).
What does not: the Gaussian-equivalent floor s_t^2 of the training Gram (a d -> infinity prediction) is an order
of magnitude too high at d = 8 (expected to fail, with the reason in the claim).

Sizes (full preset): timescales at t = 0.3 for p in {96, 384}, nested training sets n = 8..64, 12 seeds; generation
and distillation at p = 256 (and 64), n in {16, 64}, 12 grid angles, 8 seeds, K = 200 distillation steps.

Claims (kinds): the paper's qualitative statements (orderings over seeds and exponents, kind paper); closed forms
against Monte Carlo and iteration, retention against eq. retention, the student's measures against the expected
student, the timescales against the Gaussian-equivalent spectrum (check); the Bayes bound and the linear bound on
the retention (bound).
"""

from __future__ import annotations

from jaxwb.sims.distillation.claims import claims
from jaxwb.sims.distillation.config import DISPLAY_ONLY, NAME, PRESETS, TITLE, Config
from jaxwb.sims.distillation.figures import plot
from jaxwb.sims.distillation.mutants import MUTANTS
from jaxwb.sims.distillation.run import run

__all__ = ["DISPLAY_ONLY", "MUTANTS", "NAME", "PRESETS", "TITLE", "Config", "claims", "plot", "run"]
