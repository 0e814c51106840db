"""TV distance between autoregressive models under logit, sample and noisy-logit access.

Paper: estimating the total-variation distance between two length-n autoregressive distributions (2026; the
project has its statement only, no title or venue). Reproduced: the three
access models' query complexities (logit O(n/eps^2), sample O~(n^2 K/eps^2), noisy logits
O~((n + n^2 sigma^2)/eps^2)), the unbiased plain / mixture / Rao-Blackwellised estimators with Hoeffding's m, and
TV vs KL between two engines of one model. Ours, not the paper's: the SIMEX correction of the noisy and sample
estimators and its bias estimate (``source="reconstruction"``); estimators in ``theory/tv_distance/``.

Figures (``figures/tv_distance/``):
  errors_vs_queries.png  mean |estimate - TV| vs total queries, three access models (exact TV by enumeration,
                         K=4), with the n/eps^2, (n + n^2 sigma^2)/eps^2 and n^2 K/eps^2 guide lines
  queries_vs_n.png       queries needed for RMSE eps vs n (per-step perturbation ~ 1/sqrt(n) so TV is roughly
                         constant), fitted log-log slopes against 2 (sample, noisy) and, for logit access,
                         against 2 n Var Z(n) / eps^2 with the exact Var Z(n) (dotted; the guide slope 1)
  queries_vs_K.png       sample-access queries for RMSE eps vs the vocabulary K at n = 8 (full preset: 24 seeds,
                         K = 2..128; quick: 24 seeds, K = 2, 16 at n = 4, padded to 16 tokens; a new Markov pair
                         per K and seed) beside the paper's slope 1 in K and the noise scale K - 1;
                         the plugin's bias against s / (n (K - 1)); the family's TV per K
  coverage.png           coverage at the Hoeffding m of eps and of the CLT eps' = z sqrt(Var Z / m), the error
                         distribution against N(0, Var Z / m), the stated intervals' coverage
  tv_vs_kl.png           TV vs KL (and Pinsker) as the supports separate; spread of both estimators
  engines.png            TV and KL between a float32 and a bfloat16 engine of one random tiny transformer vs n

Claims: the estimators are checked against their *exact expectations* by enumeration (float64 NumPy,
``enumerated_reference``; the noisy ones through the Gaussian smoothing E_eta g(L + eta, kv) = g(L, (k+1)v)),
decided on CIs over ``coverage_reps`` repetitions at the Hoeffding m; where K^n cannot be enumerated (the
slopes' n up to 64) and for sample access, against the law of the log-ratio along the Markov chain on a grid
(``reference.markov_law_np``). The loose spec bound (plugin bias <= sigma sqrt(2n/r)) is kept as a ``bound``
claim beside those checks; Hoeffding's coverage of eps, which any unbiased [0, 1] estimator meets, is a unit
test, and the claim is the CLT coverage of eps' = z sqrt(Var Z / m) with the exact Var Z. Intervals: the
sample and noisy estimators' 95% intervals are widened by a bias estimate (``Estimate.halfwidth``); without it
the noisy r = 1 interval covered the true TV in 82%
of repetitions and the sample s = 4 one in ~7% (full preset, coverage.png: centred on a biased mean). With
the bias estimate = SIMEX-2 minus SIMEX-1 only, it covered 88%; with SIMEX-2 minus the plugin, >= 95%.
Sample access is claimed to cover from s = 64 (``config.INTERVAL_MIN_S``): below, the log-ratio of counts is
shrunk toward 0, a bias neither correction sees (s = 4 covered 0.00-1.00 over quick seeds 0..9).
Default sample kind: ``tv_sample`` uses kind="auto" (plugin below s = 8, SIMEX above;
``jaxwb.theory.tv_distance.resolve_sample_kind`` has the measurements: at s <= 4 SIMEX's worst-case bias was larger).

Queries are counted in the run: ``decode`` counts one next-token query to each model per position
(``Decoded.queries``), the sample counts add the samples drawn, noisy logits r repeats of each query; the slopes
of queries-to-eps vs n carry 95% bootstrap intervals (``scipy.stats.bootstrap``), coverage fractions 95% Wilson
intervals (``scipy.stats.binomtest``). The sample counts are drawn with NumPy's binomial (the same law
as ``jaxwb.theory.tv_distance.sample_counts``, ~15x faster on CPU).

Package layout (the template of ``jaxwb.sims.core.contract``): ``config`` (NAME, TITLE, Config, PRESETS),
``pieces`` (model pairs, pooled estimates, the Hoeffding-m repetitions, queries to eps), ``reference`` (the
float64 enumeration reference), ``run`` (``run``, one stage per study), ``statistics`` (binomial coverage
interval, interval hits), ``claims``, ``figures`` (``plot``, one function per figure), ``mutants``, ``bench``.
"""

from __future__ import annotations

from jaxwb.sims.tv_distance.bench import bench
from jaxwb.sims.tv_distance.claims import claims
from jaxwb.sims.tv_distance.config import DISPLAY_ONLY, NAME, PRESETS, TITLE, Config
from jaxwb.sims.tv_distance.figures import plot
from jaxwb.sims.tv_distance.mutants import MUTANTS
from jaxwb.sims.tv_distance.pieces import markov_pair, pooled, queries_to_eps, separated_pair
from jaxwb.sims.tv_distance.reference import enumerated_reference
from jaxwb.sims.tv_distance.run import run
from jaxwb.sims.tv_distance.statistics import binomial_ci, ci_hits

__all__ = [
    "DISPLAY_ONLY",
    "MUTANTS",
    "NAME",
    "PRESETS",
    "TITLE",
    "Config",
    "bench",
    "binomial_ci",
    "ci_hits",
    "claims",
    "enumerated_reference",
    "markov_pair",
    "plot",
    "pooled",
    "queries_to_eps",
    "run",
    "separated_pair",
]
