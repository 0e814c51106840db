"""``run`` of the mpq result: VAMP vs its state evolution (planted problems), every solver vs exact enumeration
on tiny problems, VAMP marginals vs the exact posterior, GPTQ vs the NumPy port, and the tiny LM after 3- and
4-bit PTQ by RTN / GPTQ / MPQ with and without a random-Hadamard rotation."""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.models import corpus
from jaxwb.models import train as tr
from jaxwb.models.reference_np import cross_entropy, float64_params
from jaxwb.models.tiny_lm import TinyLM, linear_weights, replace_linear_weights
from jaxwb.sims.mpq.config import METHODS, TINY_SOLVERS, Config
from jaxwb.sims.mpq.reference_np import gptq_numpy
from jaxwb.theory import mpq as M

# ---------------------------------------------------------------------------------------------------------
# Theory parts
# ---------------------------------------------------------------------------------------------------------


def state_evolution_part(cfg: Config, *, key: jax.Array) -> dict:
    """Measured per-iteration MSE of VAMP's x1 against q0 (draws, iters) and the state evolution's E1 per draw."""
    mse, se = [], []
    levels = np.asarray(cfg.se_levels, np.float64)  # the tuple as an array (exact; theory types levels ArrayLike)
    for i in range(cfg.se_draws):
        p = M.planted_problem(
            cfg.se_d, cfg.se_ratio, levels, beta=cfg.se_beta, rows=cfg.se_rows, key=jax.random.fold_in(key, i)
        )
        out = M.vamp(p["w"], p["h"], p["grid"], beta=cfg.se_beta, iters=cfg.se_iters, precision="scalar")
        mse.append(np.asarray(jnp.mean((out["x1"] - p["q0"][None]) ** 2, axis=(1, 2))))
        se.append(M.state_evolution(np.asarray(p["lam"]), levels, beta=cfg.se_beta, iters=cfg.se_iters))
    return {"mse": jnp.asarray(np.array(mse)), "se": jnp.asarray(np.array(se))}


def tiny_problem(cfg: Config, *, key: jax.Array):
    """One tiny row: w ~ N(0, 1), H = X^T X / n (n = 2d, correlated columns, each scaled by
    exp(tiny_col_spread N(0, 1)): an unequal diagonal, as a layer's inputs have), damped, scaled to unit mean
    diagonal. Returns (w (1, d), H, its INT codebook)."""
    k1, k2, k3, k4 = jax.random.split(key, 4)
    d = cfg.tiny_d
    mix = jnp.eye(d) + 0.5 * jax.random.normal(k2, (d, d)) / np.sqrt(d)
    x = jax.random.normal(k1, (2 * d, d)) @ mix * jnp.exp(cfg.tiny_col_spread * jax.random.normal(k4, (d,)))[None]
    h = M.proxy_hessian(x, damping=cfg.damping)
    h = h / jnp.mean(jnp.diag(h))
    w = jax.random.normal(k3, (1, d))
    return w, h, M.int_codebook(w, bits=cfg.tiny_bits, group=d)


def unit_diagonal(h: jax.Array) -> jax.Array:
    """D^-1/2 H D^-1/2 (D = diag H): the same correlations with an equal (unit) diagonal."""
    dg = jnp.sqrt(jnp.diag(h))
    return h / dg[:, None] / dg[None, :]


def marginal_errors(w, h, grid, betas, *, precision: str, cfg: Config) -> tuple[list[float], list[float]]:
    """Per beta: max |p_VAMP - p_exact| and max |p_exact - prior| of one row (exact marginals by enumeration)."""
    combos, energy = M.codeword_energies(w[0], h, grid[0])
    err, dist = [], []
    for beta in betas:
        ex = M.marginals_from_energies(combos, energy, grid.shape[-1], beta=beta)
        vm = np.asarray(M.vamp(w, h, grid, beta=beta, iters=cfg.vamp_iters, precision=precision)["marginals"][0])
        err.append(float(np.max(np.abs(vm - ex))))
        dist.append(float(np.max(np.abs(ex - 1.0 / ex.shape[-1]))))  # the exact marginals' distance from the prior
    return err, dist


def one_coordinate_ratio(w, h, grid, codes) -> float:
    """min over every change of one coordinate's code of its objective, over the objective of ``codes``: w (d,),
    h (d, d), grid (d, K), codes (d,); float64 NumPy by direct evaluation of the d (K - 1) neighbours. >= 1 iff
    ``codes`` is a coordinate-wise minimum, where exact coordinate descent with block 1 stops."""
    wn, hn, gn = (np.asarray(a, np.float64) for a in (w, h, grid))
    c = np.asarray(codes)
    d, k = gn.shape
    q = gn[np.arange(d), c]
    f0 = float((wn - q) @ hn @ (wn - q))
    best = np.inf
    for j in range(d):
        for v in range(k):
            if v != c[j]:
                e = wn - q
                e[j] = wn[j] - gn[j, v]
                best = min(best, float(e @ hn @ e))
    return best / f0


def tiny_part(cfg: Config, *, key: jax.Array) -> dict:
    """Per tiny problem: the exact minimum, every solver's objective, BCD's and MPQ's best one-coordinate change
    over their objective (``one_coord``), and VAMP's marginal errors against the exact posterior per beta:
    ``marg_*`` the scalar form on the unit-diagonal version of H (float32, ``marg_betas``), ``diag_*`` the diagonal
    form on H itself (unequal diagonal; float64, ``diag_betas``), ``scalar_unequal_*`` the scalar form on H itself
    (``diag_betas``; shown, not claimed)."""
    objs: dict[str, list[float]]
    one: dict[str, list[float]]
    exact, objs, one = [], {s: [] for s in TINY_SOLVERS}, {"bcd": [], "mpq": []}
    marg: dict[str, list[list[float]]] = {
        k: [] for k in ("marg_err", "marg_dist", "diag_err", "diag_dist", "scalar_unequal_err")
    }
    for i in range(cfg.tiny_problems):
        w, h, book = tiny_problem(cfg, key=jax.random.fold_in(key, i))
        exact.append(M.exact_minimum(w[0], h, book.grid[0])[0])
        r = M.rtn(w, book)
        codes = {
            "rtn": r,
            "gptq": M.gptq(w, h, book),
            "ldlq": M.ldlq(w, h, book),
            "bcd": M.bcd(w, h, book, r, block=1),
            "mpq": M.mpq(
                w, h, book, beta=cfg.beta, iters=cfg.vamp_iters, rho=cfg.rho, anneal=cfg.anneal,
                precision=cfg.precision, start=cfg.mpq_start, block=cfg.bcd_block,
            ),
        }  # fmt: skip
        for s in TINY_SOLVERS:
            objs[s].append(float(M.objective(w, M.values(codes[s], book.grid), h)[0]))
        for s in ("bcd", "mpq"):  # both end with exact coordinate descent (block 1)
            one[s].append(one_coordinate_ratio(w[0], h, book.grid[0], codes[s][0]))
        e, d_ = marginal_errors(w, unit_diagonal(h), book.grid, cfg.marg_betas, precision="scalar", cfg=cfg)
        marg["marg_err"].append(e)
        marg["marg_dist"].append(d_)
        with jax.enable_x64(True):  # below beta ~ 0.05 float32's rounding (~1e-6) would floor the error
            w64, h64, g64 = (jnp.asarray(np.asarray(a, np.float64)) for a in (w, h, book.grid))
            e, d_ = marginal_errors(w64, h64, g64, cfg.diag_betas, precision="diagonal", cfg=cfg)
            marg["diag_err"].append(e)
            marg["diag_dist"].append(d_)
            marg["scalar_unequal_err"].append(
                marginal_errors(w64, h64, g64, cfg.diag_betas, precision="scalar", cfg=cfg)[0]
            )
    return {
        "exact": jnp.asarray(exact),
        "objective": {s: jnp.asarray(objs[s]) for s in TINY_SOLVERS},
        "one_coord": {s: jnp.asarray(v) for s, v in one.items()},
        **{k: jnp.asarray(np.array(v)) for k, v in marg.items()},
    }


# ---------------------------------------------------------------------------------------------------------
# The tiny LM
# ---------------------------------------------------------------------------------------------------------


def layer_inputs(model: TinyLM, tokens: jax.Array) -> dict[str, jax.Array]:
    """Inputs (n * T, d_in) of every block Linear on the windows ``tokens`` (n, T) of the float model (the
    attention output projection's input read by running the attention with that projection set to identity)."""

    def one(tok):
        x = model.embed[tok]
        out = {}
        for i, blk in enumerate(model.blocks):
            a = blk.norm1(x)
            eye = eqx.tree_at(lambda m: m.attn.out.weight, blk, jnp.eye(x.shape[-1]))
            out[f"block{i}.attn.qkv"] = a
            out[f"block{i}.attn.out"] = eye.attn(a)
            x = x + blk.attn(a)
            b = blk.norm2(x)
            out[f"block{i}.mlp_in"] = b
            hid = jax.nn.gelu(jax.vmap(blk.mlp_in)(b))
            out[f"block{i}.mlp_out"] = hid
            x = x + jax.vmap(blk.mlp_out)(hid)
        return out

    acts = jax.vmap(one)(tokens)
    return {k: v.reshape(-1, v.shape[-1]) for k, v in acts.items()}


def prepared_layer(w, x, cfg: Config, *, key=None) -> tuple[jax.Array, jax.Array, dict | None]:
    """(weight, damped proxy Hessian, rotation) of one layer: with incoherence processing when ``key`` is given
    (:func:`jaxwb.theory.mpq.incoherent`: random Hadamard rotations of both sides, W -> U W V^T, H -> V H V^T;
    the rotation dict has ``u`` and ``v``), else the layer as it is (rotation None)."""
    h = M.proxy_hessian(x, damping=cfg.damping)
    if key is None:
        return w, h, None
    rot = M.incoherent(w, h, key=key)
    return rot["w"], rot["h"], rot


def solve_layer(w, h, rot, bits: int, methods, cfg: Config) -> dict:
    """Per method, (dequantized weight in the layer's own basis, per-row objective (w - q)^T H (w - q) of the
    prepared layer: with a rotation, that of the rotated layer, whose sum over rows is the layer's own). "rtn",
    "gptq", "mpq" through ``jaxwb.theory.mpq.quantize_layer`` (what ``quantize_model`` calls); "gptq_bcd": GPTQ's
    codes (solved first) refined by exact coordinate descent."""
    opts: dict[str, Any] = dict(
        bits=bits, group=cfg.group, beta=cfg.beta, iters=cfg.vamp_iters, rho=cfg.rho, anneal=cfg.anneal,
        precision=cfg.precision, start=cfg.mpq_start, block=cfg.bcd_block,
    )  # fmt: skip
    codes: dict[str, tuple[jax.Array, M.Codebook]]
    codes, out = {}, {}
    for m in methods:
        if m == "gptq_bcd":
            c, book = codes["gptq"] if "gptq" in codes else M.quantize_layer(w, h, "int", "gptq", **opts)
            codes[m] = (M.bcd(w, h, book, c, block=cfg.bcd_block), book)
        else:
            codes[m] = M.quantize_layer(w, h, "int", m, **opts)
        c, book = codes[m]
        q = M.values(c, book.grid)
        out[m] = ((M.coherent(q, rot["u"], rot["v"]) if rot is not None else q), M.objective(w, q, h))
    return out


def quantize_lm_layer(w, x, bits: int, method: str, cfg: Config, *, key=None) -> tuple[jax.Array, jax.Array]:
    """One method on one layer (:func:`prepared_layer`, :func:`solve_layer`): (dequantized weight, per-row
    objective)."""
    w, h, rot = prepared_layer(w, x, cfg, key=key)
    return solve_layer(w, h, rot, bits, (method,), cfg)[method]


def calibration(train_tok: np.ndarray, ctx: int, n: int, *, key: jax.Array) -> jax.Array:
    """``n`` random windows of ``ctx`` tokens from the training split."""
    starts = jax.random.randint(key, (n,), 0, len(train_tok) - ctx - 1)
    return jnp.asarray(train_tok)[starts[:, None] + jnp.arange(ctx)[None, :]]


@eqx.filter_jit
def evaluate(model: TinyLM, x: jax.Array, y: jax.Array) -> jax.Array:
    """``models.train.evaluate`` (mean cross-entropy on the windows x, y (n, T)) under one jit: traced once for
    every model of one shape instead of once per call (the same numbers, bit for bit, measured)."""
    return tr.evaluate(model, x, y)


def rows_differ(q, q_ref) -> float:
    """The fraction of rows of ``q`` with a weight that differs from ``q_ref``'s by more than 1e-5 max |q_ref|.
    GPTQ decides a row's weights in order, each from the errors of the earlier ones: a float32-vs-float64 tie flip
    changes one row from that weight on; a bug in the algorithm changes nearly every row."""
    diff = np.abs(np.asarray(q, np.float64) - np.asarray(q_ref, np.float64)) > 1e-5 * np.abs(q_ref).max()
    return float(np.mean(np.any(diff, axis=1)))


def lm_seed(model, cfg: Config, tok, x_ev, y_ev, *, key: jax.Array) -> dict:
    """One seed: per bits, rotation and method, the per-row objectives per layer and the perplexity."""
    k_cal, k_rot = jax.random.split(key)
    acts = layer_inputs(model, tok)
    weights = {k: w for k, w in linear_weights(model).items() if k != "embed" and cfg.quantizes(k)}
    tags = [(b, r, f"{b}bit_{'rht' if r else 'plain'}") for b in cfg.bits for r in cfg.rht]
    obj: dict[str, Any]
    ppl: dict[str, Any]
    ref: dict[str, dict[str, float]]
    obj, ppl, ref = dict.fromkeys(t for *_, t in tags), dict.fromkeys(t for *_, t in tags), {}  # the claims' order
    for rot_on in cfg.rht:  # the proxy Hessians and rotations once per layer, for every bit width
        prep = {
            name: prepared_layer(w, acts[name], cfg, key=jax.random.fold_in(k_rot, li) if rot_on else None)
            for li, (name, w) in enumerate(weights.items())
        }
        for bits, _, tag in (t for t in tags if t[1] == rot_on):
            solved = {name: solve_layer(*prep[name], bits, METHODS, cfg) for name in weights}
            obj[tag] = {m: {name: solved[name][m][1] for name in weights} for m in METHODS}
            ppl[tag] = {}
            for m in METHODS:
                qmodel = replace_linear_weights(model, {name: solved[name][m][0] for name in weights})
                ppl[tag][m] = float(jnp.exp(evaluate(qmodel, x_ev, y_ev)))
    for bits in cfg.bits:
        ref[f"{bits}bit"] = {}
        for name, w in weights.items():  # GPTQ against the NumPy port, same layer and calibration inputs
            qj = quantize_lm_layer(w, acts[name], bits, "gptq", cfg)[0]
            qn = gptq_numpy(np.asarray(w), np.asarray(acts[name]), bits=bits, group=cfg.group, percdamp=cfg.damping)
            ref[f"{bits}bit"][name] = rows_differ(qj, qn)
    fp_np = np.exp(
        cross_entropy(float64_params(model), x_ev, y_ev, n_heads=model.config.n_heads, rope_base=model.config.rope_base)
    )
    return {"obj": obj, "ppl": ppl, "ref": ref, "fp": float(jnp.exp(evaluate(model, x_ev, y_ev))), "fp_np": fp_np}


def lm_part(cfg: Config, *, key: jax.Array) -> dict:
    """Every seed of :func:`lm_seed`, stacked: ``ppl[tag][method]`` (seeds,), ``objective[tag][method][layer]``
    (seeds, rows), ``ref_mismatch[bits][layer]`` (seeds,; fraction of rows where GPTQ and the NumPy port
    differ, :func:`rows_differ`), ``fp_ppl`` (seeds,), ``fp_ppl_np`` (seeds,; from the float64 NumPy forward
    pass); tag = "<bits>bit_plain" or "<bits>bit_rht"."""
    lm = cfg.lm
    train_tok, val_tok = corpus.load_corpus(max_bytes=lm.corpus_bytes)
    x_ev, y_ev = tr.eval_windows(val_tok, lm.ctx, cfg.eval_windows)
    seeds = []
    for s in range(cfg.lm_seeds):
        m = s % cfg.lm_models
        model, _ = tr.trained_model(lm.models[0], lm.train_config(0, m), desc=f"train tiny LM seed {m}")
        k = jax.random.fold_in(key, s)
        tok = calibration(train_tok, lm.ctx, cfg.calib_windows, key=k)
        seeds.append(lm_seed(model, cfg, tok, x_ev, y_ev, key=k))
    return {
        "fp_ppl": jnp.asarray([r["fp"] for r in seeds]),
        "fp_ppl_np": jnp.asarray([r["fp_np"] for r in seeds]),
        "ppl": jax.tree.map(lambda *a: jnp.asarray(a), *[r["ppl"] for r in seeds]),
        "objective": jax.tree.map(lambda *a: jnp.stack(a), *[r["obj"] for r in seeds]),
        "ref_mismatch": jax.tree.map(lambda *a: jnp.asarray(a), *[r["ref"] for r in seeds]),
    }


# ---------------------------------------------------------------------------------------------------------
# Synthetic layers (the quick preset's stand-in for the tiny LM's layers: no trained model needed)
# ---------------------------------------------------------------------------------------------------------


def synthetic_layer(cfg: Config, *, key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A layer weight w ~ N(0, 1) (synth_rows, synth_d) and calibration inputs x (synth_n, synth_d) with
    correlated columns (x = z (I + 0.5 G / sqrt(d)), G Gaussian; anisotropic like a layer's inputs)."""
    k1, k2, k3 = jax.random.split(key, 3)
    d = cfg.synth_d
    mix = jnp.eye(d) + 0.5 * jax.random.normal(k2, (d, d)) / np.sqrt(d)
    x = jax.random.normal(k1, (cfg.synth_n, d)) @ mix
    return jax.random.normal(k3, (cfg.synth_rows, d)), x


def synth_part(cfg: Config, *, key: jax.Array) -> dict:
    """Per seed (a fresh synthetic layer) and bit width: the per-row objectives of RTN and GPTQ
    ``objective[bits][method]`` (seeds, rows) and ``ref_mismatch[bits]`` (seeds,): the fraction of rows where
    the JAX GPTQ (through :func:`quantize_lm_layer`, as on the LM) and the NumPy port differ."""
    obj: dict[str, dict[str, list[np.ndarray]]] = {f"{b}bit": {m: [] for m in ("rtn", "gptq")} for b in cfg.bits}
    ref: dict[str, list[float]] = {f"{b}bit": [] for b in cfg.bits}
    for s in range(cfg.synth_seeds):
        w, x = synthetic_layer(cfg, key=jax.random.fold_in(key, s))
        for b in cfg.bits:
            q = {}
            for m in ("rtn", "gptq"):
                q[m], o = quantize_lm_layer(w, x, b, m, cfg)
                obj[f"{b}bit"][m].append(np.asarray(o))
            qn = gptq_numpy(np.asarray(w), np.asarray(x), bits=b, group=cfg.group, percdamp=cfg.damping)
            ref[f"{b}bit"].append(rows_differ(q["gptq"], qn))
    return {
        "objective": {t: {m: jnp.asarray(np.array(v)) for m, v in d.items()} for t, d in obj.items()},
        "ref_mismatch": {t: jnp.asarray(v) for t, v in ref.items()},
    }


def run(cfg: Config, *, key: jax.Array) -> dict:
    """se and tiny always; lm (the tiny LM) when ``cfg.with_lm``, else synth (synthetic layers)."""
    k1, k2, k3 = jax.random.split(key, 3)
    out = {"se": state_evolution_part(cfg, key=k1), "tiny": tiny_part(cfg, key=k2)}
    if cfg.with_lm:
        out["lm"] = lm_part(cfg, key=k3)
    else:
        out["synth"] = synth_part(cfg, key=k3)
    return out
