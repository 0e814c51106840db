"""River-valley momentum on a real (tiny) language model: heavy ball's divergence edge over seeds, the edge of
stability measured along full-batch runs, the Hessian spectrum at initialisation, and the valley/river
decomposition of a training trajectory. LM part of ``shared/papers/river_valley.md``.

The model is ``models.tiny_lm.TinyLM`` (full preset: d=32, 1 layer, 2 heads, ctx 32, ~21k parameters) trained on
the shipped stdlib corpus. Learning rates are in units of GD's quadratic threshold 2/lambda_max(init) of each
seed, lambda_max from Lanczos on Hessian-vector products (``theory.hessian``) on a fixed 16-window batch. The
quadratic theory (``theory.river_valley.hb_threshold``) puts heavy ball's edge at lr * lambda = 2(1+beta): a raw-lr
edge 1+beta times GD's. The paper's stability claim is about the raw lr; its river-speed claim is about the
effective lr lr/(1-beta) (gain (1+beta)/(1-beta) at the edge). Both are reported.

Parts (all seeds come from ``key``):
  edges     mini-batch SGD+HB, per (beta, seed): log-lr bisection of the divergence edge inside ``edge_bracket``
            (bracket ends checked, ``edge_iters`` halvings); intervals over ``n_seeds`` plus the bracket width.
  eos       full-batch GD and HB (same raw lr, and same effective lr) at ``eos_mults`` x 2/lambda_max(init);
            lambda_max(H(theta_t)) every ``eos_every`` steps by warm-started power iteration, with the loss, the
            parameter norm and the RMSNorm-scale norm.
  spectrum  top ``spectrum_k`` Hessian eigenvalues at init per seed; a valley dimension needs a visible gap.
  river     HB/GD displacement at a tiny lr (constant gradient) vs the paper's exact linear-river formula.
  seed 0    (lr, beta) loss map and AdamW beta1 grid (one seed, x2 lr grid: figure and two one-seed checks);
            valley/river split of a full-batch HB trajectory along the top-``top_k`` eigenvectors.

Full preset, measured (``figures/river_valley_lm/``; 5 seeds, 95% intervals): divergence edges 9.1 [6.2, 13.3]
(GD), 5.9 [4.0, 8.6] (beta=0.5), 3.5 [2.8, 4.5] (beta=0.9) x 2/lambda_max(init): momentum does NOT widen the raw
stable lr range on this model (it narrows it; the quadratic 1+beta fails), GD trains ~9x past its quadratic
threshold. In effective lr the edges are 9.1, 11.8, 35.1: heavy ball's advantage is river speed at equal raw lr.
Edge of stability (full batch, lr = 2 x 2/lambda_max(init)): lr * lambda_max(theta_t) over the second half is
3.62 +- 0.52 for GD (not 2: the sharpness sits ~1.8x above 2/lr while the loss still falls, non-monotonically) and
3.31 +- 0.44 for HB beta=0.5 at the same raw lr (quadratic edge 3); HB at the same effective lr (starting at
lr * lambda = 2) sharpens to 3.81 +- 0.08. The power-iteration values are Rayleigh quotients, so lower bounds on
lambda_max. Spectrum: the largest ratio of consecutive eigenvalues among the top 20 is 1.25 +- 0.11 (lambda_1 /
lambda_20 = 3.9-8.4): no gap, so the valley dimension is not identified by the spectrum on this model; the top-4
split used below is a choice, not a measured valley.
Linear river (seed 0, beta=0.9, 20 steps): HB/GD displacement 6.0464 vs the formula's 6.0471.

Figures:
  lr_beta_grid.png       seed-0 final validation loss over (lr, beta) for SGD+HB and (lr, beta1) for AdamW
  edges.png              bisected edges per seed, geometric mean and interval, raw and effective lr, theory lines
  edge_of_stability.png  lambda_max(t) with 2/lr and 2(1+beta)/lr, lr * lambda_max(t), loss, parameter/RMSNorm norms
  decomposition.png      valley coordinates, river distance and losses along a heavy-ball trajectory; spectrum
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from models import corpus
from models import train as tr
from models.tiny_lm import LMConfig, TinyLM
from sims.core.audit import Mutant
from sims.core.sweep import grid, sweep
from sims.river_valley_lm import dynamics as dyn
from theory import _validate as v
from theory import hessian as hs
from theory import river_valley as rv

NAME = "river_valley_lm"
TITLE = "Heavy-ball momentum on a tiny LM: stable lr grows ~(1+beta), progress is along the river"


@dataclasses.dataclass(frozen=True)
class Config:
    d_model: int = 32
    n_layers: int = 1
    n_heads: int = 2
    ctx: int = 32
    corpus_bytes: int = 400_000
    batch_size: int = 16
    steps: int = 100  # per loss-map grid point
    lr_mults: tuple[float, float] = (0.5, 32.0)  # loss-map lr range in units of 2/lambda_max (seed 0)
    n_lr: int = 7
    betas: tuple[float, ...] = (0.0, 0.5, 0.9)
    adam_lrs: tuple[float, float] = (1e-3, 1e-1)
    n_adam: int = 3
    adam_beta1s: tuple[float, ...] = (0.0, 0.9)
    eval_windows: int = 64
    hvp_batch: int = 16  # windows in the Hessian / full-batch set
    lanczos_iters: int = 48
    top_k: int = 4
    spectrum_k: int = 20  # eigenvalues reported per seed for the valley/river gap
    decomp_beta: float = 0.9
    decomp_lr_mult: float = 1.5  # above GD's 1, below HB's 1+beta
    decomp_steps: int = 100
    river_lr_mult: float = 1e-5  # linear-river check: lr so small that the gradient stays constant
    river_steps: int = 20
    blowup: float = 2.0
    n_seeds: int = 5  # initialisation (and mini-batch stream) seeds for edges, EoS and spectra
    edge_bracket: tuple[float, float] = (2.0, 64.0)  # bisection bracket in units of 2/lambda_max(init)
    edge_iters: int = 3  # bisection steps: resolution (hi/lo)^(1/2^iters)
    edge_steps: int = 100  # mini-batch steps per bisection run
    eos_beta: float = 0.5
    eos_mults: tuple[float, ...] = (2.0,)  # full-batch lr in units of 2/lambda_max(init)
    eos_steps: int = 100
    eos_every: int = 10  # steps between lambda_max measurements
    power_iters: int = 6  # warm-started power-iteration steps per measurement

    def __post_init__(self):
        LMConfig(d_model=self.d_model, n_layers=self.n_layers, n_heads=self.n_heads, ctx=self.ctx)
        for name in (
            "batch_size",
            "steps",
            "n_lr",
            "n_adam",
            "eval_windows",
            "hvp_batch",
            "lanczos_iters",
            "top_k",
            "decomp_steps",
            "corpus_bytes",
            "spectrum_k",
            "edge_iters",
            "edge_steps",
            "eos_steps",
            "eos_every",
            "power_iters",
            "river_steps",
        ):
            v.positive_int(name, getattr(self, name))
        v.positive("lr_mults", self.lr_mults)
        v.positive("adam_lrs", self.adam_lrs)
        v.positive("edge_bracket", self.edge_bracket)
        v.positive("eos_mults", self.eos_mults)
        v.in_interval("betas", self.betas, 0.0, 1.0)
        v.in_interval("adam_beta1s", self.adam_beta1s, 0.0, 1.0)
        v.in_interval("decomp_beta", self.decomp_beta, 0.0, 1.0)
        v.in_interval("eos_beta", self.eos_beta, 0.0, 1.0)
        v.positive("decomp_lr_mult", self.decomp_lr_mult)
        v.positive("river_lr_mult", self.river_lr_mult)
        if self.top_k >= self.lanczos_iters:
            raise ValueError(f"top_k must be < lanczos_iters={self.lanczos_iters}, got {self.top_k}")
        if self.spectrum_k > self.lanczos_iters or self.spectrum_k < max(2, self.top_k):
            raise ValueError(
                f"spectrum_k must be in [max(2, top_k), lanczos_iters={self.lanczos_iters}], got {self.spectrum_k}"
            )
        if 0.0 not in self.betas:
            raise ValueError("betas must include 0.0 (the GD reference)")
        if self.n_seeds < 2:
            raise ValueError(f"n_seeds must be >= 2 (intervals over seeds), got {self.n_seeds}")
        if not self.edge_bracket[0] < self.edge_bracket[1]:
            raise ValueError(f"edge_bracket must be (lo, hi) with lo < hi, got {self.edge_bracket}")
        if self.eos_steps % self.eos_every:
            raise ValueError(f"eos_steps must be a multiple of eos_every={self.eos_every}, got {self.eos_steps}")

    @property
    def model(self) -> LMConfig:
        return LMConfig(d_model=self.d_model, n_layers=self.n_layers, n_heads=self.n_heads, ctx=self.ctx)


PRESETS = {
    "full": Config(),
    "quick": Config(
        n_layers=1,
        corpus_bytes=100_000,
        batch_size=8,
        steps=60,
        n_lr=5,
        lr_mults=(0.5, 32.0),
        betas=(0.0, 0.9),
        n_adam=2,
        adam_lrs=(3e-3, 3e-2),
        eval_windows=16,
        hvp_batch=8,
        lanczos_iters=10,
        top_k=3,
        spectrum_k=6,
        decomp_steps=30,
        n_seeds=2,
        edge_iters=1,
        edge_steps=30,
        eos_steps=20,
        eos_every=10,
        power_iters=4,
    ),
}


# ---------------------------------------------------------------------------------------------------------
# The simulation
# ---------------------------------------------------------------------------------------------------------

lanczos_top = hs.lanczos_top  # kept importable from here


def _flat_loss(model: TinyLM, x, y):
    flat, unravel, static = dyn.split(model)
    return flat, dyn.flat_loss(unravel, static, x, y), unravel, static


def hessian_top(model: TinyLM, x, y, *, key, iters: int, k: int):
    """Top-k Hessian eigenpairs of the mean cross-entropy on batch (x, y) at ``model``."""
    flat, f, _, _ = _flat_loss(model, x, y)
    return jax.jit(lambda: hs.lanczos_top(lambda u: hs.hvp(f, flat, u), flat.size, key=key, iters=iters, k=k))()


def _grid_runner(model, data, key, ex, ey, *, steps, batch_size, blowup, kind):
    def run_one(row):
        opt = (
            dyn.heavy_ball(row["lr"], row["beta"])
            if kind == "sgd"
            else optax.adamw(row["lr"], b1=row["beta"], weight_decay=0.0)
        )
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


def eos_rows(cfg: Config) -> list[tuple[str, float, float]]:
    """(label, beta, lr mult) of the full-batch edge-of-stability runs: per mult m, GD at m, heavy ball at the
    same raw lr m, and heavy ball at the same effective lr lr/(1-beta) = m (raw m (1-beta))."""
    b = cfg.eos_beta
    rows = []
    for m in cfg.eos_mults:
        rows += [
            (f"GD, lr={m:g}", 0.0, m),
            (f"HB beta={b:g}, same raw lr={m:g}", b, m),
            (f"HB beta={b:g}, same effective lr={m:g}", b, m * (1.0 - b)),
        ]
    return rows


def run(cfg: Config, *, key: jax.Array) -> dict:
    """Seed ``key`` draws every initialisation (``n_seeds`` of them), the mini-batch streams, the Hessian batch
    and the Lanczos starts. Seed 0's model carries the (lr, beta) loss map, the AdamW check and the
    valley/river decomposition; the edges, the edge-of-stability runs and the spectra use all seeds."""
    k_init, k_data, k_hess, k_lanczos, k_dec = jax.random.split(key, 5)
    mc = cfg.model
    s_count = cfg.n_seeds
    models = [TinyLM(mc, key=k) for k in jax.random.split(k_init, s_count)]
    model = models[0]
    train_tok, val_tok = corpus.load_corpus(max_bytes=cfg.corpus_bytes)
    data = jnp.asarray(train_tok)
    ex, ey = tr.eval_windows(val_tok, mc.ctx, cfg.eval_windows)
    hx, hy = tr.get_batch(data, cfg.hvp_batch, mc.ctx, key=k_hess)
    out = {
        "unigram_loss": jnp.asarray(corpus.unigram_entropy(train_tok, val_tok)),
        "init_loss": tr.loss_fn(model, ex, ey),
    }

    # sharpness and top spectrum at initialisation, every seed (same Hessian batch)
    _, unravel, static = dyn.split(model)
    flat0s = jnp.stack([dyn.split(m)[0] for m in models])  # [S, P]
    f_h = dyn.flat_loss(unravel, static, hx, hy)
    lkeys = jax.random.split(k_lanczos, s_count)
    spec = jax.jit(
        jax.vmap(
            lambda th, k: hs.lanczos_top(
                lambda u: hs.hvp(f_h, th, u), th.size, key=k, iters=cfg.lanczos_iters, k=cfg.spectrum_k
            )
        )
    )
    evals_s, evecs_s = spec(flat0s, lkeys)  # [S, K], [S, P, K]
    lam0s = evals_s[:, 0]
    units = 2.0 / lam0s  # GD's quadratic threshold per seed
    evals, evecs = evals_s[0, : cfg.top_k], evecs_s[0, :, : cfg.top_k]
    lam_max = evals[0]
    out["hessian"] = {"eigenvalues": evals, "lambda_max": lam_max, "spectrum": evals_s, "lambda_max_seeds": lam0s}
    gd_lr = float(rv.gd_threshold(float(lam_max)))

    # (lr, beta) loss map, seed 0, mini-batch SGD + heavy ball: lr in units of 2/lambda_max
    mults = np.geomspace(*cfg.lr_mults, cfg.n_lr)
    lrs = jnp.asarray(mults * gd_lr, jnp.float32)
    betas = jnp.asarray(cfg.betas, jnp.float32)
    g = grid(lr=lrs, beta=betas)
    common = dict(steps=cfg.steps, batch_size=cfg.batch_size, blowup=cfg.blowup)
    res = sweep(_grid_runner(model, data, k_data, ex, ey, kind="sgd", **common), g, progress="SGD+HB grid")
    shape = (cfg.n_lr, len(cfg.betas))
    out["sgd"] = {
        "lr": lrs,
        "lr_mult": jnp.asarray(mults),
        "beta": betas,
        "final_loss": res["final_loss"].reshape(shape),
        "diverged": res["diverged"].reshape(shape),
        "losses": res["losses"].reshape(*shape, cfg.steps),
    }

    # divergence edges by bisection: rows (beta, seed), each seed its own init, unit and mini-batch stream
    dkeys = jax.random.split(k_data, s_count)
    nb = len(cfg.betas)
    bi = np.repeat(np.arange(nb), s_count)
    si = np.tile(np.arange(s_count), nb)
    bis = functools.partial(
        dyn.edge_bisect,
        unravel=unravel,
        static=static,
        data=data,
        lo=cfg.edge_bracket[0],
        hi=cfg.edge_bracket[1],
        iters=cfg.edge_iters,
        steps=cfg.edge_steps,
        batch_size=cfg.batch_size,
        blowup=cfg.blowup,
    )
    e = jax.jit(jax.vmap(bis))(flat0s[si], units[si], betas[bi], dkeys[si])
    out["edges"] = {k: x.reshape(nb, s_count) for k, x in e.items()}
    out["edges"]["beta"] = betas

    # edge of stability: full-batch runs on the Hessian batch, lambda_max tracked
    rows = eos_rows(cfg)
    nr = len(rows)
    ri = np.repeat(np.arange(nr), s_count)
    si = np.tile(np.arange(s_count), nr)
    rb = jnp.asarray([r[1] for r in rows], jnp.float32)
    rm = jnp.asarray([r[2] for r in rows], jnp.float32)
    eos = functools.partial(
        dyn.eos_run,
        unravel=unravel,
        static=static,
        x=hx,
        y=hy,
        steps=cfg.eos_steps,
        every=cfg.eos_every,
        power_iters=cfg.power_iters,
    )
    tr_out = jax.jit(jax.vmap(eos))(flat0s[si], evecs_s[si, :, 0], rm[ri] * units[si], rb[ri])
    out["eos"] = {k: x.reshape(nr, s_count, *x.shape[1:]) for k, x in tr_out.items()}
    out["eos"].update(beta=rb, mult=rm, lr=rm[:, None] * units[None, :])

    # valley / river decomposition of a heavy-ball trajectory from the initialisation (GD beside it, same lr)
    flat0, f, _, _ = _flat_loss(model, hx, hy)
    lr_d = cfg.decomp_lr_mult * gd_lr
    dec = _decompose(flat0, f, evecs, lr_d, jnp.asarray([cfg.decomp_beta, 0.0]), cfg.decomp_steps)
    out["decomposition"] = {"lr": jnp.asarray(lr_d), "beta": jnp.asarray([cfg.decomp_beta, 0.0]), **dec}

    # linear-river regime: a tiny lr, so the gradient is constant over the run; HB vs GD displacement
    lr_r = cfg.river_lr_mult * gd_lr
    out["linear_river"] = _linear_river(flat0, f, lr_r, jnp.asarray([cfg.decomp_beta, 0.0]), cfg.river_steps)

    # AdamW over (lr, beta1): the check
    alrs = jnp.asarray(np.geomspace(*cfg.adam_lrs, cfg.n_adam), jnp.float32)
    b1s = jnp.asarray(cfg.adam_beta1s, jnp.float32)
    ga = grid(lr=alrs, beta=b1s)
    resa = sweep(_grid_runner(model, data, k_data, ex, ey, kind="adam", **common), ga, progress="AdamW grid")
    ashape = (cfg.n_adam, len(cfg.adam_beta1s))
    out["adam"] = {
        "lr": alrs,
        "beta1": b1s,
        "final_loss": resa["final_loss"].reshape(ashape),
        "diverged": resa["diverged"].reshape(ashape),
    }
    return out


def _linear_river(flat0, f, lr, betas, steps):
    """|theta_T - theta_0| of full-batch heavy ball for each of ``betas`` (vmapped), the displacement summed from
    the updates (float32 theta would round updates of ~1e-6 relative size)."""
    grad = jax.grad(f)

    def one(beta):
        def step(c, _):
            theta, v, d = c
            v = dyn.hb_velocity(v, grad(theta), beta)
            return (theta - lr * v, v, d - lr * v), None

        (_, _, d), _ = jax.lax.scan(step, (flat0, jnp.zeros_like(flat0), jnp.zeros_like(flat0)), None, length=steps)
        return jnp.linalg.norm(d)

    return {"disp": jax.jit(jax.vmap(one))(betas), "lr": jnp.asarray(lr)}


def linear_river_ratio(beta: float, steps: int) -> float:
    """HB / GD displacement after ``steps`` steps on a linear river (constant gradient g, v_0 = 0): from
    x_t = x_0 - (lr g/(1-beta)) [t - beta(1-beta^t)/(1-beta)] (``shared/papers/river_valley.md``) and GD's lr g t."""
    return (steps - beta * (1.0 - beta**steps) / (1.0 - beta)) / ((1.0 - beta) * steps)


def _decompose(flat0, f, evecs, lr, betas, steps):
    """Full-batch heavy ball on the HVP batch from ``flat0`` for each of ``betas`` (vmapped); split
    d_t = theta_t - theta_0 into valley coordinates V^T d_t and the river remainder (I - V V^T) d_t."""
    grad = jax.grad(f)

    def one(beta):
        def step(c, _):
            theta, v = c
            v = dyn.hb_velocity(v, grad(theta), beta)
            theta = theta - lr * v
            return (theta, v), theta

        _, traj = jax.lax.scan(step, (flat0, jnp.zeros_like(flat0)), None, length=steps)
        traj = jnp.concatenate([flat0[None], traj])
        d = traj - flat0
        valley = d @ evecs  # [T+1, k]
        river_vec = d - valley @ evecs.T
        loss = jax.lax.map(f, traj)
        loss_river = jax.lax.map(f, flat0 + river_vec)
        d_frac = jnp.sum(valley[-1] ** 2) / jnp.maximum(jnp.sum(d[-1] ** 2), 1e-30)
        diverged = ~jnp.isfinite(loss[-1]) | (loss[-1] > 2 * loss[0])
        return {
            "valley": valley,
            "river": jnp.linalg.norm(river_vec, axis=-1),
            "loss": loss,
            "loss_river_only": loss_river,
            "disp_frac_top": d_frac,
            "diverged": diverged,
        }

    @jax.jit
    def go(betas):
        g0 = grad(flat0)
        g_frac = jnp.sum((evecs.T @ g0) ** 2) / jnp.sum(g0**2)
        return {**jax.vmap(one)(betas), "grad_frac_top": g_frac, "n_params": jnp.asarray(flat0.size)}

    return go(betas)


# ---------------------------------------------------------------------------------------------------------
# Claims
# ---------------------------------------------------------------------------------------------------------


def _momentum_twice(f):
    return lambda v, g, beta: f(f(v, g, beta), g, beta)


def _momentum_sign_flipped(f):
    return lambda v, g, beta: f(-v, g, beta)


MUTANTS = [
    Mutant(
        "momentum_applied_twice",
        "sims.river_valley_lm.dynamics:hb_velocity",
        _momentum_twice,
        "heavy-ball velocity accumulated twice per step: v <- beta (beta v + g) + g",
    ),
    Mutant(
        "momentum_sign_flipped",
        "sims.river_valley_lm.dynamics:hb_velocity",
        _momentum_sign_flipped,
        "heavy-ball velocity with the momentum term's sign flipped: v <- g - beta v",
    ),
]

from sims.river_valley_lm.claims import (  # noqa: E402, F401
    GAP_RATIO,
    KNOWN_DISAGREEMENTS,
    claims,
    edges,
    eos_sharpness,
    seed_edges,
)
from sims.river_valley_lm.figures import bench, plot  # noqa: E402, F401
