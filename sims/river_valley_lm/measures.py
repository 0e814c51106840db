"""river_valley_lm's measurements over the stored results, which the claims and figures state and draw: divergence
edges (the loss map's grid edge, the bisected edges and their resolution in octaves, log2 edge ratios), the
edge-of-stability sharpness, the largest consecutive eigenvalue ratio of a spectrum and the lambda_max tracker's lag
behind a fresh Lanczos. Pure NumPy on the results' arrays.
"""

from __future__ import annotations

import numpy as np

from jaxwb.sims.river_valley_lm.config import Config


def grid_edge(lrs, ok):
    """Largest lr of the contiguous run of ``ok`` grid points starting at the smallest lr (NaN if none)."""
    ok = np.asarray(ok)
    if not ok[0]:
        return float("nan")
    n = np.argmin(ok) if not ok.all() else len(ok)
    return float(lrs[n - 1])


def edges(results) -> np.ndarray:
    """Loss map: per beta and seed, the largest grid lr (units of 2/lambda_max(init)) before the first divergence
    [n_beta, map_seeds] (NaN if the smallest grid lr already diverges)."""
    mults, div = np.asarray(results["sgd"]["lr_mult"]), np.asarray(results["sgd"]["diverged"])  # [L], [L, B, S]
    return np.array([[grid_edge(mults, ~div[:, j, k]) for k in range(div.shape[2])] for j in range(div.shape[1])])


def bracket_edges(e: dict) -> np.ndarray:
    """Bisected divergence edges of the brackets ``e`` (``lo``, ``hi``, ``lo_ok``, ``hi_div``, any shape): sqrt(lo
    hi); NaN where the bracket's low end already diverges, +inf where its high end still trains."""
    edge = np.sqrt(np.asarray(e["lo"], np.float64) * np.asarray(e["hi"], np.float64))
    edge = np.where(np.asarray(e["lo_ok"]), edge, np.nan)
    return np.where(np.asarray(e["hi_div"]), edge, np.inf)


def seed_edges(results) -> np.ndarray:
    """Bisected divergence edges [n_beta, n_seeds] in units of 2/lambda_max(init) of each seed."""
    return bracket_edges(results["edges"])


def bracket_gap(edge_a: float, edge_b: float, res_oct: float) -> float:
    """|log2 edge_a/edge_b| in octaves, snapped to whole final brackets of ``res_oct`` octaves: two bisections of
    one starting bracket end on the same log grid, so their edges lie a whole number of brackets apart (the float
    rounding of the midpoints would put exactly 3 brackets at 0.28125000000000006 > 3 x 0.09375)."""
    return float(res_oct * np.round(abs(np.log2(edge_a / edge_b)) / res_oct))


def bracket_octaves(bracket, cfg: Config) -> float:
    """Width in octaves of a bisection's final bracket, from its starting ``bracket`` (lo, hi)."""
    return float(np.log2(bracket[1] / bracket[0]) / 2**cfg.edge_iters)


def log2_edge_ratios(results, cfg: Config) -> dict[float, np.ndarray]:
    """Per momentum beta > 0: log2 edge(beta)/edge(GD) per seed (bisected edges)."""
    ed = seed_edges(results)
    j0 = cfg.betas.index(0.0)
    return {b: np.log2(ed[j] / ed[j0]) for j, b in enumerate(cfg.betas) if b}


def eos_sharpness(results, cfg: Config) -> np.ndarray:
    """lr * lambda_max(H(theta_t)) per EoS row and seed: median over the second half of the tracked points
    [n_rows, n_seeds] (NaN if the run's loss went non-finite)."""
    e = results["eos"]
    x = np.asarray(e["lr"], np.float64)[..., None] * np.asarray(e["lam"], np.float64)  # [R, S, T]
    med = np.median(x[..., x.shape[-1] // 2 :], axis=-1)
    return np.where(np.all(np.isfinite(np.asarray(e["loss"])), axis=-1), med, np.nan)


def largest_gap(spectrum) -> np.ndarray:
    """Per seed, the largest ratio lambda_k / lambda_(k+1) of consecutive eigenvalues of ``spectrum`` [S, K]
    (descending; a pair reaching lambda <= 0 is not a valley gap: ratio 1)."""
    spec = np.asarray(spectrum, np.float64)
    pos = spec[:, 1:] > 0
    ratios = np.where(pos, spec[:, :-1] / np.where(pos, spec[:, 1:], 1.0), np.nan)
    return np.max(np.where(np.isfinite(ratios), ratios, 1.0), axis=1)


def tracker_vs_lanczos(results) -> np.ndarray:
    """|tracked (warm-started Lanczos) - fresh Lanczos| / fresh Lanczos for lambda_max at the middle and the end of
    every EoS run [2, n_rows, n_seeds]."""
    e = results["eos"]
    lam = np.asarray(e["lam"], np.float64)  # [R, S, T]
    pw = np.stack([lam[..., int(e["mid"])], lam[..., -1]])
    lz = np.stack([np.asarray(e["lanczos_mid"], np.float64), np.asarray(e["lanczos_end"], np.float64)])
    return np.abs(pw - lz) / np.abs(lz)
