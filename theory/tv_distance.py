# ruff: noqa: F722  (jaxtyping shape strings)
"""Total-variation distance between autoregressive distributions under three access models.

Reference: "Estimating the total variation distance between autoregressive models" (2026), notes in
``shared/papers/tv_distance.md``.

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
    sample and noisy intervals are not centred on a biased mean with a variance-only width.
  KL for comparison: ``kl_logit``: x ~ P, Z = L, E Z = KL(P || Q) (unbounded; Pinsker TV <= sqrt(KL/2)).
Ground truth: ``exact_tv`` / ``exact_kl`` by enumeration of all K^n sequences.
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.special import ndtr
from jax.scipy.stats import norm
from jaxtyping import Array, ArrayLike, Bool, Float, Int, PRNGKeyArray

from theory import _validate as v

LOGIT_KINDS = ("plain", "mixture", "rb")
NOISY_KINDS = ("plugin", "simex")
ENGINE_DTYPES = ("float32", "bfloat16")
MAX_ENUMERATION = 1 << 22  # K^n sequences allowed in exact_tv / exact_kl


# ---------------------------------------------------------------------------------------------------------
# The autoregressive-model interface
# ---------------------------------------------------------------------------------------------------------


@jax.tree_util.register_pytree_node_class
class ARModel:
    """An autoregressive model over ``K`` tokens: a pytree of ``params`` and static pure functions.

    ``step_fn(params, tokens, t, **opts) -> (B, K)``: next-token log-probs at position ``t`` given
    ``tokens[:, :t]`` (``tokens`` int32 of shape ``(B, n)``; ``t`` a scalar, possibly traced).
    ``all_fn(params, tokens, **opts) -> (B, n, K)`` (optional): the log-probs of every position at once
    (teacher forcing); defaults to a ``lax.scan`` of ``step_fn``. ``opts`` is a hashable tuple of
    (name, value) pairs (e.g. the compute dtype), part of the static structure.
    """

    def __init__(self, step_fn, params, K: int, all_fn=None, opts: tuple = ()):
        if not callable(step_fn):
            raise ValueError(f"step_fn must be callable, got {type(step_fn).__name__}")
        if not isinstance(K, (int, np.integer)) or isinstance(K, bool) or K < 1:
            raise ValueError(f"K must be a positive integer, got {K!r}")
        self.step_fn, self.params, self.K = step_fn, params, int(K)
        self.all_fn, self.opts = all_fn, tuple(opts)

    def tree_flatten(self):
        return (self.params,), (self.step_fn, self.K, self.all_fn, self.opts)

    @classmethod
    def tree_unflatten(cls, aux, children):
        step_fn, K, all_fn, opts = aux
        return cls(step_fn, children[0], K, all_fn, opts)

    def logprobs(self, tokens: Int[Array, "B n"], t: Int[ArrayLike, ""]) -> Float[Array, "B K"]:
        """(B, n) prefix batch, position t -> (B, K) float32 next-token log-probs."""
        return self.step_fn(self.params, tokens, t, **dict(self.opts)).astype(jnp.float32)

    def all_logprobs(self, tokens: Int[Array, "B n"]) -> Float[Array, "B n K"]:
        """(B, n) -> (B, n, K): log p_t(. | x_<t) for every t (teacher forcing)."""
        if self.all_fn is not None:
            return self.all_fn(self.params, tokens, **dict(self.opts)).astype(jnp.float32)
        n = tokens.shape[1]
        out = lax.map(lambda t: self.logprobs(tokens, t), jnp.arange(n))  # (n, B, K)
        return jnp.moveaxis(out, 0, 1)

    def __repr__(self):
        return f"ARModel({getattr(self.step_fn, '__name__', self.step_fn)}, K={self.K}, opts={self.opts})"


# ---- n-gram / Markov models ------------------------------------------------------------------------------


def _ngram_step(table, tokens, t):
    """table (K+1,)*c + (K,) of log-probs; context index K = before the start (BOS)."""
    c = table.ndim - 1
    K = table.shape[-1]
    idx = []
    for j in range(c, 0, -1):  # context positions t - c, ..., t - 1
        pos = t - j
        tok = jnp.take(tokens, jnp.clip(pos, 0, tokens.shape[1] - 1), axis=1)
        idx.append(jnp.where(pos >= 0, tok, K))
    if not idx:
        return jnp.broadcast_to(table, (tokens.shape[0], K))
    return table[tuple(idx)]


def _ngram_all(table, tokens):
    c = table.ndim - 1
    B, n = tokens.shape
    K = table.shape[-1]
    if c == 0:
        return jnp.broadcast_to(table, (B, n, K))
    padded = jnp.concatenate([jnp.full((B, c), K, tokens.dtype), tokens], axis=1)
    idx = tuple(padded[:, j : j + n] for j in range(c))
    return table[idx]


def ngram_model(logits: Float[ArrayLike, "*context K"]) -> ARModel:
    """An n-gram model with context length c = logits.ndim - 1 from unnormalised ``logits``.

    ``logits`` has shape (K+1,)*c + (K,): ``logits[a_1, ..., a_c, v]`` scores token v after the context
    (a_1, ..., a_c) (oldest first); context symbol K stands for "before the sequence start". c = 0 is a
    product (i.i.d.) model, c = 1 a Markov chain. Logits must be finite (a very negative finite logit stands
    for a near-zero probability: -inf would make log-ratios inf - inf = NaN).
    """
    v.array("logits", logits, min_ndim=1)
    logits = jnp.asarray(logits, jnp.float32)
    K = logits.shape[-1]
    v.shape("logits", logits, (K + 1,) * (logits.ndim - 1) + (K,))
    return ARModel(_ngram_step, jax.nn.log_softmax(logits, axis=-1), K, _ngram_all)


def markov_model(init_logits: Float[ArrayLike, " K"], trans_logits: Float[ArrayLike, "K K"]) -> ARModel:
    """A Markov chain: x_0 ~ softmax(init_logits) (K,), x_t | x_{t-1} ~ softmax(trans_logits[x_{t-1}]) (K, K)."""
    v.array("init_logits", init_logits, ndim=1)
    v.array("trans_logits", trans_logits, ndim=2)
    init_logits = jnp.asarray(init_logits, jnp.float32)
    K = init_logits.shape[-1]
    v.shape("init_logits", init_logits, (K,))
    v.shape("trans_logits", trans_logits, (K, K))
    return ngram_model(jnp.concatenate([jnp.asarray(trans_logits, jnp.float32), init_logits[None]], 0))


def random_ngram(K: int, order: int = 1, scale: float = 1.0, *, key: PRNGKeyArray) -> ARModel:
    """An n-gram model with context length ``order`` and i.i.d. N(0, scale^2) logits."""
    v.positive_int("K", K)
    v.nonnegative_int("order", order)
    v.nonnegative("scale", scale)
    return ngram_model(scale * jax.random.normal(key, (K + 1,) * order + (K,)))


def perturb(
    model: ARModel,
    size: float,
    direction: Float[ArrayLike, "*table"] | None = None,
    *,
    key: PRNGKeyArray | None = None,
) -> ARModel:
    """The n-gram model whose log-prob table is moved by ``size`` times ``direction`` (default: a N(0, 1)
    draw from ``key``, which is then required).

    Only for n-gram models (``ngram_model``); the result is renormalised.
    """
    if not isinstance(model, ARModel) or model.step_fn is not _ngram_step:
        raise ValueError("model must be an n-gram model (ngram_model / markov_model / random_ngram)")
    v.nonnegative("size", size)
    if direction is None:
        if key is None:
            raise ValueError("key must be given when direction is None (the direction is drawn from it)")
        d = jax.random.normal(key, model.params.shape)
    else:
        v.array("direction", direction)
        v.shape("direction", direction, model.params.shape)
        d = jnp.asarray(direction)
    return ngram_model(model.params + size * d)


# ---- a random tiny causal transformer (pure JAX) -----------------------------------------------------------


def random_transformer(
    K: int,
    n_max: int,
    *,
    d_model: int = 32,
    n_heads: int = 2,
    n_layers: int = 2,
    logit_scale: float = 3.0,
    dtype: str | jnp.dtype = jnp.float32,
    key: PRNGKeyArray,
) -> ARModel:
    """A random pre-LayerNorm causal transformer LM over K tokens (BOS = token K), at most n_max positions.

    ``dtype`` is the compute dtype, "float32" or "bfloat16" (bfloat16 rounding of params and activations is
    emulated exactly, see ``round_bf16``; logits are normalised in float32): two "engines" serving the same
    weights (``with_dtype``). ``logit_scale`` multiplies the unembedding (peaked next-token distributions).
    """
    v.one_of("dtype", jnp.dtype(dtype).name, ENGINE_DTYPES)
    v.positive_int("K", K)
    v.positive_int("n_max", n_max)
    v.positive_int("d_model", d_model)
    v.positive_int("n_heads", n_heads)
    v.positive_int("n_layers", n_layers)
    v.nonnegative("logit_scale", logit_scale)
    if d_model % n_heads:
        raise ValueError(f"d_model must be divisible by n_heads, got {d_model} and {n_heads}")
    keys = iter(jax.random.split(key, 4 + 4 * n_layers))
    d = d_model
    nrm = lambda shape, fan_in: jax.random.normal(next(keys), shape) / math.sqrt(fan_in)
    layers = []
    for _ in range(n_layers):
        layers.append(
            {
                "ln1": jnp.ones(d),
                "wqkv": nrm((d, 3 * d), d),
                "wo": nrm((d, d), d),
                "ln2": jnp.ones(d),
                "w1": nrm((d, 4 * d), d),
                "w2": nrm((4 * d, d), 4 * d),
            }
        )
    params = {
        "embed": nrm((K + 1, d), 1.0),
        "pos": 0.5 * nrm((n_max, d), 1.0),
        "layers": layers,
        "lnf": jnp.ones(d),
        "unembed": logit_scale * nrm((d, K), d),
    }
    return ARModel(_tf_step, params, K, _tf_all, (("dtype", jnp.dtype(dtype).name), ("n_heads", n_heads)))


def with_dtype(model: ARModel, dtype: str | jnp.dtype) -> ARModel:
    """The same transformer weights served with another compute dtype (a second "engine")."""
    if model.step_fn is not _tf_step:
        raise ValueError("model must be a transformer from random_transformer")
    v.one_of("dtype", jnp.dtype(dtype).name, ENGINE_DTYPES)
    opts = dict(model.opts)
    opts["dtype"] = jnp.dtype(dtype).name
    return ARModel(model.step_fn, model.params, model.K, model.all_fn, tuple(sorted(opts.items())))


def round_bf16(x: Float[ArrayLike, "*s"]) -> Float[Array, "*s"]:
    """Round float32 ``x`` to the nearest bfloat16 value (ties to even), kept in float32.

    Done on the bit pattern with integer ops, so XLA cannot fuse it away ("excess precision"): a jitted
    bfloat16 computation otherwise rounds differently depending on the surrounding program (eager vs jit,
    inside a scan or not), and the bfloat16 "engine" would not be one well-defined distribution.
    ``x`` must be finite (the bit trick is not meant for inf/NaN).
    """
    v.array("x", x, allow_empty=True)
    return _round_bf16(jnp.asarray(x))


def _round_bf16(x):
    bits = lax.bitcast_convert_type(x.astype(jnp.float32), jnp.uint32)
    bits = bits + jnp.uint32(0x7FFF) + ((bits >> 16) & jnp.uint32(1))
    return lax.bitcast_convert_type(bits & jnp.uint32(0xFFFF0000), jnp.float32)


def _layernorm(x, scale, rnd):
    mu = jnp.mean(x, -1, keepdims=True)
    var = jnp.mean(jnp.square(x - mu), -1, keepdims=True)
    return rnd((x - mu) * lax.rsqrt(var + 1e-5) * scale)


def _tf_all(params, tokens, *, dtype="float32", n_heads=2):
    """Causal forward pass -> (B, n, K) log-probs. bfloat16 compute is emulated exactly: every stored
    activation (and every parameter) is rounded to bfloat16, products accumulate in float32 (as on
    tensor-core hardware); the final log-softmax is in float32."""
    rnd = _round_bf16 if jnp.dtype(dtype) == jnp.bfloat16 else (lambda a: a)
    p = jax.tree.map(lambda a: rnd(a.astype(jnp.float32)), params)
    B, n = tokens.shape
    K = p["unembed"].shape[1]
    inp = jnp.concatenate([jnp.full((B, 1), K, tokens.dtype), tokens[:, :-1]], axis=1)  # BOS-shifted input
    h = rnd(p["embed"][inp] + p["pos"][:n])
    d = h.shape[-1]
    hd = d // n_heads
    mask = jnp.tril(jnp.ones((n, n), bool))
    for layer in p["layers"]:
        x = _layernorm(h, layer["ln1"], rnd)
        qkv = rnd(x @ layer["wqkv"]).reshape(B, n, 3, n_heads, hd)
        q, k, val = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        att = rnd(jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(hd))
        att = rnd(jax.nn.softmax(jnp.where(mask, att, -jnp.inf), axis=-1))
        o = rnd(jnp.einsum("bhqk,bkhd->bqhd", att, val)).reshape(B, n, d)
        h = rnd(h + rnd(o @ layer["wo"]))
        x = _layernorm(h, layer["ln2"], rnd)
        h = rnd(h + rnd(rnd(jax.nn.gelu(rnd(x @ layer["w1"]))) @ layer["w2"]))
    logits = rnd(_layernorm(h, p["lnf"], rnd) @ p["unembed"])
    return jax.nn.log_softmax(logits, axis=-1)


def _tf_step(params, tokens, t, **opts):
    # A full causal forward pass; position t's output depends only on tokens[:, :t] (the BOS shift).
    return jnp.take(_tf_all(params, tokens, **opts), t, axis=1)


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
    _check_model("model", model)
    v.array("tokens", tokens, ndim=2, integer=True)
    v.check("tokens", tokens, lambda a: (a >= 0) & (a < model.K), f"token ids in [0, K={model.K})")
    return _sequence_logprob(model, jnp.asarray(tokens, jnp.int32))


def _sequence_logprob(model, tokens):
    lp = model.all_logprobs(tokens)
    return jnp.sum(jnp.take_along_axis(lp, tokens[..., None], -1)[..., 0], axis=-1)


def _check_model(name: str, model) -> None:
    if not isinstance(model, ARModel):
        raise ValueError(f"{name} must be an ARModel, got {type(model).__name__}")
    for path, leaf in jax.tree_util.tree_leaves_with_path(model.params):
        if jnp.issubdtype(v._dtype_of(leaf), jnp.floating):
            v.finite(f"{name}.params{jax.tree_util.keystr(path)}", leaf)


def _check_pair(p, q):
    if not isinstance(p, ARModel) or not isinstance(q, ARModel):
        raise ValueError("p and q must be ARModel instances")
    _check_model("p", p)
    _check_model("q", q)
    if p.K != q.K:
        raise ValueError(f"p and q must share the vocabulary size K, got {p.K} and {q.K}")


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
    _check_pair(p, q)
    v.positive_int("n", n)
    all_sequences(p.K, n)  # eager size check
    return _exact(p, q, n)[0]


def exact_kl(p: ARModel, q: ARModel, n: int) -> Float[Array, ""]:
    """KL(P || Q) = sum_x P(x) log P(x)/Q(x) over length-n sequences, by enumeration. Scalar."""
    _check_pair(p, q)
    v.positive_int("n", n)
    all_sequences(p.K, n)
    return _exact(p, q, n)[1]


# ---------------------------------------------------------------------------------------------------------
# Decoding: one lax.scan over positions, vectorised over sequences
# ---------------------------------------------------------------------------------------------------------


class Decoded(NamedTuple):
    """Output of :func:`decode`. tokens (m, n) int32; lp, lq (m, n): log p_t(x_t|x_<t), log q_t(x_t|x_<t);
    last_lp, last_lq (m, K): the full next-token log-probs of both models at the last position, or (m, n, K)
    at every position when decoded with ``keep_all=True``."""

    tokens: Int[Array, "m n"]
    lp: Float[Array, "m n"]
    lq: Float[Array, "m n"]
    last_lp: Float[Array, "m *n K"]
    last_lq: Float[Array, "m *n K"]


def decode(
    p: ARModel, q: ARModel, from_q: Bool[ArrayLike, " m"], *, key: PRNGKeyArray, n: int, m: int, keep_all: bool = False
) -> Decoded:
    """Sample m sequences of length n, row i from Q if ``from_q[i]`` else from P, querying both models.

    ``from_q``: bool (m,). One ``lax.scan`` over the n positions; each step makes one next-token query to
    each model for every row (2 n m queries in all).
    """
    _check_pair(p, q)
    v.positive_int("n", n)
    v.positive_int("m", m)
    if v._dtype_of(from_q) != np.bool_:
        raise ValueError(f"from_q must be a boolean array, got dtype {v._dtype_of(from_q)}")
    v.shape("from_q", from_q, (m,))
    return _decode(p, q, from_q, key=key, n=n, m=m, keep_all=keep_all)


@partial(jax.jit, static_argnames=("n", "m", "keep_all"))
def _decode(p, q, from_q, *, key, n, m, keep_all=False):
    keys = jax.random.split(key, n)

    def step(carry, inp):
        tokens, _, _ = carry
        t, k = inp
        lp_all, lq_all = p.logprobs(tokens, t), q.logprobs(tokens, t)
        x = jax.random.categorical(k, jnp.where(from_q[:, None], lq_all, lp_all), axis=-1).astype(jnp.int32)
        tokens = tokens.at[:, t].set(x)
        pick = lambda a: jnp.take_along_axis(a, x[:, None], -1)[:, 0]
        ys = (pick(lp_all), pick(lq_all)) + ((lp_all, lq_all) if keep_all else ())
        return (tokens, lp_all, lq_all), ys

    K = p.K
    init = (jnp.zeros((m, n), jnp.int32), jnp.zeros((m, K)), jnp.zeros((m, K)))
    (tokens, last_lp, last_lq), ys = lax.scan(step, init, (jnp.arange(n), keys))
    if keep_all:
        last_lp, last_lq = jnp.moveaxis(ys[2], 0, 1), jnp.moveaxis(ys[3], 0, 1)
    return Decoded(tokens, ys[0].T, ys[1].T, last_lp, last_lq)


def _check_decoded(d) -> None:
    if not isinstance(d, Decoded):
        raise ValueError(f"d must be a Decoded (the output of decode), got {type(d).__name__}")


def _check_length(length, n: int) -> None:
    if length is None:
        return
    v.check("length", length, lambda a: (a >= 1) & (a <= n), f"in [1, n={n}]")


def _mask(d: Decoded, length):
    """(n,) float mask of the positions t < length (all positions when length is None)."""
    n = d.lp.shape[1]
    return jnp.ones(n) if length is None else (jnp.arange(n) < length).astype(jnp.float32)


# ---------------------------------------------------------------------------------------------------------
# Logit access
# ---------------------------------------------------------------------------------------------------------


def plain_z(L: Float[ArrayLike, "*b"]) -> Float[Array, "*b"]:
    """(1 - exp(-L))_+ (eq. plain), computed without overflow. ``L`` real; +inf allowed (gives 1)."""
    v.check("L", L, lambda a: a > -np.inf, "> -inf (a log-ratio; NaN and -inf rejected)")
    return _plain_z(jnp.asarray(L))


def _plain_z(L):
    return jnp.maximum(-jnp.expm1(-L), 0.0)


def hoeffding_m(eps: float, delta: float) -> int:
    """m = ceil(ln(2/delta) / (2 eps^2)): |mean of m [0,1] variables - mean| <= eps w.p. >= 1 - delta."""
    v.in_interval("eps", eps, 0.0, 1.0, closed_hi=True)
    v.positive("eps", eps)
    v.in_interval("delta", delta, 0.0, 1.0)
    v.positive("delta", delta)
    return int(math.ceil(math.log(2.0 / delta) / (2.0 * eps**2)))


def logit_z_from_decoded(
    d: Decoded, kind: str = "plain", length: Int[ArrayLike, ""] | None = None
) -> Float[Array, " m"]:
    """Per-sequence logit-access estimates (m,) from decoded sequences: x ~ P for plain and rb, x ~ (P+Q)/2
    (``decode`` with from_q ~ Bernoulli(1/2)) for mixture.

    ``length`` (optional, may be traced): estimate TV of the length-``length`` prefixes instead (rb then needs
    ``decode(..., keep_all=True)``).
    """
    v.one_of("kind", kind, LOGIT_KINDS)
    _check_decoded(d)
    _check_length(length, d.lp.shape[1])
    return _logit_z_from_decoded(d, kind, length)


def _logit_z_from_decoded(d, kind, length=None):
    mask = _mask(d, length)
    L = jnp.sum((d.lp - d.lq) * mask, axis=1)
    if kind == "plain":
        return _plain_z(L)
    if kind == "mixture":
        return jnp.abs(jnp.tanh(0.5 * L))
    # rb: sum_v p_n(v) (1 - R q_n(v)/p_n(v))_+ with R = exp(-L_<n), in log space (no overflow)
    if length is None:
        last = d.lp.shape[1] - 1
        last_lp, last_lq = d.last_lp, d.last_lq
    else:
        if d.last_lp.ndim != 3:
            raise ValueError("kind='rb' with a length needs decode(..., keep_all=True)")
        last = length - 1
        last_lp = jnp.take(d.last_lp, last, axis=1)
        last_lq = jnp.take(d.last_lq, last, axis=1)
    L_prev = L - (jnp.take(d.lp, last, axis=1) - jnp.take(d.lq, last, axis=1))
    return jnp.sum(jnp.exp(last_lp) * _plain_z(L_prev[:, None] + last_lp - last_lq), axis=-1)


@partial(jax.jit, static_argnames=("n", "m", "kind"))
def _tv_logit_z(p, q, *, key, n, m, kind):
    k_src, k_dec = jax.random.split(key)
    from_q = jax.random.bernoulli(k_src, 0.5, (m,)) if kind == "mixture" else jnp.zeros((m,), bool)
    return _logit_z_from_decoded(_decode(p, q, from_q, key=k_dec, n=n, m=m), kind)


def tv_logit_z(p: ARModel, q: ARModel, n: int, m: int, kind: str = "plain", *, key: PRNGKeyArray) -> Float[Array, " m"]:
    """Per-sequence logit-access estimates Z (m,), E Z = TV(P, Q); ``kind`` in plain / mixture / rb."""
    _check_pair(p, q)
    v.positive_int("n", n)
    v.positive_int("m", m)
    v.one_of("kind", kind, LOGIT_KINDS)
    return _tv_logit_z(p, q, key=key, n=n, m=m, kind=kind)


class Estimate(NamedTuple):
    """An estimate: ``value`` (mean of the per-sequence Z), ``stderr`` (std(Z)/sqrt(m)), ``queries`` (the
    number of oracle calls it used, both models together) and ``bias``: an estimate of the magnitude of the
    estimator's bias (0 for the unbiased logit-access estimators; for the noisy and sample estimators the
    mean difference between the estimate and the other correction on the same noise, see
    :func:`lower_order`). ``halfwidth(level)`` = z_level * stderr + bias: the interval ``value +- halfwidth``
    is centred on the estimate but widened by the estimated bias, so it covers the true TV at about the
    stated rate where the bias estimate is good (noisy logits; sample access with s >= 16, measured in the
    sim), instead of covering the biased mean E Z."""

    value: Float[Array, ""]
    stderr: Float[Array, ""]
    queries: int
    bias: jax.Array = 0.0

    def halfwidth(self, level: float = 0.95) -> Float[Array, ""]:
        from scipy.stats import norm as _norm

        v.in_interval("level", level, 0.0, 1.0)
        v.positive("level", level)
        return float(_norm.ppf(0.5 + level / 2)) * self.stderr + jnp.abs(self.bias)


def _summarise(z, queries, z_ref=None):
    m = z.shape[0]
    bias = 0.0 if z_ref is None else jnp.abs(jnp.mean(z - z_ref))
    return Estimate(jnp.mean(z), jnp.std(z, ddof=1 if m > 1 else 0) / math.sqrt(m), int(queries), bias)


def tv_logit(p: ARModel, q: ARModel, n: int, m: int, kind: str = "plain", *, key: PRNGKeyArray) -> Estimate:
    """Logit-access TV estimate from m sequences (2 n m next-token queries); unbiased (module docstring)."""
    return _summarise(tv_logit_z(p, q, n, m, kind, key=key), 2 * n * m)


def kl_logit_z(p: ARModel, q: ARModel, n: int, m: int, *, key: PRNGKeyArray) -> Float[Array, " m"]:
    """Per-sequence KL estimates Z = L(x), x ~ P, shape (m,): E Z = KL(P || Q) (unbounded, heavy-tailed)."""
    _check_pair(p, q)
    v.positive_int("n", n)
    v.positive_int("m", m)
    return _kl_z(p, q, key=key, n=n, m=m)


@partial(jax.jit, static_argnames=("n", "m"))
def _kl_z(p, q, *, key, n, m):
    d = _decode(p, q, jnp.zeros((m,), bool), key=key, n=n, m=m)
    return jnp.sum(d.lp - d.lq, axis=1)


def kl_logit(p: ARModel, q: ARModel, n: int, m: int, *, key: PRNGKeyArray) -> Estimate:
    """Logit-access KL(P || Q) estimate from m sequences (2 n m queries)."""
    return _summarise(kl_logit_z(p, q, n, m, key=key), 2 * n * m)


# ---------------------------------------------------------------------------------------------------------
# Noisy logits and samples: a noisy log-ratio L_hat, then a plugin or SIMEX correction
# ---------------------------------------------------------------------------------------------------------


def smoothed_z(mu: Float[ArrayLike, "*b"], s2: Float[ArrayLike, "*b"]) -> Float[Array, "*b"]:
    """g(mu, s^2) = E (1 - exp(-(mu + s xi)))_+, xi ~ N(0, 1), in closed form (s2 = 0 gives plain_z).

    g = Phi(mu/s) - exp(-mu + s^2/2) Phi(mu/s - s); the second term in log space to avoid overflow.
    ``mu`` finite, ``s2`` >= 0 finite; broadcast.
    """
    v.finite("mu", mu)
    v.nonnegative("s2", s2)
    return _smoothed_z(jnp.asarray(mu), jnp.asarray(s2))


def _smoothed_z(mu, s2):
    s = jnp.sqrt(jnp.maximum(s2, 1e-30))
    a = mu / s
    second = jnp.exp(-mu + 0.5 * s * s + norm.logcdf(a - s))
    g = ndtr(a) - second
    return jnp.where(s2 > 0, jnp.clip(g, 0.0, 1.0), _plain_z(mu))


def correct(
    L_hat: Float[ArrayLike, " m"], var: Float[ArrayLike, "*m"], kind: str = "simex", order: int = 2
) -> Float[Array, " m"]:
    """Per-sequence estimates from noisy log-ratios ``L_hat`` (m,), noise variance ``var`` (scalar or (m,)).

    plugin: (1 - exp(-L_hat))_+.  simex: polynomial extrapolation in the total noise variance of
    T(k) = g(L_hat, k var), k = 0..order, to zero noise (weights (2, -1) for order 1, (3, -3, 1) for order 2).
    ``L_hat`` finite, ``var`` >= 0 finite.
    """
    v.one_of("kind", kind, NOISY_KINDS)
    v.one_of("order", order, (1, 2))
    v.array("L_hat", L_hat, ndim=(0, 1))
    v.nonnegative("var", var)
    return _correct(jnp.asarray(L_hat), jnp.asarray(var), kind, order)


def _correct(L_hat, var, kind="simex", order=2):
    if kind == "plugin":
        return _plain_z(L_hat)
    weights = (2.0, -1.0) if order == 1 else (3.0, -3.0, 1.0)
    return sum(w * _smoothed_z(L_hat, k * var) for k, w in enumerate(weights))


def lower_order(kind: str, order: int) -> tuple[str, int]:
    """The correction whose difference from (kind, order) on the same noisy log-ratios is the bias estimate
    of ``Estimate``: SIMEX (either order) -> the plugin (the whole correction applied: the residual bias of
    a working extrapolation is below the correction it made); the plugin -> SIMEX-2 (the correction SIMEX
    would apply, an estimate of the plugin's bias). Measured in the sim: with the difference to the next-lower
    order only (SIMEX-2 vs SIMEX-1) the r = 1, sigma = 0.3 interval covered 88% instead of 95%."""
    v.one_of("kind", kind, NOISY_KINDS)
    v.one_of("order", order, (1, 2))
    return ("simex", 2) if kind == "plugin" else ("plugin", 2)


def noisy_z_from_decoded(
    d: Decoded,
    sigma: Float[ArrayLike, ""],
    r: Float[ArrayLike, ""],
    *,
    key: PRNGKeyArray,
    kind: str = "simex",
    order: int = 2,
    length: Int[ArrayLike, ""] | None = None,
) -> Float[Array, " m"]:
    """Noisy-logit per-sequence estimates (m,) from decoded sequences x ~ P (``decode`` with from_q False).

    Each of the r repeated queries adds N(0, sigma^2) to log p_t(x_t) and to log q_t(x_t); their average has
    variance sigma^2 / r per model and position (drawn directly: the same law as averaging r draws).
    ``sigma`` and ``r`` may be traced (vmap over them); ``length`` as in ``logit_z_from_decoded``.
    """
    _check_decoded(d)
    v.nonnegative("sigma", sigma)
    v.positive("r", r)
    v.one_of("kind", kind, NOISY_KINDS)
    v.one_of("order", order, (1, 2))
    _check_length(length, d.lp.shape[1])
    return _noisy_z_from_decoded(d, sigma, r, key=key, kind=kind, order=order, length=length)


def _noisy_z_from_decoded(d, sigma, r, *, key, kind="simex", order=2, length=None):
    m, n = d.lp.shape
    mask = _mask(d, length)
    noise = sigma * jnp.sqrt(2.0 / r) * jax.random.normal(key, (m, n))
    L_hat = jnp.sum((d.lp - d.lq + noise) * mask, axis=1)
    return _correct(L_hat, 2.0 * jnp.sum(mask) * jnp.square(sigma) / r, kind, order)


@partial(jax.jit, static_argnames=("n", "m", "kind", "order"))
def _tv_noisy_z(p, q, sigma, r, *, key, n, m, kind, order):
    k_dec, k_noise = jax.random.split(key)
    d = _decode(p, q, jnp.zeros((m,), bool), key=k_dec, n=n, m=m)
    return _noisy_z_from_decoded(d, sigma, r, key=k_noise, kind=kind, order=order)


def tv_noisy_logit_z(
    p: ARModel,
    q: ARModel,
    n: int,
    m: int,
    sigma: float,
    r: int = 1,
    kind: str = "simex",
    order: int = 2,
    *,
    key: PRNGKeyArray,
) -> Float[Array, " m"]:
    """Per-sequence noisy-logit estimates (m,): x ~ P exact, log-probs observed with N(0, sigma^2) noise,
    averaged over r repeated queries per position. 2 n r m queries."""
    _check_pair(p, q)
    v.positive_int("n", n)
    v.positive_int("m", m)
    v.positive_int("r", r)
    v.nonnegative("sigma", sigma)
    v.one_of("kind", kind, NOISY_KINDS)
    v.one_of("order", order, (1, 2))
    return _tv_noisy_z(p, q, jnp.float32(sigma), jnp.float32(r), key=key, n=n, m=m, kind=kind, order=order)


def tv_noisy_logit(
    p: ARModel,
    q: ARModel,
    n: int,
    m: int,
    sigma: float,
    r: int = 1,
    kind: str = "simex",
    order: int = 2,
    *,
    key: PRNGKeyArray,
) -> Estimate:
    """Noisy-logit TV estimate (see module docstring: plugin bias <= sigma sqrt(2n/r); simex design)."""
    z = tv_noisy_logit_z(p, q, n, m, sigma, r, kind, order, key=key)
    z_ref = tv_noisy_logit_z(p, q, n, m, sigma, r, *lower_order(kind, order), key=key)  # same key: same noise
    return _summarise(z, 2 * n * r * m, z_ref)


def noisy_plugin_bias_bound(
    sigma: Float[ArrayLike, "*b"], n: Float[ArrayLike, "*b"], r: Float[ArrayLike, "*b"]
) -> Float[Array, "*b"]:
    """sigma sqrt(2 n / r): the plugin's worst-case bias bound (E|N(0, v)| <= sqrt(v), f 1-Lipschitz)."""
    v.nonnegative("sigma", sigma)
    v.positive("n", n)
    v.positive("r", r)
    return sigma * jnp.sqrt(2.0 * n / r)


def sample_counts(
    d: Decoded, s: Float[ArrayLike, ""], *, key: PRNGKeyArray
) -> tuple[Float[Array, "m n"], Float[Array, "m n"]]:
    """Counts (c_p, c_q), each (m, n), of the observed token x_t among s samples of p_t(. | x_<t) and of
    q_t(. | x_<t): drawn as Binomial(s, p_t(x_t)), exactly the law of counting categorical samples."""
    _check_decoded(d)
    v.check("s", s, lambda a: (a >= 1) & (a % 1 == 0), "a whole number >= 1", finite=True)
    return _sample_counts(d, s, key=key)


def _sample_counts(d, s, *, key):
    c = jax.random.binomial(key, jnp.asarray(s, jnp.float32), jnp.exp(jnp.stack([d.lp, d.lq])))
    return c[0], c[1]


def sample_z_from_counts(
    c_p: Float[ArrayLike, "m n"],
    c_q: Float[ArrayLike, "m n"],
    s: Float[ArrayLike, ""],
    kind: str = "simex",
    order: int = 2,
    mask: Float[ArrayLike, " n"] | None = None,
) -> Float[Array, " m"]:
    """Sample-access estimates (m,) from counts: L_hat = sum_t log((c_p + 1/2)/(c_q + 1/2)) with the
    delta-method variance v_hat = sum_t 1/(c_p + 1/2) + 1/(c_q + 1/2) - 2/(s + 1), then ``correct``.
    ``mask`` (n,) selects the positions used (default all). Counts lie in [0, s]."""
    v.one_of("kind", kind, NOISY_KINDS)
    v.one_of("order", order, (1, 2))
    v.positive("s", s)
    v.array("c_p", c_p, min_ndim=1)
    v.array("c_q", c_q, min_ndim=1)
    v.same_shape("c_p", c_p, "c_q", c_q)
    top = s if v.is_concrete(s) else np.inf  # a traced s (vmap over s): the upper end is checked with it
    for name, c in (("c_p", c_p), ("c_q", c_q)):
        v.check(name, c, lambda a: (a >= 0) & (a <= top), "counts in [0, s]")
    if mask is not None:
        v.array("mask", mask, ndim=1)
        v.shape("mask", mask, (np.shape(c_p)[-1],))
    return _sample_z_from_counts(c_p, c_q, s, kind, order, mask)


def _sample_z_from_counts(c_p, c_q, s, kind="simex", order=2, mask=None):
    mask = jnp.ones(c_p.shape[-1]) if mask is None else mask
    L_hat = jnp.sum((jnp.log(c_p + 0.5) - jnp.log(c_q + 0.5)) * mask, axis=-1)
    var = jnp.sum((1.0 / (c_p + 0.5) + 1.0 / (c_q + 0.5) - 2.0 / (s + 1.0)) * mask, axis=-1)
    return _correct(L_hat, jnp.maximum(var, 0.0), kind, order)


def sample_z_from_decoded(
    d: Decoded,
    s: Float[ArrayLike, ""],
    *,
    key: PRNGKeyArray,
    kind: str = "simex",
    order: int = 2,
    length: Int[ArrayLike, ""] | None = None,
) -> Float[Array, " m"]:
    """Sample-access per-sequence estimates (m,) from decoded x ~ P; ``s`` samples per model and position.
    ``s`` may be traced (vmap over it); ``length`` as in ``logit_z_from_decoded``."""
    _check_decoded(d)
    v.positive("s", s)
    v.one_of("kind", kind, NOISY_KINDS)
    v.one_of("order", order, (1, 2))
    _check_length(length, d.lp.shape[1])
    return _sample_z_from_decoded(d, s, key=key, kind=kind, order=order, length=length)


def _sample_z_from_decoded(d, s, *, key, kind="simex", order=2, length=None):
    c_p, c_q = _sample_counts(d, s, key=key)
    return _sample_z_from_counts(c_p, c_q, jnp.asarray(s, jnp.float32), kind, order, _mask(d, length))


@partial(jax.jit, static_argnames=("n", "m", "kind", "order"))
def _tv_sample_z(p, q, s, *, key, n, m, kind, order):
    k_dec, k_s = jax.random.split(key)
    d = _decode(p, q, jnp.zeros((m,), bool), key=k_dec, n=n, m=m)  # x ~ P: n sampler calls per sequence
    return _sample_z_from_decoded(d, s, key=k_s, kind=kind, order=order)


SIMEX_MIN_S = 8  # tv_sample's kind="auto": SIMEX for s >= 8, plugin below (see resolve_sample_kind)


def resolve_sample_kind(kind: str, s: int | float) -> str:
    """``kind="auto"`` -> "plugin" for s < SIMEX_MIN_S, else "simex"; other kinds unchanged.

    Why: with few samples the count log-ratio log((c_p + 1/2)/(c_q + 1/2)) is far from Gaussian and the
    delta-method variance v_hat is off, so SIMEX's extrapolation can add bias instead of removing it.
    Measured paired biases (E Z - TV, m = 32768, K = 4, three random Markov pairs (n, delta) = (6, 0.6),
    (6, 0.3), (12, 0.3)): worst |bias| over the pairs, plugin / SIMEX-2: s=2 0.145 / 0.256, s=4 0.153 /
    0.158, s=8 0.141 / 0.074, s=16 0.117 / 0.055, s=64 0.061 / 0.019. Neither kind dominates pair by pair
    below s = 8 (on the first pair SIMEX is worse for every s <= 8); "auto" takes the smaller worst case.
    """
    v.positive("s", s)
    if kind == "auto":
        return "plugin" if s < SIMEX_MIN_S else "simex"
    v.one_of("kind", kind, NOISY_KINDS)
    return kind


def tv_sample_z(
    p: ARModel, q: ARModel, n: int, m: int, s: int, kind: str = "auto", order: int = 2, *, key: PRNGKeyArray
) -> Float[Array, " m"]:
    """Per-sequence sample-access estimates (m,), s samples per model and position ((2s + 1) n m calls).
    ``kind="auto"``: see :func:`resolve_sample_kind`."""
    _check_pair(p, q)
    v.positive_int("n", n)
    v.positive_int("m", m)
    v.positive_int("s", s)
    kind = resolve_sample_kind(kind, s)
    v.one_of("order", order, (1, 2))
    return _tv_sample_z(p, q, jnp.float32(s), key=key, n=n, m=m, kind=kind, order=order)


def tv_sample(
    p: ARModel, q: ARModel, n: int, m: int, s: int, kind: str = "auto", order: int = 2, *, key: PRNGKeyArray
) -> Estimate:
    """Sample-access TV estimate: next-token probabilities of the observed tokens estimated from s samples.
    ``bias`` compares with the other correction on the same counts (``lower_order``)."""
    z = tv_sample_z(p, q, n, m, s, kind, order, key=key)
    z_ref = tv_sample_z(p, q, n, m, s, *lower_order(resolve_sample_kind(kind, s), order), key=key)
    return _summarise(z, (2 * s + 1) * n * m, z_ref)
