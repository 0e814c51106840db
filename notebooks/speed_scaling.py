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
# # Online speed scaling with predictions
#
# Jobs $j$ arrive at $r_j$ with work $w_j$ and must finish by $d_j$; running at speed $s$ costs power
# $s^\alpha$.
# The offline optimum is **YDS** (repeatedly run the densest interval at its density). Online, **AVR**,
# **OA**,
# **qOA** and **BKP** are $O(1)$-competitive (OA: $\alpha^\alpha$).
#
# With predictions we can do better:
# * **LAS** (Bamas et al. 2020) uses predicted *workloads*: it follows YDS of the prediction on windows shrunk
# by
#   $\delta$ and smooths the result ("robustify"), $((1+\delta)/(1-\delta))^\alpha = 1+\epsilon$.
# * **SP** (machine-speed predictions) uses a predicted *speed profile* $\hat s(t)$: follow it (with OA on its
#   own pending work as a floor), clipped between a per-job reserve and $\kappa\,\mathrm{AVR}(t)$,
#   $\kappa = \alpha/\epsilon$. Any $\hat s$ gives $\le \kappa^\alpha E(\mathrm{AVR})$: that holds by the
#   clip whatever the prediction logic does, so it is a unit test, not a claim. The claims say what the clip does:
#   without it, pure following of the adversarial predictions costs up to ~500x $\kappa^\alpha E(\mathrm{AVR})$
#   at $\kappa = 1.5$ (all of a window's predicted work in one slot); with it, the cap binds exactly in the slots
#   where OPT's speed (exact prediction) or 10x OPT's exceeds $\kappa\,\mathrm{AVR}(t)$, which YDS and the
#   exact AVR profile predict (never at $\kappa \ge \max_t \mathrm{OPT}(t)/\mathrm{AVR}(t) \approx 16$-$20$).
#   The worst adversarial ratio does not grow with the number of jobs (`robust_n.png`); pure following of an
#   exact $\hat s$ gives OPT, the clip costs a little consistency.
#
# SP is our reconstruction (the paper's text is not public); see `theory/speed_scaling/sp.py`.

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
import matplotlib.pyplot as plt

from jaxwb.sims import speed_scaling as sim
from jaxwb.sims.core import notebook, style
from jaxwb.theory import speed_scaling as ss

nb = notebook.open_result(sim)  # the committed run (figures/speed_scaling/data.npz), not a recomputation

# %% [markdown]
# ## Figures
# Ratio vs prediction error (one curve per $\epsilon$, SP's trust factor $\kappa = \alpha/\epsilon$), the speed
# profiles on one instance, robustness under
# adversarial predictions, LAS's experiment beside the published means, and AVR's lower-bound family.
# The committed full-preset run, loaded from `figures/speed_scaling/data.npz` (no recomputation:
# opening takes seconds); `sim.plot` draws it. The **recompute** controls at the end rerun the simulation.

# %%
nb.show()

# %% [markdown]
# ## Try it: one instance, your $\alpha$, $\epsilon$ and prediction noise
# Energy / OPT of SP (dynamic and offline; $\epsilon$ sets both LAS's shrink and SP's
# $\kappa = \alpha/\epsilon$) with a noisy speed prediction
# $\hat s = s^* e^{\sigma z - \sigma^2/2}$, of LAS with workloads perturbed by the same relative noise, and of
# OA.

# %%
N_JOBS, WINDOW, SUB = 40, 20, 2
DT, N_SLOTS = 1.0 / SUB, (N_JOBS + WINDOW) * SUB
r, d, w = ss.las_instance(N_JOBS, WINDOW, key=jax.random.key(0))
opt_res = ss.yds(r, d, w)
s_opt = ss.profile_on_grid(opt_res.profile, N_SLOTS, DT)


def explore(alpha=3.0, eps=0.5, noise=0.2):
    key = jax.random.key(1)
    opt = float(ss.energy(opt_res.profile, alpha))
    s_hat = ss.predict_speed(s_opt, "noisy", noise, key=key)
    w_hat = ss.predict_work(w, "accurate", noise, key=key)
    rows = {
        **{
            f"SP {m}": ss.speed_prediction_schedule(r, d, w, s_hat, alpha=alpha, mode=m, eps=eps, dt=DT)
            for m in ss.SP_MODES
        },
        "LAS": ss.las(r, d, w, w_hat, eps=eps, alpha=alpha, n_slots=N_SLOTS, dt=DT),
        "OA": ss.oa(r, d, w, n_slots=N_SLOTS, dt=DT),
    }
    fig, ax = style.figure(figsize=(8, 3.5))
    t = jax.numpy.arange(N_SLOTS + 1) * DT
    ax.stairs(s_opt, t, color="black", lw=2, label="OPT")
    ax.stairs(s_hat, t, color="0.6", lw=0.8, label="prediction")
    for name, sched in rows.items():
        ratio = float(ss.energy(sched.profile, alpha)) / opt
        ax.stairs(sched.profile.speed, t, lw=1.1, label=f"{name}: E/OPT = {ratio:.3f}")
    err = float(ss.prediction_error(s_hat, s_opt, alpha))
    ax.set(
        xlabel="time",
        ylabel="speed",
        title=f"alpha={alpha:g}, eps={eps:g} (SP kappa={ss.sp_kappa(eps, alpha):g}), speed-prediction error {err:.2f}",
    )
    ax.legend(fontsize=7, ncol=2)
    plt.show()


notebook.interact(explore, live=False, alpha=(1.5, 4.0, 0.5), eps=(0.05, 2.0, 0.05), noise=(0.0, 2.0, 0.1))

# %% [markdown]
# ## Recompute
# Pick a preset and seed, change Config fields and press **recompute**: the simulation reruns (the quick preset
# takes seconds to a minute; nothing is written to `figures/`), and the figures and claims table below it are
# the new run's. `workbench run speed_scaling --help` explains each field.

# %%
nb.controls()

# %% [markdown]
# ## Claims
# `sim.claims` evaluated on the data `nb` holds: the committed run when the notebook opens, the latest
# recomputation once **recompute** was pressed (the title line says which: "committed ..." or "recomputed ...").

# %%
nb.show_claims()
