"""river_valley_lm: the simulation, ``run`` and its parts (what is measured: the package docstring).

Three compiled training programs serve every part (``dynamics``): the mini-batch run (loss map, AdamW grid,
every bisection step of the divergence edges) and the full-batch run, with the lambda_max tracker (edge of
stability) and without it (valley/river decomposition)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.models import corpus
from jaxwb.models import train as tr
from jaxwb.models.tiny_lm import TinyLM
from jaxwb.sims.river_valley_lm import dynamics as dyn
from jaxwb.sims.river_valley_lm.config import Config
from jaxwb.theory import hessian as hs


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
    ``decomp_lr_mult``). (The linear-river displacement at a tiny lr, the paper's exact formula, is a unit test:
    ``tests/sims/test_river_valley_lm.py``.)"""
    d = cfg.decomp_lr_mult
    return [*eos_rows(cfg), ("decomposition HB", cfg.decomp_beta, d), ("decomposition GD", 0.0, d)]


def _rows(**axes):
    """Cartesian product of integer index axes, flattened (numpy): {name: int[N]}."""
    mesh = np.meshgrid(*[np.arange(n) for n in axes.values()], indexing="ij")
    return {k: m.ravel() for k, m in zip(axes, mesh, strict=True)}


@dataclasses.dataclass(frozen=True)
class Setup:
    """What every part shares: the flattened initialisations of all seeds (one TinyLM structure), the training
    tokens, the validation windows, the fixed Hessian batch, and each seed's GD threshold 2/lambda_max(init)."""

    unravel: Callable
    static: Any
    flat0s: np.ndarray  # [S, P]
    data: jax.Array
    ex: jax.Array
    ey: jax.Array
    hx: jax.Array
    hy: jax.Array


def setup(cfg: Config, k_init: jax.Array, k_hess: jax.Array) -> tuple[Setup, np.ndarray, np.ndarray]:
    """The shared setup, and the corpus (train, validation tokens)."""
    mc = cfg.model
    # few eager jnp ops: each compiles its own small program, which dominated the quick preset's cost
    ikeys = jax.random.split(k_init, cfg.n_seeds)
    _, unravel, static = dyn.split(TinyLM(mc, key=ikeys[0]))
    flat0s = np.asarray(jax.jit(jax.vmap(lambda k: dyn.split(TinyLM(mc, key=k))[0]))(ikeys))  # [S, P]
    train_tok, val_tok = corpus.load_corpus(max_bytes=cfg.corpus_bytes)
    data = jnp.asarray(train_tok)
    ex, ey = tr.eval_windows(val_tok, mc.ctx, cfg.eval_windows)
    hx, hy = tr.get_batch(data, cfg.hvp_batch, mc.ctx, key=k_hess)
    return Setup(unravel, static, flat0s, data, ex, ey, hx, hy), train_tok, val_tok


def spectrum_program(cfg: Config, st: Setup) -> Callable:
    """The jitted top-``spectrum_k`` Lanczos on the Hessian batch, vmapped over (theta, key) of the seeds."""
    f_h = dyn.flat_loss(st.unravel, st.static, st.hx, st.hy)
    return jax.jit(
        jax.vmap(
            lambda th, k: hs.lanczos_top(
                lambda u: hs.hvp(f_h, th, u), th.size, key=k, iters=cfg.lanczos_iters, k=cfg.spectrum_k
            )
        )
    )


def minibatch_parts(cfg: Config, st: Setup, k_data: jax.Array, units: np.ndarray) -> dict:
    """One mini-batch program for the (lr, beta) loss map, the AdamW grid and every bisection step of the
    divergence edges; lr in units of each seed's 2/lambda_max(init) (AdamW: absolute lr)."""
    S = cfg.n_seeds
    dkeys = np.asarray(jax.random.key_data(jax.random.split(k_data, S)))
    nb = len(cfg.betas)

    def mb(row):
        return dyn.minibatch_run(
            row, unravel=st.unravel, static=st.static, data=st.data, ex=st.ex, ey=st.ey, steps=cfg.steps,
            batch_size=cfg.batch_size, blowup=cfg.blowup,
        )  # fmt: skip

    def mb_sweep(seed, lr, beta, adam):
        rows = {
            "theta0": st.flat0s[seed],
            "key": dkeys[seed],
            "lr": np.asarray(lr, np.float32),
            "beta": np.asarray(beta, np.float32),
            "adam": np.full(len(seed), adam, bool),
        }
        return jax.tree.map(np.asarray, dyn.run_rows(mb, rows, nb * S))

    out = {}
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
    return out


def fullbatch_parts(
    cfg: Config, st: Setup, units: np.ndarray, evecs_s: np.ndarray, spec: Callable, lkeys: jax.Array
) -> dict:
    """Full-batch runs (rows x seeds): edge of stability (tracked) and valley/river decomposition (untracked); the
    lambda_max tracker checked against a fresh Lanczos (``spec``, random start) mid-run and at the end."""
    S = cfg.n_seeds
    fb_rows = fullbatch_rows(cfg)
    nr, ne = len(fb_rows), len(eos_rows(cfg))
    n_pts = cfg.eos_steps // cfg.eos_every + 1
    mid = n_pts // 2

    def fb(row, track_iters):
        return dyn.fullbatch_run(
            row, unravel=st.unravel, static=st.static, x=st.hx, y=st.hy, steps=cfg.eos_steps, every=cfg.eos_every,
            track_iters=track_iters, mid=mid,
        )  # fmt: skip

    def runs(sel, track_iters):
        """The full-batch runs of rows ``sel`` (all seeds each): {name: [len(sel), S, ...]}."""
        gf = _rows(row=len(sel), seed=S)
        r = np.asarray(sel)[gf["row"]]
        rows = {
            "theta0": st.flat0s[gf["seed"]],
            "u0": evecs_s[gf["seed"], :, 0],
            "V": evecs_s[gf["seed"], :, : cfg.top_k],
            "lr": np.asarray(rm[r] * units[gf["seed"]], np.float32),
            "beta": np.asarray(rb[r], np.float32),
        }
        o = jax.tree.map(np.asarray, dyn.run_rows(functools.partial(fb, track_iters=track_iters), rows, len(r)))
        return {k: x.reshape(len(sel), S, *x.shape[1:]) for k, x in o.items()}

    rb = np.asarray([r[1] for r in fb_rows])
    rm = np.asarray([r[2] for r in fb_rows])
    # two programs: the EoS rows with the lambda_max tracker, the decomposition rows without (its HVPs are ~90% of
    # a tracked run's cost and the decomposition reads no sharpness)
    fbo = runs(range(ne), cfg.track_iters)
    dec = runs(range(ne, nr), 0)

    # the tracker checked against a fresh Lanczos (the spectrum program, random start) mid-run and at the end
    lz = {
        f"lanczos_{w}": np.stack([np.asarray(spec(fbo[f"theta_{w}"][r], lkeys)[0])[:, 0] for r in range(ne)])
        for w in ("mid", "end")
    }
    out = {}
    keys = ("lam", "loss", "param_norm", "norm_scale", "loss_all")
    out["eos"] = {k: fbo[k][:ne] for k in keys}
    out["eos"].update(lz, mid=np.asarray(mid), beta=rb[:ne], mult=rm[:ne])
    out["eos"]["lr"] = np.asarray(rm[:ne, None] * units[None, :], np.float32)

    keys = ("valley", "river", "loss", "loss_river_only", "grad_frac_top")
    dec = {k: dec[k] for k in keys}  # [2 (HB, GD), S, T(, k)]
    v_end, r_end = dec["valley"][:, :, -1], dec["river"][:, :, -1]
    vv = np.sum(v_end**2, axis=-1)
    dec["disp_frac_top"] = vv / np.maximum(vv + r_end**2, 1e-30)
    dec["grad_frac_top"] = dec["grad_frac_top"][0, :, 0]  # at init, per seed
    out["decomposition"] = {
        **dec,
        "lr": np.asarray(cfg.decomp_lr_mult * units, np.float32),
        "beta": np.asarray([cfg.decomp_beta, 0.0]),
        "n_params": np.asarray(st.flat0s.shape[1]),
        "step": np.arange(n_pts) * cfg.eos_every,
    }
    return out


def run(cfg: Config, *, key: jax.Array) -> dict:
    """Seed ``key`` draws every initialisation (``n_seeds`` of them), the mini-batch streams, the Hessian batch
    and the Lanczos starts. Every part runs on every seed (the loss map and AdamW grid on the first
    ``map_seeds``). Three training programs are compiled: the mini-batch run and the full-batch run with and without
    the lambda_max tracker."""
    k_init, k_data, k_hess, k_lanczos, _ = jax.random.split(key, 5)
    st, train_tok, val_tok = setup(cfg, k_init, k_hess)
    out = {
        "unigram_loss": np.asarray(corpus.unigram_entropy(train_tok, val_tok)),
        # validation loss at init, every seed [S] (the mini-batch runs' starting point)
        "init_loss": np.asarray(jax.jit(jax.vmap(dyn.flat_loss(st.unravel, st.static, st.ex, st.ey)))(st.flat0s)),
    }

    # sharpness and top spectrum at initialisation, every seed (same Hessian batch)
    spec = spectrum_program(cfg, st)
    lkeys = jax.random.split(k_lanczos, cfg.n_seeds)
    evals_s, evecs_s = map(np.asarray, spec(st.flat0s, lkeys))  # [S, K], [S, P, K]
    lam0s = evals_s[:, 0]
    units = np.asarray(2.0 / lam0s, np.float64)  # GD's quadratic threshold per seed
    out["hessian"] = {
        "eigenvalues": evals_s[0, : cfg.top_k],
        "lambda_max": lam0s[0],
        "spectrum": evals_s,
        "lambda_max_seeds": lam0s,
    }
    out.update(minibatch_parts(cfg, st, k_data, units))
    out.update(fullbatch_parts(cfg, st, units, evecs_s, spec, lkeys))
    return out
