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
# # River-valley momentum on a tiny language model
#
# The synthetic result (`notebooks/river_valley.py`) shows heavy ball stable up to `lr = 2(1+beta)/lambda`
# on a quadratic valley. Here the same question is asked of a real (tiny) causal transformer trained on the
# Python standard library's source (`models/`). We measure the sharpness `lambda_max` at initialisation by
# Lanczos on Hessian-vector products, train SGD with heavy ball over an `(lr, beta)` grid (one vmapped sweep,
# same init and batches for every point), and split a training trajectory into its component along the top
# Hessian eigen-directions (the valley) and the rest (the river).

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
import numpy as np
import optax

from jaxwb.models import corpus
from jaxwb.models import train as tr
from jaxwb.models.tiny_lm import TinyLM
from jaxwb.sims import river_valley_lm as sim
from jaxwb.sims.core import notebook, style
from jaxwb.sims.core.claims import mean_ci
from jaxwb.sims.river_valley_lm.claims import eos_sharpness, seed_edges
from jaxwb.sims.river_valley_lm.run import eos_rows

# %% [markdown]
# ## The study
# The committed full-preset run, loaded from `figures/river_valley_lm/data.npz` (no recomputation:
# opening takes seconds); `sim.plot` draws it. The **recompute** controls at the end rerun the simulation.

# %%
nb = notebook.open_result(sim)
nb.show()

# %% [markdown]
# ## What the quadratic theory predicts vs what the network does
# With `lambda_max` from Lanczos the quadratic edges are `2/lambda` (GD) and `2(1+beta)/lambda` (heavy ball).
# The measured edges are bisected in log lr for every (beta, seed) (mini-batch SGD, `steps` steps); below:
# geometric mean and 95% interval over seeds, in units of each seed's `2/lambda_max(init)`, raw and effective
# (`lr/(1-beta)`).

# %%
cfg = nb.cfg
ed = seed_edges(nb.results)
for b, e in zip(cfg.betas, ed, strict=True):
    m, h, n = mean_ci(np.log2(e))
    print(
        f"beta={b:4.2f}: quadratic edge 1+beta = {1 + b:.2f}; measured raw edge {2**m:6.2f} "
        f"[{2 ** (m - h):.2f}, {2 ** (m + h):.2f}] (n={n}); effective {2**m / (1 - b):7.2f}"
    )

# %% [markdown]
# ## Edge of stability
# Full-batch runs at `eos_mults x 2/lambda_max(init)`: GD, heavy ball at the same raw lr, heavy ball at the same
# effective lr. `lr * lambda_max(theta_t)` over the second half of each run (median per seed, mean and 95%
# interval over seeds) beside the quadratic edge `2(1+beta)`.

# %%
sh = eos_sharpness(nb.results, cfg)
for (label, b, _mult), row in zip(eos_rows(cfg), sh, strict=True):
    m, h, n = mean_ci(row)
    print(f"{label:40s} lr*lambda_max = {m:5.2f} +- {h:4.2f} (n={n}); quadratic edge 2(1+beta) = {2 * (1 + b):g}")

# %% [markdown]
# ## Explore
# One SGD+momentum run on the quick model; move `lr` (units of `2/lambda_max`) and `beta`.

# %%
qc = sim.PRESETS["quick"]
model = TinyLM(qc.model, key=jax.random.key(0))
data = jnp.asarray(corpus.load_corpus(max_bytes=qc.corpus_bytes)[0])


lam = float(nb.results["hessian"]["lambda_max"])


def explore(lr_mult=1.5, beta=0.9, steps=60):
    opt = optax.sgd(lr_mult * 2 / lam, momentum=beta)
    run = jax.jit(lambda: tr.train_scan(model, opt, data, key=jax.random.key(1), steps=steps, batch_size=8))
    state, losses = run()
    fig, ax = style.figure(figsize=(6, 3.5))
    ax.plot(
        np.asarray(losses),
        label=f"lr={lr_mult:g} x 2/lambda, beta={beta:g}" + (" (diverged)" if bool(state[2]) else ""),
    )
    ax.set(xlabel="step", ylabel="training loss (nats/byte)")
    ax.legend()


notebook.interact(explore, live=False, lr_mult=(0.1, 30.0, 0.1), beta=(0.0, 0.98, 0.02), steps=(20, 400, 20))

# %% [markdown]
# ## Recompute
# Pick a preset and seed, change Config fields and press **recompute**: the simulation reruns (the quick preset
# takes seconds to a minute; nothing is written to `figures/`), and the figures and claims table below it are
# the new run's. `workbench run river_valley_lm --help` explains each field.

# %%
nb.controls()

# %% [markdown]
# ## Claims
# `sim.claims` evaluated on the data `nb` holds: the committed run when the notebook opens, the latest
# recomputation once **recompute** was pressed (the title line says which: "committed ..." or "recomputed ...").

# %%
nb.show_claims()
