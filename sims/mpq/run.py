"""``run`` of the mpq result: VAMP vs its state evolution (planted problems), every solver vs exact enumeration
on tiny problems, VAMP marginals vs the exact posterior, GPTQ vs the NumPy port, and the tiny LM after 3- and
4-bit PTQ by RTN / GPTQ / MPQ with and without a random-Hadamard rotation."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.models import corpus
from jaxwb.models import train as tr
from jaxwb.models.reference_np import cross_entropy, float64_params
from jaxwb.models.tiny_lm import TinyLM, linear_weights, replace_linear_weights
from jaxwb.pallas_kernels.quant.hadamard import hadamard_matrix
from jaxwb.sims.mpq.config import METHODS, TINY_SOLVERS, Config
from jaxwb.sims.mpq.reference_np import gptq_numpy
from jaxwb.theory import mpq as M

# ---------------------------------------------------------------------------------------------------------
# Theory parts
# ---------------------------------------------------------------------------------------------------------


def state_evolution_part(cfg: Config, *, key: jax.Array) -> dict:
    """Measured per-iteration MSE of VAMP's x1 against q0 (draws, iters) and the state evolution's E1 per draw."""
    mse, se = [], []
    for i in range(cfg.se_draws):
        p = M.planted_problem(
            cfg.se_d, cfg.se_ratio, cfg.se_levels, beta=cfg.se_beta, rows=cfg.se_rows, key=jax.random.fold_in(key, i)
        )
        out = M.vamp(p["w"], p["h"], p["grid"], beta=cfg.se_beta, iters=cfg.se_iters)
        mse.append(np.asarray(jnp.mean((out["x1"] - p["q0"][None]) ** 2, axis=(1, 2))))
        se.append(M.state_evolution(np.asarray(p["lam"]), cfg.se_levels, beta=cfg.se_beta, iters=cfg.se_iters))
    return {"mse": jnp.asarray(np.array(mse)), "se": jnp.asarray(np.array(se))}


def tiny_problem(cfg: Config, *, key: jax.Array):
    """One tiny row: w ~ N(0, 1), H = X^T X / n (n = 2d, correlated columns), damped, scaled to unit diagonal
    (D^-1/2 H D^-1/2: equal diagonal entries, where one scalar VAMP precision is exact to first order in beta)."""
    k1, k2, k3 = jax.random.split(key, 3)
    d = cfg.tiny_d
    mix = jnp.eye(d) + 0.5 * jax.random.normal(k2, (d, d)) / np.sqrt(d)
    x = jax.random.normal(k1, (2 * d, d)) @ mix
    h = M.proxy_hessian(x, damping=cfg.damping)
    dg = jnp.sqrt(jnp.diag(h))
    h = h / dg[:, None] / dg[None, :]
    w = jax.random.normal(k3, (1, d))
    return w, h, M.int_codebook(w, bits=cfg.tiny_bits, group=d)


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
    over their objective (``one_coord``), and the VAMP-marginal errors per beta."""
    exact, objs, one = [], {s: [] for s in TINY_SOLVERS}, {"bcd": [], "mpq": []}
    err, dist = [], []
    for i in range(cfg.tiny_problems):
        w, h, book = tiny_problem(cfg, key=jax.random.fold_in(key, i))
        combos, energy = M.codeword_energies(w[0], h, book.grid[0])  # one enumeration: the minimum, every beta
        exact.append(float(np.min(energy)))
        r = M.rtn(w, book)
        codes = {
            "rtn": r,
            "gptq": M.gptq(w, h, book),
            "ldlq": M.ldlq(w, h, book),
            "bcd": M.bcd(w, h, book, r, block=1),
            "mpq": M.mpq(w, h, book, beta=cfg.beta, iters=cfg.vamp_iters, rho=cfg.rho, block=cfg.bcd_block),
        }
        for s in TINY_SOLVERS:
            objs[s].append(float(M.objective(w, M.values(codes[s], book.grid), h)[0]))
        for s in ("bcd", "mpq"):  # both end with exact coordinate descent (block 1)
            one[s].append(one_coordinate_ratio(w[0], h, book.grid[0], codes[s][0]))
        e_b, d_b = [], []
        for beta in cfg.marg_betas:
            ex = M.marginals_from_energies(combos, energy, book.grid.shape[-1], beta=beta)
            vm = np.asarray(M.vamp(w, h, book.grid, beta=beta, iters=cfg.vamp_iters, rho=1.0)["marginals"][0])
            e_b.append(np.max(np.abs(vm - ex)))
            d_b.append(np.max(np.abs(ex - 1.0 / ex.shape[-1])))  # distance of the exact marginals from the prior
        err.append(e_b)
        dist.append(d_b)
    return {
        "exact": jnp.asarray(exact),
        "objective": {s: jnp.asarray(objs[s]) for s in TINY_SOLVERS},
        "one_coord": {s: jnp.asarray(v) for s, v in one.items()},
        "marg_err": jnp.asarray(np.array(err)),
        "marg_dist": jnp.asarray(np.array(dist)),
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


def rht_matrix(d: int, *, key: jax.Array) -> jax.Array:
    """The random-Hadamard incoherence rotation V = H_d diag(s) / sqrt(d), s Rademacher (orthogonal, d a power
    of two): W -> W V^T, H -> V H V^T (QuIP#'s incoherence processing with the library's Hadamard matrix)."""
    return hadamard_matrix(d) * jax.random.rademacher(key, (d,), dtype=jnp.float32)[None, :]


def quantize_lm_layer(w, x, bits: int, method: str, cfg: Config, *, rot) -> tuple[jax.Array, jax.Array]:
    """(dequantized weight in the original basis, per-row objective) of one layer by ``method``."""
    h = M.proxy_hessian(x, damping=cfg.damping)
    if rot is not None:
        w, h = w @ rot.T, rot @ h @ rot.T
    codes, book = M.quantize_layer(
        w, h, "int", method, bits=bits, group=cfg.group, beta=cfg.beta, iters=cfg.vamp_iters, rho=cfg.rho,
        block=cfg.bcd_block,
    )  # fmt: skip
    q = M.values(codes, book.grid)
    obj = M.objective(w, q, h)
    return (q @ rot if rot is not None else q), obj


def calibration(train_tok: np.ndarray, ctx: int, n: int, *, key: jax.Array) -> jax.Array:
    """``n`` random windows of ``ctx`` tokens from the training split."""
    starts = jax.random.randint(key, (n,), 0, len(train_tok) - ctx - 1)
    return jnp.asarray(train_tok)[starts[:, None] + jnp.arange(ctx)[None, :]]


@eqx.filter_jit
def evaluate(model: TinyLM, x: jax.Array, y: jax.Array) -> jax.Array:
    """``models.train.evaluate`` (mean cross-entropy on the windows x, y (n, T)) under one jit: traced once for
    every model of one shape instead of once per call (the same numbers, bit for bit, measured)."""
    return tr.evaluate(model, x, y)


def lm_seed(model, cfg: Config, tok, x_ev, y_ev, *, key: jax.Array) -> dict:
    """One seed: per bits, rotation and method, the per-row objectives per layer and the perplexity."""
    k_cal, k_rot = jax.random.split(key)
    acts = layer_inputs(model, tok)
    weights = {k: w for k, w in linear_weights(model).items() if k != "embed" and cfg.quantizes(k)}
    obj, ppl, ref = {}, {}, {}
    for bits in cfg.bits:
        for rot_on in cfg.rht:
            tag = f"{bits}bit_{'rht' if rot_on else 'plain'}"
            obj[tag], ppl[tag] = {}, {}
            for method in METHODS:
                new, o = {}, {}
                for li, (name, w) in enumerate(weights.items()):
                    rot = rht_matrix(w.shape[1], key=jax.random.fold_in(k_rot, li)) if rot_on else None
                    new[name], o[name] = quantize_lm_layer(w, acts[name], bits, method, cfg, rot=rot)
                obj[tag][method] = o
                ppl[tag][method] = float(jnp.exp(evaluate(replace_linear_weights(model, new), x_ev, y_ev)))
        ref[f"{bits}bit"] = {}
        for name, w in weights.items():  # GPTQ against the NumPy port, same layer and calibration inputs
            qj = quantize_lm_layer(w, acts[name], bits, "gptq", cfg, rot=None)[0]
            qn = gptq_numpy(np.asarray(w), np.asarray(acts[name]), bits=bits, group=cfg.group, percdamp=cfg.damping)
            ref[f"{bits}bit"][name] = float(np.mean(np.abs(np.asarray(qj, np.float64) - qn) > 1e-5 * np.abs(qn).max()))
    fp_np = np.exp(
        cross_entropy(float64_params(model), x_ev, y_ev, n_heads=model.config.n_heads, rope_base=model.config.rope_base)
    )
    return {"obj": obj, "ppl": ppl, "ref": ref, "fp": float(jnp.exp(evaluate(model, x_ev, y_ev))), "fp_np": fp_np}


def lm_part(cfg: Config, *, key: jax.Array) -> dict:
    """Every seed of :func:`lm_seed`, stacked: ``ppl[tag][method]`` (seeds,), ``objective[tag][method][layer]``
    (seeds, rows), ``ref_mismatch[bits][layer]`` (seeds,; fraction of weights where GPTQ and the NumPy port
    differ), ``fp_ppl`` (seeds,), ``fp_ppl_np`` (seeds,; from the float64 NumPy forward pass); tag =
    "<bits>bit_plain" or "<bits>bit_rht"."""
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
    ``objective[bits][method]`` (seeds, rows) and ``ref_mismatch[bits]`` (seeds,): the fraction of weights where
    the JAX GPTQ (through :func:`quantize_lm_layer`, as on the LM) and the NumPy port differ."""
    obj = {f"{b}bit": {m: [] for m in ("rtn", "gptq")} for b in cfg.bits}
    ref = {f"{b}bit": [] for b in cfg.bits}
    for s in range(cfg.synth_seeds):
        w, x = synthetic_layer(cfg, key=jax.random.fold_in(key, s))
        for b in cfg.bits:
            q = {}
            for m in ("rtn", "gptq"):
                q[m], o = quantize_lm_layer(w, x, b, m, cfg, rot=None)
                obj[f"{b}bit"][m].append(np.asarray(o))
            qn = gptq_numpy(np.asarray(w), np.asarray(x), bits=b, group=cfg.group, percdamp=cfg.damping)
            ref[f"{b}bit"].append(
                float(np.mean(np.abs(np.asarray(q["gptq"], np.float64) - qn) > 1e-5 * np.abs(qn).max()))
            )
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
