"""A tiny causal transformer language model in Equinox: pre-norm blocks, RoPE, tied input/output embeddings.

Shapes: ``model(tokens)`` maps one sequence ``tokens: int[T]`` (T <= ``ctx``) to ``logits: float[T, vocab]``;
vmap it over a batch. Position t attends to positions <= t only (causal mask), with rotary position embeddings
(RoPE, Su et al. 2021) on queries and keys. The output layer is the transposed token embedding (tied weights).

Every floating-point computation runs in the dtype of the weights: ``cast(model, jnp.bfloat16)`` gives a bf16
"engine" of the same model; logits are returned in float32 either way. Attention is the project's op
(``jaxwb.pallas_kernels.attention.flash_attention``: the Pallas kernel where it accepts the shapes on a GPU/TPU, else
``jax.nn.dot_product_attention``, which accumulates bf16 scores in float32). The Linear layers are
``eqx.nn.Linear``, so ``jaxwb.pallas_kernels.quantize_model`` swaps in the 4-bit drop-ins without code changes.
"""

from __future__ import annotations

import dataclasses
import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int

from jaxwb.pallas_kernels.attention import flash_attention
from jaxwb.theory import validate as v


@dataclasses.dataclass(frozen=True)
class LMConfig:
    vocab: int = 256
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    ctx: int = 64
    mlp_ratio: int = 4
    rope_base: float = 10000.0

    def __post_init__(self):
        for name in ("vocab", "d_model", "n_layers", "n_heads", "ctx", "mlp_ratio"):
            v.positive_int(name, getattr(self, name))
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(
                f"d_model must be a multiple of 2*n_heads (even head size), got d_model="
                f"{self.d_model}, n_heads={self.n_heads}"
            )
        v.positive("rope_base", self.rope_base)


def rope(x: Float[Array, "T H Dh"], base: float) -> Float[Array, "T H Dh"]:
    """Rotary embedding of ``x: [T, H, Dh]``: pairs (x_{2i}, x_{2i+1}) rotated by angle t * base^(-2i/Dh)."""
    t, _, dh = x.shape
    inv = base ** (-jnp.arange(0, dh, 2, dtype=jnp.float32) / dh)
    ang = jnp.arange(t, dtype=jnp.float32)[:, None] * inv[None, :]  # [T, Dh/2]
    cos, sin = jnp.cos(ang)[:, None, :].astype(x.dtype), jnp.sin(ang)[:, None, :].astype(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return jnp.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1).reshape(x.shape)


def linear_init(d_in, d_out, key, scale=1.0):
    """A bias-free ``eqx.nn.Linear(d_in, d_out)`` with its weight scaled by ``scale`` (shared by the LMs)."""
    v.prng_key("key", key)
    lin = eqx.nn.Linear(d_in, d_out, use_bias=False, key=key)
    return eqx.tree_at(lambda m: m.weight, lin, lin.weight * scale)


class RMSNorm(eqx.Module):
    weight: jax.Array
    eps: float = eqx.field(static=True, default=1e-6)

    def __call__(self, x):  # x: [..., d]
        ms = jnp.mean(jnp.square(x.astype(jnp.float32)), axis=-1, keepdims=True)
        return (x * jax.lax.rsqrt(ms + self.eps).astype(x.dtype)) * self.weight


class Attention(eqx.Module):
    qkv: eqx.nn.Linear
    out: eqx.nn.Linear
    n_heads: int = eqx.field(static=True)
    rope_base: float = eqx.field(static=True)

    def __call__(self, x):  # x: [T, d] -> [T, d]
        t, d = x.shape
        h = self.n_heads
        q, k, val = jnp.split(jax.vmap(self.qkv)(x), 3, axis=-1)
        q, k, val = (a.reshape(t, h, d // h) for a in (q, k, val))
        q, k = rope(q, self.rope_base), rope(k, self.rope_base)
        # the project's attention op (pallas_kernels.attention.flash_attention; the XLA path on CPU):
        # softmax(q k^T / sqrt(Dh)) v with a causal mask, [B=1, T, H, Dh]
        o = flash_attention(q[None], k[None], val[None], is_causal=True, scale=1.0 / math.sqrt(d // h))
        return jax.vmap(self.out)(o[0].reshape(t, d))


class Block(eqx.Module):
    norm1: RMSNorm
    attn: Attention
    norm2: RMSNorm
    mlp_in: eqx.nn.Linear
    mlp_out: eqx.nn.Linear

    def __call__(self, x):
        x = x + self.attn(self.norm1(x))
        hid = jax.nn.gelu(jax.vmap(self.mlp_in)(self.norm2(x)))
        return x + jax.vmap(self.mlp_out)(hid)


class TinyLM(eqx.Module):
    embed: jax.Array  # [vocab, d]: token embedding, also the output layer (tied)
    blocks: tuple[Block, ...]
    norm_f: RMSNorm
    config: LMConfig = eqx.field(static=True)

    def __init__(self, config: LMConfig, *, key: jax.Array):
        d, n = config.d_model, config.n_layers
        keys = jax.random.split(key, 1 + 4 * n)
        self.config = config
        self.embed = jax.random.normal(keys[0], (config.vocab, d)) * (0.5 / math.sqrt(d))
        res_scale = 1.0 / math.sqrt(2 * n)  # residual-branch output projections scaled down (GPT-2 style)
        blocks = []
        for i in range(n):
            k1, k2, k3, k4 = keys[1 + 4 * i : 5 + 4 * i]
            attn = Attention(
                linear_init(d, 3 * d, k1), linear_init(d, d, k2, res_scale), config.n_heads, config.rope_base
            )
            blocks.append(
                Block(
                    RMSNorm(jnp.ones(d)),
                    attn,
                    RMSNorm(jnp.ones(d)),
                    linear_init(d, config.mlp_ratio * d, k3),
                    linear_init(config.mlp_ratio * d, d, k4, res_scale),
                )
            )
        self.blocks = tuple(blocks)
        self.norm_f = RMSNorm(jnp.ones(d))

    def __call__(self, tokens: Int[Array, " T"]) -> Float[Array, "T vocab"]:
        """``tokens: int[T]`` (T <= ctx) -> ``logits: float32[T, vocab]``."""
        if tokens.ndim != 1:
            raise ValueError(f"tokens must be 1-D [T] (vmap over a batch), got shape {tokens.shape}")
        if tokens.shape[0] > self.config.ctx:
            raise ValueError(f"tokens length {tokens.shape[0]} exceeds ctx={self.config.ctx}")
        x = self.embed[tokens]
        for blk in self.blocks:
            x = blk(x)
        x = self.norm_f(x)
        return (x @ self.embed.T).astype(jnp.float32)


def cast(model: TinyLM, dtype) -> TinyLM:
    """The same model with every floating-point weight cast to ``dtype`` (compute then runs in ``dtype``)."""
    return jax.tree.map(lambda a: a.astype(dtype) if eqx.is_inexact_array(a) else a, model)


def num_params(model: TinyLM) -> int:
    """Number of floating-point parameters (weights and norm scales)."""
    return sum(a.size for a in jax.tree.leaves(eqx.filter(model, eqx.is_inexact_array)))


def linear_weights(model: TinyLM) -> dict[str, Float[Array, "out in"]]:
    """Every matmul weight by name (``embed`` is [vocab, d]; Linear weights are [out, in])."""
    out = {"embed": model.embed}
    for i, b in enumerate(model.blocks):
        out[f"block{i}.attn.qkv"] = b.attn.qkv.weight
        out[f"block{i}.attn.out"] = b.attn.out.weight
        out[f"block{i}.mlp_in"] = b.mlp_in.weight
        out[f"block{i}.mlp_out"] = b.mlp_out.weight
    return out


def replace_linear_weights(model: TinyLM, weights: dict[str, Float[ArrayLike, "out in"]]) -> TinyLM:
    """``model`` with the named matmul weights (names of ``linear_weights``) replaced."""
    names = list(linear_weights(model))
    unknown = set(weights) - set(names)
    if unknown:
        raise ValueError(f"weights has unknown names {sorted(unknown)}")

    def getters(m):
        res = [m.embed]
        for b in m.blocks:
            res += [b.attn.qkv.weight, b.attn.out.weight, b.mlp_in.weight, b.mlp_out.weight]
        return res

    current = dict(zip(names, getters(model), strict=True))
    current.update(weights)
    return eqx.tree_at(getters, model, [current[n] for n in names])


def sample(
    model: TinyLM, prompt: Int[ArrayLike, " P"], num_tokens: int, *, key: jax.Array, temperature: float = 1.0
) -> Int[Array, " P_plus_num_tokens"]:
    """Autoregressively extend ``prompt: int[P]`` (1 <= P) by ``num_tokens`` tokens; returns int[P + num_tokens].

    The model sees the last ``ctx`` tokens (no KV cache: the tiny model recomputes the window each step).
    ``temperature = 0`` is greedy decoding.
    """
    v.prng_key("key", key)
    v.positive_int("num_tokens", num_tokens)
    v.nonnegative("temperature", temperature)
    prompt = jnp.asarray(prompt, jnp.int32)
    if prompt.ndim != 1 or prompt.shape[0] < 1:
        raise ValueError(f"prompt must be a non-empty 1-D token array, got shape {prompt.shape}")
    ctx, p = model.config.ctx, prompt.shape[0]
    buf = jnp.concatenate([jnp.zeros(max(ctx - p, 0), jnp.int32), prompt[-ctx:], jnp.zeros(num_tokens, jnp.int32)])
    start = max(ctx - p, 0) + min(p, ctx)  # index of the first generated token in buf

    @jax.jit
    def go(buf, key):
        def step(c, i):
            buf, key = c
            key, k = jax.random.split(key)
            window = jax.lax.dynamic_slice(buf, (start + i - ctx,), (ctx,))
            logits = model(window)[-1]
            tok = jnp.where(
                temperature > 0, jax.random.categorical(k, logits / jnp.maximum(temperature, 1e-6)), jnp.argmax(logits)
            )
            return (buf.at[start + i].set(tok.astype(jnp.int32)), key), None

        (buf, _), _ = jax.lax.scan(step, (buf, key), jnp.arange(num_tokens))
        return buf

    out = go(buf, key)
    return jnp.concatenate([prompt, out[start:]])
