"""River-valley momentum on a real (tiny) language model: SGD with heavy ball over an (lr, beta) grid, AdamW's
beta1 as a check, and the valley/river decomposition of a training trajectory. LM part of
``shared/papers/river_valley.md``.

The model is ``models.tiny_lm.TinyLM`` trained on the shipped stdlib corpus. Every run in a grid starts from the
same initialisation and sees the same batches; the grid is one ``sims.core.sweep.sweep`` (jit(vmap)) over rows.

Learning rates are measured in units of GD's quadratic threshold 2/lambda_max, with lambda_max the top
eigenvalue of the Hessian of the loss at initialisation (on a fixed batch), found by Lanczos on
Hessian-vector products. The quadratic theory (``theory.river_valley.hb_threshold``) predicts heavy ball to be
stable up to lr * lambda_max = 2(1+beta), i.e. lr / (2/lambda_max) = 1+beta. A neural network is not a
quadratic: its sharpness changes while it trains (it may fall after a large first step, "catapult", or rise,
"progressive sharpening"), so the measured edge is compared with the prediction, not assumed to match it.

Valley/river decomposition: from the initialisation, heavy ball runs at an lr above GD's threshold; the
displacement d_t = theta_t - theta_0 is split into its component in the span V of the top-k Hessian
eigenvectors at theta_0 (the valley) and the rest (the river). Measured: the fraction of the gradient in V
(the valley walls, large), the fraction of the displacement in V (small), and the loss with the valley
component of d_t removed (the river carries the progress).

What the full preset measures (seed 0; ``figures/river_valley_lm/claims.json``): lambda_max(init) = 40. GD
stays trainable up to 16 x 2/lambda_max(init) (it diverges at 32x: its sharpness falls after the first large
steps, the catapult of edge-of-stability training), so the quadratic edge 2/lambda_max(init) does not predict
it (claim fails, kept in the table). Heavy ball at the *same* lr is no more stable than GD here (beta=0.5: edge
16x, the same as GD; beta=0.9: 8x): the quadratic prediction edge(beta)/edge(0) = 1+beta fails for beta=0.9.
Measured in the effective lr lr/(1-beta) that sets the step along flat directions, heavy ball's edge (80 x
2/lambda at beta=0.9) is far beyond GD's: momentum buys river speed, not a larger raw lr, in this model. What does
hold: at its best lr, SGD+HB(0.9) reaches a lower loss than GD at its best lr (2.22 vs 2.38 nats/byte); at the
same lr 1.5 x 2/lambda, GD shows loss spikes and HB descends smoothly and further; the gradient lies mostly
(33%) in the top-4 Hessian directions (2700x a random 4-dim subspace's share) while only 3% of HB's
displacement does, and the river part of the displacement alone keeps 95% of the loss decrease.

Figures (``figures/river_valley_lm/``):
  lr_beta_grid.png    final validation loss over (lr, beta) for SGD+HB and (lr, beta1) for AdamW; edges
  decomposition.png   valley coordinates, river distance and losses along a heavy-ball trajectory; spectrum
"""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree

from models import corpus
from models import train as tr
from models.tiny_lm import LMConfig, TinyLM
from sims.core import style
from sims.core.harness import BenchRow, Claim, time_call
from sims.core.sweep import grid, sweep
from theory import _validate as v
from theory import river_valley as rv

NAME = "river_valley_lm"
TITLE = "Heavy-ball momentum on a tiny LM: stable lr grows ~(1+beta), progress is along the river"


@dataclasses.dataclass(frozen=True)
class Config:
    d_model: int = 32
    n_layers: int = 2
    n_heads: int = 2
    ctx: int = 32
    corpus_bytes: int = 400_000
    batch_size: int = 16
    steps: int = 200  # per grid point
    lr_mults: tuple[float, float] = (0.25, 64.0)  # lr range in units of 2/lambda_max
    n_lr: int = 9
    betas: tuple[float, ...] = (0.0, 0.5, 0.9)
    adam_lrs: tuple[float, float] = (1e-3, 1e-1)
    n_adam: int = 4
    adam_beta1s: tuple[float, ...] = (0.0, 0.9)
    eval_windows: int = 64
    hvp_batch: int = 64
    lanczos_iters: int = 24
    top_k: int = 4
    decomp_beta: float = 0.9
    decomp_lr_mult: float = 1.5  # above GD's 1, below HB's 1+beta
    decomp_steps: int = 100
    blowup: float = 2.0

    def __post_init__(self):
        LMConfig(d_model=self.d_model, n_layers=self.n_layers, n_heads=self.n_heads, ctx=self.ctx)
        for name in ("batch_size", "steps", "n_lr", "n_adam", "eval_windows", "hvp_batch", "lanczos_iters",
                     "top_k", "decomp_steps", "corpus_bytes"):
            v.positive_int(name, getattr(self, name))
        v.positive("lr_mults", self.lr_mults)
        v.positive("adam_lrs", self.adam_lrs)
        v.in_interval("betas", self.betas, 0.0, 1.0)
        v.in_interval("adam_beta1s", self.adam_beta1s, 0.0, 1.0)
        v.in_interval("decomp_beta", self.decomp_beta, 0.0, 1.0)
        v.positive("decomp_lr_mult", self.decomp_lr_mult)
        if self.top_k >= self.lanczos_iters:
            raise ValueError(f"top_k must be < lanczos_iters={self.lanczos_iters}, got {self.top_k}")
        if 0.0 not in self.betas:
            raise ValueError("betas must include 0.0 (the GD reference)")

    @property
    def model(self) -> LMConfig:
        return LMConfig(d_model=self.d_model, n_layers=self.n_layers, n_heads=self.n_heads, ctx=self.ctx)


PRESETS = {
    "full": Config(),
    "quick": Config(n_layers=1, corpus_bytes=100_000, batch_size=8, steps=60, n_lr=5, lr_mults=(0.5, 32.0),
                    betas=(0.0, 0.9), n_adam=2, adam_lrs=(3e-3, 3e-2), eval_windows=16, hvp_batch=16,
                    lanczos_iters=10, top_k=3, decomp_steps=30),
}


# ---------------------------------------------------------------------------------------------------------
# Hessian eigen-directions by Lanczos on Hessian-vector products
# ---------------------------------------------------------------------------------------------------------


def lanczos_top(hvp, dim: int, *, key: jax.Array, iters: int, k: int):
    """Top-``k`` eigenpairs of the symmetric operator ``hvp: R^dim -> R^dim`` by ``iters`` Lanczos steps with
    full re-orthogonalisation. Returns (eigenvalues[k] descending, eigenvectors[dim, k] orthonormal)."""
    q0 = jax.random.normal(key, (dim,))
    q0 = q0 / jnp.linalg.norm(q0)

    def body(i, carry):
        qs, alphas, betas = carry
        q = qs[i]
        w = hvp(q)
        a = jnp.dot(w, q)
        mask = (jnp.arange(iters + 1) <= i)[:, None]
        w = w - (qs * mask).T @ ((qs * mask) @ w)  # full re-orthogonalisation (twice is enough)
        w = w - (qs * mask).T @ ((qs * mask) @ w)
        b = jnp.linalg.norm(w)
        qs = qs.at[i + 1].set(jnp.where(i + 1 < iters, w / jnp.maximum(b, 1e-30), 0.0), mode="drop")
        return qs, alphas.at[i].set(a), betas.at[i].set(b)

    qs = jnp.zeros((iters + 1, dim)).at[0].set(q0)
    qs, alphas, betas = jax.lax.fori_loop(0, iters, body, (qs, jnp.zeros(iters), jnp.zeros(iters)))
    t = jnp.diag(alphas) + jnp.diag(betas[:-1], 1) + jnp.diag(betas[:-1], -1)
    evals, evecs = jnp.linalg.eigh(t)
    order = jnp.argsort(evals)[::-1][:k]
    return evals[order], qs[:iters].T @ evecs[:, order]


def _flat_loss(model: TinyLM, x, y):
    params, static = eqx.partition(model, eqx.is_inexact_array)
    flat, unravel = ravel_pytree(params)
    return flat, (lambda f: tr.loss_fn(eqx.combine(unravel(f), static), x, y)), unravel, static


def hessian_top(model: TinyLM, x, y, *, key, iters: int, k: int):
    """Top-k Hessian eigenpairs of the mean cross-entropy on batch (x, y) at ``model``."""
    flat, f, _, _ = _flat_loss(model, x, y)
    g = jax.grad(f)
    hvp = lambda u: jax.jvp(g, (flat,), (u,))[1]  # noqa: E731
    return jax.jit(lambda: lanczos_top(hvp, flat.size, key=key, iters=iters, k=k))()


# ---------------------------------------------------------------------------------------------------------
# The simulation
# ---------------------------------------------------------------------------------------------------------


def _grid_runner(model, data, key, ex, ey, *, steps, batch_size, blowup, kind):
    def run_one(row):
        opt = (optax.sgd(row["lr"], momentum=row["beta"]) if kind == "sgd"
               else optax.adamw(row["lr"], b1=row["beta"], weight_decay=0.0))
        state, losses = tr.train_scan(model, opt, data, key=key, steps=steps, batch_size=batch_size, blowup=blowup)
        final = tr.loss_fn(state[0], ex, ey)
        return {"final_loss": jnp.where(state[2], jnp.nan, final), "diverged": state[2], "losses": losses}

    return run_one


def _edge(lrs, ok):
    """Largest lr of the contiguous run of ``ok`` grid points starting at the smallest lr (NaN if none)."""
    ok = np.asarray(ok)
    if not ok[0]:
        return float("nan")
    n = np.argmin(ok) if not ok.all() else len(ok)
    return float(lrs[n - 1])


def run(cfg: Config, *, key: jax.Array) -> dict:
    k_init, k_data, k_hess, k_lanczos, k_dec = jax.random.split(key, 5)
    mc = cfg.model
    model = TinyLM(mc, key=k_init)
    train_tok, val_tok = corpus.load_corpus(max_bytes=cfg.corpus_bytes)
    data = jnp.asarray(train_tok)
    ex, ey = tr.eval_windows(val_tok, mc.ctx, cfg.eval_windows)
    hx, hy = tr.get_batch(data, cfg.hvp_batch, mc.ctx, key=k_hess)
    out = {"unigram_loss": jnp.asarray(corpus.unigram_entropy(train_tok, val_tok)),
           "init_loss": tr.loss_fn(model, ex, ey)}

    # sharpness at initialisation
    evals, evecs = hessian_top(model, hx, hy, key=k_lanczos, iters=cfg.lanczos_iters, k=cfg.top_k)
    lam_max = evals[0]
    out["hessian"] = {"eigenvalues": evals, "lambda_max": lam_max}
    gd_lr = float(rv.gd_threshold(float(lam_max)))

    # SGD + heavy ball over (lr, beta): lr in units of 2/lambda_max
    mults = np.geomspace(*cfg.lr_mults, cfg.n_lr)
    lrs = jnp.asarray(mults * gd_lr, jnp.float32)
    betas = jnp.asarray(cfg.betas, jnp.float32)
    g = grid(lr=lrs, beta=betas)
    common = dict(steps=cfg.steps, batch_size=cfg.batch_size, blowup=cfg.blowup)
    res = sweep(_grid_runner(model, data, k_data, ex, ey, kind="sgd", **common), g, progress="SGD+HB grid")
    shape = (cfg.n_lr, len(cfg.betas))
    out["sgd"] = {"lr": lrs, "lr_mult": jnp.asarray(mults), "beta": betas,
                  "final_loss": res["final_loss"].reshape(shape), "diverged": res["diverged"].reshape(shape),
                  "losses": res["losses"].reshape(*shape, cfg.steps)}

    # AdamW over (lr, beta1): the check
    alrs = jnp.asarray(np.geomspace(*cfg.adam_lrs, cfg.n_adam), jnp.float32)
    b1s = jnp.asarray(cfg.adam_beta1s, jnp.float32)
    ga = grid(lr=alrs, beta=b1s)
    resa = sweep(_grid_runner(model, data, k_data, ex, ey, kind="adam", **common), ga, progress="AdamW grid")
    ashape = (cfg.n_adam, len(cfg.adam_beta1s))
    out["adam"] = {"lr": alrs, "beta1": b1s, "final_loss": resa["final_loss"].reshape(ashape),
                   "diverged": resa["diverged"].reshape(ashape)}

    # valley / river decomposition of a heavy-ball trajectory from the initialisation (GD beside it, same lr)
    flat0, f, _, _ = _flat_loss(model, hx, hy)
    lr_d = cfg.decomp_lr_mult * gd_lr
    dec = _decompose(flat0, f, evecs, lr_d, jnp.asarray([cfg.decomp_beta, 0.0]), cfg.decomp_steps)
    out["decomposition"] = {"lr": jnp.asarray(lr_d), "beta": jnp.asarray([cfg.decomp_beta, 0.0]), **dec}
    return out


def _decompose(flat0, f, evecs, lr, betas, steps):
    """Full-batch heavy ball on the HVP batch from ``flat0`` for each of ``betas`` (vmapped); split
    d_t = theta_t - theta_0 into valley coordinates V^T d_t and the river remainder (I - V V^T) d_t."""
    grad = jax.grad(f)

    def one(beta):
        def step(c, _):
            x, xp = c
            xn = x - lr * grad(x) + beta * (x - xp)
            return (xn, x), xn

        _, traj = jax.lax.scan(step, (flat0, flat0), None, length=steps)
        traj = jnp.concatenate([flat0[None], traj])
        d = traj - flat0
        valley = d @ evecs  # [T+1, k]
        river_vec = d - valley @ evecs.T
        loss = jax.lax.map(f, traj)
        loss_river = jax.lax.map(f, flat0 + river_vec)
        d_frac = jnp.sum(valley[-1] ** 2) / jnp.maximum(jnp.sum(d[-1] ** 2), 1e-30)
        diverged = ~jnp.isfinite(loss[-1]) | (loss[-1] > 2 * loss[0])
        return {"valley": valley, "river": jnp.linalg.norm(river_vec, axis=-1), "loss": loss,
                "loss_river_only": loss_river, "disp_frac_top": d_frac, "diverged": diverged}

    @jax.jit
    def go(betas):
        g0 = grad(flat0)
        g_frac = jnp.sum((evecs.T @ g0) ** 2) / jnp.sum(g0 ** 2)
        return {**jax.vmap(one)(betas), "grad_frac_top": g_frac, "n_params": jnp.asarray(flat0.size)}

    return go(betas)


# ---------------------------------------------------------------------------------------------------------
# Claims
# ---------------------------------------------------------------------------------------------------------


def edges(results) -> dict:
    """Per beta: the largest grid lr (units of 2/lambda_max) before the first divergence."""
    s = results["sgd"]
    mults, div = np.asarray(s["lr_mult"]), np.asarray(s["diverged"])
    return [_edge(mults, ~div[:, j]) for j in range(div.shape[1])]


# Claims the tiny LM is known (and expected, see the module docstring) to contradict: the quadratic stability
# edge. They stay in the table, failing, because they are what the quadratic theory predicts.
KNOWN_DISAGREEMENTS = ("momentum widens the stable lr range", "GD's measured lr edge")


def claims(results: dict, cfg: Config) -> list[Claim]:
    # every claim is a `check` of the paper's picture on one seed and a x2 lr grid; intervals over seeds and the
    # measured edge of stability belong to the tiny-LM statistics issue
    out = []
    s = results["sgd"]
    mults = np.asarray(s["lr_mult"])
    step = float(mults[1] / mults[0])  # grid ratio: the resolution of a measured edge
    e = edges(results)
    e0 = e[cfg.betas.index(0.0)]
    for b, eb in zip(cfg.betas, e, strict=True):
        if b > 0:
            out.append(Claim(f"momentum widens the stable lr range: edge(beta={b:g})/edge(GD) = 1+beta "
                             f"(measured: log(ratio/(1+beta)) in grid steps of x{step:.2f})", 0.0,
                             np.log(eb / e0 / (1.0 + b)) / np.log(step), 1.0, "abs", source="theory", kind="check"))
    out.append(Claim(f"GD's measured lr edge = quadratic threshold 2/lambda_max(init) (measured: log(edge) in "
                     f"grid steps of x{step:.2f})", 0.0, np.log(e0) / np.log(step), 1.0, "abs", source="theory",
                     kind="check"))
    d = results["decomposition"]
    loss = np.asarray(d["loss"])  # [2 (HB, GD), T+1]
    out.append(Claim(f"same lr {cfg.decomp_lr_mult:g} x 2/lambda_max, full batch: HB beta={cfg.decomp_beta:g} ends "
                     f"lower than GD (GD - HB, nats)", 0.0, loss[1, -1] - loss[0, -1], 0.0, "ge", kind="check"))
    fl = np.asarray(s["final_loss"])
    best = np.nanmin(fl, axis=0)
    bmax = int(np.argmax(np.asarray(s["beta"])))
    out.append(Claim(f"SGD grid: best final val loss with beta={cfg.betas[bmax]:g} <= GD's (GD - HB, nats)",
                     0.0, best[0] - best[bmax], 0.0, "ge", kind="check"))
    a = results["adam"]
    abest = np.nanmin(np.asarray(a["final_loss"]), axis=0)
    out.append(Claim(f"AdamW check: best final val loss with beta1={cfg.adam_beta1s[-1]:g} <= beta1="
                     f"{cfg.adam_beta1s[0]:g}'s (difference, nats)", 0.0, abest[0] - abest[-1], 0.0, "ge",
                     kind="check"))
    k, n = cfg.top_k, int(d["n_params"])
    out.append(Claim(f"valley: gradient fraction in the top-{k} Hessian directions / random-subspace share k/P",
                     100.0, float(d["grad_frac_top"]) / (k / n), 0.0, "ge", source="reconstruction", kind="check"))
    out.append(Claim(f"river: HB displacement fraction in the top-{k} directions <= the gradient's (difference)",
                     0.0, float(d["disp_frac_top"][0]) - float(d["grad_frac_top"]), 0.0, "le",
                     source="reconstruction", kind="check"))
    lr_only = np.asarray(d["loss_river_only"])
    out.append(Claim("HB: the river part of d_T alone keeps >= 90% of the loss decrease (L0-L(river))/(L0-L_T)",
                     1.0, (loss[0, 0] - lr_only[0, -1]) / (loss[0, 0] - loss[0, -1]), 0.1, "ge",
                     source="reconstruction", kind="check"))
    return out


# ---------------------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------------------


def plot(results: dict, cfg: Config) -> dict:
    figs = {}
    s, a = results["sgd"], results["adam"]
    lam = float(results["hessian"]["lambda_max"])
    mults, betas = np.asarray(s["lr_mult"]), np.asarray(s["beta"])
    fl, div = np.asarray(s["final_loss"]), np.asarray(s["diverged"])
    uni, init = float(results["unigram_loss"]), float(results["init_loss"])
    fig, (ax, ax2, ax3) = style.figure(1, 3, figsize=(15, 4.6))
    for j, b in enumerate(betas):
        line, = ax.semilogx(mults, fl[:, j], "o-", label=f"SGD heavy ball beta={b:g}")
        if div[:, j].any():
            ax.plot(mults[div[:, j]], np.full(div[:, j].sum(), init), "x", color=line.get_color(), ms=9)
        ax.axvline(1.0 + b, **style.prediction(color=line.get_color()))
    ax.axhline(uni, color="0.5", lw=1, ls=":", label=f"unigram baseline {uni:.2f}")
    ax.axhline(init, color="0.7", lw=1, label=f"loss at init {init:.2f}")
    ax.plot([], [], **style.PREDICTION, label="theory edge lr lambda_max = 2(1+beta)")
    ax.plot([], [], "x", color="k", label="diverged (drawn at the init loss)")
    ax.set(xlabel="learning rate / (2 / lambda_max(init))", ylabel="validation loss after training (nats/byte)",
           title=f"SGD+HB, {cfg.steps} steps, lambda_max(init) = {lam:.3g}")
    ax.legend(fontsize=7)
    im = ax2.pcolormesh(betas, mults, np.ma.masked_invalid(fl), shading="nearest", cmap="viridis")
    ax2.pcolormesh(betas, mults, np.ma.masked_where(~div, div.astype(float)), shading="nearest", cmap="Greys",
                   vmin=0, vmax=1.4)
    bf = np.linspace(0, max(betas.max(), 0.01), 50)
    ax2.plot(bf, 1 + bf, **style.PREDICTION, label="theory: lr = 2(1+beta)/lambda_max")
    for b, ed in zip(betas, edges(results), strict=True):
        ax2.plot(b, ed, "w*", ms=12)
    ax2.plot([], [], "k*", label="measured edge (largest stable grid lr)")
    ax2.set(yscale="log", xlabel="momentum beta", ylabel="lr / (2/lambda_max)",
            title="(lr, beta) map (grey = diverged)")
    ax2.legend(fontsize=7, loc="lower right")
    fig.colorbar(im, ax=ax2, label="final loss")
    alr, ab1 = np.asarray(a["lr"]), np.asarray(a["beta1"])
    afl = np.asarray(a["final_loss"])
    for j, b in enumerate(ab1):
        ax3.semilogx(alr, afl[:, j], "o-", label=f"AdamW beta1={b:g}")
    ax3.axhline(uni, color="0.5", lw=1, ls=":", label="unigram baseline")
    ax3.set(xlabel="AdamW learning rate", ylabel="validation loss (nats/byte)",
            title=f"AdamW check, {cfg.steps} steps (missing points diverged)")
    ax3.legend(fontsize=8)
    figs["lr_beta_grid"] = fig

    d = results["decomposition"]
    ev = np.asarray(results["hessian"]["eigenvalues"])
    fig, axs = style.figure(1, 3, figsize=(15, 4.4))
    val = np.asarray(d["valley"][0])
    for i in range(val.shape[1]):
        axs[0].plot(val[:, i], lw=1, label=f"valley coordinate v{i + 1}.d_t (lambda_{i + 1} = {ev[i]:.3g})")
    axs[0].plot(np.asarray(d["river"][0]), "k", lw=2, label="river distance |(I - V V^T) d_t|")
    axs[0].set(xlabel="step", ylabel="displacement from init (parameter norm)",
               title=f"HB beta={cfg.decomp_beta:g}, lr = {cfg.decomp_lr_mult:g} x 2/lambda_max: d_t split")
    axs[0].legend(fontsize=7)
    for i, (name, c) in enumerate(((f"HB beta={cfg.decomp_beta:g}", "tab:green"), ("GD (beta=0)", "tab:blue"))):
        axs[1].plot(np.asarray(d["loss"][i]), color=c, label=f"{name}: loss")
        axs[1].plot(np.asarray(d["loss_river_only"][i]), color=c, ls=":", label=f"{name}: valley part removed")
    axs[1].axhline(uni, color="0.5", lw=1, ls=":", label="unigram baseline")
    axs[1].set(xlabel="step", ylabel="loss on the Hessian batch (nats)", ylim=(None, init * 1.3),
               title=f"Full-batch, same lr = {float(d['lr']):.3g} (GD's quadratic limit x {cfg.decomp_lr_mult:g})")
    axs[1].legend(fontsize=7)
    axs[2].bar(np.arange(1, len(ev) + 1), ev, color="tab:purple")
    axs[2].set(xlabel="eigenvalue index", ylabel="Hessian eigenvalue at init (Lanczos on HVPs)",
               title=f"gradient share in top-{len(ev)}: {float(d['grad_frac_top']):.0%}; "
                     f"HB displacement share: {float(d['disp_frac_top'][0]):.1%}")
    figs["decomposition"] = fig
    return figs


# ---------------------------------------------------------------------------------------------------------
# Benchmark: the vmapped grid vs a Python loop of jitted single runs
# ---------------------------------------------------------------------------------------------------------


def bench(quick: bool = False) -> list[BenchRow]:
    cfg = PRESETS["quick"]
    mc = cfg.model
    model = TinyLM(mc, key=jax.random.key(0))
    tok, val = corpus.load_corpus(max_bytes=cfg.corpus_bytes)
    data = jnp.asarray(tok)
    ex, ey = tr.eval_windows(val, mc.ctx, cfg.eval_windows)
    steps = 30 if quick else 100
    g = grid(lr=jnp.geomspace(0.01, 0.3, 4), beta=jnp.asarray([0.0, 0.5, 0.9]))
    fn = _grid_runner(model, data, jax.random.key(1), ex, ey, kind="sgd", steps=steps,
                      batch_size=cfg.batch_size, blowup=cfg.blowup)
    ours = time_call(lambda: sweep(fn, g)["final_loss"], repeats=2)
    one = jax.jit(fn)
    n = g["lr"].shape[0]
    base = time_call(lambda: [one({k: x[i] for k, x in g.items()})["final_loss"] for i in range(n)], repeats=2)
    return [BenchRow(f"{n}-point (lr, beta) grid x {steps} steps", "jit(vmap) sweep", "loop of jitted runs",
                     ours, base)]
