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
# # River-valley momentum
#
# *Towards understanding momentum acceleration in river-valley loss landscapes* (2026). A loss with a flat
# low-loss direction (the **river**, curvature `mu`) bordered by sharp walls (the **valley**, curvature `lam`,
# `mu << lam`). Gradient descent must keep `lr < 2/lam` or it bounces out of the valley, so it crawls along
# the river at speed `lr * g < 2 g / lam`. Heavy ball `x+ = x - lr grad + beta (x - x_prev)` is stable up to
# `lr < 2(1+beta)/lam` and moves along the river with effective rate `lr/(1-beta)`: its largest stable river
# speed is `(1+beta)/(1-beta)` times GD's (19x at `beta = 0.9`).
#
# Everything here calls `theory/river_valley.py` (closed forms, optimisers) and `sims/river_valley/` (the
# figures and claims of `workbench run river_valley`).

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
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

from jaxwb.sims import river_valley as sim
from jaxwb.sims.core import notebook, style
from jaxwb.theory import river_valley as rv

# %% [markdown]
# ## The closed forms
# Stability thresholds and the river-speed gain, straight from the theory module.

# %%
lam, mu = 100.0, 0.01
for beta in (0.0, 0.5, 0.9, 0.95):
    print(
        f"beta={beta:4.2f}  HB lr* = {float(rv.hb_threshold(lam, beta)):.4f}   "
        f"Nesterov lr* = {float(rv.nesterov_threshold(lam, beta)):.4f}   "
        f"river-speed gain = {float(rv.river_speed_gain(beta)):5.1f}x"
    )
g = rv.hb_guidance(lam, mu)
print(
    f"guidance for lam={lam}, mu={mu}: lr={float(g.lr):.4f}, beta={float(g.beta):.3f}, "
    f"river rate {float(g.river_rate):.2e}/step vs GD {float(g.gd_river_rate):.2e}/step"
)

# %% [markdown]
# ## The simulation
# The committed full-preset run, loaded from `figures/river_valley/data.npz` (no recomputation:
# opening takes seconds); the figures are the committed PNGs `sim.plot` drew from it (checked against the
# manifest's hashes). The **recompute** controls at the end rerun the simulation and redraw.

# %%
nb = notebook.open_result(sim)
nb.show()

# %% [markdown]
# ## Explore
# Heavy ball vs GD on a curved valley. Move the sliders: past `lr = 2/lam` GD diverges; heavy ball survives
# up to `2(1+beta)/lam`, and the river progress (right) speeds up by about `(1+beta)/(1-beta)` while the river
# mode stays overdamped.


# %%
def explore(lr_over_gd_limit=1.5, beta=0.9, curvature_lam=100.0, bend_a=1.0, steps=300):
    valley = rv.curved_valley(0.1, curvature_lam, bend_a, 0.3)
    lr = lr_over_gd_limit * 2.0 / curvature_lam
    start = jnp.array([-3.0, bend_a * np.sin(-0.9) + 0.05])
    fig, (ax, ax2) = style.figure(1, 2, figsize=(10, 3.8))
    for name, b in (("GD", 0.0), (f"HB beta={beta:.2f}", beta)):
        traj, diverged = rv.optimize(valley, start, lr=lr, beta=b, steps=steps)
        traj = np.asarray(traj)
        shown = traj[:15] if bool(diverged) else traj
        ax.plot(shown[:, 0], shown[:, 1], label=name + (" (diverged)" if bool(diverged) else ""))
        ax2.semilogy(np.abs(traj[:, 0]) + 1e-12, label=name)
    ax.set(
        xlim=(-3.5, 1),
        ylim=(-2.5, 2.5),
        xlabel="river x",
        ylabel="valley y",
        title=f"lr = {lr:.4f}; HB limit 2(1+beta)/lam = {float(rv.hb_threshold(curvature_lam, beta)):.4f}",
    )
    ax2.set(xlabel="step", ylabel="|x - x*|", title="progress along the river")
    ax.legend()
    ax2.legend()
    plt.show()


notebook.interact(
    explore,
    lr_over_gd_limit=(0.2, 2.0, 0.05),
    beta=(0.0, 0.98, 0.01),
    curvature_lam=(10.0, 400.0, 10.0),
    bend_a=(0.0, 2.0, 0.1),
    steps=(50, 1000, 50),
)

# %% [markdown]
# ## Recompute
# Pick a preset and seed, change Config fields and press **recompute**: the simulation reruns (the quick preset
# takes seconds to a minute; nothing is written to `figures/`), and the figures and claims table below it are
# the new run's. `workbench run river_valley --help` explains each field.

# %%
nb.controls()

# %% [markdown]
# ## Claims
# `sim.claims` evaluated on the data `nb` holds: the committed run when the notebook opens, the latest
# recomputation once **recompute** was pressed (the title line says which: "committed ..." or "recomputed ...").

# %%
nb.show_claims()
