"""River-valley momentum on a real (tiny) language model: heavy ball's divergence edge over seeds, the edge of
stability measured along full-batch runs, the Hessian spectrum at initialisation, and the valley/river
decomposition of a training trajectory. LM part of ``shared/papers/river_valley.md``.

The model is ``jaxwb.models.tiny_lm.TinyLM`` (full preset: d=32, 1 layer, 2 heads, ctx 32, ~21k parameters) trained on
the shipped stdlib corpus. Learning rates are in units of GD's quadratic threshold 2/lambda_max(init) of each
seed, lambda_max from Lanczos on Hessian-vector products (``jaxwb.theory.hessian``) on a fixed 16-window batch. The
quadratic theory (``jaxwb.theory.river_valley.hb_threshold``) puts heavy ball's edge at lr * lambda = 2(1+beta):
a raw-lr edge 1+beta times GD's. The paper's stability claim is about the raw lr; its river-speed claim is about the
effective lr lr/(1-beta) (gain (1+beta)/(1-beta) at the edge). Both are reported.

Parts (all seeds come from ``key``; two compiled training programs serve them all, see ``dynamics``):
  edges     mini-batch SGD+HB, per (beta, seed): log-lr bisection of the divergence edge inside ``edge_bracket``
            (bracket ends checked, ``edge_iters`` halvings: resolution 32^(1/16) = 1.24 in the full preset);
            intervals over ``n_seeds`` plus the bracket width.
  eos       full-batch GD and HB (same raw lr, and same effective lr) at ``eos_mults`` x 2/lambda_max(init);
            lambda_max(H(theta_t)) every ``eos_every`` steps by ``track_iters`` Lanczos steps (HVPs) warm-started
            from the previous top Ritz vector (``jaxwb.theory.hessian.lanczos_warm``: the top Ritz value maximises the
            Rayleigh quotient over the Krylov space, so it converges to the largest algebraic eigenvalue; power
            iteration converged to the largest |lambda|, at some steps a negative one), checked against a fresh
            random-start Lanczos (``lanczos_iters`` steps) mid-run and at the end; the loss, the parameter and
            RMSNorm-scale norms.
  spectrum  top ``spectrum_k`` Hessian eigenvalues at init per seed; a valley dimension needs a visible gap.
  river     HB/GD displacement at a tiny lr (constant gradient) vs the paper's exact linear-river formula.
  map       (lr, beta) loss map (x sqrt(2) lr grid) and AdamW (lr, beta1) grid on the first ``map_seeds`` seeds.
  split     valley/river split of full-batch HB and GD trajectories along each seed's top-``top_k`` eigenvectors.

Full preset, measured (``figures/river_valley_lm/``; 5 seeds, 95% intervals; 195 s on 2 cores): divergence
edges 9.7 [7.8, 12.2] (GD), 7.2 [5.3, 9.8] (beta=0.5), 3.4 [2.5, 4.8] (beta=0.9) x 2/lambda_max(init), bisection
resolution x1.24: momentum does NOT widen the raw stable lr range on this model (it narrows it; the quadratic 1+beta
fails), GD trains ~10x past its quadratic threshold. In effective lr the edges are 9.7, 14.4, 34.4: heavy ball's
advantage is river speed at equal raw lr. Edge of stability (full batch, lr = 2 x 2/lambda_max(init), lambda_max
every 2 steps by 10 warm-started Lanczos steps, within 0.04% of a fresh 48-step Lanczos at every checked point):
lr * lambda_max(theta_t) over the second half is 3.64 +- 0.19 for GD (not 2) and 3.55 +- 0.47 for HB beta=0.5 at
the same raw lr (quadratic edge 3); HB at the same effective lr sharpens to 3.81 +- 0.23. lr * lambda oscillates
step to step (2-10) around these medians. (The earlier 4-step power iteration read up to 30% low, medians 3.3: it
converged to the largest |lambda|, at some steps a negative eigenvalue.) Spectrum: the largest ratio of
consecutive eigenvalues among the top 20 is 1.25 +- 0.11 (lambda_1 / lambda_20 = 3.9-8.4): no gap, so the valley
dimension is not identified by the spectrum; the top-4 split is a choice. Over 5 seeds the top-4 directions hold 28%
of the initial gradient (1400x their random share) but 0.9% of heavy ball's displacement; the river part alone
keeps 90% +- 16% of the loss decrease. Loss map and AdamW grid on 5 seeds (x sqrt(2) lr grid): best beta=0.9 vs
GD 0.044 +- 0.084 nats, AdamW beta1=0.9 vs 0 -0.017 +- 0.038: both undecided. Linear river (5 seeds, beta=0.9, 20
steps): HB/GD displacement 6.0466 +- 0.0004 vs the formula's 6.0471.

Figures:
  lr_beta_grid.png       final validation loss over (lr, beta) for SGD+HB and (lr, beta1) for AdamW, mean and CI
  edges.png              bisected edges per seed, geometric mean and interval, raw and effective lr, theory lines
  edge_of_stability.png  lambda_max(t) with 2/lr and 2(1+beta)/lr, lr * lambda_max(t), loss, parameter/RMSNorm norms
  decomposition.png      valley coordinates (seed 0), river distance, losses over seeds; spectrum over seeds
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.models import corpus
from jaxwb.models import train as tr
from jaxwb.models.tiny_lm import LMConfig, TinyLM
from jaxwb.sims.core.audit import Mutant
from jaxwb.sims.river_valley_lm import dynamics as dyn
from jaxwb.theory import hessian as hs
from jaxwb.theory import validate as v

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
    steps: int = 100  # mini-batch steps per run (loss map, AdamW grid, every bisection run)
    lr_mults: tuple[float, float] = (0.5, 32.0)  # loss-map lr range in units of 2/lambda_max(init) of each seed
    n_lr: int = 13  # x sqrt(2) grid on (0.5, 32)
    betas: tuple[float, ...] = (0.0, 0.5, 0.9)
    adam_lrs: tuple[float, float] = (3e-3, 1e-1)
    n_adam: int = 12  # x 1.375 grid
    adam_beta1s: tuple[float, ...] = (0.0, 0.9)
    map_seeds: int = 5  # loss map + AdamW grid seeds (the first map_seeds of n_seeds)
    eval_windows: int = 64
    hvp_batch: int = 16  # windows in the Hessian / full-batch set
    lanczos_iters: int = 48
    top_k: int = 4
    spectrum_k: int = 20  # eigenvalues reported per seed for the valley/river gap
    decomp_beta: float = 0.9
    decomp_lr_mult: float = 1.5  # above GD's 1, below HB's 1+beta
    river_lr_mult: float = 1e-5  # linear-river check: lr so small that the gradient stays constant
    river_steps: int = 20  # a multiple of eos_every, <= eos_steps
    blowup: float = 2.0
    n_seeds: int = 5  # initialisation (and mini-batch stream) seeds for edges, EoS, spectra, decomposition
    edge_bracket: tuple[float, float] = (2.0, 64.0)  # bisection bracket in units of 2/lambda_max(init)
    edge_iters: int = 4  # bisection steps: resolution (hi/lo)^(1/2^iters) = 32^(1/16) = 1.24
    eos_beta: float = 0.5
    eos_mults: tuple[float, ...] = (2.0,)  # full-batch lr in units of 2/lambda_max(init)
    eos_steps: int = 100  # full-batch steps (edge of stability, decomposition, linear river)
    eos_every: int = 2  # steps between lambda_max measurements
    track_iters: int = 10  # warm-started Lanczos steps (HVPs) per lambda_max measurement

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
            "corpus_bytes",
            "spectrum_k",
            "edge_iters",
            "eos_steps",
            "eos_every",
            "track_iters",
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
        if not 2 <= self.map_seeds <= self.n_seeds:
            raise ValueError(f"map_seeds must be in [2, n_seeds={self.n_seeds}], got {self.map_seeds}")
        if not self.edge_bracket[0] < self.edge_bracket[1]:
            raise ValueError(f"edge_bracket must be (lo, hi) with lo < hi, got {self.edge_bracket}")
        if self.eos_steps % self.eos_every:
            raise ValueError(f"eos_steps must be a multiple of eos_every={self.eos_every}, got {self.eos_steps}")
        if self.river_steps % self.eos_every or self.river_steps > self.eos_steps:
            raise ValueError(
                f"river_steps must be a multiple of eos_every={self.eos_every} and <= eos_steps={self.eos_steps}, "
                f"got {self.river_steps}"
            )

    @property
    def model(self) -> LMConfig:
        return LMConfig(d_model=self.d_model, n_layers=self.n_layers, n_heads=self.n_heads, ctx=self.ctx)


PRESETS = {
    "full": Config(),
    "quick": Config(  # CI-sized: every part runs, compile dominates (tests/sims/test_river_valley_lm.py)
        n_layers=1,
        corpus_bytes=100_000,
        batch_size=8,
        steps=20,
        n_lr=3,
        lr_mults=(0.5, 32.0),
        betas=(0.0, 0.9),
        n_adam=2,
        adam_lrs=(3e-3, 3e-2),
        eval_windows=8,
        hvp_batch=8,
        lanczos_iters=10,
        top_k=3,
        spectrum_k=6,
        n_seeds=3,
        map_seeds=2,
        edge_iters=1,
        eos_steps=30,
        eos_every=5,
        track_iters=4,
    ),
}


# ---------------------------------------------------------------------------------------------------------
# The simulation
# ---------------------------------------------------------------------------------------------------------

lanczos_top = hs.lanczos_top  # kept importable from here


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


def fullbatch_rows(cfg: Config) -> list[tuple[str, float, float]]:
    """Every full-batch run (label, beta, lr mult): the EoS rows, then the decomposition pair (HB, GD at
    ``decomp_lr_mult``), then the linear-river pair (HB, GD at ``river_lr_mult``)."""
    d, r = cfg.decomp_lr_mult, cfg.river_lr_mult
    return [
        *eos_rows(cfg),
        ("decomposition HB", cfg.decomp_beta, d),
        ("decomposition GD", 0.0, d),
        ("linear river HB", cfg.decomp_beta, r),
        ("linear river GD", 0.0, r),
    ]


def _rows(**axes):
    """Cartesian product of integer index axes, flattened (numpy): {name: int[N]}."""
    mesh = np.meshgrid(*[np.arange(n) for n in axes.values()], indexing="ij")
    return {k: m.ravel() for k, m in zip(axes, mesh, strict=True)}


def run(cfg: Config, *, key: jax.Array) -> dict:
    """Seed ``key`` draws every initialisation (``n_seeds`` of them), the mini-batch streams, the Hessian batch
    and the Lanczos starts. Every part runs on every seed (the loss map and AdamW grid on the first
    ``map_seeds``). Two training programs are compiled: the mini-batch run and the full-batch run."""
    k_init, k_data, k_hess, k_lanczos, _ = jax.random.split(key, 5)
    mc = cfg.model
    S = cfg.n_seeds
    # few eager jnp ops: each compiles its own small program, which dominated the quick preset's cost
    ikeys = jax.random.split(k_init, S)
    _, unravel, static = dyn.split(TinyLM(mc, key=ikeys[0]))
    flat0s = np.asarray(jax.jit(jax.vmap(lambda k: dyn.split(TinyLM(mc, key=k))[0]))(ikeys))  # [S, P]
    train_tok, val_tok = corpus.load_corpus(max_bytes=cfg.corpus_bytes)
    data = jnp.asarray(train_tok)
    ex, ey = tr.eval_windows(val_tok, mc.ctx, cfg.eval_windows)
    hx, hy = tr.get_batch(data, cfg.hvp_batch, mc.ctx, key=k_hess)
    out = {
        "unigram_loss": np.asarray(corpus.unigram_entropy(train_tok, val_tok)),
        "init_loss": jax.jit(lambda th: dyn.flat_loss(unravel, static, ex, ey)(th))(flat0s[0]),
    }

    # sharpness and top spectrum at initialisation, every seed (same Hessian batch)
    f_h = dyn.flat_loss(unravel, static, hx, hy)
    lkeys = jax.random.split(k_lanczos, S)
    spec = jax.jit(
        jax.vmap(
            lambda th, k: hs.lanczos_top(
                lambda u: hs.hvp(f_h, th, u), th.size, key=k, iters=cfg.lanczos_iters, k=cfg.spectrum_k
            )
        )
    )
    evals_s, evecs_s = map(np.asarray, spec(flat0s, lkeys))  # [S, K], [S, P, K]
    lam0s = evals_s[:, 0]
    units = np.asarray(2.0 / lam0s, np.float64)  # GD's quadratic threshold per seed
    out["hessian"] = {
        "eigenvalues": evals_s[0, : cfg.top_k],
        "lambda_max": lam0s[0],
        "spectrum": evals_s,
        "lambda_max_seeds": lam0s,
    }

    # one mini-batch program for the loss map, the AdamW grid and every bisection step
    dkeys = np.asarray(jax.random.key_data(jax.random.split(k_data, S)))
    nb = len(cfg.betas)

    def mb(row):
        return dyn.minibatch_run(
            row, unravel=unravel, static=static, data=data, ex=ex, ey=ey, steps=cfg.steps,
            batch_size=cfg.batch_size, blowup=cfg.blowup,
        )  # fmt: skip

    def mb_sweep(seed, lr, beta, adam):
        rows = {
            "theta0": flat0s[seed],
            "key": dkeys[seed],
            "lr": np.asarray(lr, np.float32),
            "beta": np.asarray(beta, np.float32),
            "adam": np.full(len(seed), adam, bool),
        }
        return jax.tree.map(np.asarray, dyn.run_rows(mb, rows, nb * S))

    # (lr, beta) loss map, mini-batch SGD + heavy ball, lr in units of each seed's 2/lambda_max(init)
    mults = np.geomspace(*cfg.lr_mults, cfg.n_lr)
    g = _rows(lr=cfg.n_lr, beta=nb, seed=cfg.map_seeds)
    res = mb_sweep(g["seed"], mults[g["lr"]] * units[g["seed"]], np.asarray(cfg.betas)[g["beta"]], False)
    shape = (cfg.n_lr, nb, cfg.map_seeds)
    out["sgd"] = {
        "lr_mult": mults,
        "beta": np.asarray(cfg.betas, np.float32),
        "final_loss": res["final_loss"].reshape(shape),
        "diverged": res["diverged"].reshape(shape),
    }

    # AdamW over (lr, beta1), absolute lr
    alrs = np.geomspace(*cfg.adam_lrs, cfg.n_adam)
    ga = _rows(lr=cfg.n_adam, beta=len(cfg.adam_beta1s), seed=cfg.map_seeds)
    resa = mb_sweep(ga["seed"], alrs[ga["lr"]], np.asarray(cfg.adam_beta1s)[ga["beta"]], True)
    ashape = (cfg.n_adam, len(cfg.adam_beta1s), cfg.map_seeds)
    out["adam"] = {
        "lr": np.asarray(alrs, np.float32),
        "beta1": np.asarray(cfg.adam_beta1s, np.float32),
        "final_loss": resa["final_loss"].reshape(ashape),
        "diverged": resa["diverged"].reshape(ashape),
    }

    # divergence edges by bisection: rows (beta, seed), each seed its own init, unit and mini-batch stream
    ge = _rows(beta=nb, seed=S)
    e = dyn.bisect_edges(
        lambda m: mb_sweep(ge["seed"], m * units[ge["seed"]], np.asarray(cfg.betas)[ge["beta"]], False)["diverged"],
        *cfg.edge_bracket,
        cfg.edge_iters,
        nb * S,
    )
    out["edges"] = {k: np.asarray(x).reshape(nb, S) for k, x in e.items()}
    out["edges"]["beta"] = np.asarray(cfg.betas, np.float32)

    # one full-batch program: edge of stability, valley/river decomposition, linear river (rows x seeds)
    fb_rows = fullbatch_rows(cfg)
    nr, ne = len(fb_rows), len(eos_rows(cfg))
    n_pts = cfg.eos_steps // cfg.eos_every + 1
    mid = n_pts // 2

    def fb(row):
        return dyn.fullbatch_run(
            row, unravel=unravel, static=static, x=hx, y=hy, steps=cfg.eos_steps, every=cfg.eos_every,
            track_iters=cfg.track_iters, mid=mid,
        )  # fmt: skip

    gf = _rows(row=nr, seed=S)
    rb = np.asarray([r[1] for r in fb_rows])
    rm = np.asarray([r[2] for r in fb_rows])
    rows = {
        "theta0": flat0s[gf["seed"]],
        "u0": evecs_s[gf["seed"], :, 0],
        "V": evecs_s[gf["seed"], :, : cfg.top_k],
        "lr": np.asarray(rm[gf["row"]] * units[gf["seed"]], np.float32),
        "beta": np.asarray(rb[gf["row"]], np.float32),
    }
    fbo = jax.tree.map(np.asarray, dyn.run_rows(fb, rows, nr * S))
    fbo = {k: x.reshape(nr, S, *x.shape[1:]) for k, x in fbo.items()}

    # the tracker checked against a fresh Lanczos (the spectrum program, random start) mid-run and at the end
    lz = {
        f"lanczos_{w}": np.stack([np.asarray(spec(fbo[f"theta_{w}"][r], lkeys)[0])[:, 0] for r in range(ne)])
        for w in ("mid", "end")
    }
    keys = ("lam", "loss", "param_norm", "norm_scale", "loss_all")
    out["eos"] = {k: fbo[k][:ne] for k in keys}
    out["eos"].update(lz, mid=np.asarray(mid), beta=rb[:ne], mult=rm[:ne])
    out["eos"]["lr"] = np.asarray(rm[:ne, None] * units[None, :], np.float32)

    keys = ("valley", "river", "loss", "loss_river_only", "grad_frac_top")
    dec = {k: fbo[k][ne : ne + 2] for k in keys}  # [2 (HB, GD), S, T(, k)]
    v_end, r_end = dec["valley"][:, :, -1], dec["river"][:, :, -1]
    vv = np.sum(v_end**2, axis=-1)
    dec["disp_frac_top"] = vv / np.maximum(vv + r_end**2, 1e-30)
    dec["grad_frac_top"] = dec["grad_frac_top"][0, :, 0]  # at init, per seed
    out["decomposition"] = {
        **dec,
        "lr": np.asarray(cfg.decomp_lr_mult * units, np.float32),
        "beta": np.asarray([cfg.decomp_beta, 0.0]),
        "n_params": np.asarray(flat0s.shape[1]),
        "step": np.arange(n_pts) * cfg.eos_every,
    }
    out["linear_river"] = {
        "disp": fbo["disp"][ne + 2 :, :, cfg.river_steps // cfg.eos_every],  # [2 (HB, GD), S]
        "lr": np.asarray(cfg.river_lr_mult * units, np.float32),
    }
    return out


def linear_river_ratio(beta: float, steps: int) -> float:
    """HB / GD displacement after ``steps`` steps on a linear river (constant gradient g, v_0 = 0): from
    x_t = x_0 - (lr g/(1-beta)) [t - beta(1-beta^t)/(1-beta)] (``shared/papers/river_valley.md``) and GD's lr g t."""
    return (steps - beta * (1.0 - beta**steps) / (1.0 - beta)) / ((1.0 - beta) * steps)


# ---------------------------------------------------------------------------------------------------------
# Claims
# ---------------------------------------------------------------------------------------------------------


def _momentum_twice(f):
    return lambda v, g, beta: f(f(v, g, beta), g, beta)


def _momentum_sign_flipped(f):
    return lambda v, g, beta: f(-v, g, beta)


def _ritz_ascending(f):
    def lanczos(op, dim, *, key, iters, k):
        ev, vec = f(op, dim, key=key, iters=iters, k=iters)
        return ev[::-1][:k], vec[:, ::-1][:, :k]

    return lanczos


MUTANTS = [
    Mutant(
        "momentum_applied_twice",
        "jaxwb.sims.river_valley_lm.dynamics:hb_velocity",
        _momentum_twice,
        "heavy-ball velocity accumulated twice per step: v <- beta (beta v + g) + g",
    ),
    Mutant(
        "momentum_sign_flipped",
        "jaxwb.sims.river_valley_lm.dynamics:hb_velocity",
        _momentum_sign_flipped,
        "heavy-ball velocity with the momentum term's sign flipped: v <- g - beta v",
    ),
    Mutant(
        "ritz_pairs_ascending",
        "jaxwb.theory.hessian:lanczos_top",
        _ritz_ascending,
        "Lanczos Ritz pairs kept in eigh's ascending order: the 'top' Hessian directions are the bottom ones",
    ),
]

from jaxwb.sims.river_valley_lm.claims import (  # noqa: E402, F401
    GAP_RATIO,
    KNOWN_DISAGREEMENTS,
    claims,
    edges,
    eos_sharpness,
    seed_edges,
    tracker_vs_lanczos,
)
from jaxwb.sims.river_valley_lm.figures import bench, plot  # noqa: E402, F401
