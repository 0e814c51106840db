"""Mutants of the tv_distance result: plausible bugs the claims must catch (``workbench audit tv_distance``)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from jaxwb.sims.core.audit import Mutant
from jaxwb.theory import tv_distance as tv


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


def _noisy_variance_full_length(f):
    """Noisy estimator whose SIMEX noise variance counts every decoded position, not the prefix's: identical at
    full length (the Hoeffding-m repetitions), wrong at a prefix length."""

    def g(d, sigma, r, *, key, kind="simex", order=2, length=None):
        m, n = d.lp.shape
        mask = tv.decoding.position_mask(d, length)
        noise = sigma * jnp.sqrt(2.0 / r) * jax.random.normal(key, (m, n))
        L_hat = jnp.sum((d.lp - d.lq + noise) * mask, axis=1)
        return tv.correct(L_hat, 2.0 * n * jnp.square(sigma) / r, kind, order)

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
    Mutant(
        "prefix_mask_off_by_one",
        "jaxwb.theory.tv_distance.decoding:position_mask",
        lambda f: lambda d, length: f(d, None if length is None else length + 1),
        "a prefix of length k sums k + 1 positions (unseen at full length; only the prefix-length claims see it)",
    ),
    Mutant(
        "noisy_prefix_variance_full_length",
        "jaxwb.theory.tv_distance.noisy:_noisy_z_from_decoded",
        _noisy_variance_full_length,
        "SIMEX's noise variance 2 n sigma^2 / r over all decoded positions at a prefix length (only the noisy "
        "prefix-length claims see it)",
    ),
]
