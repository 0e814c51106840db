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
# # A tiny language model: train, sample, quantize to 4 bits, compare
#
# `models/` holds a tiny causal transformer (Equinox; RoPE, tied embeddings), a byte-level tokenizer and a corpus
# shipped with the project: the source of ~60 Python standard-library modules, committed xz-compressed
# (`models/data/stdlib_corpus.txt.xz`). Here we train it briefly, sample from it, and quantize its weights to
# NVFP4, RaZeR, MXFP4 and dithered-RHT 4-bit (`jaxwb.pallas_kernels.quant`), comparing perplexities as in
# `sims/tiny_lm/`.

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

import dataclasses

import jax
import matplotlib.pyplot as plt
import numpy as np

from jaxwb.models import corpus, tokenizer
from jaxwb.models import train as tr
from jaxwb.models.tiny_lm import num_params, replace_linear_weights, sample
from jaxwb.sims import tiny_lm as sim
from jaxwb.sims.core import notebook, style
from jaxwb.sims.core.presets import quick_from_env
from jaxwb.sims.tiny_lm.config import FORMATS
from jaxwb.sims.tiny_lm.quant import quantized_weights
from jaxwb.sims.tiny_lm.run import eval_loss
from jaxwb.sims.tiny_lm.tables import layer_table

QUICK = quick_from_env()
PRESET = "quick" if QUICK else "full"
cfg = sim.PRESETS[PRESET]

# %% [markdown]
# ## Quantize and compare
# The study: perplexity per format, RaZeR's reduction of NVFP4's perplexity loss beside the paper's 29.4%, the
# per-layer error table.
# The committed full-preset run, loaded from `figures/tiny_lm/data.npz` (no recomputation:
# opening takes seconds); `sim.plot` draws it. The **recompute** controls at the end rerun the simulation.

# %%
nb = notebook.open_result(sim)
nb.show()
print(layer_table(nb.results))

# %% [markdown]
# ## The model
# The sections below need the trained model. It is trained once per machine (minutes on two cores for the full
# preset; `workbench run tiny_lm` does it too) and cached outside git. Opening the notebook never trains: with
# no cached model, press **train the model** and then run the cells below again.

# %%
import ipywidgets as widgets
from IPython.display import display

# Headless (the suite's run, WORKBENCH_QUICK=1) the sections below explore a briefly trained model: the quick
# preset's models train for minutes on a cold cache. Opened by a person, they use the preset's model.
train_cfg = dataclasses.replace(cfg.train, steps=100, warmup=10) if QUICK else cfg.train
model_file = tr.cache_path(cfg.model, train_cfg)  # where trained_model caches it (first size, seed 0)
model = losses = x = y = fp = None
train_tok, val_tok = corpus.load_corpus(max_bytes=cfg.corpus_bytes)


def load_model(_=None):
    global model, losses, x, y, fp
    model, losses = tr.trained_model(cfg.model, train_cfg, desc="training")
    x, y = tr.eval_windows(val_tok, cfg.ctx, cfg.eval_windows)
    fp = float(np.exp(eval_loss(model, x, y)))
    print(f"{num_params(model):,} parameters; corpus {len(train_tok):,} training bytes")
    fig, ax = style.figure(figsize=(6, 3.5))
    ax.plot(np.asarray(losses), lw=0.8, label="training loss")
    ax.axhline(corpus.unigram_entropy(train_tok, val_tok), color="0.5", ls=":", label="unigram baseline")
    ax.set(xlabel="step", ylabel="cross-entropy (nats/byte)")
    ax.legend()
    plt.show()


if tr.is_cached(cfg.model, train_cfg) or QUICK:
    load_model()
else:
    train_out = widgets.Output()
    train_button = widgets.Button(description="train the model", button_style="warning", icon="cogs")

    def _train(_):
        train_button.disabled = True
        with train_out:
            load_model()
            print("trained and cached: run the cells below again")

    train_button.on_click(_train)
    print(f"no trained model cached on this machine ({model_file}); the sections below need it.")
    display(widgets.VBox([train_button, train_out]))

# %% [markdown]
# ## Sample

# %%
if model is None:
    print("(needs the trained model: see above)")
else:
    for temp in (0.5, 1.0):
        out = sample(model, tokenizer.encode("def "), 120 if not QUICK else 40, key=jax.random.key(0), temperature=temp)
        print(f"--- temperature {temp}\n{tokenizer.decode(out)}\n")

# %% [markdown]
# ## Explore: one format, one layer
# Quantize a single weight matrix and see its error and the perplexity cost.

# %%
names = [str(n) for n in nb.results["layer_names"]]


def explore(fmt="razer", layer=str(names[0])):
    q = quantized_weights(model, fmt, key=jax.random.key(0), rht_group=cfg.rht_group)
    ppl = float(np.exp(eval_loss(replace_linear_weights(model, {layer: q[layer]}), x, y)))
    print(f"{fmt} on {layer}: perplexity {ppl:.4f} (float32 {fp:.4f})")


if model is None:
    print("(needs the trained model: see above)")
else:
    notebook.interact(explore, live=False, fmt=list(FORMATS), layer=names)

# %% [markdown]
# ## Recompute
# Pick a preset and seed, change Config fields and press **recompute**: the simulation reruns (the quick preset is
# the full preset's d=64 models alone: about a minute with the shipped models, several minutes to train them first
# under another JAX version;
# nothing is written to `figures/`), and the figures and claims table below it are the new run's.
# `workbench run tiny_lm --help` explains each field.

# %%
nb.controls()

# %% [markdown]
# ## Claims
# `sim.claims` evaluated on the data `nb` holds: the committed run when the notebook opens, the latest
# recomputation once **recompute** was pressed (the title line says which: "committed ..." or "recomputed ...").
# Every perplexity the claims read is also recomputed by a float64 NumPy forward of the weights round-tripped by
# `theory.quantization.fp4_formats` (8 windows per model); MXFP4 against NVFP4 is claimed as the band the models
# support (-0.05 < MXFP4 - NVFP4 < 0.1 perplexity on the full preset's 10 models: its sign is not resolved).

# %%
nb.show_claims()
