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
# Lanczos on Hessian-vector products, bisect the divergence edge of SGD with heavy ball per (beta, seed), track
# `lambda_max` along full-batch runs, train over an `(lr, beta)` grid, and split a training trajectory into its
# component along the top Hessian eigen-directions (the valley) and the rest (the river).
#
# **This is a negative replication.** On this model momentum *narrows* the stable raw learning rate (the paper:
# it widens it by `1+beta`), the river-speed gain at the edge is far below `(1+beta)/(1-beta)`, GD and heavy ball
# settle at the same `lr * lambda_max` (not `2` and `2(1+beta)`), and the top of the Hessian spectrum has no
# valley/river gap. In the full preset (15 seeds, 95% intervals) the divergence edges are 10.4 (GD), 7.1 (beta 0.5)
# and 3.8 (beta 0.9) times `2/lambda_max(init)`; the river-speed gain at the edge is 1.37x and 3.65x (the paper: 3
# and 19); at the edge of stability `lr * lambda_max` is 3.6 +- 0.5 for GD and 3.7 +- 0.6 for heavy ball beta 0.5
# (quadratic: 2 and 3); the largest ratio of consecutive top-20 eigenvalues is 1.28 +- 0.05 (a gap: >= 2). A width
# scan (`d_model` 16, 32, 64) finds no regime where the paper's picture appears (heavy ball's edge about half of
# GD's, no gap, at every width). The
# pipeline is checked against an independent float64 NumPy reference of the model (loss, logits, targets,
# curvature, a dense eigendecomposition, a bisected edge and three training runs repeated), so the disagreements
# are the model's, not the code's. The numbers: `docs/papers/river_valley_lm.md` and the cells below.

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
from jaxwb.sims.river_valley_lm.measures import eos_sharpness, largest_gap, log2_edge_ratios, seed_edges
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
# ## The pipeline against the float64 NumPy reference
# `models/reference_np.py` is the tiny LM written again in float64 NumPy from its description (forward pass,
# loss, a hand-written gradient); `sims/river_valley_lm/reference.py` uses it to recompute the run's own numbers.
# Each line is one passing claim (largest gap against its tolerance).

# %%
rf = nb.results["reference"]
print(f"targets misaligned: {int(rf['target_mismatch'])} of {int(rf['target_bytes'])} bytes")
z, zr = np.asarray(rf["logits_run"], np.float64), np.asarray(rf["logits"])
print(f"logits: largest gap / largest logit {np.max(np.abs(z - zr)) / np.max(np.abs(zr)):.2g}")
spec0 = np.asarray(nb.results["hessian"]["spectrum"], np.float64)[0]
print(f"seed 0's top-{spec0.size} Ritz values vs the reference's curvature along their vectors: "
      f"{np.max(np.abs(spec0 - rf['rayleigh_seed0'])) / spec0[0]:.2g} of lambda_max")  # fmt: skip
lz, eg = np.asarray(rf["small_lanczos"], np.float64), np.asarray(rf["small_eigh"])
print(f"small model ({int(rf['small_n_params'])} parameters): Lanczos top {cfg.top_k} {np.round(lz[: cfg.top_k], 4)}, "
      f"eigh {np.round(eg[: cfg.top_k], 4)}")  # fmt: skip
for b, e in zip(cfg.betas, rf["small_quadratic_edge"], strict=True):
    print(f"  beta={b:g}: simulated quadratic edge x lambda_max = {e * eg[0]:.5f} (2(1+beta) = {2 * (1 + b):g})")
j0 = cfg.betas.index(0.0)
print(f"GD's edge, seed 0: run [{float(nb.results['edges']['lo'][j0, 0]):.3f}, "
      f"{float(nb.results['edges']['hi'][j0, 0]):.3f}], reference [{float(rf['edge']['lo']):.3f}, "
      f"{float(rf['edge']['hi']):.3f}] x 2/lambda_max")  # fmt: skip

# %% [markdown]
# ## Where would the paper's picture appear? The width scan
# At each width, heavy ball's (beta = `scan_beta`) raw-lr edge over GD's (the paper: `1+beta`) and the largest
# ratio of consecutive top eigenvalues at init (a valley/river gap: `>= 2`); the study's own width from its main
# parts.

# %%
sc = nb.results["scan"]
lo, hi = np.asarray(sc["lo"], np.float64), np.asarray(sc["hi"], np.float64)
edge = np.where(np.asarray(sc["lo_ok"]), np.sqrt(lo * hi), np.nan)
edge = np.where(np.asarray(sc["hi_div"]), edge, np.inf)
rows = {int(w): (np.log2(edge[i, 1] / edge[i, 0]), largest_gap(sc["spectrum"][i])) for i, w in enumerate(sc["width"])}
rows[cfg.d_model] = (log2_edge_ratios(nb.results, cfg)[cfg.scan_beta], largest_gap(nb.results["hessian"]["spectrum"]))
for w in sorted(rows):
    (m, h, n), (g, gh, _) = mean_ci(rows[w][0]), mean_ci(rows[w][1])
    print(f"d_model={w:3d}: edge(beta={cfg.scan_beta:g})/edge(GD) = {2**m:.2f} (log2 {m:+.2f} +- {h:.2f}, n={n}; "
          f"paper {1 + cfg.scan_beta:g}); largest gap {g:.2f} +- {gh:.2f} (a gap: >= 2)")  # fmt: skip

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
