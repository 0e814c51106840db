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
# # Consistency distillation and memorisation (reconstruction)
#
# *Consistency distillation and memorisation* (seed abstract, NeurIPS 2026) reports that distilling a diffusion
# model that memorised its data gives a student that copies far less and samples as well or better; in the
# random-feature score model of Bonnaire, Urfin, Biroli & Mezard (*Why Diffusion Models Don't Memorize*, NeurIPS
# 2025, arXiv 2505.17638) distillation "suppresses unstable feature directions associated with memorisation while
# preserving stable, generalisable modes". The distillation paper's equations are not public: the loss and the
# prediction here are **our reconstruction**.
#
# The model: data $N(0, I_d)$, score $s_A(x) = A\,\sqrt2\sin(Wx/\sqrt d + b)/\sqrt p$ with $W, b$ fixed, one readout
# $A$ per diffusion time. The denoising loss is quadratic in $A$ and its noise average is exact, so gradient
# descent relaxes each eigen-direction $j$ of the feature Gram matrix $U_n$ of the training set on its own
# timescale $1/(\mathrm{lr}\,\lambda_j)$: fast population directions first (generalisation, $\tau_{gen}$ constant
# in $n$), slow directions tied to the $n$ training points later (memorisation, $\tau_{mem} \propto n$).
# Consistency distillation fits the student's one-step probability-flow map to the teacher's on noised training
# points; the loss's Hessian is the teacher's own $U_n$, so after $K$ steps the student keeps the fraction
# $r_j = 1 - (1 - \mathrm{lr}\,\lambda_j)^K$ of each teacher direction: the fast ones, not the slow ones.
#
# Everything here calls `theory/distillation/` and `sims/distillation/` (the figures and claims of
# `workbench run distillation`).

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
import ipywidgets as widgets
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

from jaxwb.sims import distillation as sim
from jaxwb.sims.core import notebook, style
from jaxwb.theory import distillation as dm

# %% [markdown]
# ## The closed forms
# The Gaussian-equivalent constants of the feature and the two timescales they predict (in GD steps at lr = 1/p).

# %%
d, t = 8, 0.3
ge = {k: float(v) for k, v in dm.gaussian_equivalent(t).items()}
print("Gaussian-equivalent constants at t = 0.3:", {k: round(v, 4) for k, v in ge.items()})
for p in (128, 512):
    tg, tm = dm.predicted_timescales(np.array([8.0, 16.0, 32.0, 64.0]), p, d, t, 1.0 / p)
    print(f"p = {p}: tau_gen = {float(tg[0]):.1f} steps; tau_mem(n = 8, 16, 32, 64) = {np.round(np.asarray(tm), 0)}")

# %% [markdown]
# ## The simulation
# The committed full-preset run, loaded from `figures/distillation/data.npz` (no recomputation: opening takes
# seconds); the figures are the committed PNGs `sim.plot` drew from it (checked against the manifest's hashes).
# The **recompute** controls at the end rerun the simulation and redraw.

# %%
nb = notebook.open_result(sim)
nb.show()

# %% [markdown]
# ## Explore: which directions does the student keep?
# A teacher trained for $10^{\log_{10} T}$ GD steps on $n$ points with $p$ features, and the expected student
# after $K$ consistency-distillation steps (eq. student: $A_T Q\,\mathrm{diag}(r)\,Q^T$). Left: the retention
# $r_j$ against $\mathrm{lr}\,\lambda_j$ with the teacher's eigenvalues (ticks, all grid times); right: samples of
# both beside the training points, with their copy fractions ($d_1/d_2 < 1/3$) and energy distances to fresh data.
# Press **recompute** (a new shape compiles first).


# %%
def explore(n=8, p=128, distill_steps=200, log10_teacher_steps=5.0, seed=0):
    with jax.enable_x64(True):
        key = jax.random.key(seed)
        rf = dm.init_features(d, p, key=key)
        X = jax.random.normal(jax.random.fold_in(key, 1), (n, d))
        thetas = jnp.linspace(0.05, 1.2, 8)
        lr = 1.0 / p
        teacher, student, lams = [], [], []
        for th in thetas:
            tt = dm.time_of_angle(th)
            lam, Q, C = dm.spectral_solution(*dm.train_moments(rf, X, tt), tt)
            A_T = (C * dm.gd_filter(lam, 10.0**log10_teacher_steps, lr)) @ Q.T
            r = dm.predicted_retention(lam, steps=int(distill_steps), lr=lr)
            teacher.append(A_T)
            student.append(((A_T @ Q) * r) @ Q.T)
            lams.append(np.asarray(lam))
        z, ref = (jax.random.normal(jax.random.fold_in(key, i), (512, d)) for i in (2, 3))
        out = {}
        for name, As in (("teacher", teacher), ("student", student)):
            s = dm.pf_ode_sample(jnp.stack(As), rf, thetas, z)
            out[name] = (np.asarray(s), float(dm.copy_fraction(s, X)), float(dm.energy_distance(s, ref)))
    fig, axes = style.figure(1, 3, figsize=(14, 4.0))
    x = np.logspace(-9, 0, 300)
    axes[0].semilogx(
        x, 1 - (1 - x) ** int(distill_steps), **style.prediction(), label=f"r = 1 - (1 - x)^{distill_steps}"
    )
    allx = lr * np.concatenate(lams)
    axes[0].plot(allx[allx > 1e-9], np.full(np.sum(allx > 1e-9), -0.05), "|", color="tab:blue", alpha=0.3)
    axes[0].axvline(10.0**-log10_teacher_steps, color="tab:red", ls=":", label="teacher learned right of this")
    axes[0].set(xlabel="lr x eigenvalue (teacher's Gram)", ylabel="fraction kept by the student", ylim=(-0.1, 1.05))
    axes[0].legend(fontsize=8)
    for ax, name in zip(axes[1:], ("teacher", "student"), strict=True):
        s, copy, energy = out[name]
        ax.plot(s[:, 0], s[:, 1], ".", ms=2, alpha=0.5)
        ax.plot(np.asarray(X)[:, 0], np.asarray(X)[:, 1], "x", color="tab:red", ms=8, mew=2)
        ax.set(
            xlim=(-4, 4),
            ylim=(-4, 4),
            xlabel="coordinate 1",
            ylabel="coordinate 2",
            title=f"{name}: copy fraction {copy:.2f}, energy distance {energy:.3f}",
        )
    plt.show()


notebook.interact(
    explore,
    live=False,
    n=widgets.IntSlider(value=8, min=4, max=128, step=4),
    p=widgets.IntSlider(value=128, min=32, max=512, step=32),
    distill_steps=widgets.IntSlider(value=200, min=0, max=20000, step=100),
    log10_teacher_steps=widgets.FloatSlider(value=5.0, min=1.0, max=7.0, step=0.5),
    seed=widgets.IntSlider(value=0, min=0, max=20),
)

# %% [markdown]
# ## What to take away
# * The teacher's training is linear in the Gram eigenbasis: the population directions relax in ~e d steps
#   whatever n, the training-set directions in ~n / v_t^2 steps; training far past tau_mem makes the samples copy.
# * Distillation for K steps transfers a direction in proportion to 1 - (1 - lr lam)^K: a short budget keeps what
#   the teacher learned early (generalisation) and drops what it learned late (memorisation). With K as long as
#   the teacher's training the student copies again: here distillation is early stopping in the teacher's
#   eigenbasis (our reading of the paper's "unstable directions").

# %% [markdown]
# ## Recompute
# Pick a preset and seed, change Config fields and press **recompute**: the simulation reruns (the quick preset
# takes about a minute, most of it compiling; nothing is written to `figures/`), and the figures and claims table
# below it are the new run's. `workbench run distillation --help` explains each field.

# %%
nb.controls()

# %% [markdown]
# ## Claims
# `sim.claims` evaluated on the data `nb` holds: the committed run when the notebook opens, the latest
# recomputation once **recompute** was pressed (the title line says which).

# %%
nb.show_claims()
