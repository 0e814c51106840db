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
# # A tiny language model: train, sample, quantize to 4 bits, compare
#
# `models/` holds a tiny causal transformer (Equinox; RoPE, tied embeddings), a byte-level tokenizer and a corpus
# shipped with the project: the source of ~60 Python standard-library modules, committed xz-compressed
# (`models/data/stdlib_corpus.txt.xz`). Here we train it briefly, sample from it, and quantize its weights to
# NVFP4, RaZeR, MXFP4 and dithered-RHT 4-bit (`pallas_kernels.quant`), comparing perplexities as in
# `sims/tiny_lm.py`.

# %%
import tempfile

import jax
import numpy as np
from IPython.display import Image, display

from models import corpus, tokenizer
from models import train as tr
from models.tiny_lm import num_params, replace_linear_weights, sample
from sims import tiny_lm as sim
from sims.core import harness, style

QUICK = harness.quick_from_env()
PRESET = "quick" if QUICK else "full"
cfg = sim.PRESETS[PRESET]

# %% [markdown]
# ## Train (or load from the cache outside git)

# %%
model, losses = tr.trained_model(cfg.model, cfg.train, desc="training")
train_tok, val_tok = corpus.load_corpus(max_bytes=cfg.corpus_bytes)
print(f"{num_params(model):,} parameters; corpus {len(train_tok):,} training bytes")
fig, ax = style.figure(figsize=(6, 3.5))
ax.plot(np.asarray(losses), lw=0.8, label="training loss")
ax.axhline(corpus.unigram_entropy(train_tok, val_tok), color="0.5", ls=":", label="unigram baseline")
ax.set(xlabel="step", ylabel="cross-entropy (nats/byte)")
ax.legend()

# %% [markdown]
# ## Sample

# %%
for temp in (0.5, 1.0):
    out = sample(model, tokenizer.encode("def "), 120 if not QUICK else 40, key=jax.random.key(0), temperature=temp)
    print(f"--- temperature {temp}\n{tokenizer.decode(out)}\n")

# %% [markdown]
# ## Quantize and compare
# The study: perplexity per format, RaZeR's reduction of NVFP4's perplexity loss beside the paper's 29.4%, the
# per-layer error table.

# %%
outdir = tempfile.mkdtemp(prefix="tiny_lm_")
outcome = harness.execute(sim, preset=PRESET, seed=0, out_dir=outdir)
for name in ("perplexity", "layer_errors"):
    display(Image(filename=f"{outdir}/{name}.png"))
print(sim.layer_table(outcome.results))

# %% [markdown]
# ## Explore: one format, one layer
# Quantize a single weight matrix and see its error and the perplexity cost.

# %%
x, y = tr.eval_windows(val_tok, cfg.ctx, cfg.eval_windows)
fp = float(np.exp(sim._eval(model, x, y)))
names = list(outcome.results["layer_names"])


def explore(fmt="razer", layer=str(names[0])):
    q = sim.quantized_weights(model, fmt, key=jax.random.key(0), rht_group=cfg.rht_group)
    ppl = float(np.exp(sim._eval(replace_linear_weights(model, {layer: q[layer]}), x, y)))
    print(f"{fmt} on {layer}: perplexity {ppl:.4f} (float32 {fp:.4f})")


if QUICK:
    explore()
else:
    import ipywidgets as widgets

    widgets.interact(explore, fmt=list(sim.FORMATS), layer=[str(n) for n in names])

# %% [markdown]
# ## Claims

# %%
print(harness.format_claims(sim.NAME, outcome.claims))
