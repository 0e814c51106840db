"""River-valley momentum: heavy ball lets GD run at a learning rate that would make it diverge, and moves
(1 + beta)/(1 - beta) times faster along the river. Synthetic part of the paper below.

Paper: *Towards understanding momentum acceleration in river-valley loss landscapes* (NeurIPS 2026), building
on Wen et al., *Understanding warmup-stable-decay learning rates: a river valley loss landscape perspective*
(ICLR 2025). Reproduced here: the synthetic landscapes (the quadratic stability edges, the river-speed gain,
the closed-form transients), from the paper's closed forms, nothing reconstructed; the language-model part is
``jaxwb.sims.river_valley_lm``.

Figures (``figures/river_valley/``):
  trajectories.png        GD vs heavy ball on a curved valley at an aggressive learning rate
  phase_diagram.png       (lr, beta) map of river progress and divergence, theory boundary 2(1+beta)/lam drawn
  river_progress.png      distance along the river vs steps (straight and high-dimensional valleys), theory dashed
  stability_boundary.png  measured largest stable lr vs beta for HB and Nesterov against the closed forms
  curved_river.png        distance and mean speed along a curved river (GD, HB) against the adiabatic closed form

Predictions are independent of the simulation: the theory curves are the closed-form eigen-solutions of the
linear two-step recursion (``jaxwb.theory.river_valley.quadratic_closed_form``: A r1^t + B r2^t, or r^t (A + B t) at a
double root), evaluated in float64, never the recursion the optimiser runs. Polyak's rate is compared as
1 - rate (the per-step decay, ~0.02), against the closed-form windowed rate: at Polyak's parameters both edge
modes are double roots, x_t = x_0 r^t (1 + (1 - r) t), so a ratio over [T/2, T] is r (1 + O(log 2 / (T/2) /
(1 - r))) and sits ~7% (in 1 - rate) slower than r itself at T = 1000; the old claim hid this inside a 1%
tolerance on the rate near 0.98.

The seed (``--seed``) draws the random starting points of the curved-valley panel (``n_seeds`` of them, the
claims there are fractions over all starts) and the valley offsets y_0 of the high-dimensional valley. Every
other panel is deterministic (straight valleys from fixed starts; on a straight valley the river coordinate
decouples from y, so the high-dimensional river distance is the same for every seed, which the figure shows).

Claims (kinds): measured stability edges never below the closed forms (bound) and equal to the finite-horizon
edge the closed-form iterate predicts for the bisection's divergence test (check); steady linear-river speeds
and the HB/GD gain (check); speed along a curved river over random starts vs lr/(1-beta)/(1 + a^2 k^2/2)
(paper); linear-river transient, straight and high-dimensional progress, the phase diagram cell by cell and
Polyak's norms vs closed forms (check); windowed Polyak rate vs the double-root closed form (check);
divergence / convergence fractions over random curved-valley starts vs linear stability (check).
"""

from __future__ import annotations

from jaxwb.sims.river_valley.bench import bench
from jaxwb.sims.river_valley.claims import claims
from jaxwb.sims.river_valley.config import DISPLAY_ONLY, NAME, PRESETS, TITLE, Config
from jaxwb.sims.river_valley.figures import plot
from jaxwb.sims.river_valley.mutants import MUTANTS
from jaxwb.sims.river_valley.run import run

__all__ = ["DISPLAY_ONLY", "MUTANTS", "NAME", "PRESETS", "TITLE", "Config", "bench", "claims", "plot", "run"]
