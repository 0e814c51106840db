"""quantization: the simulation, ``run`` and its parts (what is measured: the package docstring)."""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.pallas_kernels.quant.inquant import inquant_pack, inquant_unpack
from jaxwb.pallas_kernels.quant.mxfp4 import mxfp4_dequantize, mxfp4_quantize
from jaxwb.pallas_kernels.quant.nvfp4 import nvfp4_dequantize, nvfp4_quantize
from jaxwb.pallas_kernels.quant.razer import razer_dequantize, razer_quantize
from jaxwb.pallas_kernels.quant.rht import (
    dense_rotation_quantize,
    rht_dequantize,
    rht_dequantize_reference,
    rht_quantize,
    rht_quantize_reference,
)
from jaxwb.sims.core.sweep import sweep
from jaxwb.sims.quantization.config import FAMILIES, Config
from jaxwb.theory import dithered_quant as dq
from jaxwb.theory.quantization import fp4_formats

# ---------------------------------------------------------------------------------------------------------
# Unit vectors and the dither-averaged MSE estimate
# ---------------------------------------------------------------------------------------------------------


def unit_vectors(key, d: int, per_family: int) -> tuple[np.ndarray, list[str]]:
    """``len(FAMILIES) * per_family`` unit vectors of length d (rows) and their family names."""
    rng = np.random.default_rng(int(np.asarray(jax.random.key_data(key)).ravel()[-1]))
    rows, names = [], []
    for fam in FAMILIES:
        for i in range(per_family):
            if fam == "gaussian":
                v = rng.standard_normal(d)
            elif fam == "flat":
                v = np.where(rng.random(d) < 0.5, -1.0, 1.0) if i else np.ones(d)
            elif fam == "e1":
                v = np.zeros(d)
                v[rng.integers(d) if i else 0] = 1.0
            elif fam == "sparse4":
                v = np.zeros(d)
                v[rng.choice(d, 4, replace=False)] = rng.standard_normal(4) if i else 1.0
            elif fam == "two_level":
                v = np.zeros(d)
                v[:2] = (1.0, 0.5 + 0.2 * i)
            else:
                v = rng.standard_cauchy(d)
            rows.append(v / np.linalg.norm(v))
            names.append(fam)
    return np.asarray(rows, np.float32), names


def dithered_mse(x, key, bits, *, n_signs: int, n_dither: int):
    """E ||x - x_hat||^2 of the turbo-scaled dithered RHT quantizer for one vector x (d,): Monte Carlo over
    ``n_signs`` sign draws, each averaged over ``n_dither`` stratified dithers u = (j + r)/n_dither.
    Returns (mean, standard error over the sign draws). ``bits`` may be traced."""
    d = x.shape[-1]

    def one(k):
        k1, k2 = jax.random.split(k)
        signs = jax.random.rademacher(k1, (d,), dtype=jnp.float32)
        u = (jnp.arange(n_dither) + jax.random.uniform(k2)) / n_dither
        xx = jnp.broadcast_to(x, (n_dither, d))
        codes, scale = rht_quantize_reference(xx, signs, u, bits=bits)
        xh = rht_dequantize_reference(codes, scale, signs, u, bits=bits)
        return jnp.mean(jnp.sum((xh - xx) ** 2, -1))

    v = jax.vmap(one)(jax.random.split(key, n_signs))
    return v.mean(), v.std() / np.sqrt(n_signs)


def haar_rotations(key, n: int, d: int):
    """``n`` Haar-random orthogonal (d, d) matrices (QR of a Gaussian matrix with the sign of diag R
    fixed)."""
    g = jax.random.normal(key, (n, d, d))
    qm, r = jnp.linalg.qr(g)
    return qm * jnp.sign(jnp.diagonal(r, axis1=-2, axis2=-1))[:, None, :]


def dense_mse(x, key, bits, rotations, *, n_dither: int):
    """Same estimate with dense Haar rotations ``rotations`` (n, d, d) instead of H D (one dither shift
    each)."""
    d = x.shape[-1]

    def one(rot, k):
        u = (jnp.arange(n_dither) + jax.random.uniform(k)) / n_dither
        xx = jnp.broadcast_to(x, (n_dither, d))
        xh = dense_rotation_quantize(xx, rot, u, bits=bits)
        return jnp.mean(jnp.sum((xh - xx) ** 2, -1))

    v = jax.vmap(one)(rotations, jax.random.split(key, rotations.shape[0]))
    return v.mean(), v.std() / np.sqrt(rotations.shape[0])


def _row_mse(row, *, n_signs, n_dither):
    return dithered_mse(row["x"], row["key"], row["bits"], n_signs=n_signs, n_dither=n_dither)


def _row_dense(row, *, rotations, n_dither):
    return dense_mse(row["x"], row["key"], row["bits"], rotations, n_dither=n_dither)


def _vector_bits_grid(xs, bits, key):
    nv, nb = xs.shape[0], len(bits)
    return {
        "x": jnp.repeat(jnp.asarray(xs), nb, axis=0),
        "bits": jnp.tile(jnp.asarray(bits, jnp.int32), nv),
        "key": jax.random.split(key, nv * nb),
    }


# ---------------------------------------------------------------------------------------------------------
# Format comparison and InQuant
# ---------------------------------------------------------------------------------------------------------


def student_t(key, dof: int, shape):
    """Student-t samples with integer ``dof`` as z / sqrt(chi2_dof / dof) (cheaper to compile than a
    gamma)."""
    kz, kc = jax.random.split(key)
    chi2 = jnp.sum(jax.random.normal(kc, (dof, *shape)) ** 2, axis=0)
    return jax.random.normal(kz, shape) / jnp.sqrt(chi2 / dof)


@partial(jax.jit, static_argnums=(1, 2))
def format_datasets(key, rows: int, cols: int) -> dict[str, jax.Array]:
    k1, k2, k3 = jax.random.split(key, 3)
    out_cols = jnp.ones(cols).at[jnp.arange(0, cols, cols // 8)].set(20.0)
    return {
        "gaussian": jax.random.normal(k1, (rows, cols)),
        "student_t3": student_t(k2, 3, (rows, cols)),
        "outlier_channels": jax.random.normal(k3, (rows, cols)) * out_cols,
    }


@partial(jax.jit, static_argnums=2)
def format_roundtrips(x, key, rht_block: int) -> dict[str, jax.Array]:
    """x_hat for NVFP4, MXFP4, RaZeR (activation), RaZeR (weight), dithered RHT (b=4, turbo and unbiased)."""
    rows, cols = x.shape
    xb = x.reshape(rows, cols // rht_block, rht_block)
    out = {
        "NVFP4": nvfp4_dequantize(nvfp4_quantize(x)),
        "MXFP4": mxfp4_dequantize(mxfp4_quantize(x)),
        "RaZeR (act.)": razer_dequantize(razer_quantize(x, variant="activation")),
        "RaZeR (weight)": razer_dequantize(razer_quantize(x, variant="weight")),
    }
    for scaling, label in (("turbo", "RHT b=4"), ("unbiased", "RHT b=4, unbiased")):
        q = rht_quantize(xb, key=key, bits=4, scaling=scaling)
        out[label] = rht_dequantize(q).reshape(rows, cols)
    return out


FORMAT_BITS = {
    "NVFP4": 4 + 8 / 16,
    "MXFP4": 4 + 8 / 32,
    "RaZeR (act.)": 4 + 8 / 16,
    "RaZeR (weight)": 4 + 6 / 16,
}


def synthetic_kv(key, cfg: Config):
    """Heavy-tailed KV: Student-t(dof) entries, a few outlier channels scaled by kv_outlier_scale."""
    scale = np.ones(cfg.kv_channels, np.float32)
    scale[list(cfg.kv_outliers)] = cfg.kv_outlier_scale
    t = jax.jit(student_t, static_argnums=(1, 2))(key, cfg.kv_dof, (cfg.kv_tokens, cfg.kv_channels))
    return (t * scale).astype(jnp.bfloat16)


def absmax_roundtrip(x, levels: int):
    """Per-token symmetric absmax quantization with integer levels in [-levels, levels]."""
    s = jnp.max(jnp.abs(x), -1, keepdims=True) / levels
    s = jnp.where(s > 0, s, 1.0)
    return jnp.round(x / s) * s


@partial(jax.jit, static_argnums=2)
def format_stats(x, key, rht_block: int) -> tuple[dict, dict]:
    """(per format: relative MSE and the first 20000 normalized errors, plus the RaZeR/NVFP4 block gap and EDEN's
    inner-product deviation; the x_hat (rows, cols) of the four FP4 formats, for the independent decoder)."""
    rows = x.shape[0]
    rt = format_roundtrips(x, key, rht_block)
    xb = x.reshape(rows, -1, rht_block)
    xh_unbiased = rt.pop("RHT b=4, unbiased").reshape(xb.shape)
    stats: dict[str, Any] = {
        label: {
            "rel_mse": jnp.sum((xh - x) ** 2) / jnp.sum(x * x),
            "err": ((xh - x) / jnp.sqrt(jnp.mean(x * x))).reshape(-1)[:20000],
        }
        for label, xh in rt.items()
    }
    # per-block MSE of NVFP4 vs RaZeR (activation): RaZeR keeps NVFP4's candidate when it is better
    blocks = lambda v: jnp.sum(((v - x) ** 2).reshape(rows, -1, 16), -1)
    stats["block_gap"] = jnp.max(blocks(rt["RaZeR (act.)"]) - blocks(rt["NVFP4"]))
    stats["unbiased_inner"] = jnp.max(jnp.abs(jnp.sum(xh_unbiased * xb, -1) / jnp.sum(xb * xb, -1) - 1.0))
    return stats, {label: rt[label] for label in (*fp4_formats.ROUNDTRIPS, "RHT b=4")}


def format_comparison(cfg: Config, k_fmt: jax.Array, k_rht: jax.Array) -> tuple[dict, dict]:
    """The formats at ~4.5 bits per element on the three datasets, and the FP4 kernels' x_hat checked against
    the independent decoder ``theory.quantization.fp4_formats`` (NumPy + ml_dtypes). Returns (stats per dataset,
    per FP4 format: {"mismatch": elements whose value differs, summed over the datasets, "elements"}, and
    "RHT b=4 gaussian": the relative error ||x_hat - x||^2 / ||x||^2 of each rht_block vector of the Gaussian data)."""
    check: dict[str, dict[str, Any]]  # int counts, then (below) the arrays stored
    stats, check = {}, {label: {"mismatch": 0, "elements": 0} for label in fp4_formats.ROUNDTRIPS}
    for name, x in format_datasets(k_fmt, cfg.fmt_rows, cfg.fmt_cols).items():
        stats[name], xhat = format_stats(x, k_rht, cfg.rht_block)
        xn = np.asarray(x)
        for label in fp4_formats.ROUNDTRIPS:
            check[label]["mismatch"] += int(np.sum(np.asarray(xhat[label]) != fp4_formats.roundtrip(label, xn)))
            check[label]["elements"] += xn.size
        if name == "gaussian":
            xb = xn.reshape(-1, cfg.rht_block)
            err = np.asarray(xhat["RHT b=4"]).reshape(xb.shape) - xb
            rel = np.sum(err.astype(np.float64) ** 2, -1) / np.sum(xb.astype(np.float64) ** 2, -1)
    check = {k: {f: np.asarray(v) for f, v in c.items()} for k, c in check.items()}
    return stats, {**check, "RHT b=4 gaussian": rel}


# ---------------------------------------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------------------------------------


def mse_vs_bits(cfg: Config, k_vec: jax.Array, k_mse: jax.Array) -> tuple[dict, np.ndarray]:
    """MSE vs bits: every (vector, b) pair is one sweep row, per d; the worst vector per b (selected on this pass)
    re-measured with fresh sign draws. Returns ({str(d): stats}, the family index of every vector)."""
    nb = len(cfg.bits)
    per_d = {}
    bound_np = np.asarray(dq.mse_bound(np.asarray(cfg.bits)))
    for d, kd in zip(cfg.dims, jax.random.split(k_mse, len(cfg.dims)), strict=True):
        fresh_fn = partial(_row_mse, n_signs=cfg.fresh_draws(d), n_dither=cfg.n_dither)
        xs, names = unit_vectors(jax.random.fold_in(k_vec, d), d, cfg.vectors_per_family)
        fn = partial(_row_mse, n_signs=cfg.n_signs, n_dither=cfg.n_dither)
        m, se = sweep(fn, _vector_bits_grid(xs, cfg.bits, kd), chunk_size=cfg.chunk)
        m = m.reshape(-1, nb)
        # the worst vector per b (selected on this pass) re-measured with fresh sign draws: no selection bias
        worst = np.argmax(np.asarray(m) / bound_np[None], axis=0)
        rows = {
            "x": jnp.asarray(xs[worst]),
            "bits": jnp.asarray(cfg.bits, jnp.int32),
            "key": jax.random.split(jax.random.fold_in(kd, 7), nb),
        }
        fm, fse = sweep(fresh_fn, rows, chunk_size=cfg.chunk)
        per_d[str(d)] = {"mse": m, "se": se.reshape(-1, nb), "worst": worst, "fresh_mse": fm, "fresh_se": fse}
    return per_d, np.asarray([FAMILIES.index(n) for n in names])


def dense_comparison(cfg: Config, k_vec: jax.Array, k_dense: jax.Array, per_d: dict) -> dict:
    """One RHT vs a dense Haar rotation at dense_d: the first pass ("dense", "rht_at_dense_d") and both re-measured
    afresh on the vector worst under the RHT ("dense_fresh")."""
    nb = len(cfg.bits)
    bound_np = np.asarray(dq.mse_bound(np.asarray(cfg.bits)))
    fresh_fn = partial(_row_mse, n_signs=cfg.fresh_draws(cfg.dense_d), n_dither=cfg.n_dither)
    out = {}
    xs, _ = unit_vectors(jax.random.fold_in(k_vec, cfg.dense_d), cfg.dense_d, cfg.vectors_per_family)
    rots = haar_rotations(jax.random.fold_in(k_dense, 1), cfg.dense_rotations, cfg.dense_d)
    fn = partial(_row_dense, rotations=rots, n_dither=cfg.n_dither)
    m, se = sweep(fn, _vector_bits_grid(xs, cfg.bits, k_dense), chunk_size=cfg.chunk)
    out["dense"] = {"mse": m.reshape(-1, nb), "se": se.reshape(-1, nb)}
    if cfg.dense_d in cfg.dims:  # same vectors (same fold_in key): reuse the RHT sweep
        out["rht_at_dense_d"] = per_d[str(cfg.dense_d)]
    else:
        fn = partial(_row_mse, n_signs=cfg.n_signs, n_dither=cfg.n_dither)
        m, se = sweep(fn, _vector_bits_grid(xs, cfg.bits, k_dense), chunk_size=cfg.chunk)
        out["rht_at_dense_d"] = {"mse": m.reshape(-1, nb), "se": se.reshape(-1, nb)}

    # RHT and dense on the vector worst under the RHT (the dense rotation's MSE has the same law for every unit
    # vector: Haar invariance), both re-measured afresh
    worst = np.argmax(np.asarray(out["rht_at_dense_d"]["mse"]) / bound_np[None], axis=0)
    rows = {
        "x": jnp.asarray(xs[worst]),
        "bits": jnp.asarray(cfg.bits, jnp.int32),
        "key": jax.random.split(jax.random.fold_in(k_dense, 8), nb),
    }
    rots2 = haar_rotations(jax.random.fold_in(k_dense, 2), cfg.fresh_draws(cfg.dense_d), cfg.dense_d)
    fd, fdse = sweep(partial(_row_dense, rotations=rots2, n_dither=cfg.n_dither), rows, chunk_size=cfg.chunk)
    fr, frse = sweep(
        fresh_fn, {**rows, "key": jax.random.split(jax.random.fold_in(k_dense, 9), nb)}, chunk_size=cfg.chunk
    )
    out["dense_fresh"] = {
        "worst": worst,
        "x": jnp.asarray(xs[worst]),  # [B, dense_d]: the vectors, for the high-resolution moment prediction
        "dense_mse": fd,
        "dense_se": fdse,
        "rht_mse": fr,
        "rht_se": frse,
    }
    return out


def bennett_ratio(kvf, recon, q) -> float:
    """Measured / predicted squared error of InQuant's 8-bit outlier channels: uniform rounding error Delta^2/12
    (Bennett 1948) with Delta = the token's stored s8, except the token's largest outlier entry, which sits on
    the grid (code +-127). Per token (each token's squared error over its own (k - 1) Delta^2/12, then the mean
    over tokens: every token weighs the same, so the few tokens with a huge Student-t outlier do not decide it).
    kvf, recon (T, C) float32; the prediction uses q's scales and outlier indices only."""
    o = np.asarray(q.outliers)
    s8 = np.asarray(q.scales).astype(np.float64)[..., 1]  # (T,)
    xo = np.asarray(kvf, np.float64)[..., o]
    err2 = np.sum((np.asarray(recon, np.float64)[..., o] - xo) ** 2, axis=-1)  # (T,)
    return float(np.mean(err2 / (s8**2 / 12.0 * (o.size - 1))))


def decode_from_bytes(q, payload: bytes, tokens: int):
    """``inquant_unpack`` of the packed payload read back from its serialized ``payload`` as the format lays it
    out (uint8, C/2 bytes per token, two 4-bit slots per byte); None when the byte count does not fit that
    layout."""
    if len(payload) != tokens * q.channels // 2:
        return None
    packed = jnp.asarray(np.frombuffer(payload, np.uint8).reshape(tokens, q.channels // 2))
    return inquant_unpack(dataclasses.replace(q, packed=packed))


def half_step_ratio(kvf, recon, q) -> float:
    """Largest |x_hat - x| / (Delta / 2) over every token and every non-donor channel, Delta recomputed in float64
    from x and the descriptor's channel roles (not the stored scales): max |x| / 7 over the token's ordinary
    channels, max |x| / 127 over its outlier channels. Round-to-nearest on the grid of the stored float16 scale
    gives <= (1 + 2^-11)(1 + 2^-20) (the scale's float16 rounding, float32 division; the clipped largest entry is
    off by <= 7 or 127 x 2^-11 steps). inf when there is no reconstruction."""
    if recon is None:
        return float("inf")
    x = np.asarray(kvf, np.float64)
    err = np.abs(np.asarray(recon, np.float64) - x)
    c = x.shape[-1]
    out_c = np.zeros(c, bool)
    out_c[np.asarray(q.outliers)] = True
    don_c = np.zeros(c, bool)
    don_c[np.asarray(q.donors)] = True
    ordinary = ~(out_c | don_c)
    ratios = []
    for cols, levels in ((ordinary, 7.0), (out_c, 127.0)):
        if not cols.any():
            continue
        delta = np.max(np.abs(x[..., cols]), axis=-1, keepdims=True) / levels
        e = err[..., cols]
        ratios.append(np.max(np.where(delta > 0, e / np.where(delta > 0, delta / 2, 1.0), np.where(e > 0, np.inf, 0))))
    return float(max(ratios))


def inquant_kv(cfg: Config, k_kv: jax.Array, k_pack: jax.Array) -> dict:
    """InQuant on heavy-tailed KV: kv_seeds independent matrices and packing keys (seed 0 is plotted)."""
    ratios, recovered, bennett, half_step, payload_bytes, input_bytes = [], [], [], [], [], []
    for j in range(cfg.kv_seeds):
        kv = synthetic_kv(jax.random.fold_in(k_kv, j), cfg)
        kvf = kv.astype(jnp.float32)
        q = inquant_pack(
            kv, key=jax.random.fold_in(k_pack, j), n_outliers=len(cfg.kv_outliers), n_samples=cfg.kv_samples
        )
        payload = np.asarray(q.packed).tobytes()  # the payload as stored
        from_bytes = decode_from_bytes(q, payload, cfg.kv_tokens)
        half_step.append(half_step_ratio(kvf, from_bytes, q))
        payload_bytes.append(len(payload))
        input_bytes.append(len(np.asarray(kv).tobytes()))  # the 16-bit input
        recon = {
            "InQuant (4.0x)": inquant_unpack(q),
            "plain 4-bit": absmax_roundtrip(kvf, 7),
            "8-bit": absmax_roundtrip(kvf, 127),
        }
        mse = {k: jnp.mean((v - kvf) ** 2) for k, v in recon.items()}
        ratios.append(mse["InQuant (4.0x)"] / mse["plain 4-bit"])
        bennett.append(bennett_ratio(kvf, recon["InQuant (4.0x)"], q))
        recovered.append(np.isin(np.asarray(cfg.kv_outliers), np.asarray(q.outliers)).mean())
        if j == 0:
            sizes = q.nbytes()
            out = {
                "channel_rmse": {k: jnp.sqrt(jnp.mean((v - kvf) ** 2, 0)) for k, v in recon.items()},
                "mse": mse,
                "outliers": q.outliers,
                "donors": q.donors,
                "total_ratio": jnp.asarray(sizes["total_ratio"]),
                "true_outliers": jnp.asarray(cfg.kv_outliers),
            }
    out["ratio_per_seed"] = jnp.stack(ratios)
    out["recovered_per_seed"] = np.asarray(recovered)  # fraction of the planted outlier channels selected
    out["outlier_bennett_per_seed"] = np.asarray(bennett)
    out["half_step_per_seed"] = np.asarray(half_step)  # largest error / half a step, decoded from the payload bytes
    out["payload_bytes_per_seed"] = np.asarray(payload_bytes)
    out["input_bytes_per_seed"] = np.asarray(input_bytes)
    return out


def run(cfg: Config, *, key: jax.Array) -> dict:
    k_vec, k_mse, k_dense, k_fmt, k_rht, k_kv, k_pack = jax.random.split(key, 7)
    out: dict = {
        "bits": jnp.asarray(cfg.bits),
        "bound": dq.mse_bound(jnp.asarray(cfg.bits)),
        "finite_level": dq.high_resolution_mse(jnp.asarray(cfg.bits)),
    }
    out["rht"], out["families"] = mse_vs_bits(cfg, k_vec, k_mse)
    out.update(dense_comparison(cfg, k_vec, k_dense, out["rht"]))
    out["formats"], out["format_check"] = format_comparison(cfg, k_fmt, k_rht)  # ~4.5 bits per element
    out["inquant"] = inquant_kv(cfg, k_kv, k_pack)
    return out
