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
#     display_name: Python 3
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
# `theory/dithered_quant.py` (the closed forms) and `sims/quantization.py` (figures and claims).

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
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

from pallas_kernels.quant.hadamard import fwht
from pallas_kernels.quant.inquant import inquant_pack, inquant_unpack
from pallas_kernels.quant.rht import rht_dequantize, rht_quantize
from sims import quantization as sim
from sims.core import notebook, style
from theory import dithered_quant as dq

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
# ## The simulation
# MSE vs bits (worst of many unit vectors, several `d`, and a dense Haar rotation), the format comparison at
# ~4.5 bits per element, error histograms, and InQuant on heavy-tailed synthetic KV.
# The committed full-preset run, loaded from `figures/quantization/data.npz` (no recomputation:
# opening takes seconds); `sim.plot` draws it. The **recompute** controls at the end rerun the simulation.

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
    xs, names = sim.unit_vectors(jax.random.key(log2_d), d, 1)
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
    kv = sim.student_t(jax.random.key(1), 3, (512, 128)) * jnp.ones(128).at[jnp.array([3, 4, 5, 40, 97])].set(
        outlier_scale
    )
    q = inquant_pack(kv.astype(jnp.bfloat16), key=jax.random.key(2), n_outliers=n_outliers)
    err = float(jnp.mean((inquant_unpack(q) - kv) ** 2))
    e4 = float(jnp.mean((sim.absmax_roundtrip(kv, 7) - kv) ** 2))
    print(
        f"outliers {np.asarray(q.outliers)}, donors {np.asarray(q.donors)}, "
        f"payload {q.nbytes()['payload_ratio']}x; "
        f"MSE InQuant {err:.4f} vs plain 4-bit {e4:.4f}"
    )


notebook.interact(
    explore,
    live=False,
    bits=(1, 8),
    log2_d=(4, 13),
    family=list(sim.FAMILIES),
    scaling=["turbo", "mse", "unbiased"],
    draws=(4, 64, 4),
)
notebook.interact(explore_inquant, n_outliers=(0, 8), outlier_scale=(1.0, 100.0, 1.0))

# %% [markdown]
# ## Recompute
# Pick a preset and seed, change Config fields and press **recompute**: the simulation reruns (the quick preset
# takes seconds to a minute; nothing is written to `figures/`), and the figures and claims table below it are
# the new run's. `workbench run quantization --help` explains each field.

# %%
nb.controls()

# %% [markdown]
# ## Claims
# `sim.claims` evaluated on the data shown above (the committed run; the table under **recompute** shows a
# recomputation's).

# %%
nb.show_claims()
