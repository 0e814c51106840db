"""Total-variation distance between autoregressive distributions under three access models.

Reference: "Estimating the total variation distance between autoregressive models" (2026; the
project has its statement only).

Notation (used throughout):
  ``K``  vocabulary size (next-token support),  ``n`` sequence length,  ``m`` number of sampled sequences,
  ``p_t(v | x_<t)``, ``q_t(v | x_<t)``  next-token distributions of the models P and Q,
  ``L(x) = sum_t log p_t(x_t | x_<t) - log q_t(x_t | x_<t) = log P(x)/Q(x)``  the sequence log-ratio,
  ``TV(P, Q) = 1/2 sum_x |P(x) - Q(x)| = sum_x (P(x) - Q(x))_+``.

Autoregressive-model interface: an :class:`ARModel` is a pytree wrapping a pure function
``logprobs(tokens, t) -> (B, K)``: the next-token log-probs of position ``t`` given the prefix
``tokens[:, :t]`` of a prefix batch ``tokens`` of shape ``(B, n)`` (entries at positions >= t are ignored).
Instances: n-gram / Markov models with explicit tables (:func:`ngram_model`, :func:`markov_model`,
:func:`random_ngram`) and a random tiny causal transformer (:func:`random_transformer`) whose compute dtype
(float32 or bfloat16) makes two "engines" of one model. Decoding is a ``lax.scan`` over positions, vectorised
over the ``m`` sequences.

Estimators (every one returns per-sequence values ``Z`` of shape ``(m,)``; the estimate is their mean):
  logit access (exact next-token log-probs of both models on any prefix), ``tv_logit(kind=...)``:
    plain    x ~ P,          Z = (1 - exp(-L))_+ in [0, 1],   E Z = TV,  Var Z <= E Z^2 <= TV   (eq. plain)
    mixture  x ~ (P + Q)/2,  Z = |tanh(L / 2)| = |P - Q|/(P + Q),  E Z = TV                     (eq. mix)
    rb       x_<n ~ P,  R = exp(-L_<n),  Z = sum_v (p_n(v) - R q_n(v))_+ = E[plain | x_<n]      (eq. RB)
  Hoeffding: m = ceil(ln(2/delta) / (2 eps^2)) sequences give |mean Z - TV| <= eps w.p. >= 1 - delta
  (Z in [0, 1]); each sequence costs n queries to each model: 2 n m queries in all.           (eq. Hoeffding)
  noisy-logit access, ``tv_noisy_logit``: the model returns log-probs plus N(0, sigma^2) noise per query;
    exact samples x ~ P are available (the engine generates them). Averaging r repeats per position gives
    L_hat = L + N(0, v) with v = 2 n sigma^2 / r.
      plugin  Z = (1 - exp(-L_hat))_+ ; f is 1-Lipschitz so |bias| <= E|L_hat - L| <= sigma sqrt(2n/r)
              (the spec's bound); when the law of L has a bounded density the bias is O(v), not O(sqrt v).
      simex   our design (the paper's estimator is not public): simulation-extrapolation with the exact
              Gaussian smoothing g(mu, s^2) = E(1 - exp(-(mu + s xi)))_+ = Phi(mu/s) - exp(-mu + s^2/2)
              Phi(mu/s - s). T(k) = g(L_hat, k v) has total noise variance (1 + k) v; extrapolating the
              polynomial in the total variance to 0 cancels the bias terms of order v (order=1:
              Z = 2 T(0) - T(1)) or v and v^2 (order=2: Z = 3 T(0) - 3 T(1) + T(2)). No extra queries.
              What it achieves: bias O((n sigma^2 / r)^(order+1)) under a smooth density of L (measured in the
              sim and tests), variance O(1 + n sigma^2 / r). Error eps then costs about
              n (1 + n sigma^2/r) r / eps^2 queries with r ~ n sigma^2 eps^(-1/(order+1)) for the bias: i.e.
              O~((n + n^2 sigma^2) / eps^(2 + 1/(order+1))) -- the paper's rate up to eps^(1/(order+1)).
              It is not bounded in [0, 1] and not worst-case unbiased (a point mass of L at 0 defeats it).
  sample access, ``tv_sample``: only samples from p_t(. | x_<t) and q_t(. | x_<t) on any prefix. Per position
    s samples from each model give counts c_p, c_q of the observed token x_t; the log-ratio estimate is
    log((c_p + 1/2) / (c_q + 1/2)), whose variance is about (1 - p)/(s p) per model, mean (K - 1)/s over
    x_t ~ p: the sample model is a noisy-logit model with sigma^2 ~ K/s, and s ~ K gives n^2 K / eps^2.
    The same plugin / simex corrections apply, simex with the per-sequence delta-method variance estimate
    v_hat = sum_t 1/(c_p + 1/2) + 1/(c_q + 1/2) - 2/(s + 1). The counts are drawn as Binomial(s, p_t(x_t)),
    which has exactly the law of counting x_t among s categorical samples.
    Default kind of ``tv_sample``: "auto" = plugin for s < 8, SIMEX from s = 8 (``resolve_sample_kind``:
    at small s SIMEX can have a larger bias than the plugin, measured there).
  Interval estimates: ``Estimate.halfwidth(level)`` = z stderr + |bias estimate| (``lower_order``), so the
    sample and noisy intervals are not centred on a biased mean with a variance-only width. Sample access: only
    where counts are rarely 0 or 1 (s >= 64 at n = 6, K = 4): at smaller s the count log-ratio's shrinkage
    toward 0 is a bias the estimate does not see (``Estimate``).
  KL for comparison: ``kl_logit``: x ~ P, Z = L, E Z = KL(P || Q) (unbounded; Pinsker TV <= sqrt(KL/2)).
Ground truth: ``exact_tv`` / ``exact_kl`` by enumeration of all K^n sequences.

Package layout (every public name is re-exported here: ``from theory import tv_distance as tv; tv.X``):
  models    ARModel, ngram_model / markov_model / random_ngram / perturb, random_transformer / with_dtype /
            round_bf16, LOGIT_KINDS / NOISY_KINDS / ENGINE_DTYPES / MAX_ENUMERATION
  exact     all_sequences, sequence_logprob, exact_tv, exact_kl (enumeration)
  decoding  Decoded, decode (one lax.scan over positions)
  logit     plain_z, hoeffding_m, logit_z_from_decoded, tv_logit(_z), Estimate, kl_logit(_z)
  noisy     smoothed_z, correct, lower_order, noisy / sample estimators, SIMEX_MIN_S, resolve_sample_kind
"""

from __future__ import annotations

from jaxwb.theory.tv_distance.decoding import (
    Decoded,
    decode,
)
from jaxwb.theory.tv_distance.exact import (
    all_sequences,
    exact_kl,
    exact_tv,
    sequence_logprob,
)
from jaxwb.theory.tv_distance.logit import (
    Estimate,
    hoeffding_m,
    kl_logit,
    kl_logit_z,
    logit_z_from_decoded,
    plain_z,
    tv_logit,
    tv_logit_z,
)
from jaxwb.theory.tv_distance.logit import (
    tv_logit_z_jit as tv_logit_z_jit,
)
from jaxwb.theory.tv_distance.models import (
    ENGINE_DTYPES,
    LOGIT_KINDS,
    MAX_ENUMERATION,
    NOISY_KINDS,
    ARModel,
    markov_model,
    ngram_model,
    perturb,
    random_ngram,
    random_transformer,
    round_bf16,
    with_dtype,
)
from jaxwb.theory.tv_distance.noisy import (
    SIMEX_MIN_S,
    correct,
    lower_order,
    noisy_plugin_bias_bound,
    noisy_z_from_decoded,
    resolve_sample_kind,
    sample_counts,
    sample_z_from_counts,
    sample_z_from_decoded,
    smoothed_z,
    tv_noisy_logit,
    tv_noisy_logit_z,
    tv_sample,
    tv_sample_z,
)

__all__ = [
    "ARModel",
    "ENGINE_DTYPES",
    "LOGIT_KINDS",
    "MAX_ENUMERATION",
    "NOISY_KINDS",
    "markov_model",
    "ngram_model",
    "perturb",
    "random_ngram",
    "random_transformer",
    "round_bf16",
    "with_dtype",
    "all_sequences",
    "exact_kl",
    "exact_tv",
    "sequence_logprob",
    "Decoded",
    "decode",
    "Estimate",
    "hoeffding_m",
    "kl_logit",
    "kl_logit_z",
    "logit_z_from_decoded",
    "plain_z",
    "tv_logit",
    "tv_logit_z",
    "SIMEX_MIN_S",
    "correct",
    "lower_order",
    "noisy_plugin_bias_bound",
    "noisy_z_from_decoded",
    "resolve_sample_kind",
    "sample_counts",
    "sample_z_from_counts",
    "sample_z_from_decoded",
    "smoothed_z",
    "tv_noisy_logit",
    "tv_noisy_logit_z",
    "tv_sample",
    "tv_sample_z",
]
