# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: -all
#     notebook_metadata_filter: kernelspec,jupytext,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The quantization core: one randomized Hadamard transform, FP4 formats, InQuant
#
# **Dithered RHT quantization.** Rotate `y = H D x` (Walsh-Hadamard `H`, random signs `D`), then quantize
# every
# coordinate with the same scalar quantizer: compand `z = Phi(y / (sqrt 3 sigma))` (sigma = ||x|| / sqrt d),
# round on a grid of `2^b` cells shifted by one random dither `u`, expand back. Averaged over the dither the
# error of coordinate `i` is `(delta^2/12) sigma^2 6 pi exp(t_i^2 / 3)`, and a Rademacher sum `t_i` has
# `E exp(t^2/3) <= sqrt 3` (its Gaussian value): the MSE is `(pi sqrt 3 / 2 + o(1)) 4^-b ||x||^2` for *every*
# `x` and `d`, at `O(d log d)` cost instead of a dense rotation's `Theta(d^2)`.
#
# Code: `pallas_kernels/quant/hadamard.py` (FWHT), `rht.py` (the quantizer, three scalings: TurboQuant's
# known norm, the least-squares rescale, EDEN's unbiased `S = ||x||^2 / <y, q>`), `inquant.py`,
# `theory/dithered_quant.py` (the closed forms) and `sims/quantization/` (figures and claims).

# %%
# On Colab: clone the repository (code and committed figures) and install it; elsewhere this does nothing.
import os
import subprocess
import sys

if "google.colab" in sys.modules and not os.path.isdir("figures"):
    REPO = os.environ.get("WORKBENCH_REPO", "https://github.com/jax-theory-workbench/jax-theory-workbench")
    if not os.path.isdir("workbench"):
        subprocess.run(["git", "clone", "--depth", "1", REPO, "workbench"], check=True)
    os.chdir("workbench")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", ".[notebook]"], check=True)
    sys.path.insert(0, os.getcwd())

# %%
import functools

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

from jaxwb.pallas_kernels.quant import mxfp4, nvfp4, razer
from jaxwb.pallas_kernels.quant.hadamard import fwht
from jaxwb.pallas_kernels.quant.inquant import inquant_pack, inquant_unpack
from jaxwb.pallas_kernels.quant.rht import rht_dequantize, rht_quantize
from jaxwb.sims import quantization as sim
from jaxwb.sims.core import notebook, style
from jaxwb.sims.quantization.config import FAMILIES
from jaxwb.sims.quantization.run import (
    absmax_roundtrip,
    decode_from_bytes,
    half_step_ratio,
    student_t,
    unit_vectors,
)
from jaxwb.theory import dithered_quant as dq
from jaxwb.theory.quantization import fp4_formats

# %% [markdown]
# ## The closed forms
# The bound, the finite-level factor `(N/(N-1))^2` (a dithered grid of `N` cells needs step `1/(N-1)` to cover
# `[0, 1]`), and the Lloyd-Max (non-dithered, TurboQuant) values for comparison.

# %%
for b in range(1, 9):
    lm = dq.LLOYD_MAX_GAUSSIAN.get(b)
    print(
        f"b={b}: (pi sqrt3/2) 4^-b = {float(dq.mse_bound(b)):.3e}   x (N/(N-1))^2 = "
        f"{float(dq.high_resolution_mse(b)):.3e}" + (f"   Lloyd-Max = {lm:.3e}" if lm else "")
    )
x = jax.random.normal(jax.random.key(0), (4, 1024))
print("FWHT is orthonormal and self-inverse:", float(jnp.max(jnp.abs(fwht(fwht(x)) - x))))

# %% [markdown]
# ## The formats against an independent decoder
# `theory.quantization.fp4_formats` writes NVFP4, MXFP4 and RaZeR from their rules with NumPy and `ml_dtypes`
# (E2M1 / E4M3 casts, an E3M3 table), sharing no code with the kernels; the claims compare every element of the
# format datasets with it. Here on one heavy-tailed matrix: the count of differing values, and the relative MSE.

# %%
xf = jax.random.t(jax.random.key(5), 3.0, (64, 256))
kernel_rt = {
    "NVFP4": nvfp4.nvfp4_dequantize(nvfp4.nvfp4_quantize(xf)),
    "MXFP4": mxfp4.mxfp4_dequantize(mxfp4.mxfp4_quantize(xf)),
    "RaZeR (act.)": razer.razer_dequantize(razer.razer_quantize(xf, variant="activation")),
    "RaZeR (weight)": razer.razer_dequantize(razer.razer_quantize(xf, variant="weight")),
}
for label in fp4_formats.ROUNDTRIPS:
    ref = fp4_formats.roundtrip(label, np.asarray(xf))
    k = np.asarray(kernel_rt[label])
    rel = float(np.sum((k - np.asarray(xf)) ** 2) / np.sum(np.asarray(xf) ** 2))
    print(f"{label:15s} differing values: {int(np.sum(k != ref))} of {k.size}   relative MSE {rel:.4f}")

# %% [markdown]
# ## The simulation
# MSE vs bits (worst of many unit vectors, several `d`, and a dense Haar rotation), the format comparison at
# ~4.5 bits per element, error histograms, and InQuant on heavy-tailed synthetic KV.
# The committed full-preset run, loaded from `figures/quantization/data.npz` (no recomputation:
# opening takes seconds); the figures are the committed PNGs `sim.plot` drew from it (checked against the
# manifest's hashes). The **recompute** controls at the end rerun the simulation and redraw.

# %%
nb = notebook.open_result(sim)
nb.show()

# %% [markdown]
# ## Explore
# Quantize a unit vector of a chosen family with `b` bits and a chosen scaling; the dashed line is the bound.
# `mse` scaling is never worse than `turbo` on the same codes; `unbiased` makes `<x_hat, x> = ||x||^2`.


# %%
def explore(bits=4, log2_d=10, family="gaussian", scaling="turbo", draws=16):
    d = 2**log2_d
    xs, names = unit_vectors(jax.random.key(log2_d), d, 1)
    xv = jnp.asarray(xs[names.index(family)])
    errs = []
    for k in jax.random.split(jax.random.key(bits), draws):
        q = rht_quantize(xv[None], key=k, bits=bits, scaling=scaling)
        errs.append(float(jnp.sum((rht_dequantize(q)[0] - xv) ** 2)))
    fig, ax = style.figure(figsize=(6, 3.4))
    ax.hist(errs, bins=12, color="tab:blue", alpha=0.8, label=f"{draws} draws of (D, u)")
    ax.axvline(float(dq.mse_bound(bits)), **style.prediction(), label="(pi sqrt3/2) 4^-b")
    ax.axvline(
        np.mean(errs),
        color="tab:red",
        label=f"mean = {np.mean(errs) / float(dq.mse_bound(bits)):.3f} x bound",
    )
    ax.set(xlabel="||x - x_hat||^2 (unit x)", ylabel="count", title=f"{family}, d={d}, b={bits}, {scaling}")
    ax.legend(fontsize=8)
    plt.show()


def explore_inquant(n_outliers=4, outlier_scale=25.0):
    kv = student_t(jax.random.key(1), 3, (512, 128)) * jnp.ones(128).at[jnp.array([3, 4, 5, 40, 97])].set(outlier_scale)
    kv16 = kv.astype(jnp.bfloat16)
    q = inquant_pack(kv16, key=jax.random.key(2), n_outliers=n_outliers)
    payload = np.asarray(q.packed).tobytes()  # the payload as stored, decoded back below
    half = half_step_ratio(kv16.astype(jnp.float32), decode_from_bytes(q, payload, kv16.shape[0]), q)
    err = float(jnp.mean((inquant_unpack(q) - kv) ** 2))
    e4 = float(jnp.mean((absmax_roundtrip(kv, 7) - kv) ** 2))
    print(
        f"outliers {np.asarray(q.outliers)}, donors {np.asarray(q.donors)}; "
        f"payload {np.asarray(kv16).nbytes / len(payload):.1f}x fewer bytes than 16-bit, read back from them: largest "
        f"error {half:.4f} x half a step (<= 1 + 2^-10); MSE InQuant {err:.4f} vs plain 4-bit {e4:.4f}"
    )


notebook.interact(
    explore,
    live=False,
    bits=(1, 8),
    log2_d=(4, 13),
    family=list(FAMILIES),
    scaling=["turbo", "mse", "unbiased"],
    draws=(4, 64, 4),
)
notebook.interact(explore_inquant, n_outliers=(0, 8), outlier_scale=(1.0, 100.0, 1.0))

# %% [markdown]
# ## Drop-in layers: quantize a model without touching its code
# A user's equinox model (unbatched, `eqx.nn.MultiheadAttention` + `eqx.nn.Sequential` of `eqx.nn.Linear`) and
# a flax.nnx model (`nnx.MultiHeadAttention` + `nnx.Linear`), written with no knowledge of the kernels.
# `swap_attention` routes their attention through the kernels' attention op (equinox: a copy with
# `EqxSparseAttention.from_mha`, same weights; nnx: `attention_fn=make_attention_fn()` set in place), and
# `quantize_model(model, fmt)` replaces every Linear by its packed FP4 drop-in (`QuantizedLinear`: same call,
# `key=None`, `in_features`/`out_features`). The attention swap is the same function (float tolerance); the
# quantized model's output differs from the float model's by about the weights' own relative FP4 error
# `||W - W_hat|| / ||W||` (the yardstick printed beside it; the residual connection makes the output error
# smaller than the weights'). nnx's q/k/v projections are `nnx.LinearGeneral` (3-D kernels) and stay float;
# `make_attention_fn(kv_num_blocks=..., kv_indices=...)` gives the block-sparse `attention_fn`. Press **recompute** to
# run it (it imports flax and compiles both models: seconds, so it does not run when the notebook opens).


# %%
def drop_in_demo():
    """Equinox and flax.nnx models through swap_attention and quantize_model (imports flax, compiles the
    models: run on demand, so opening the notebook stays fast)."""
    import equinox as eqx
    from flax import nnx

    from jaxwb.pallas_kernels.attention.layers import make_attention_fn, swap_attention
    from jaxwb.pallas_kernels.quant import razer_dequantize, razer_quantize
    from jaxwb.pallas_kernels.quant.layers import quantize_model

    L_SEQ, EMB, HEADS = 32, 64, 4

    class EqxBlock(eqx.Module):
        attn: eqx.nn.MultiheadAttention
        mlp: eqx.nn.Sequential

        def __init__(self, *, key):
            k1, k2, k3 = jax.random.split(key, 3)
            self.attn = eqx.nn.MultiheadAttention(HEADS, EMB, key=k1)
            self.mlp = eqx.nn.Sequential(
                [eqx.nn.Linear(EMB, 4 * EMB, key=k2), eqx.nn.Lambda(jax.nn.gelu), eqx.nn.Linear(4 * EMB, EMB, key=k3)]
            )

        def __call__(self, x):  # x [L, E], unbatched like every equinox layer
            x = x + self.attn(x, x, x)
            return x + jax.vmap(self.mlp)(x)

    class NnxBlock(nnx.Module):
        def __init__(self, *, rngs):
            self.attn = nnx.MultiHeadAttention(HEADS, EMB, decode=False, rngs=rngs)
            self.up = nnx.Linear(EMB, 4 * EMB, rngs=rngs)
            self.down = nnx.Linear(4 * EMB, EMB, rngs=rngs)

        def __call__(self, x):  # x [B, L, E]
            x = x + self.attn(x, is_causal=True)
            return x + self.down(jax.nn.gelu(self.up(x)))

    def rel(a, b):
        return float(jnp.linalg.norm(a - b) / jnp.linalg.norm(b))

    @functools.partial(jax.jit, static_argnames="fmt")
    def weight_roundtrip(w, fmt):
        """The yardstick's W_hat: one weight matrix through format ``fmt`` and back."""
        if fmt == "nvfp4":
            from jaxwb.pallas_kernels.quant import nvfp4_dequantize, nvfp4_quantize

            return nvfp4_dequantize(nvfp4_quantize(w))
        return razer_dequantize(razer_quantize(w, variant="weight"))

    def weight_error(w, fmt):
        """The yardstick: relative FP4 error of one weight matrix in format ``fmt``."""
        return rel(weight_roundtrip(w, fmt=fmt), w)

    # Everything runs under jit (one XLA compilation per model instead of one per op: eager equinox/nnx code
    # compiles every small op separately, ~130 compilations, which is what made this cell slow).
    eqx_forward = eqx.filter_jit(lambda m, x: jax.vmap(m)(x))
    x_tok = jax.random.normal(jax.random.key(1), (2, L_SEQ, EMB))
    eqx_model = eqx.filter_jit(lambda key: EqxBlock(key=key))(jax.random.key(0))
    want_eqx = eqx_forward(eqx_model, x_tok)
    eqx_fast = swap_attention(eqx_model)  # the kernels' attention op, float weights
    print(f"equinox, attention swapped:       rel. difference {rel(eqx_forward(eqx_fast, x_tok), want_eqx):.1e}")
    for fmt in ("nvfp4", "razer"):
        # every Linear -> QuantizedLinear (attention projections included); jitted like the forward pass
        quant = eqx.filter_jit(quantize_model)(eqx_fast, fmt)
        got = eqx_forward(quant, x_tok)
        w_err = weight_error(eqx_model.mlp.layers[0].weight, fmt)
        print(f"equinox, + quantize_model({fmt!r}): rel. error {rel(got, want_eqx):.3f} (weights' own: {w_err:.3f})")
        assert rel(got, want_eqx) < w_err  # within the quantization error of the weights

    nnx_forward = nnx.jit(lambda m, x: m(x))
    nnx_model = nnx.jit(lambda: NnxBlock(rngs=nnx.Rngs(0)))()
    want_nnx = nnx_forward(nnx_model, x_tok)
    nnx_model.attn.attention_fn = make_attention_fn()  # what swap_attention(nnx_model) does to every nnx MHA
    print(f"nnx, attention swapped:           rel. difference {rel(nnx_forward(nnx_model, x_tok), want_nnx):.1e}")
    w_err = weight_error(nnx_model.up.kernel[...].T, "nvfp4")
    quantize_model(nnx_model, "nvfp4")  # in place, like nnx
    got = nnx_forward(nnx_model, x_tok)
    print(f"nnx, + quantize_model('nvfp4'):   rel. error {rel(got, want_nnx):.3f} (weights' own: {w_err:.3f})")
    assert rel(got, want_nnx) < w_err
    print(f"swapped in: nnx {type(nnx_model.up).__name__} (q/k/v stay {type(nnx_model.attn.query).__name__})")
    print(f"swapped in: equinox {type(quant.mlp.layers[0]).__name__}, {type(quant.attn).__name__}")


notebook.interact(drop_in_demo, live=False)

# %% [markdown]
# ## Recompute
# Pick a preset and seed, change Config fields and press **recompute**: the simulation reruns (the quick preset
# takes seconds to a minute; nothing is written to `figures/`), and the figures and claims table below it are
# the new run's. `workbench run quantization --help` explains each field.

# %%
nb.controls()

# %% [markdown]
# ## Claims
# `sim.claims` evaluated on the data `nb` holds: the committed run when the notebook opens, the latest
# recomputation once **recompute** was pressed (the title line says which: "committed ..." or "recomputed ...").

# %%
nb.show_claims()
