# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3

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
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
import optax
from IPython.display import Image, display

from models import corpus
from models import train as tr
from models.tiny_lm import TinyLM
from sims import river_valley_lm as sim
from sims.core import harness, style
from theory import river_valley as rv

QUICK = harness.quick_from_env()
PRESET = "quick" if QUICK else "full"

# %% [markdown]
# ## The study
# `quick` under CI (a 1-layer model, 60 steps per grid point); `full` is the committed figure.

# %%
out = tempfile.mkdtemp(prefix="river_valley_lm_")
outcome = harness.execute(sim, preset=PRESET, seed=0, out_dir=out)
for name in ("lr_beta_grid", "decomposition"):
    display(Image(filename=f"{out}/{name}.png"))

# %% [markdown]
# ## What the quadratic theory predicts vs what the network does
# With `lambda_max` from Lanczos the quadratic edges are `2/lambda` (GD) and `2(1+beta)/lambda` (heavy ball).
# The measured edges (largest grid lr before the first divergence) are printed beside them. A network is not a
# quadratic: its sharpness falls after large first steps (catapult), so GD survives well past `2/lambda(init)`,
# and heavy ball's effective step along flat directions is `lr/(1-beta)`, which is what blows up.

# %%
lam = float(outcome.results["hessian"]["lambda_max"])
cfg = sim.PRESETS[PRESET]
for b, e in zip(cfg.betas, sim.edges(outcome.results), strict=True):
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
    run = jax.jit(lambda: tr.train_scan(model, opt, data, jax.random.key(1), steps=steps, batch_size=8))
    state, losses = run()
    fig, ax = style.figure(figsize=(6, 3.5))
    ax.plot(np.asarray(losses), label=f"lr={lr_mult:g} x 2/lambda, beta={beta:g}" +
            (" (diverged)" if bool(state[2]) else ""))
    ax.set(xlabel="step", ylabel="training loss (nats/byte)")
    ax.legend()


if QUICK:
    explore()
else:
    import ipywidgets as widgets

    widgets.interact(explore, lr_mult=(0.1, 30.0, 0.1), beta=(0.0, 0.98, 0.02), steps=(20, 400, 20))

# %% [markdown]
# ## Claims

# %%
print(harness.format_claims(sim.NAME, outcome.claims))
