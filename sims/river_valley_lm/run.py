"""river_valley_lm: the simulation, ``run`` and its parts (what is measured: the package docstring).

Three compiled training programs serve the study's model (``dynamics``): the mini-batch run (loss map, AdamW grid,
every bisection step of the divergence edges) and the full-batch run, with the lambda_max tracker (edge of
stability) and without it (valley/river decomposition); the width scan compiles the mini-batch run and the spectrum
once per width. The independent checks (``reference``) run on the float64 NumPy reference of the model."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.models import corpus
from jaxwb.models import reference_np as rnp
from jaxwb.models import train as tr
from jaxwb.models.tiny_lm import TinyLM
from jaxwb.sims.river_valley_lm import dynamics as dyn
from jaxwb.sims.river_valley_lm import reference as rvref
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


def inits(mc, keys) -> tuple[Callable, Any, np.ndarray]:
    """(unravel, static, flat initialisations [S, P]) of the TinyLM ``mc`` at each of ``keys``."""
    _, unravel, static = dyn.split(TinyLM(mc, key=keys[0]))
    # few eager jnp ops: each compiles its own small program, which dominated the quick preset's cost
    flat0s = np.asarray(jax.jit(jax.vmap(lambda k: dyn.split(TinyLM(mc, key=k))[0]))(keys))  # [S, P]
    return unravel, static, flat0s


def setup(cfg: Config, k_init: jax.Array, k_hess: jax.Array) -> tuple[Setup, np.ndarray, np.ndarray]:
    """The shared setup, and the corpus (train, validation tokens)."""
    mc = cfg.model
    unravel, static, flat0s = inits(mc, jax.random.split(k_init, cfg.n_seeds))
    train_tok, val_tok = corpus.load_corpus(max_bytes=cfg.corpus_bytes)
    data = jnp.asarray(train_tok)
    ex, ey = tr.eval_windows(val_tok, mc.ctx, cfg.eval_windows)
    hx, hy = tr.get_batch(data, cfg.hvp_batch, mc.ctx, key=k_hess)
    return Setup(unravel, static, flat0s, data, ex, ey, hx, hy), train_tok, val_tok


def spectrum_program(cfg: Config, unravel, static, hx, hy) -> Callable:
    """The jitted top-``spectrum_k`` Lanczos on the Hessian batch, vmapped over (theta, key) of the seeds."""
    f_h = dyn.flat_loss(unravel, static, hx, hy)
    return jax.jit(
        jax.vmap(
            lambda th, k: hs.lanczos_top(
                lambda u: hs.hvp(f_h, th, u), th.size, key=k, iters=cfg.lanczos_iters, k=cfg.spectrum_k
            )
        )
    )


def minibatch_program(cfg: Config, unravel, static, data, ex, ey) -> Callable:
    """One mini-batch run of a row (:func:`dynamics.minibatch_run`), a closure made once per model."""

    def mb(row):
        return dyn.minibatch_run(
            row, unravel=unravel, static=static, data=data, ex=ex, ey=ey, steps=cfg.steps,
            batch_size=cfg.batch_size, blowup=cfg.blowup,
        )  # fmt: skip

    return mb


def minibatch_sweep(mb: Callable, flat0s: np.ndarray, dkeys: np.ndarray, chunk: int):
    """``sweep(seed, lr, beta, adam)``: the mini-batch runs of rows (seed index, lr, beta) from each seed's
    initialisation and batch stream, ``chunk`` rows per compiled call."""

    def sweep(seed, lr, beta, adam):
        rows = {
            "theta0": flat0s[seed],
            "key": dkeys[seed],
            "lr": np.asarray(lr, np.float32),
            "beta": np.asarray(beta, np.float32),
            "adam": np.full(len(seed), adam, bool),
        }
        return jax.tree.map(np.asarray, dyn.run_rows(mb, rows, chunk))

    return sweep


def grid_lrs(cfg: Config) -> tuple[np.ndarray, np.ndarray]:
    """The loss map's lr grid: effective-lr multipliers [L] (units of 2/lambda_max(init)) and the raw-lr multiplier
    of each (lr, beta) point [L, B], raw = effective x (1 - beta)."""
    mults = np.geomspace(*cfg.lr_mults, cfg.n_lr)
    return mults, mults[:, None] * (1.0 - np.asarray(cfg.betas))[None, :]


def minibatch_parts(cfg: Config, st: Setup, dkeys: np.ndarray, units: np.ndarray) -> dict:
    """One mini-batch program for the (lr, beta) loss map, the AdamW grid and every bisection step of the
    divergence edges; lr in units of each seed's 2/lambda_max(init) (AdamW: absolute lr)."""
    S = cfg.n_seeds
    nb = len(cfg.betas)
    mb_sweep = minibatch_sweep(
        minibatch_program(cfg, st.unravel, st.static, st.data, st.ex, st.ey), st.flat0s, dkeys, nb * S
    )

    out = {}
    # (lr, beta) loss map, mini-batch SGD + heavy ball, effective lr in units of each seed's 2/lambda_max(init)
    mults, raw = grid_lrs(cfg)
    g = _rows(lr=cfg.n_lr, beta=nb, seed=cfg.map_seeds)
    res = mb_sweep(g["seed"], raw[g["lr"], g["beta"]] * units[g["seed"]], np.asarray(cfg.betas)[g["beta"]], False)
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
) -> tuple[dict, dict]:
    """Full-batch runs: edge of stability (tracked; the first ``eos_seeds``) and valley/river decomposition
    (untracked; every seed); the lambda_max tracker checked against a fresh Lanczos (``spec``, random start) mid-run
    and at the end. Returns (results, final parameters {"eos": [R, S_eos, P], "decomposition": [2, S, P]})."""
    fb_rows = fullbatch_rows(cfg)
    nr, ne = len(fb_rows), len(eos_rows(cfg))
    n_pts = cfg.eos_steps // cfg.eos_every + 1
    mid = n_pts // 2

    def fb(row, track_iters):
        return dyn.fullbatch_run(
            row, unravel=st.unravel, static=st.static, x=st.hx, y=st.hy, steps=cfg.eos_steps, every=cfg.eos_every,
            track_iters=track_iters, mid=mid,
        )  # fmt: skip

    def runs(sel, track_iters, S):
        """The full-batch runs of rows ``sel`` on the first ``S`` seeds: {name: [len(sel), S, ...]}."""
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
    se = cfg.eos_seeds
    fbo = runs(range(ne), cfg.track_iters, se)
    dec = runs(range(ne, nr), 0, cfg.n_seeds)

    # the tracker checked against a fresh Lanczos (the spectrum program, random start) mid-run and at the end
    lz = {
        f"lanczos_{w}": np.stack([np.asarray(spec(fbo[f"theta_{w}"][r], lkeys[:se])[0])[:, 0] for r in range(ne)])
        for w in ("mid", "end")
    }
    out = {}
    keys = ("lam", "loss", "param_norm", "norm_scale", "loss_all")
    out["eos"] = {k: fbo[k][:ne] for k in keys}
    out["eos"].update(lz, mid=np.asarray(mid), beta=rb[:ne], mult=rm[:ne])
    out["eos"]["lr"] = np.asarray(rm[:ne, None] * units[None, :se], np.float32)

    thetas = {"eos": fbo["theta_end"], "decomposition": dec["theta_end"]}
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
    return out, thetas


@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4))
def stream_starts(key, steps: int, batch: int, n_tokens: int, ctx: int) -> jax.Array:
    """The window starts [steps, batch] of a mini-batch run's random stream ``key``: the run's key use replayed
    (``models.train.train_scan`` splits (k, kb) each step, ``get_batch`` draws randint(kb, 0, n - ctx - 1)); the
    reference cuts its own windows at these starts."""

    def step(k, _):
        k, kb = jax.random.split(k)
        return k, jax.random.randint(kb, (batch,), 0, n_tokens - ctx - 1)

    return jax.lax.scan(step, key, None, length=steps)[1]


def reference_part(
    cfg: Config,
    st: Setup,
    tokens: tuple[np.ndarray, np.ndarray],
    units: np.ndarray,
    evecs_s: np.ndarray,
    thetas: dict,
    dkeys: np.ndarray,
    k_small: jax.Array,
) -> dict:
    """The run's numbers recomputed on the float64 NumPy reference (``reference``; claims compare them): the
    targets of the Hessian batch and of the evaluation windows against the corpus; the full-batch losses at
    theta_0 and theta_T of every run and the logits of seed 0's GD run at theta_T on its own batch; the loss at the
    river part of heavy ball's displacement; the curvature along each seed's top Ritz vectors; the small model's
    dense Hessian spectrum and the quadratic edges of heavy ball on it; one divergence edge bisected on the
    reference (GD, seed 0) and three mini-batch runs repeated (GD, heavy ball at the largest beta and Adam at their
    grids' smallest lr, seed 0)."""
    mc = cfg.model
    kw: dict[str, Any] = {"n_heads": mc.n_heads, "rope_base": mc.rope_base}
    train_tok, val_tok = tokens
    S, se = cfg.n_seeds, cfg.eos_seeds

    def params(theta):
        """The run's flat parameters read as the reference's named float64 arrays."""
        return rnp.float64_params(eqx.combine(st.unravel(jnp.asarray(theta, jnp.float32)), st.static))

    hx, hy, ex, ey = (np.asarray(a) for a in (st.hx, st.hy, st.ex, st.ey))
    h_starts, h_bad = rvref.locate_targets(train_tok, hx, hy)
    e_starts, e_bad = rvref.locate_targets(val_tok, ex, ey)
    hy_ref = rnp.windows(train_tok, np.maximum(h_starts, 0), mc.ctx)[1]  # the reference's own targets
    ey_ref = rnp.windows(val_tok, np.maximum(e_starts, 0), mc.ctx)[1]

    def loss(theta, x=hx, y=hy_ref):
        return rnp.cross_entropy(params(theta), x, y, per_window=False, **kw)

    out: dict[str, Any] = {
        "target_mismatch": np.asarray(h_bad + e_bad),
        "target_bytes": np.asarray(hy.size + ey.size),
        "loss_init": np.asarray([loss(st.flat0s[s]) for s in range(S)]),
        "eos_loss_end": np.asarray([[loss(thetas["eos"][r, s]) for s in range(se)] for r in range(len(thetas["eos"]))]),
        "dec_loss_end": np.asarray([[loss(thetas["decomposition"][r, s]) for s in range(S)] for r in range(2)]),
    }
    th = thetas["eos"][0, 0]  # GD, seed 0, theta_T
    out["logits_run"] = np.asarray(eqx.filter_jit(lambda m, t: m(t))(eqx.combine(st.unravel(th), st.static), hx[0]))
    out["logits"] = rnp.logits(params(th), hx[0], **kw)

    # the loss at theta_0 + the river part of heavy ball's displacement (I - V V^T)(theta_T - theta_0)
    river = []
    for s in range(S):
        d = thetas["decomposition"][0, s].astype(np.float64) - st.flat0s[s]
        V = evecs_s[s, :, : cfg.top_k].astype(np.float64)
        river.append(loss(st.flat0s[s] + (d - V @ (V.T @ d))))
    out["dec_loss_river"] = np.asarray(river)

    # the curvature of the reference loss along the run's Ritz vectors at init: seed 0's top spectrum_k, every
    # seed's top one
    def curv(s, i):
        return rvref.rayleigh(params(st.flat0s[s]), params(evecs_s[s, :, i]), hx, hy_ref, **kw)

    out["rayleigh_seed0"] = np.asarray([curv(0, i) for i in range(cfg.spectrum_k)])
    out["rayleigh_top"] = np.asarray([curv(s, 0) for s in range(S)])

    # the small model: the run's Lanczos against numpy.linalg.eigh of the reference's dense Hessian; heavy ball's
    # divergence edge on that Hessian's quadratic model, simulated
    sc = cfg.small
    k_i, k_b, k_l = jax.random.split(k_small, 3)
    small = TinyLM(sc, key=k_i)
    flat_s, unravel_s, static_s = dyn.split(small)
    starts = np.asarray(jax.random.randint(k_b, (cfg.small_batch,), 0, len(train_tok) - sc.ctx - 1))
    xs, ys = rnp.windows(train_tok, starts, sc.ctx)
    spec_s = spectrum_program(cfg, unravel_s, static_s, jnp.asarray(xs), jnp.asarray(ys))
    out["small_lanczos"] = np.asarray(spec_s(flat_s[None], k_l[None])[0])[0]
    hess = rvref.dense_hessian(rnp.float64_params(small), xs, ys, n_heads=sc.n_heads, rope_base=sc.rope_base)
    ev = np.linalg.eigvalsh(hess)[::-1]
    out["small_eigh"] = ev[: cfg.spectrum_k]
    out["small_quadratic_edge"] = np.asarray([rvref.quadratic_edge(ev, b) for b in cfg.betas])
    out["small_n_params"] = np.asarray(hess.shape[0])

    # one divergence edge (GD, seed 0) bisected on the reference, and three mini-batch runs repeated on it
    n_tok = len(train_tok)
    starts0 = np.asarray(stream_starts(jnp.asarray(dkeys[0]), cfg.steps, cfg.batch_size, n_tok, mc.ctx))
    p0 = params(st.flat0s[0])

    def run_ref(lr, beta, adam=False):
        return rvref.train(p0, train_tok, starts0, mc.ctx, lr=lr, beta=beta, adam=adam, blowup=cfg.blowup, **kw)

    lo, hi, lo_ok, hi_div = rvref.bisect_edge(
        lambda m: run_ref(float(np.float32(m * units[0])), 0.0)[0], *cfg.edge_bracket, cfg.edge_iters
    )
    out["edge"] = {"lo": np.asarray(lo), "hi": np.asarray(hi), "lo_ok": np.asarray(lo_ok), "hi_div": np.asarray(hi_div)}
    # the loss map's smallest lr for GD and for the largest beta (heavy ball's velocity on the reference), AdamW's
    _, raw = grid_lrs(cfg)
    jb = int(np.argmax(cfg.betas))
    finals = []
    for lr, beta, adam in (
        (float(np.float32(raw[0, cfg.betas.index(0.0)] * units[0])), 0.0, False),
        (float(np.float32(raw[0, jb] * units[0])), cfg.betas[jb], False),
        (float(np.float32(cfg.adam_lrs[0])), cfg.adam_beta1s[-1], True),
    ):
        div, p = run_ref(lr, float(np.float32(beta)), adam)
        finals.append(np.nan if div else rnp.cross_entropy(p, ex, ey_ref, per_window=False, **kw))
    out["sgd_final"], out["hb_final"], out["adam_final"] = (np.asarray(f) for f in finals)
    return out


def scan_part(cfg: Config, st: Setup, k_scan: jax.Array) -> dict:
    """The width scan: at each of ``scan_widths``, ``scan_seeds`` initialisations, their top spectrum at init on the
    study's Hessian batch and the divergence edges of GD and heavy ball (``scan_beta``) by bisection (mini-batch,
    the study's steps, batch and halvings in ``scan_bracket``; lr in units of each seed's 2/lambda_max(init))."""
    S, nb = cfg.scan_seeds, 2
    betas = np.asarray([0.0, cfg.scan_beta])
    spectra, edges = [], []
    for w in cfg.scan_widths:
        kw = jax.random.fold_in(k_scan, w)
        k_init, k_data, k_lz = jax.random.split(kw, 3)
        unravel, static, flat0s = inits(cfg.width(w), jax.random.split(k_init, S))
        spec = spectrum_program(cfg, unravel, static, st.hx, st.hy)
        evals = np.asarray(spec(flat0s, jax.random.split(k_lz, S))[0])  # [S, K]
        units = np.asarray(2.0 / evals[:, 0], np.float64)
        dkeys = np.asarray(jax.random.key_data(jax.random.split(k_data, S)))
        sweep = minibatch_sweep(minibatch_program(cfg, unravel, static, st.data, st.ex, st.ey), flat0s, dkeys, nb * S)
        g = _rows(beta=nb, seed=S)
        e = dyn.bisect_edges(
            lambda m, g=g, units=units, sweep=sweep: sweep(g["seed"], m * units[g["seed"]], betas[g["beta"]], False)[
                "diverged"
            ],
            *cfg.scan_bracket,
            cfg.edge_iters,
            nb * S,
        )
        spectra.append(evals)
        edges.append({k: np.asarray(x).reshape(nb, S) for k, x in e.items()})
    return {
        "width": np.asarray(cfg.scan_widths),
        "spectrum": np.stack(spectra),  # [W, S, K]
        **{k: np.stack([e[k] for e in edges]) for k in ("lo", "hi", "lo_ok", "hi_div")},  # [W, 2 (GD, HB), S]
    }


def run(cfg: Config, *, key: jax.Array) -> dict:
    """Seed ``key`` draws every initialisation (``n_seeds`` of them), the mini-batch streams, the Hessian batch,
    the Lanczos starts, the small model of the dense-Hessian check and the width scan's models. Every part runs on
    every seed (the loss map and AdamW grid on the first ``map_seeds``, the tracked full-batch runs on the first
    ``eos_seeds``)."""
    k_init, k_data, k_hess, k_lanczos, k_extra = jax.random.split(key, 5)
    k_small, k_scan = jax.random.split(k_extra)
    st, train_tok, val_tok = setup(cfg, k_init, k_hess)
    out: dict[str, Any] = {
        "unigram_loss": np.asarray(corpus.unigram_entropy(train_tok, val_tok)),
        # validation loss at init, every seed [S] (the mini-batch runs' starting point)
        "init_loss": np.asarray(jax.jit(jax.vmap(dyn.flat_loss(st.unravel, st.static, st.ex, st.ey)))(st.flat0s)),
    }

    # sharpness and top spectrum at initialisation, every seed (same Hessian batch)
    spec = spectrum_program(cfg, st.unravel, st.static, st.hx, st.hy)
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
    dkeys = np.asarray(jax.random.key_data(jax.random.split(k_data, cfg.n_seeds)))
    out.update(minibatch_parts(cfg, st, dkeys, units))
    fb, thetas = fullbatch_parts(cfg, st, units, evecs_s, spec, lkeys)
    out.update(fb)
    out["reference"] = reference_part(cfg, st, (train_tok, val_tok), units, evecs_s, thetas, dkeys, k_small)
    out["scan"] = scan_part(cfg, st, k_scan)
    return out
