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
# ---

# %% [markdown]
# # Interpolation regime: mini-batch momentum speeds up in proportion to the batch size
#
# Garg & Derezinski (2026) study consistent least squares, $f(x) = \frac{1}{2n}\|Ax - b\|^2$ with
# $b = Ax^*$ (the *interpolation* regime: every row is fitted exactly). Randomized Kaczmarz and randomized
# coordinate descent are special cases of mini-batch SGD on such problems. Their claim: heavy ball and
# Nesterov with batch size $B$ need $\approx B$ times fewer iterations than with $B = 1$ ("perfect
# parallelization"), until a saturation point of order $\operatorname{tr} H / \sqrt{L\mu}$, where they reach
# full-batch accelerated heavy ball. Plain SGD saturates much earlier, at $B \approx L_{\max}/L$.
#
# The workbench computes the **exact** mean-square dynamics: the second moment of $(e_t, e_{t-1})$,
# $e_t = x_t - x^*$, evolves by a linear operator whose spectral radius is the asymptotic rate of
# $\mathbb{E}\|e_t\|^2$ (`theory.interpolation.mean_square_rate`). Everything below is checked against Monte
# Carlo runs with the seeds vmapped.

# %%
import jax
import matplotlib.pyplot as plt
import numpy as np

from sims import interpolation as sim
from sims.core.harness import execute, format_claims, quick_from_env
from theory import interpolation as ip

QUICK = quick_from_env()
preset = "quick" if QUICK else "full"
outcome = execute(sim, preset=preset, write=False, verbose=False)
print(format_claims(f"interpolation [{preset}]", outcome.claims))

# %% [markdown]
# ## Iterations to reach $\varepsilon$ and the speedup from batching
# Dots: Monte Carlo (mean of $\|e_t\|^2$ over seeds); dashed: the exact recursion. Dotted verticals: the
# saturation scales $L_{\max}/L$ (SGD) and $\operatorname{tr}H/\sqrt{L\mu}$ (momentum).

# %%
cfg = sim.PRESETS[preset]
figs = sim.plot(outcome.results, cfg)
for name in ("iterations_vs_batch", "speedup"):
    display(figs[name])  # noqa: F821  (IPython builtin)

# %% [markdown]
# ## Exact rate vs Monte Carlo, the momentum rule, Kaczmarz and coordinate descent
# The rule (``theory.interpolation.momentum_rule``): critically damp the slowest mode,
# $\beta = (1 - \sqrt{\eta\mu})^2$, with a step $\eta = \min(4\mu B^2/L_{\max}^2, 2/L)$ growing like $B^2$,
# so that
# the effective step $\eta/(1-\beta) \approx B/L_{\max}$ stays at half the noise limit. $1-\beta$ then grows
# linearly in $B$.

# %%
for name in ("rate_check", "momentum_rule", "kaczmarz_cd"):
    display(figs[name])  # noqa: F821
plt.close("all")

# %% [markdown]
# ## Explore: batch size, momentum, condition number
# The exact mean-square rate of heavy ball on a fresh random problem ($n = 200$, $d = 8$, "norm" sampling) as
# a
# function of the step size, for the chosen $B$, $\beta$ and $\kappa$; the rule's step and the stability limit
# are marked.

# %%
from ipywidgets import FloatLogSlider, FloatSlider, IntSlider, interact  # noqa: E402


def explore(B=8, beta=0.9, cond=1000.0):
    with jax.enable_x64(True):
        pr = ip.random_problem(cfg.n, cfg.d, cond=cond, sampling="norm", key=jax.random.key(0))
        c = ip.constants(pr)
        k = ip.noise_kernel(pr)
    lrs = np.geomspace(1e-4, 4.0, 60) / float(c.L)
    rho = sim.rates(k, lrs, np.full_like(lrs, beta), "hb", B)
    ef = np.asarray(ip.efold_time(rho))
    lr_r, beta_r = (float(a) for a in ip.momentum_rule(float(c.mu), float(c.L), float(c.L_max), B, "hb"))
    rho_r = float(sim.rates(k, np.array([lr_r]), np.array([beta_r]), "hb", B)[0])
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.loglog(
        lrs * float(c.L), np.where(np.isfinite(ef), ef, np.nan), label=f"heavy ball, beta={beta:.3f}, B={B}"
    )
    ax.axhline(
        float(ip.efold_time(rho_r)),
        color="tab:purple",
        ls="--",
        label=f"rule: lr L={lr_r * float(c.L):.3g}, beta={beta_r:.4f}",
    )
    ax.set(
        xlabel="lr x L",
        ylabel="iterations per e-fold of E||e||^2 (exact)",
        title=f"kappa={cond:g}, tr H/sqrt(L mu)={float(ip.saturation_scales(pr)['shb']):.0f}; "
        "gaps = unstable",
    )
    ax.legend()
    plt.show()


interact(
    explore,
    B=IntSlider(8, 1, 256),
    beta=FloatSlider(value=0.9, min=0.0, max=0.999, step=0.001),
    cond=FloatLogSlider(value=1000.0, base=10, min=1, max=4),
)
if QUICK:
    explore(B=4, beta=0.9, cond=100.0)
