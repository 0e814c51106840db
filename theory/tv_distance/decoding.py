"""Decoding: one ``lax.scan`` over positions, vectorised over the m sequences; per-position log-probs of both
models (notation: ``jaxwb.theory.tv_distance``)."""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, ArrayLike, Bool, Float, Int, PRNGKeyArray

from jaxwb.theory import validate as v
from jaxwb.theory.tv_distance.models import ARModel, check_pair

# ---------------------------------------------------------------------------------------------------------
# Decoding: one lax.scan over positions, vectorised over sequences
# ---------------------------------------------------------------------------------------------------------


class Decoded(NamedTuple):
    """Output of :func:`decode`. tokens (m, n) int32; lp, lq (m, n): log p_t(x_t|x_<t), log q_t(x_t|x_<t);
    last_lp, last_lq (m, K): the full next-token log-probs of both models at the last position, or (m, n, K)
    at every position when decoded with ``keep_all=True``; queries (m, n) int32: the next-token queries
    made at each position (both models together), counted where the models are called (2 per position)."""

    tokens: Int[Array, "m n"]
    lp: Float[Array, "m n"]
    lq: Float[Array, "m n"]
    last_lp: Float[Array, "m *n K"]
    last_lq: Float[Array, "m *n K"]
    queries: Int[Array, "m n"] | None = None


def decode(
    p: ARModel, q: ARModel, from_q: Bool[ArrayLike, " m"], *, key: PRNGKeyArray, n: int, m: int, keep_all: bool = False
) -> Decoded:
    """Sample m sequences of length n, row i from Q if ``from_q[i]`` else from P, querying both models.

    ``from_q``: bool (m,). One ``lax.scan`` over the n positions; each step makes one next-token query to
    each model for every row (2 n m queries in all).
    """
    v.prng_key("key", key)
    check_pair(p, q)
    v.positive_int("n", n)
    v.positive_int("m", m)
    if v.dtype_of(from_q) != np.bool_:
        raise ValueError(f"from_q must be a boolean array, got dtype {v.dtype_of(from_q)}")
    v.shape("from_q", from_q, (m,))
    return decode_jit(p, q, from_q, key=key, n=n, m=m, keep_all=keep_all)


@partial(jax.jit, static_argnames=("n", "m", "keep_all"))
def decode_jit(p, q, from_q, *, key, n, m, keep_all=False):
    """The jitted decoding behind ``decode`` (no input checks)."""
    v.prng_key("key", key)
    keys = jax.random.split(key, n)

    def step(carry, inp):
        tokens, _, _ = carry
        t, k = inp
        asked = 0  # next-token queries per row at this position, counted at each model call
        lp_all = p.logprobs(tokens, t)
        asked += 1
        lq_all = q.logprobs(tokens, t)
        asked += 1
        x = jax.random.categorical(k, jnp.where(from_q[:, None], lq_all, lp_all), axis=-1).astype(jnp.int32)
        tokens = tokens.at[:, t].set(x)
        pick = lambda a: jnp.take_along_axis(a, x[:, None], -1)[:, 0]
        ys = (pick(lp_all), pick(lq_all), jnp.full((m,), asked, jnp.int32)) + ((lp_all, lq_all) if keep_all else ())
        return (tokens, lp_all, lq_all), ys

    K = p.K
    init = (jnp.zeros((m, n), jnp.int32), jnp.zeros((m, K)), jnp.zeros((m, K)))
    (tokens, last_lp, last_lq), ys = lax.scan(step, init, (jnp.arange(n), keys))
    if keep_all:
        last_lp, last_lq = jnp.moveaxis(ys[3], 0, 1), jnp.moveaxis(ys[4], 0, 1)
    return Decoded(tokens, ys[0].T, ys[1].T, last_lp, last_lq, ys[2].T)


def check_decoded(d) -> None:
    """Raise ValueError unless ``d`` is a ``Decoded`` with finite fields."""
    if not isinstance(d, Decoded):
        raise ValueError(f"d must be a Decoded (the output of decode), got {type(d).__name__}")


def check_length(length, n: int) -> None:
    """Raise ValueError unless ``length`` is None or in [1, n]."""
    if length is None:
        return
    v.check("length", length, lambda a: (a >= 1) & (a <= n), f"in [1, n={n}]")


def position_mask(d: Decoded, length):
    """(n,) float mask of the positions t < length (all positions when length is None)."""
    n = d.lp.shape[1]
    return jnp.ones(n) if length is None else (jnp.arange(n) < length).astype(jnp.float32)
