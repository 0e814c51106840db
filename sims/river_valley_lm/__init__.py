"""River-valley momentum on a real (tiny) language model: heavy ball's divergence edge over seeds, the edge of
stability measured along full-batch runs, the Hessian spectrum at initialisation, and the valley/river
decomposition of a training trajectory. LM part of ``shared/papers/river_valley.md``.

Paper: the language-model part of *Towards understanding momentum acceleration in river-valley loss landscapes*
(NeurIPS 2026); the synthetic part is ``jaxwb.sims.river_valley``. The paper's notes do not specify its LM
experiments: the model, corpus, lr units and measurements below are this workbench's own setup (a reconstruction
on a tiny LM), tested against the quadratic theory's predictions.

The model is ``jaxwb.models.tiny_lm.TinyLM`` (full preset: d=32, 1 layer, 2 heads, ctx 32, ~21k parameters) trained on
the shipped stdlib corpus. Learning rates are in units of GD's quadratic threshold 2/lambda_max(init) of each
seed, lambda_max from Lanczos on Hessian-vector products (``jaxwb.theory.hessian``) on a fixed 16-window batch. The
quadratic theory (``jaxwb.theory.river_valley.hb_threshold``) puts heavy ball's edge at lr * lambda = 2(1+beta):
a raw-lr edge 1+beta times GD's. The paper's stability claim is about the raw lr; its river-speed claim is about the
effective lr lr/(1-beta) (gain (1+beta)/(1-beta) at the edge). Both are reported.

Parts (all seeds come from ``key``; three compiled training programs serve them all, see ``dynamics``):
  edges     mini-batch SGD+HB, per (beta, seed): log-lr bisection of the divergence edge inside ``edge_bracket``
            (bracket ends checked, ``edge_iters`` halvings: resolution 32^(1/16) = 1.24 in the full preset);
            intervals over ``n_seeds`` plus the bracket width.
  eos       full-batch GD and HB (same raw lr, and same effective lr) at ``eos_mults`` x 2/lambda_max(init);
            lambda_max(H(theta_t)) every ``eos_every`` steps by ``track_iters`` Lanczos steps (HVPs) warm-started
            from the previous top Ritz vector (``jaxwb.theory.hessian.lanczos_warm``: the top Ritz value maximises the
            Rayleigh quotient over the Krylov space, so it converges to the largest algebraic eigenvalue; power
            iteration converged to the largest |lambda|, at some steps a negative one), checked against a fresh
            random-start Lanczos (``lanczos_iters`` steps) mid-run and at the end; the loss, the parameter and
            RMSNorm-scale norms.
  spectrum  top ``spectrum_k`` Hessian eigenvalues at init per seed; a valley dimension needs a visible gap.
  map       (lr, beta) loss map (x sqrt(2) lr grid) and AdamW (lr, beta1) grid on the first ``map_seeds`` seeds.
  split     valley/river split of full-batch HB and GD trajectories along each seed's top-``top_k`` eigenvectors.

Full preset, measured (``figures/river_valley_lm/``; 5 seeds, 95% intervals; 195 s on 2 cores): divergence
edges 9.7 [7.8, 12.2] (GD), 7.2 [5.3, 9.8] (beta=0.5), 3.4 [2.5, 4.8] (beta=0.9) x 2/lambda_max(init), bisection
resolution x1.24: momentum does NOT widen the raw stable lr range on this model (it narrows it; the quadratic 1+beta
fails), GD trains ~10x past its quadratic threshold. In effective lr the edges are 9.7, 14.4, 34.4: heavy ball's
advantage is river speed at equal raw lr. Edge of stability (full batch, lr = 2 x 2/lambda_max(init), lambda_max
every 2 steps by 10 warm-started Lanczos steps, within 0.04% of a fresh 48-step Lanczos at every checked point):
lr * lambda_max(theta_t) over the second half is 3.64 +- 0.19 for GD (not 2) and 3.55 +- 0.47 for HB beta=0.5 at
the same raw lr (quadratic edge 3); HB at the same effective lr sharpens to 3.81 +- 0.23. lr * lambda oscillates
step to step (2-10) around these medians. (The earlier 4-step power iteration read up to 30% low, medians 3.3: it
converged to the largest |lambda|, at some steps a negative eigenvalue.) Spectrum: the largest ratio of
consecutive eigenvalues among the top 20 is 1.25 +- 0.11 (lambda_1 / lambda_20 = 3.9-8.4): no gap, so the valley
dimension is not identified by the spectrum; the top-4 split is a choice. Over 5 seeds the top-4 directions hold 28%
of the initial gradient (1400x their random share) but 0.9% of heavy ball's displacement; the river part alone
keeps 90% +- 16% of the loss decrease. Loss map and AdamW grid on 5 seeds (x sqrt(2) lr grid): best beta=0.9 vs
GD 0.044 +- 0.084 nats, AdamW beta1=0.9 vs 0 -0.017 +- 0.038: both undecided. The disagreements are claims
expected to fail, with their reasons (``claims.WHY_*``). The linear-river displacement (the paper's exact formula
at a tiny lr) holds by construction and is a unit test of ``dynamics.fullbatch_run``.

Figures:
  lr_beta_grid.png       final validation loss over (lr, beta) for SGD+HB and (lr, beta1) for AdamW, mean and CI
  edges.png              bisected edges per seed, geometric mean and interval, raw and effective lr, theory lines
  edge_of_stability.png  lambda_max(t) with 2/lr and 2(1+beta)/lr, lr * lambda_max(t), loss, parameter/RMSNorm norms
  decomposition.png      valley coordinates (seed 0), river distance, losses over seeds; spectrum over seeds
"""

from __future__ import annotations

from jaxwb.sims.river_valley_lm.bench import bench
from jaxwb.sims.river_valley_lm.claims import claims
from jaxwb.sims.river_valley_lm.config import DISPLAY_ONLY, NAME, PRESETS, TITLE, Config
from jaxwb.sims.river_valley_lm.figures import plot
from jaxwb.sims.river_valley_lm.mutants import MUTANTS
from jaxwb.sims.river_valley_lm.run import run

__all__ = ["DISPLAY_ONLY", "MUTANTS", "NAME", "PRESETS", "TITLE", "Config", "bench", "claims", "plot", "run"]
