"""A tiny masked-diffusion language model (LLaDA-style) in Equinox: bidirectional transformer, [MASK] denoiser.

Model. Bytes 0..255 plus one absorbing state ``MASK = 256`` (input vocabulary 257); pre-norm blocks with RoPE
(the blocks of :mod:`jaxwb.models.tiny_lm`: ``rope``, ``RMSNorm``) but **no causal mask**: every position attends to
every position. Output logits over the 256 bytes only (the denoiser never predicts [MASK]); tied embeddings.
``model(tokens)`` maps one sequence ``int[L]`` to ``float32[L, 256]``; vmap it over a batch.

Objective (LLaDA, Nie et al. 2025, eq. 3; the absorbing-state masked diffusion of Austin et al. 2021 / Sahoo
et al. 2024): draw ``t ~ U(eps, 1]`` per sequence, mask each token independently with probability t, and
minimise ``E[ (1/t) sum_i 1[x_t^i = MASK] (-log p(x_0^i | x_t)) ] / L`` (:func:`diffusion_loss`), an upper
bound on the negative log-likelihood per token. The t of a batch are drawn low-discrepancy (one per stratum of
(eps, 1], :func:`diffusion_times`, MDLM's sampler): the same expectation with less gradient noise.

Sampling (:func:`generate`; LLaDA's "low-confidence remasking", semi-autoregressive): positions
``prompt_len..L-1`` start as [MASK] and are decoded in ``gen_len / block_len`` blocks, left to right, with
``steps / num_blocks`` denoising steps each. At step t the model predicts every masked position; inside the
current block the ``count[t]`` predictions with the highest confidence ``p(x0_hat)`` are committed and the rest
stay masked ("remasked"). :func:`schedule` gives which positions may be committed at each step and how many.

Attention hook: ``model(tokens, attention=fn)`` runs every layer's attention through
``fn(layer: int, q, k, v) -> o`` with ``q, k, v, o: [L, H, Dh]`` (default :func:`dense_attention`); the sparse
runs of ``jaxwb.sims.sparse_attention`` plug ``jaxwb.pallas_kernels.attention.block_sparse_attention`` in here.
``model.qkv(tokens)`` returns every layer's (q, k, v) of a dense forward (the recorded attention inputs).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, Bool, Float, Int

from jaxwb.models import train as tr
from jaxwb.models.tiny_lm import RMSNorm, linear_init, rope
from jaxwb.theory import validate as v

BYTES = 256
MASK = 256  # the absorbing state: input id of [MASK]
# weight-cache tag: part of the cache key, bumped when the objective changes (v2: low-discrepancy t)
CACHE_TAG = "dlm2"


@dataclasses.dataclass(frozen=True)
class DLMConfig:
    d_model: int = 96
    n_layers: int = 3
    n_heads: int = 4
    ctx: int = 256
    mlp_ratio: int = 4
    rope_base: float = 10000.0

    def __post_init__(self):
        for name in ("d_model", "n_layers", "n_heads", "ctx", "mlp_ratio"):
            v.positive_int(name, getattr(self, name))
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(
                f"d_model must be a multiple of 2*n_heads (even head size), got d_model="
                f"{self.d_model}, n_heads={self.n_heads}"
            )
        v.positive("rope_base", self.rope_base)


def dense_attention(
    layer: int, q: Float[Array, "L H Dh"], k: Float[Array, "L H Dh"], v: Float[Array, "L H Dh"]
) -> Float[Array, "L H Dh"]:
    """Bidirectional softmax attention ``softmax(q k^T / sqrt(Dh)) v`` per head (no mask)."""
    del layer
    s = jnp.einsum("thd,shd->hts", q, k) / math.sqrt(q.shape[-1])
    p = jax.nn.softmax(s.astype(jnp.float32), axis=-1).astype(q.dtype)
    return jnp.einsum("hts,shd->thd", p, v)


class BiBlock(eqx.Module):
    norm1: RMSNorm
    qkv: eqx.nn.Linear
    out: eqx.nn.Linear
    norm2: RMSNorm
    mlp_in: eqx.nn.Linear
    mlp_out: eqx.nn.Linear
    n_heads: int = eqx.field(static=True)
    rope_base: float = eqx.field(static=True)

    def project(self, x):
        """x [L, d] -> q, k, v [L, H, Dh] (RoPE on q, k)."""
        t, d = x.shape
        q, k, val = jnp.split(jax.vmap(self.qkv)(self.norm1(x)), 3, axis=-1)
        q, k, val = (a.reshape(t, self.n_heads, d // self.n_heads) for a in (q, k, val))
        return rope(q, self.rope_base), rope(k, self.rope_base), val

    def finish(self, x, o):
        """Residual update from the attention output o [L, H, Dh]."""
        x = x + jax.vmap(self.out)(o.reshape(x.shape))
        return x + jax.vmap(self.mlp_out)(jax.nn.gelu(jax.vmap(self.mlp_in)(self.norm2(x))))


class DiffusionLM(eqx.Module):
    embed: jax.Array  # [257, d]: byte embeddings + [MASK]; rows 0..255 are also the output layer (tied)
    blocks: tuple[BiBlock, ...]
    norm_f: RMSNorm
    config: DLMConfig = eqx.field(static=True)

    def __init__(self, config: DLMConfig, *, key: jax.Array):
        d, n = config.d_model, config.n_layers
        keys = jax.random.split(key, 1 + 4 * n)
        self.config = config
        self.embed = jax.random.normal(keys[0], (BYTES + 1, d)) * (0.5 / math.sqrt(d))
        res = 1.0 / math.sqrt(2 * n)
        blocks = []
        for i in range(n):
            k1, k2, k3, k4 = keys[1 + 4 * i : 5 + 4 * i]
            blocks.append(
                BiBlock(
                    RMSNorm(jnp.ones(d)),
                    linear_init(d, 3 * d, k1),
                    linear_init(d, d, k2, res),
                    RMSNorm(jnp.ones(d)),
                    linear_init(d, config.mlp_ratio * d, k3),
                    linear_init(config.mlp_ratio * d, d, k4, res),
                    config.n_heads,
                    config.rope_base,
                )
            )
        self.blocks = tuple(blocks)
        self.norm_f = RMSNorm(jnp.ones(d))

    def _check(self, tokens):
        if tokens.ndim != 1:
            raise ValueError(f"tokens must be 1-D [L] (vmap over a batch), got shape {tokens.shape}")
        if tokens.shape[0] > self.config.ctx:
            raise ValueError(f"tokens length {tokens.shape[0]} exceeds ctx={self.config.ctx}")

    def __call__(self, tokens: Int[Array, " L"], *, attention: Callable | None = None) -> Float[Array, "L 256"]:
        """``tokens: int[L]`` in [0, 256] (256 = [MASK]) -> ``logits: float32[L, 256]`` over bytes."""
        self._check(tokens)
        attention = dense_attention if attention is None else attention
        x = self.embed[tokens]
        for i, blk in enumerate(self.blocks):
            q, k, val = blk.project(x)
            x = blk.finish(x, attention(i, q, k, val))
        x = self.norm_f(x)
        return (x @ self.embed[:BYTES].T).astype(jnp.float32)

    def qkv(self, tokens: Int[Array, " L"]) -> list[tuple[jax.Array, jax.Array, jax.Array]]:
        """Every layer's attention inputs (q, k, v), each [L, H, Dh], of the dense forward pass."""
        self._check(tokens)
        x, out = self.embed[tokens], []
        for blk in self.blocks:
            q, k, val = blk.project(x)
            out.append((q, k, val))
            x = blk.finish(x, dense_attention(0, q, k, val))
        return out


def num_params(model: DiffusionLM) -> int:
    return sum(a.size for a in jax.tree.leaves(eqx.filter(model, eqx.is_inexact_array)))


# ---------------------------------------------------------------------------------------------------------
# Objective and training
# ---------------------------------------------------------------------------------------------------------


def mask_tokens(x: Int[Array, "B L"], t: Float[Array, " B"], *, key: jax.Array):
    """Mask each token of row b independently with probability t[b]: returns (x_t [B, L], masked bool [B, L])."""
    v.prng_key("key", key)
    masked = jax.random.uniform(key, x.shape) < t[:, None]
    return jnp.where(masked, MASK, x), masked


def diffusion_times(batch: int, *, key: jax.Array, eps: float = 1e-3) -> Float[Array, " B"]:
    """Mask ratios ``t_b`` in (eps, 1] for a batch, each marginally ``U(eps, 1]``, drawn low-discrepancy (the
    "antithetic" sampler of MDLM, Sahoo et al. 2024, sec. 3.5): ``u_b = (u + b / B) mod 1`` with one ``u ~ U[0, 1)``,
    so a batch covers the ratios evenly. Each t_b is still uniform, so the loss stays an unbiased estimate of
    LLaDA's eq. 3; only its variance across batches drops."""
    v.prng_key("key", key)
    u = jnp.mod(jax.random.uniform(key, ()) + jnp.arange(batch) / batch, 1.0)
    return eps + (1.0 - eps) * (1.0 - u)  # in (eps, 1]


def diffusion_loss(model: DiffusionLM, x: Int[Array, "B L"], *, key: jax.Array, eps: float = 1e-3):
    """LLaDA's loss: ``sum_{b,i} 1[masked] CE(x_0) / t_b / (B L)``, t_b ~ U(eps, 1] (eq. 3 of LLaDA), the t_b of a
    batch drawn low-discrepancy (:func:`diffusion_times`)."""
    v.prng_key("key", key)
    kt, km = jax.random.split(key)
    t = diffusion_times(x.shape[0], key=kt, eps=eps)
    xt, masked = mask_tokens(x, t, key=km)
    logits = jax.vmap(model)(xt)
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, x)
    return jnp.sum(jnp.where(masked, ce / t[:, None], 0.0)) / x.size


def _batch_loss(model, data, key, batch_size):
    kb, km = jax.random.split(key)
    x, _ = tr.get_batch(data, key=kb, batch_size=batch_size, ctx=model.config.ctx)
    return diffusion_loss(model, x, key=km)


def trained_diffusion_lm(mc: DLMConfig, tc: tr.TrainConfig, *, use_cache: bool = True, desc: str | None = None):
    """``DiffusionLM(mc)`` trained with the masked-diffusion loss by the project's loop (``jaxwb.models.train``,
    AdamW + warmup-cosine, ``lax.scan`` chunks), cached outside git like the tiny LM. Returns (model, losses)."""
    # trained_model's `mc` is typed for its default TinyLM; the diffusion LM passes its own config
    kw = dict(use_cache=use_cache, desc=desc, model_cls=DiffusionLM, batch_loss=_batch_loss, tag=CACHE_TAG)
    return tr.trained_model(mc, tc, **kw)  # type: ignore[arg-type]


def masked_accuracy(model: DiffusionLM, x: Int[Array, "B L"], ratio: float, *, key: jax.Array):
    """Per-row accuracy [B] of the argmax prediction on the positions masked at ``ratio`` (one forward pass)."""
    v.prng_key("key", key)
    v.in_interval("ratio", ratio, 0.0, 1.0, closed_hi=True)
    xt, masked = mask_tokens(x, jnp.full((x.shape[0],), ratio), key=key)
    pred = jnp.argmax(jax.vmap(model)(xt), axis=-1)
    hit = jnp.sum(jnp.where(masked, pred == x, False), axis=1)
    return hit / jnp.maximum(jnp.sum(masked, axis=1), 1)


# ---------------------------------------------------------------------------------------------------------
# Sampling: semi-autoregressive iterative unmasking with low-confidence remasking
# ---------------------------------------------------------------------------------------------------------


def schedule(length: int, prompt_len: int, steps: int, block_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Which positions may be committed at each step and how many.

    The generated span ``[prompt_len, length)`` is cut into blocks of ``block_len``; block j is decoded during
    steps ``[j S, (j+1) S)`` with ``S = steps / num_blocks``, committing ``block_len / S`` tokens per step (the
    remainder on the first steps of the block). Returns ``region bool[steps, length]`` and ``count int[steps]``.
    """
    for name, val in (("length", length), ("steps", steps), ("block_len", block_len)):
        v.positive_int(name, val)
    if not 0 <= prompt_len < length:
        raise ValueError(f"prompt_len must lie in [0, length={length}), got {prompt_len}")
    gen = length - prompt_len
    if gen % block_len:
        raise ValueError(f"block_len={block_len} must divide the generated length {gen}")
    nblk = gen // block_len
    if steps % nblk:
        raise ValueError(f"steps={steps} must be a multiple of the number of blocks {nblk}")
    per = steps // nblk
    if per > block_len:
        raise ValueError(f"steps per block ({per}) must be <= block_len={block_len}")
    region = np.zeros((steps, length), bool)
    count = np.zeros(steps, np.int32)
    for t in range(steps):
        j, s = divmod(t, per)
        lo = prompt_len + j * block_len
        region[t, lo : lo + block_len] = True
        count[t] = block_len // per + (s < block_len % per)
    return region, count


def transitions(length: int, prompt_len: int, steps: int, block_len: int) -> tuple[int, ...]:
    """Steps at which decoding moves to the next block (the first step of blocks 1, 2, ...)."""
    nblk = (length - prompt_len) // block_len
    per = steps // nblk
    return tuple(range(per, steps, per))


REMASKING = ("low_confidence", "random")


def unmask_step(
    x: Int[Array, " L"],
    logits: Float[Array, "L 256"],
    region: Bool[Array, " L"],
    count,
    *,
    key: jax.Array | None = None,
    temperature: float = 0.0,
    remasking: str = "low_confidence",
) -> Int[Array, " L"]:
    """One denoising step: commit ``count`` predictions among masked positions in ``region``.

    Prediction ``x0_hat`` is the argmax (``temperature = 0``) or a sample at ``temperature``. Which ``count``
    positions are committed (LLaDA's two remasking strategies): ``"low_confidence"``, the most confident ones
    (confidence = softmax probability of ``x0_hat``); ``"random"``, a uniformly random subset (with
    ``temperature = 1`` every committed byte is then an unbiased draw from the model's conditional, whereas
    ranking by confidence prefers the positions whose draw was a likely byte). Everything not committed stays
    [MASK].
    """
    if remasking not in REMASKING:
        raise ValueError(f"remasking must be one of {REMASKING}, got {remasking!r}")
    if (temperature > 0 or remasking == "random") and key is None:
        raise ValueError("key is required when temperature > 0 or remasking='random'")
    if remasking == "random":
        key, k_rank = jax.random.split(key)  # type: ignore[arg-type]  # not None: checked above
    if temperature > 0:
        pred = jax.random.categorical(key, logits / temperature)  # type: ignore[arg-type]  # checked above
    else:
        pred = jnp.argmax(logits, axis=-1)
    if remasking == "random":
        conf = jax.random.uniform(k_rank, pred.shape)
    else:
        conf = jnp.take_along_axis(jax.nn.softmax(logits, axis=-1), pred[:, None], axis=-1)[:, 0]
    cand = (x == MASK) & region
    conf = jnp.where(cand, conf, -1.0)
    rank = jnp.argsort(jnp.argsort(-conf, stable=True), stable=True)
    commit = cand & (rank < count)
    return jnp.where(commit, pred.astype(x.dtype), x)


def generate(
    model: DiffusionLM,
    prompt: Int[Array, " P"],
    length: int,
    *,
    steps: int,
    block_len: int,
    key: jax.Array | None = None,
    temperature: float = 0.0,
    remasking: str = "low_confidence",
    attention: Callable | None = None,
) -> tuple[Int[Array, " L"], Int[Array, "T L"]]:
    """Fill ``length - P`` [MASK] positions after ``prompt`` by ``steps`` denoising steps (:func:`schedule`).

    Returns ``(final tokens int[length], states int[steps, length])`` where ``states[t]`` is the input of step t.
    Step t uses ``jax.random.split(key, steps)[t]`` (``key`` defaults to ``jax.random.key(0)``).
    """
    prompt = jnp.asarray(prompt, jnp.int32)
    if prompt.ndim != 1:
        raise ValueError(f"prompt must be 1-D, got shape {prompt.shape}")
    region, count = schedule(length, prompt.shape[0], steps, block_len)
    x = jnp.concatenate([prompt, jnp.full((length - prompt.shape[0],), MASK, jnp.int32)])
    keys = jax.random.split(jax.random.key(0) if key is None else key, steps)

    def step(x, inp):
        reg, cnt, k = inp
        logits = model(x, attention=attention)
        return unmask_step(x, logits, reg, cnt, key=k, temperature=temperature, remasking=remasking), x

    x, states = jax.lax.scan(step, x, (jnp.asarray(region), jnp.asarray(count), keys))
    return x, states
