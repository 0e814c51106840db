"""Exact values by enumeration of all K^n sequences: ``exact_tv``, ``exact_kl`` (the ground truth of every
estimator; notation: ``jaxwb.theory.tv_distance``)."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from jaxwb.theory import validate as v
from jaxwb.theory.tv_distance.models import MAX_ENUMERATION, ARModel, check_model, check_pair

# ---------------------------------------------------------------------------------------------------------
# Exact values by enumeration
# ---------------------------------------------------------------------------------------------------------


def all_sequences(K: int, n: int) -> Int[Array, "K**n n"]:
    """All K^n sequences, shape (K^n, n) int32, lexicographic order."""
    v.positive_int("K", K)
    v.positive_int("n", n)
    if K**n > MAX_ENUMERATION:
        raise ValueError(f"n too large for enumeration: K^n = {K}^{n} > {MAX_ENUMERATION}")
    idx = np.arange(K**n)
    digits = (idx[:, None] // K ** np.arange(n - 1, -1, -1)[None, :]) % K
    return jnp.asarray(digits, jnp.int32)


def sequence_logprob(model: ARModel, tokens: Int[ArrayLike, "B n"]) -> Float[Array, " B"]:
    """(B, n) -> (B,): log P(x) = sum_t log p_t(x_t | x_<t)."""
    check_model("model", model)
    v.array("tokens", tokens, ndim=2, integer=True)
    v.check("tokens", tokens, lambda a: (a >= 0) & (a < model.K), f"token ids in [0, K={model.K})")
    return _sequence_logprob(model, jnp.asarray(tokens, jnp.int32))


def _sequence_logprob(model, tokens):
    lp = model.all_logprobs(tokens)
    return jnp.sum(jnp.take_along_axis(lp, tokens[..., None], -1)[..., 0], axis=-1)


@partial(jax.jit, static_argnums=2)
def _exact(p, q, n):
    seqs = all_sequences(p.K, n)
    lp, lq = _sequence_logprob(p, seqs), _sequence_logprob(q, seqs)
    P, Q = jnp.exp(lp), jnp.exp(lq)
    tv = 0.5 * jnp.sum(jnp.abs(P - Q))
    kl = jnp.sum(P * (lp - lq))
    return tv, kl


def exact_tv(p: ARModel, q: ARModel, n: int) -> Float[Array, ""]:
    """TV(P, Q) over length-n sequences by enumerating all K^n of them (K^n <= 2^22). Scalar."""
    check_pair(p, q)
    v.positive_int("n", n)
    all_sequences(p.K, n)  # eager size check
    return _exact(p, q, n)[0]


def exact_kl(p: ARModel, q: ARModel, n: int) -> Float[Array, ""]:
    """KL(P || Q) = sum_x P(x) log P(x)/Q(x) over length-n sequences, by enumeration. Scalar."""
    check_pair(p, q)
    v.positive_int("n", n)
    all_sequences(p.K, n)
    return _exact(p, q, n)[1]
