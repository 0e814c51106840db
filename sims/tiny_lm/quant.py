"""Quantized variants of the tiny LM: weight-only (the kernels' drop-in layers), weight + activation, and the
outlier-channel transform.

* Weight-only NVFP4 / RaZeR / MXFP4: ``jaxwb.pallas_kernels.quantize_model`` swaps every block ``eqx.nn.Linear``
  ([out, in], blocks along ``in``) for ``EqxQuantizedLinear`` (packed FP4 weight, ``fp4_matmul``: activations
  rounded to bfloat16, float32 accumulation: W4A16). The tied embedding/output matrix stays in float32. RHT-4 has
  no drop-in layer: its weights are quantized-dequantized to float32 (float32 activations).
* Weight + activation (the paper's W4A4 setting): the same weight layers, and the input of every block Linear
  quantized-dequantized per token (blocks of 16 along the features; NVFP4 for NVFP4, RaZeR's activation
  variant with special values +-5 for RaZeR; the per-tensor FP32 scale of each token's vector is its own amax).
* Outlier channels: for a few input channels c of every normed layer input (attention qkv after norm1, MLP in
  after norm2), W[:, c] *= s and the RMSNorm gain g[c] /= s: the float model computes the same function (up to
  float32 rounding) while those weight columns carry s times larger values, the regime where one element sets
  the block scale of 16 and crushes the others.
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp

from jaxwb.models.tiny_lm import TinyLM, linear_weights, replace_linear_weights
from jaxwb.pallas_kernels.quant import (
    mxfp4_dequantize,
    mxfp4_quantize,
    nvfp4_dequantize,
    nvfp4_quantize,
    razer_dequantize,
    razer_quantize,
)
from jaxwb.pallas_kernels.quant.layers import quantize_model
from jaxwb.pallas_kernels.quant.rht import rht_dequantize, rht_quantize
from jaxwb.sims.tiny_lm.config import FORMATS

# the drop-in layer format of each weight-only study format (RaZeR: its weight variant, E3M3 scale, {+-5, +-8})
LAYER_FORMAT = {"nvfp4": "nvfp4", "razer": "razer", "mxfp4": "mxfp4"}
# the activation format paired with each weight format in the W4A4 setting
ACTIVATION_FORMAT = {"nvfp4": "nvfp4", "razer": "razer_activation"}


def fake_quantize(w: jax.Array, fmt: str, *, key: jax.Array, rht_group: int = 64) -> jax.Array:
    """Quantize-dequantize ``w: float[..., K]`` (blocks along the last axis) in ``fmt`` (one of FORMATS)."""
    if fmt == "nvfp4":
        return nvfp4_dequantize(nvfp4_quantize(w))
    if fmt == "razer":
        return razer_dequantize(razer_quantize(w, variant="weight"))
    if fmt == "mxfp4":
        return mxfp4_dequantize(mxfp4_quantize(w))
    if fmt == "rht4":
        g = min(rht_group, w.shape[-1])
        x = w.reshape(*w.shape[:-1], w.shape[-1] // g, g)
        return rht_dequantize(rht_quantize(x, key=key, bits=4, scaling="mse")).reshape(w.shape)
    raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")


def quantize_activations(x: jax.Array, fmt: str) -> jax.Array:
    """Quantize-dequantize activations ``x: float[..., K]`` (K % 16 == 0) per vector in ``fmt``
    ("nvfp4" or "razer_activation"); float32 out."""
    if fmt == "nvfp4":
        return nvfp4_dequantize(nvfp4_quantize(x))
    if fmt == "razer_activation":
        return razer_dequantize(razer_quantize(x, variant="activation"))
    raise ValueError(f"fmt must be 'nvfp4' or 'razer_activation', got {fmt!r}")


def bits_per_weight(fmt: str, k: int, rht_group: int = 64) -> float:
    return {"nvfp4": 4.5, "razer": 4.5, "mxfp4": 4.25, "rht4": 4.0 + 32.0 / min(rht_group, k)}[fmt]


def block_names(model: TinyLM) -> list[str]:
    return [k for k in linear_weights(model) if k != "embed"]


def block_weights(model: TinyLM) -> dict[str, jax.Array]:
    """Every block matmul weight by name (``block_names`` order; the embedding excluded)."""
    lw = linear_weights(model)
    return {k: lw[k] for k in block_names(model)}


def layer_keys(model: TinyLM, key: jax.Array) -> dict[str, jax.Array]:
    """One key per block matmul weight (``block_names`` order): the randomness of a fake-quantizer that needs it
    (RHT-4's signs and dithers)."""
    names = block_names(model)
    return dict(zip(names, jax.random.split(key, len(names)), strict=True))


def quantized_weights(model: TinyLM, fmt: str, *, key: jax.Array, rht_group: int) -> dict:
    """Fake-quantized float32 copies of every block matmul weight (the embedding is left in full precision)."""
    keys = layer_keys(model, key)
    return {k: fake_quantize(w, fmt, key=keys[k], rht_group=rht_group) for k, w in block_weights(model).items()}


class ActQuantLinear(eqx.Module):
    """``inner(Q_a(x))``: a (quantized) linear layer whose input is fake-quantized in ``fmt`` first."""

    inner: Callable[..., jax.Array]  # an eqx.Module layer (eqx.nn.Linear or a drop-in quantized one)
    fmt: str = eqx.field(static=True)

    def __call__(self, x, *, key=None):
        return self.inner(quantize_activations(x, self.fmt).astype(x.dtype))


def quantized_model(
    model: TinyLM, fmt: str, *, key: jax.Array, rht_group: int = 64, activations: bool = False
) -> TinyLM:
    """``model`` with 4-bit block weights in ``fmt`` (drop-in layers; RHT-4 as float32 fake-quantized weights);
    ``activations=True``: the W4A4 setting (layer inputs quantized in ``ACTIVATION_FORMAT[fmt]``)."""
    if fmt == "rht4":
        if activations:
            raise ValueError("activations: RHT-4 has no activation setting here")
        return replace_linear_weights(model, quantized_weights(model, fmt, key=key, rht_group=rht_group))
    if fmt not in LAYER_FORMAT:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    q = quantize_model(model, LAYER_FORMAT[fmt], filter=lambda path, lin: True)
    if not activations:
        return q
    if fmt not in ACTIVATION_FORMAT:
        raise ValueError(f"fmt must be one of {tuple(ACTIVATION_FORMAT)} with activations=True, got {fmt!r}")
    is_q = lambda x: type(x).__name__ == "EqxQuantizedLinear"
    return jax.tree.map(lambda x: ActQuantLinear(x, ACTIVATION_FORMAT[fmt]) if is_q(x) else x, q, is_leaf=is_q)


def outlier_channels(d: int, n: int, *, key: jax.Array, inputs: int | None = None) -> jax.Array:
    """``n`` distinct input channels out of ``d`` (int32[n]), drawn with ``key``; with ``inputs``, one such draw
    per normed layer input (int32[inputs, n], independent draws: ``with_outlier_channels``' per-input form)."""
    if inputs is None:
        return jax.random.choice(key, d, (n,), replace=False)
    return jnp.stack([jax.random.choice(k, d, (n,), replace=False) for k in jax.random.split(key, inputs)])


def with_outlier_channels(model: TinyLM, channels: jax.Array, scale: float) -> TinyLM:
    """The same function with outlier weight columns: for every block, ``qkv.weight[:, c]`` and
    ``mlp_in.weight[:, c]`` times ``scale``, ``norm1.weight[c]`` and ``norm2.weight[c]`` divided by it. ``channels``
    int[n]: the same c for every normed input; int[2 * n_layers, n]: row 2i for block i's qkv (after norm1), row
    2i + 1 for its mlp_in (after norm2). The RMSNorm statistics are computed before the gain, so the float model is
    unchanged."""
    ch = jnp.asarray(channels)
    rows = ch if ch.ndim == 2 else jnp.broadcast_to(ch, (2 * len(model.blocks), ch.shape[-1]))
    if rows.shape[0] != 2 * len(model.blocks):
        raise ValueError(f"channels must be [n] or [2 * n_layers = {2 * len(model.blocks)}, n], got {ch.shape}")
    ones = jnp.ones(model.config.d_model)
    blocks = []
    for i, b in enumerate(model.blocks):
        s1, s2 = ones.at[rows[2 * i]].set(scale), ones.at[rows[2 * i + 1]].set(scale)
        b = eqx.tree_at(
            lambda b: (b.norm1.weight, b.norm2.weight, b.attn.qkv.weight, b.mlp_in.weight),
            b,
            (b.norm1.weight / s1, b.norm2.weight / s2, b.attn.qkv.weight * s1, b.mlp_in.weight * s2),
        )
        blocks.append(b)
    return eqx.tree_at(lambda m: m.blocks, model, tuple(blocks))
