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
# # The sparse-attention core
#
# Three ideas from 2026 sparse-attention papers, reproduced on a CPU-sized scale:
#
# * **Step-dLLM** (diffusion LMs recompute full attention every denoising step): build a *block-sparse mask*
#   from pooled queries/keys, **refresh it at anchor steps** and reuse it in between, and split a
#   **global block budget across heads by how concentrated their attention is**. The prior practice keeps the
#   first step's mask with the same budget for every head.
# * **Louver**: sparse attention as halfspace range search. Each key block gets a bound
#   (ball: centre + radius, or box) so that a block is skipped only if *no* key in it can reach
#   `q.k >= tau`: zero false negatives.
# * **Kernels** (`pallas_kernels.attention`): dense flash attention, block-sparse flash attention driven by
#   FlexAttention-style block lists, and the Louver bound, as Pallas kernels with pure-jnp references.

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

from sims import sparse_attention as sim
from sims.core import notebook
from theory import sparse_attention as sa

# %% [markdown]
# ## The committed run
# The committed full-preset run, loaded from `figures/sparse_attention/data.npz` (no recomputation:
# opening takes seconds); `sim.plot` draws it. The **recompute** controls at the end rerun the simulation.

# %%
nb = notebook.open_result(sim)

# %% [markdown]
# ## Error and recall vs budget
# Solid: refresh every step; dashed: every few steps; dotted: first-step-only. Red is the paper's
# head-adaptive budget, grey the uniform budget, blue a mass-greedy global top-K (our addition).
# Note that recall (dense attention mass inside the mask) and output error need not agree: the head-adaptive
# budget lowers the output error while capturing slightly less mass, because it moves blocks away from
# diffuse heads whose output is an average that a few blocks already approximate in norm.

# %%
nb.show("policy_budget")

# %% [markdown]
# ## Refresh period and transitions
# The per-step error jumps at each abrupt transition and stays high until the next anchor step.

# %%
nb.show("refresh_period")

# %% [markdown]
# ## Louver: zero false negatives, work vs tau

# %%
nb.show("louver")

# %% [markdown]
# ## Speed vs sparsity (CPU: XLA paths; GPU: Pallas kernels)

# %%
nb.show("speed")

# %% [markdown]
# ## Try it: one trajectory, your budget, refresh period and allocation

# %%
cfg = sim.PRESETS["quick"]
q, k, v = sim._trajectory(cfg, sim._key(0))
imp = jax.vmap(lambda a, b: sa.block_importance(a, b, block_q=cfg.block, block_k=cfg.block))(q, k)


def show(budget=0.25, period=4, allocation="concentration"):
    masks = sa.mask_trajectory(imp, sa.anchor_steps(cfg.num_steps, period), budget, allocation=allocation)
    err, rec = sa.evaluate_masks(q, k, v, masks)
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot(np.asarray(err), "o-", label="relative error")
    ax.plot(np.asarray(rec), "s-", label="recall")
    for t in cfg.transitions:
        ax.axvline(t, color="k", lw=0.8)
    ax.set(xlabel="denoising step", ylim=(0, 1.2), title=f"density {float(jnp.mean(masks)):.2f}")
    ax.legend()
    plt.show()


notebook.interact(show, live=False, budget=(0.125, 1.0, 0.0625), period=(1, cfg.num_steps), allocation=list(sim.ALLOCS))

# %% [markdown]
# ## Recompute
# Pick a preset and seed, change Config fields and press **recompute**: the simulation reruns (the quick preset
# takes seconds to a minute; nothing is written to `figures/`), and the figures and claims table below it are
# the new run's. `workbench run sparse_attention --help` explains each field.

# %%
nb.controls()

# %% [markdown]
# ## Claims
# `sim.claims` evaluated on the data shown above (the committed run; the table under **recompute** shows a
# recomputation's).

# %%
nb.show_claims()
