"""Interpolation-regime momentum: on consistent least squares, mini-batch heavy ball / Nesterov speed up
proportionally to the batch size B up to a saturation point tr H / sqrt(L mu), far beyond SGD's L_max / L.

Paper: Garg & Derezinski, *Perfect parallelization in mini-batch SGD with classical momentum acceleration*
(arXiv 2605.18609, 2026). Reproduced: the synthetic part (the exact
mean-square dynamics, eq. MS; speedup ~ B up to saturation; SGD's earlier saturation; randomized Kaczmarz and
coordinate descent). Ours, not the paper's: the explicit momentum rule ``momentum_rule`` (the paper's "simple
momentum choice" is not spelled out in the project's facts) and the grid optimisation of (lr, beta).

Pipeline (``run``): one random consistent system (n x d, condition number ``cond``, "norm" sampling by
default); for every batch size B and method (SGD, heavy ball, Nesterov) the step size and momentum are
grid-optimised on the *exact* mean-square rate rho(T) of eq. MS (``jaxwb.theory.interpolation.mean_square_rate``,
float64; the grid ranks with 16 root-finding steps, the optimum's rho is re-evaluated with 40); the simple momentum
rule (``momentum_rule``) is evaluated beside it; the exact E||e_t||^2 curves come from a few vmapped calls (lengths
rounded up to powers of 2); then every configuration is run by Monte Carlo (``run.mc_batch``: seeds vmapped, one
compiled program per B, float64, the iteration on the error in velocity form) for as long as its statistics read
(1.3 x the exact eps crossing or the fit window's end). Quick preset: common random numbers across methods at one
B (``Config.common_random_numbers``), a new problem at every seed (its seed sweep decides the claims over
problems), 4x the Kaczmarz / coordinate-descent seeds where their intervals need them (``Config.aux_seed_scale``:
the power table in ``config``); full preset: independent streams with per-configuration seed counts
(``Config.seed_scale``: 2x where a claim reads the configuration; docs/papers/interpolation.md, "Intervals") on one
problem, that of seed 0, at every seed (``Config.problem_seed``: its expected failures are properties of that
problem's grid optima; the seeds vary the Monte Carlo and the bootstrap).

Figures (``figures/interpolation/``):
  iterations_vs_batch.png  iterations to reach E||e||^2 <= eps ||e_0||^2 vs B (log-log), Monte Carlo and
  theory
  speedup.png              speedup over SGD at B = 1, T_SGD(1)/T(B) (95% CIs, exact recursion dashed), heavy
                           ball's log-log slope over the fit range (95% CI) beside the paper's slope 1, B*_HB
                           (95% CI) beside tr H/sqrt(L mu); acceleration over SGD at the same B, T_SGD(B)/T(B),
                           with the full-batch GD/Polyak ratio and the measured growth log2 A(B_max)/A(1)
  rate_check.png           Monte-Carlo windowed decay vs the exact curve's on the same window (95% CIs)
  momentum_rule.png        grid-optimised vs rule (lr, beta) as functions of B, and the rule's cost
  kaczmarz_cd.png          randomized Kaczmarz (single row, block, block + momentum) and coordinate descent

Statistics. Monte Carlo runs in float64 on the error e_t = x_t - x* with the velocity v_t = e_t - e_{t-1} carried
(``jaxwb.theory.interpolation.curves_jit``): the old form's x_t - x_{t-1} at beta ~ 0.998 lost precision (in
float32 it biased the B = 1 rule's decay by -2.5%). Every Monte-Carlo statistic (iterations to eps, windowed decay,
speedups, saturation batches) carries a 95% percentile-bootstrap interval over seeds: ``scipy.stats.bootstrap``
draws ``n_boot`` resamples of the seeds (``method="percentile"``), each mapped to its mean curve, and every
statistic's percentile interval is read off its values on those curves. Checks against the exact recursion use
the "ci" comparison (exact value inside the interval, and the interval at most 5% of it).

Claims (kinds). check: Monte-Carlo iterations to eps and windowed decay vs the exact E||e_t||^2 recursion (eq.
MS; the decay compared with the *exact curve's fit on the same window*); the heavy-ball speedup slope below
saturation, the speedup over SGD(1), the acceleration over SGD at one B and its growth A(B_max)/A(1), SGD's and
heavy ball's saturation batches, all against the exact recursion; no trajectory diverges; the operator's
noiseless limit vs Polyak. bound: Kaczmarz / coordinate-descent decay >= sigma_min^2/||A||_F^2. paper: perfect
parallelization, the heavy-ball rule's speedup slope = 1 below saturation (1 inside the interval; the rule's exact
slope is 1.003-1.007 over the quick preset's problems, 0.996 full, while the grid optimum's is sub-linear, 0.83-0.98
and 0.945: the grid finds a relatively better B = 1 optimum; its slope is decided by its check against the exact
recursion), acceleration over SGD grows with B (an ordering on the CI of log2 A(B_max)/A(1)), SGD saturating at
L_max/L and heavy ball at tr H/sqrt(L mu) within 2x, heavy ball at B_max within 2x of Polyak, the rule within 2x
of the tuned optimum (the 2x bands are order-of-magnitude statements of the paper, flagged ``wide`` with their
reason; the values are decided by the checks beside them).

Heavy tails. The mean of ||e_t||^2 over seeds is carried by ever rarer trajectories as t grows (the
mean-square rate is a large-deviation quantity of a product of random matrices), most where the grid optimum puts
a mode on the edge of mean-square stability: there the sample mean runs below E||e_t||^2 and the bootstrap
interval, blind to what no seed sampled, is too narrow. In the full preset (one problem at every seed) these
configurations are decided by the seed sweep (seeds 0-2) and their coverage studies: where the check fails at every
seed and in every replicate (SGD at B = 16 and 256, grid lr = 1.94/L and 1.99/L: iterations to eps at both, the decay
at 256, and the acceleration ratios built on them; ``Config.tail_configs``, ``config.TAIL_COVERAGE``) the claim
carries ``expected="fail"`` with that reason and the measured coverage; where it flips between seeds (SGD's decay at
B = 16, heavy ball's iterations at B = 16) the claim is the bound the replicates support, the whole interval within
5% and 20% (``Config.tail_bounds``, ``config.TAIL_BOUNDS``); heavy ball's decay at B = 16, whose 95% interval
exceeds 5% in 17 of 20 replicates and whose replicate means spread 8.8%, is not claimed (``Config.unclaimed``).
Not theory errors: the exact recursion matches enumeration and the dense operator in the unit tests, and every
configuration away from the edge agrees inside its interval; deciding them would need rare-event sampling, not
more seeds.

Package layout (the template of ``jaxwb.sims.core.contract``): ``config`` (NAME, TITLE, Config, PRESETS,
methods and labels), ``optimise`` (grid optimisation on the exact rate), ``rows`` (the sweepable Monte-Carlo
rows of ``bench``), ``run`` (``run``: exact curves in float64, then Monte Carlo), ``statistics`` (iterations to
eps, windowed fits, bootstrap intervals), ``claims``, ``figures`` (``plot``, one function per figure),
``mutants``, ``bench``.
"""

from __future__ import annotations

from jaxwb.sims.interpolation.bench import bench
from jaxwb.sims.interpolation.claims import claims
from jaxwb.sims.interpolation.config import (
    COLORS,
    DISPLAY_ONLY,
    LABELS,
    METHODS,
    NAME,
    PRESETS,
    TITLE,
    Config,
)
from jaxwb.sims.interpolation.figures import plot
from jaxwb.sims.interpolation.mutants import MUTANTS
from jaxwb.sims.interpolation.optimise import grid_optimise, rates
from jaxwb.sims.interpolation.run import run
from jaxwb.sims.interpolation.statistics import boot_halfwidth

__all__ = [
    "COLORS",
    "DISPLAY_ONLY",
    "LABELS",
    "METHODS",
    "MUTANTS",
    "NAME",
    "PRESETS",
    "TITLE",
    "Config",
    "bench",
    "boot_halfwidth",
    "claims",
    "grid_optimise",
    "plot",
    "rates",
    "run",
]
