"""TV distance between autoregressive models under logit, sample and noisy-logit access
(``shared/papers/tv_distance.md``; estimators in ``theory/tv_distance/``).

Figures (``figures/tv_distance/``):
  errors_vs_queries.png  mean |estimate - TV| vs total queries, three access models (exact TV by enumeration,
                         K=4), with the n/eps^2, (n + n^2 sigma^2)/eps^2 and n^2 K/eps^2 guide lines
  queries_vs_n.png       queries needed for RMSE eps vs n (per-step perturbation ~ 1/sqrt(n) so TV is roughly
                         constant), fitted log-log slopes against 1 (logit) and 2 (sample)
  coverage.png           coverage of |T - TV| <= eps at the Hoeffding m, and the error distribution
  tv_vs_kl.png           TV vs KL (and Pinsker) as the supports separate; spread of both estimators
  engines.png            TV and KL between a float32 and a bfloat16 engine of one random tiny transformer vs n

Claims (issue 13): the estimators are checked against their *exact expectations* by enumeration (float64 NumPy,
``enumerated_reference``; the noisy ones through the Gaussian smoothing E_eta g(L + eta, kv) = g(L, (k+1)v)),
decided on CIs over ``coverage_reps`` repetitions at the Hoeffding m. The loose spec bounds (plugin bias
<= sigma sqrt(2n/r), Hoeffding coverage) are kept as ``bound`` claims beside those checks. Intervals: the
sample and noisy estimators' 95% intervals are widened by a bias estimate (``Estimate.halfwidth``); without it
the noisy r = 1 interval covered the true TV in 82%
of repetitions and the sample s = 4 one in ~7% (full preset, coverage.png: centred on a biased mean). With
the bias estimate = SIMEX-2 minus SIMEX-1 only, it covered 88%; with SIMEX-2 minus the plugin, >= 95%.
Default sample kind: ``tv_sample`` uses kind="auto" (plugin below s = 8, SIMEX above;
``jaxwb.theory.tv_distance.resolve_sample_kind`` has the measurements: at s <= 4 SIMEX's worst-case bias was larger).

Package layout: ``config`` (Config, PRESETS), ``study`` (``run`` and its pieces), ``claims``, ``figures``
(``plot``), ``bench``; the mutants are below.
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from jaxwb.sims.core.audit import Mutant
from jaxwb.sims.tv_distance.bench import bench
from jaxwb.sims.tv_distance.claims import binomial_ci, ci_hits, claims
from jaxwb.sims.tv_distance.config import PRESETS, Config
from jaxwb.sims.tv_distance.figures import plot
from jaxwb.sims.tv_distance.study import (
    _smoothed_np,
    enumerated_reference,
    markov_pair,
    pooled,
    queries_to_eps,
    run,
    separated_pair,
)
from jaxwb.theory import tv_distance as tv

NAME = "tv_distance"
TITLE = "TV distance between autoregressive models: logit O(n/eps^2), sample ~n^2 K/eps^2, noisy logits"

__all__ = [
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
_PRIVATE = (_smoothed_np,)  # used by tests/sims/test_tv_distance.py

# ---------------------------------------------------------------------------------------------------------
# Mutants: plausible bugs the claims above must catch (``workbench audit tv_distance``)
# ---------------------------------------------------------------------------------------------------------


def _rb_unconditioned(f):
    """RB estimator that conditions on the full sequence: R = exp(-L) instead of exp(-L_<n) (the last step's
    log-ratio counted twice)."""

    def g(d, kind="plain", length=None):
        if kind != "rb":
            return f(d, kind, length)
        n = d.lp.shape[1]
        mask = jnp.ones(n) if length is None else (jnp.arange(n) < length).astype(jnp.float32)
        L = jnp.sum((d.lp - d.lq) * mask, axis=1)
        if length is None:
            last_lp, last_lq = d.last_lp, d.last_lq
        else:
            last_lp, last_lq = jnp.take(d.last_lp, length - 1, axis=1), jnp.take(d.last_lq, length - 1, axis=1)
        return jnp.sum(jnp.exp(last_lp) * tv.plain_z(L[:, None] + last_lp - last_lq), axis=-1)

    return g


# first: the cheapest (it patches only what the claims compute, no compiled function changes; the default
# suite runs it)
MUTANTS = [
    Mutant(
        "interval_without_bias",
        "jaxwb.theory.tv_distance.logit:Estimate.halfwidth",
        lambda f: lambda self, level=0.95: f(self._replace(bias=0.0 * self.bias), level),
        "noisy/sample interval centred on a biased mean with a variance-only width (the reviewer's bug)",
    ),
    Mutant(
        "hoeffding_eps_not_squared",
        "jaxwb.theory.tv_distance.logit:hoeffding_m",
        lambda f: lambda eps, delta: int(math.ceil(math.log(2.0 / delta) / (2.0 * eps))),
        "Hoeffding sample size ln(2/delta)/(2 eps) with eps not squared",
    ),
    Mutant(
        "rb_without_conditioning",
        "jaxwb.theory.tv_distance.logit:_logit_z_from_decoded",
        _rb_unconditioned,
        "Rao-Blackwell step conditions on the whole sequence (R = exp(-L), not exp(-L_<n))",
    ),
    Mutant(
        "simex_smoothing_variance_halved",
        "jaxwb.theory.tv_distance.noisy:_smoothed_z",
        lambda f: lambda mu, s2: f(mu, 0.5 * s2),
        "SIMEX's Gaussian smoothing with half the noise variance",
    ),
]
