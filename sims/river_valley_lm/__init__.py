"""River-valley momentum on a real (tiny) language model: heavy ball's divergence edge over seeds, the edge of
stability measured along full-batch runs, the Hessian spectrum at initialisation, the valley/river decomposition of
a training trajectory, a width scan, and the pipeline checked against an independent float64 NumPy reference of the
model: the language-model part of the paper below. **A negative replication**: the paper's picture does not appear
on this model (below).

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

Parts (all seeds come from ``key``; three compiled training programs serve the study's model, see ``dynamics``):
  edges     mini-batch SGD+HB, per (beta, seed), ``n_seeds`` seeds: log-lr bisection of the divergence edge inside
            ``edge_bracket`` (bracket ends checked, ``edge_iters`` halvings: resolution 32^(1/64) = 1.056 in the full
            preset); intervals over seeds plus the bracket width.
  eos       full-batch GD and HB (same raw lr, and same effective lr) at ``eos_mults`` x 2/lambda_max(init), the first
            ``eos_seeds`` seeds; lambda_max(H(theta_t)) every ``eos_every`` steps by ``track_iters`` Lanczos steps
            (HVPs) warm-started from the previous top Ritz vector (``jaxwb.theory.hessian.lanczos_warm``: the top Ritz
            value maximises the Rayleigh quotient over the Krylov space, so it converges to the largest algebraic
            eigenvalue; power iteration converged to the largest |lambda|, at some steps a negative one), checked
            against a fresh random-start Lanczos (``lanczos_iters`` steps) mid-run and at the end; the loss, the
            parameter and RMSNorm-scale norms.
  spectrum  top ``spectrum_k`` Hessian eigenvalues at init per seed; a valley dimension needs a visible gap.
  map       (effective lr, beta) loss map (x sqrt(2) grid of lr/(1-beta), so every beta's best lr lies inside it) and
            AdamW (lr, beta1) grid on the first ``map_seeds`` seeds.
  split     valley/river split of full-batch HB and GD trajectories along each seed's top-``top_k`` eigenvectors.
  reference the run's own numbers recomputed on the float64 NumPy reference (``jaxwb.models.reference_np``, sharing no
            code with the model, its attention op, the training loop or the Hessian tools; ``reference``): the
            batches' targets against the corpus, every full-batch loss at theta_0 and theta_T, logits, the loss at
            the river part, the curvature along the Ritz vectors, ``numpy.linalg.eigh`` of a small model's dense
            Hessian against the study's Lanczos, heavy ball on that Hessian's quadratic model against 2(1+beta)/lambda,
            GD's divergence edge (seed 0) bisected again and three mini-batch runs (GD, heavy ball, AdamW) repeated on
            the reference.
  scan      at each of ``scan_widths`` (the study's own width from the parts above): GD's and heavy ball's
            (``scan_beta``) edges and the top spectrum at init, ``scan_seeds`` seeds: where would the paper's
            picture (raw-lr edge 1+beta times GD's; a gap in the top spectrum) appear?

Full preset, measured (``figures/river_valley_lm/``; 15 seeds unless stated, 95% intervals): divergence edges 10.1 [8.7,
11.8] (GD), 7.1 [6.1, 8.3] (beta=0.5), 3.8 [3.3, 4.4] (beta=0.9) x 2/lambda_max(init), bisection resolution x1.056:
momentum NARROWS the raw stable lr range on this model (edge(0.9)/edge(GD) = 2^(-1.42 +- 0.24); the quadratic 1+beta
fails), GD trains ~10x past its quadratic threshold. In effective lr the edges are 10.1, 14.3, 38.0: a river-speed gain
of 1.41x (beta=0.5) and 3.75x (beta=0.9), not (1+beta)/(1-beta) = 3 and 19. Edge of stability (full batch, lr = 2 x
2/lambda_max(init), lambda_max every 2 steps by 10 warm-started Lanczos steps, within 0.25% of a fresh 48-step Lanczos
at every checked point, 5 seeds): lr * lambda_max(theta_t) over the second half is 3.63 +- 0.47 for GD (quadratic: 2)
and 3.74 +- 0.61 for HB beta=0.5 at the same raw lr (quadratic: 3): HB/GD = 1.05 +- 0.31, not 1+beta. Spectrum: the
largest ratio of consecutive eigenvalues among the top 20 is 1.28 +- 0.05 (lambda_1 / lambda_20 = 3.6-8.4): no gap. The
top-4 directions hold 25% of the initial gradient (1270x their random share) but 0.7% of heavy ball's displacement; the
river part alone keeps 92% +- 5% of the loss decrease; heavy ball (beta=0.9) ends 1.19 +- 0.35 nats below GD at the same
lr. The width scan finds momentum narrowing the raw edge and no gap at every width: log2 edge(0.9)/edge(GD) = -1.06 +-
0.36 (d=16), -1.42 +- 0.24 (32), -1.13 +- 0.38 (64) against the paper's +0.93; largest consecutive eigenvalue ratio
1.27, 1.28, 1.21 (a gap: >= 2). Every reference check agrees to float32 rounding (largest gaps 1e-7 to 5e-6; the
bisected edge lands in the same bracket). Loss map (10 seeds): the best momentum (beta=0.5) at its best effective lr
ends 0.127 +- 0.043 nats below GD at its best; AdamW at its best 0.124 +- 0.028 below that. Run time: 539 s of CPU (the
manifest). The disagreements are claims expected to fail, with their reasons (``claims.WHY_*``); what was found instead
is claimed ("found: ..."). The linear-river displacement (the paper's exact formula at a tiny lr) holds by construction
and is a unit test of ``dynamics.fullbatch_run``.

Figures:
  scan.png               the width scan: edge ratio and largest eigenvalue gap per width, against the paper's picture
  lr_beta_grid.png       final validation loss over (effective lr, beta) for SGD+HB and (lr, beta1) for AdamW
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
