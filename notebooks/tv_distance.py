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
# # TV distance between autoregressive models
#
# Two autoregressive models $P$ and $Q$ over length-$n$ sequences of $K$ tokens. How far apart are they in
# total variation, $\mathrm{TV}(P,Q)=\tfrac12\sum_x |P(x)-Q(x)|$, when we can only query them?
#
# * **Logit access** (exact next-token log-probs on any prefix). With $L(x)=\log P(x)/Q(x)$ and
#   $x\sim P$, $Z=(1-e^{-L})_+\in[0,1]$ has $\mathbb E Z=\mathrm{TV}$ and $\mathrm{Var}\,Z\le\mathrm{TV}$.
#   Hoeffding: $m=\lceil\ln(2/\delta)/(2\varepsilon^2)\rceil$ sequences, i.e. $O(n/\varepsilon^2)$ queries.
#   Variants: the symmetric mixture estimator $|\tanh(L/2)|$ and a Rao-Blackwellised last step.
# * **Sample access** (only samples of the next token): estimate $p_t(x_t)$ from $s$ samples; this behaves
#   like noisy logits with $\sigma^2\sim K/s$, and the paper's rate is $\tilde O(n^2K/\varepsilon^2)$.
# * **Noisy logits** ($\sigma$ noise on log-probs): the plug-in is biased by up to $\sigma\sqrt{2n/r}$;
#   we add a SIMEX correction (extrapolation in the noise variance with the closed-form Gaussian smoothing).
#
# The estimators live in `theory/tv_distance/`; the simulation in `sims/tv_distance/`.

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
import numpy as np

from jaxwb.sims import tv_distance as sim
from jaxwb.sims.core import notebook
from jaxwb.sims.core.presets import quick_from_env
from jaxwb.theory import tv_distance as tv

quick = quick_from_env()
nb = notebook.open_result(sim)  # the committed run (figures/tv_distance/data.npz), not a recomputation

# %% [markdown]
# ## Error vs number of queries
# Logit access follows $\varepsilon\approx\sqrt{n/Q}$; sample access and noisy logits pay for the noise in the
# estimated log-ratio: their curves flatten at the estimator's bias until $s$ (or $r$) grows.

# %%
nb.show("errors_vs_queries")

# %% [markdown]
# ## Queries to reach $\varepsilon$ vs $n$
# With TV held roughly fixed, logit access needs $2n\,\mathrm{Var}\,Z(n)/\varepsilon^2$ queries and sample
# access $\propto n^2$ (the noise of the log-ratio grows like $nK/s$, so $s$ must grow like $n$). The paper's
# $O(n/\varepsilon^2)$ is an upper bound: in this family $\mathrm{Var}\,Z(n)$ still moves with $n$ (the
# Rao-Blackwellised step removes more of it at small $n$), so the measured logit slope is 0.8-1.2 depending on
# the random pair; the claim compares it with the slope of the exact $\mathrm{Var}\,Z(n)$ (dotted: the law of
# $L$ along the chain on a fine grid), and the bound $\le 2n\,\mathrm{TV}(1-\mathrm{TV})/\varepsilon^2$ holds
# at every $n$.
#
# Coverage (right figure): at the Hoeffding $m$ every unbiased estimator in $[0,1]$ lands within $\varepsilon$
# almost always, so the claim is the sharper CLT one, $|T-\mathrm{TV}|\le z_{1-\delta/2}\sqrt{\mathrm{Var}\,Z/m}$
# in $1-\delta$ of repetitions with the exact variance. The stated 95% intervals of sample access are claimed
# from $s=64$ on: with fewer samples the log-ratio of counts is shrunk toward 0, a bias the interval's bias
# estimate does not see (shown, not claimed).

# %%
nb.show("queries_vs_n", "coverage")

# %% [markdown]
# ## Queries to reach $\varepsilon$ vs the vocabulary $K$ (sample access)
# At fixed $n$ ($n=8$, $K=2..128$ in the full preset; $n=4$, $K=2, 16$ in the quick one), a new random Markov
# pair per $K$ and seed: the paper's $\tilde O(n^2K/\varepsilon^2)$ says the sample-access cost grows like $K$.
# The estimated $p_t(x_t)$ has mean relative variance $(K-1)/s$, so the plug-in's bias is nearly a function of
# $s/(n(K-1))$ (middle: the curves of $K=4..128$ nearly collapse; $K=2$ sits about 2x to the right) and the $s$
# needed grows like $K-1$. SIMEX's bias changes sign at $s\sim K$, so its cost is not a rate (not claimed).

# %%
nb.show("queries_vs_K")

# %% [markdown]
# ## TV vs KL when the supports separate, and two engines of one model
# KL grows without bound while TV saturates at 1; the TV estimator's spread is bounded by Hoeffding at every
# separation. Then: TV between float32 and bfloat16 compute of one random tiny transformer.

# %%
nb.show("tv_vs_kl", "engines")

# %% [markdown]
# ## Explore: a random Markov pair
# Sliders: sequence length `n`, vocabulary `K`, logit noise `sigma`, and the perturbation size between
# P and Q.
# Exact TV by enumeration (kept to K^n <= 4096), against the logit, sample and noisy-logit estimates.

# %%
import ipywidgets as widgets


def explore(n=4, K=3, sigma=0.3, perturbation=0.7, s=64, m=4096):
    k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
    p = tv.random_ngram(K, 1, 1.0, key=k1)
    q = tv.perturb(p, perturbation, key=k2)
    exact = float(tv.exact_tv(p, q, n)) if K**n <= 4096 else float("nan")
    kl = float(tv.exact_kl(p, q, n)) if K**n <= 4096 else float("nan")
    rows = [
        ("logit plain", tv.tv_logit(p, q, n, m, "plain", key=k3)),
        ("logit mixture", tv.tv_logit(p, q, n, m, "mixture", key=k3)),
        ("logit RB", tv.tv_logit(p, q, n, m, "rb", key=k3)),
        (f"sample s={s} (SIMEX)", tv.tv_sample(p, q, n, m, s, key=k3)),
        (f"noisy sigma={sigma} plugin", tv.tv_noisy_logit(p, q, n, m, sigma, 1, "plugin", key=k3)),
        (f"noisy sigma={sigma} SIMEX", tv.tv_noisy_logit(p, q, n, m, sigma, 1, "simex", key=k3)),
    ]
    print(f"exact TV = {exact:.4f}, KL = {kl:.4f}, Pinsker sqrt(KL/2) = {np.sqrt(kl / 2):.4f}")
    for name, e in rows:
        print(f"{name:<28} {float(e.value):.4f} +- {2 * float(e.stderr):.4f}   ({e.queries} queries)")


notebook.interact(
    explore,
    live=False,
    n=widgets.IntSlider(4, 1, 8),
    K=widgets.IntSlider(3, 2, 4),
    sigma=widgets.FloatSlider(0.3, min=0.0, max=1.0, step=0.05),
    perturbation=widgets.FloatSlider(0.7, min=0.0, max=3.0, step=0.1),
    s=widgets.IntSlider(64, 4, 1024),
    m=widgets.fixed(4096 if not quick else 1024),
)

# %% [markdown]
# ## Recompute
# Pick a preset and seed, change Config fields and press **recompute**: the simulation reruns (the quick preset
# takes seconds to a minute; nothing is written to `figures/`), and the figures and claims table below it are
# the new run's. `workbench run tv_distance --help` explains each field.

# %%
nb.controls()

# %% [markdown]
# ## Claims
# `sim.claims` evaluated on the data `nb` holds: the committed run when the notebook opens, the latest
# recomputation once **recompute** was pressed (the title line says which: "committed ..." or "recomputed ...").

# %%
nb.show_claims()
