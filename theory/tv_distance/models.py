"""The autoregressive-model interface (``ARModel``): n-gram / Markov models with explicit tables and a random
tiny causal transformer in pure JAX with float32 / bfloat16 engines (notation: ``jaxwb.theory.tv_distance``)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import DTypeLike
from jaxtyping import Array, ArrayLike, Float, Int, PRNGKeyArray

from jaxwb.theory import validate as v

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
    v.prng_key("key", key)
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
    dtype: DTypeLike = jnp.float32,
    key: PRNGKeyArray,
) -> ARModel:
    """A random pre-LayerNorm causal transformer LM over K tokens (BOS = token K), at most n_max positions.

    ``dtype`` is the compute dtype, "float32" or "bfloat16" (bfloat16 rounding of params and activations is
    emulated exactly, see ``round_bf16``; logits are normalised in float32): two "engines" serving the same
    weights (``with_dtype``). ``logit_scale`` multiplies the unembedding (peaked next-token distributions).
    """
    v.prng_key("key", key)
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


def check_model(name: str, model) -> None:
    """Raise ValueError unless ``model`` is an ``ARModel`` with finite parameters."""
    if not isinstance(model, ARModel):
        raise ValueError(f"{name} must be an ARModel, got {type(model).__name__}")
    for path, leaf in jax.tree_util.tree_leaves_with_path(model.params):
        if jnp.issubdtype(v.dtype_of(leaf), jnp.floating):
            v.finite(f"{name}.params{jax.tree_util.keystr(path)}", leaf)


def check_pair(p, q):
    """Raise ValueError unless ``p`` and ``q`` are valid models sharing the vocabulary size K."""
    if not isinstance(p, ARModel) or not isinstance(q, ARModel):
        raise ValueError("p and q must be ARModel instances")
    check_model("p", p)
    check_model("q", q)
    if p.K != q.K:
        raise ValueError(f"p and q must share the vocabulary size K, got {p.K} and {q.K}")
