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

from models import corpus
from models import train as tr
from models.tiny_lm import TinyLM
from sims import river_valley_lm as sim
from sims.core import notebook, style
from theory import river_valley as rv

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
# The measured edges (largest grid lr before the first divergence) are printed beside them. A network is not a
# quadratic: its sharpness falls after large first steps (catapult), so GD survives well past `2/lambda(init)`,
# and heavy ball's effective step along flat directions is `lr/(1-beta)`, which is what blows up.

# %%
lam = float(nb.results["hessian"]["lambda_max"])
cfg = nb.cfg
for b, e in zip(cfg.betas, sim.edges(nb.results), strict=True):
    print(f"beta={b:4.2f}: quadratic edge lr = {float(rv.hb_threshold(lam, b)):.4f}, measured edge "
          f"{e * 2 / lam:.4f}  (= {e:.2f} x 2/lambda);  effective lr/(1-beta) at the edge {e * 2 / lam / (1 - b):.3f}")

# %% [markdown]
# ## Explore
# One SGD+momentum run on the quick model; move `lr` (units of `2/lambda_max`) and `beta`.

# %%
qc = sim.PRESETS["quick"]
model = TinyLM(qc.model, key=jax.random.key(0))
data = jnp.asarray(corpus.load_corpus(max_bytes=qc.corpus_bytes)[0])


def explore(lr_mult=1.5, beta=0.9, steps=60):
    opt = optax.sgd(lr_mult * 2 / lam, momentum=beta)
    run = jax.jit(lambda: tr.train_scan(model, opt, data, key=jax.random.key(1), steps=steps, batch_size=8))
    state, losses = run()
    fig, ax = style.figure(figsize=(6, 3.5))
    ax.plot(np.asarray(losses), label=f"lr={lr_mult:g} x 2/lambda, beta={beta:g}" +
            (" (diverged)" if bool(state[2]) else ""))
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
