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
# # ZOE-Grad: surrogate gradients of a quantizer are expectations of zeroth-order estimators
#
# A quantizer `Q` (levels `q_k`, boundaries `b_k` halfway between) has zero gradient almost everywhere.
# Perturb its input, `Q_sigma(x) = E Q(x + sigma u)`, with `u` from a unit-variance law `p`: then
#
# `d/dx Q_sigma(x) = sum_k (q_k - q_{k-1}) p_sigma(b_k - x)`, a sum of bumps on the boundaries,
#
# and it is the mean of zeroth-order estimators that only evaluate `Q`: the score-function form
# `Q(x + sigma u) psi(u) / sigma` (`psi = -p'/p`) and its two-point (antithetic) form. The uniform law one grid
# step wide has no density score (its score is two point masses): the estimator collapses to the edge difference
# `(Q(x + 1/2) - Q(x - 1/2))`, which is 1 for every `x` inside the clip range: **STE is the degenerate case**.
# Continuous laws (Gaussian, logistic, triangular) give surrogates that know where the boundaries are.
#
# This is a reconstruction from the paper's abstract (no public text beyond it); the derivation, the
# closed forms and the convergence bound are in `theory/zoe_grad.py`, the op `fake_quant` (QAT with the FP4
# kernels: NVFP4, MXFP4, RaZeR, INT-b) in `pallas_kernels/quant/fake_quant.py`, the figures and claims in
# `sims/zoe_grad/`.

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

from jaxwb.pallas_kernels.quant.fake_quant import fake_quant
from jaxwb.sims import zoe_grad as sim
from jaxwb.sims.core import notebook, style
from jaxwb.theory import zoe_grad as zg

# %% [markdown]
# ## The closed form and the STE identity
# On unit-step INT-3 levels, the uniform law with `sigma = 1/sqrt(12)` gives exactly the clipped STE;
# a Gaussian with the same standard deviation gives bumps.

# %%
lv = zg.int_levels(3)
x = jnp.linspace(-4, 4, 9) + 0.1
print("uniform, sigma=1/sqrt12:", np.round(np.asarray(zg.surrogate_grad(x, lv, zg.STE_SIGMA, law="uniform")), 6))
print("gaussian, same sigma:   ", np.round(np.asarray(zg.surrogate_grad(x, lv, zg.STE_SIGMA, law="gaussian")), 4))
w = jax.random.normal(jax.random.key(0), (2, 32))
g = jax.grad(lambda v: jnp.sum(fake_quant(v, fmt="nvfp4", surrogate="gaussian", sigma=0.3)))(w)
print("fake_quant NVFP4 gradient (first 8):", np.round(np.asarray(g[0, :8]), 3))

# %% [markdown]
# ## The simulation
# Monte Carlo means of the estimators and of the perturbed quantizer vs the closed forms, the sigma sweep
# (Monte Carlo at the concentration peak and in the flat limit), `fake_quant`'s backward vs the theory's bump
# sum and vs the estimator through the NVFP4 kernels, the bias and convergence bounds on a toy,
# and QAT of the tiny LM (STE vs continuous surrogates vs post-training quantization: QAT wins by ~1.8 perplexity
# for every surrogate over 40 seeds; the surrogates and STE stay within 0.3 of each other, the bound claimed, so
# the paper's "continuous beats STE" is not reproduced at this scale). The committed full-preset
# run, loaded from `figures/zoe_grad/data.npz`; the figures are the committed PNGs `sim.plot` drew from it
# (checked against the manifest's hashes; nothing is recomputed or redrawn: seconds).

# %%
nb = notebook.open_result(sim)
nb.show()

# %% [markdown]
# ## Explore
# Pick the perturbation law and `sigma` (in grid steps / block-scale units): the dashed line is the closed
# form, the dots the Monte Carlo mean of the two-point estimator built only from the hard quantizer.


# %%
def explore(sigma=0.3, law="gaussian", grid="int", draws=4000):
    q_fn = sim.hard_quantizer(grid, 3)
    levels = sim.grid_levels(grid, 3)
    xs = sim.x_grid(grid, 3, 161)
    closed = zg.surrogate_grad(xs, levels, sigma, law=law)
    est = zg.two_point_estimator(q_fn, xs[::4], sigma, law=law, key=jax.random.key(1), n=draws)
    fig, ax = style.figure(figsize=(7, 3.6))
    ax.plot(np.asarray(xs), np.asarray(closed), **style.prediction(), label="closed form sum_k D_k p_sigma(b_k - x)")
    ax.errorbar(
        np.asarray(xs[::4]),
        np.asarray(est.mean(0)),
        yerr=2 * np.asarray(est.std(0)) / np.sqrt(draws),
        fmt="o",
        ms=3,
        color=sim.COLORS[law],
        label=f"two-point estimator, {draws} draws (+-2 se)",
    )
    ax.axhline(1.0, color="0.6", ls=":", label="STE")
    ax.set(xlabel="x", ylabel="surrogate gradient", title=f"{law}, sigma={sigma:g}, {grid} grid")
    ax.legend(fontsize=8)
    plt.show()


notebook.interact(
    explore, live=False, sigma=(0.03, 1.5, 0.01), law=list(zg.LAWS), grid=list(sim.GRIDS), draws=(500, 20000, 500)
)

# %% [markdown]
# ## Recompute
# Pick a preset and seed, change Config fields and press **recompute**: the simulation reruns (nothing is written
# to `figures/`); `workbench run zoe_grad --help` explains each field.

# %%
nb.controls()

# %% [markdown]
# ## Claims
# `sim.claims` evaluated on the data `nb` holds: the committed run when the notebook opens, the latest
# recomputation once **recompute** was pressed (the title line says which: "committed ..." or "recomputed ...").

# %%
nb.show_claims()
