"""VAMP for the PTQ posterior, its state evolution, exact marginals of tiny problems, and MPQ.

Posterior of one row at inverse temperature beta (``shared/papers/mpq.md``):
    p(q | w) ~ exp(-beta/2 (w - q)^T H (w - q)) prod_j pi_j(q_j),   q_j in the grid C_j (pi_j uniform on C_j),
the posterior of the Gaussian linear model "beta H w = beta H q + noise". VAMP (Rangan, Schniter, Fletcher, *Vector
approximate message passing*, IEEE Trans. Inf. Theory 2019, Alg. 1) with A^T A / sigma^2 -> beta H and
A^T y / sigma^2 -> beta H w, started at the LMMSE stage from the prior (r2 = prior mean, gamma2 = 1 / prior
variance):
    LMMSE     x2 = (beta H + gamma2 I)^-1 (beta H w + gamma2 r2),  eta2 = 1 / mean diag (beta H + gamma2 I)^-1
              gamma1 = eta2 - gamma2,  r1 = (eta2 x2 - gamma2 r2) / gamma1                    (extrinsic)
    denoiser  p_jk ~ pi_jk exp(-gamma1/2 (c_jk - r1_j)^2),  x1 = E p,  eta1 = 1 / mean Var p
              gamma2 = eta1 - gamma1,  r2 = (eta1 x1 - gamma1 r1) / gamma2                    (extrinsic)
"extrinsic" is :func:`extrinsic`: subtracting the incoming message (gamma r) is the Onsager correction. Damping
(``rho`` < 1): the new r and gamma of each stage are averaged with the previous ones, r <- rho r' + (1 - rho) r,
gamma <- rho gamma' + (1 - rho) gamma (precisions clipped to [1e-8, 1e12]).

State evolution (Rangan et al. 2019, Thm. 1) for rotationally invariant H (H = O^T diag(lambda) O, O Haar) in the
matched (planted) model w = q0 + (beta H)^-1/2 z, q0_j iid uniform on a grid C, z ~ N(0, I):
    E2(gamma2) = mean_i 1 / (beta lambda_i + gamma2),          gamma1 = 1 / E2 - gamma2
    E1(gamma1) = mmse of q0 ~ U(C) from q0 + N(0, 1 / gamma1),  gamma2 = 1 / E1 - gamma1
and E1 at iteration t is the measured per-coordinate MSE of x1 against q0 (as d -> infinity).

MPQ (the seed abstract): VAMP marginals at finite beta -> per-coordinate MAP -> exact block coordinate descent
(:func:`jaxwb.theory.mpq.solvers.bcd`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from jaxwb.theory.mpq.codebooks import Codebook, grid_spread
from jaxwb.theory.mpq.solvers import bcd, codeword_energies

GAMMA_MIN, GAMMA_MAX = 1e-8, 1e12


def extrinsic(eta: Array, x: Array, gamma: Array, r: Array) -> tuple[Array, Array]:
    """Extrinsic message of a VAMP stage (Rangan et al. 2019, Alg. 1, lines 5-6 and 10-11): from the stage's
    posterior mean ``x`` with precision ``eta`` and its incoming message (``r``, ``gamma``), the outgoing
    precision ``eta - gamma`` and mean ``(eta x - gamma r) / (eta - gamma)`` (the Onsager-corrected mean)."""
    g = jnp.clip(eta - gamma, GAMMA_MIN, GAMMA_MAX)
    return g, (eta * x - gamma * r) / g


def denoise(
    r: Float[Array, "m d"], gamma: Float[Array, " m"], grid: Float[Array, "m d K"], logprior: Float[Array, "m d K"]
):
    """Posterior of each coordinate over its grid given r = q + N(0, 1/gamma): (probabilities (m, d, K), mean,
    per-row mean variance)."""
    logit = logprior - 0.5 * gamma[:, None, None] * (grid - r[..., None]) ** 2
    p = jax.nn.softmax(logit, axis=-1)
    x = jnp.sum(p * grid, axis=-1)
    v = jnp.sum(p * grid**2, axis=-1) - x**2
    return p, x, jnp.maximum(jnp.mean(v, axis=-1), 1e-30)


@functools.partial(jax.jit, static_argnames=("iters",))
def _vamp(w, lam, vecs, beta, grid, logprior, rho, iters: int):
    prior = jax.nn.softmax(logprior, axis=-1)
    r2 = jnp.sum(prior * grid, axis=-1)
    g2 = 1.0 / jnp.maximum(jnp.mean(jnp.sum(prior * grid**2, -1) - r2**2, axis=-1), 1e-30)
    bhw = beta * (w @ vecs) * lam  # (beta H w) in the eigenbasis
    r1 = jnp.zeros_like(w)
    g1 = jnp.ones(w.shape[0])

    def step(carry, t):
        r1, g1, r2, g2 = carry
        den = beta * lam[None, :] + g2[:, None]  # (m, d)
        x2 = ((bhw + g2[:, None] * (r2 @ vecs)) / den) @ vecs.T
        eta2 = 1.0 / jnp.mean(1.0 / den, axis=-1)
        g1n, r1n = extrinsic(eta2[:, None], x2, g2[:, None], r2)
        g1n = g1n[:, 0]
        r1 = jnp.where(t == 0, r1n, rho * r1n + (1 - rho) * r1)
        g1 = jnp.where(t == 0, g1n, rho * g1n + (1 - rho) * g1)
        p, x1, v1 = denoise(r1, g1, grid, logprior)
        g2n, r2n = extrinsic((1.0 / v1)[:, None], x1, g1[:, None], r1)
        r2 = rho * r2n + (1 - rho) * r2
        g2 = rho * g2n[:, 0] + (1 - rho) * g2
        return (r1, g1, r2, g2), (x1, v1, g1)

    (r1, g1, _, _), (xs, vs, gs) = jax.lax.scan(step, (r1, g1, r2, g2), jnp.arange(iters))
    p, _, _ = denoise(r1, g1, grid, logprior)
    return p, xs, vs, gs


def vamp(
    w: Float[ArrayLike, "m d"],
    h: Float[ArrayLike, "d d"],
    grid: Float[ArrayLike, "m d K"],
    *,
    beta: float,
    iters: int = 20,
    rho: float = 1.0,
    logprior: Float[ArrayLike, "m d K"] | None = None,
) -> dict:
    """VAMP on each row of ``w`` for the posterior at inverse temperature ``beta`` (absolute) with grids ``grid``
    and log prior weights ``logprior`` (uniform if None); damping ``rho`` in (0, 1]. Returns ``marginals``
    (m, d, K) of the last denoiser, and per iteration ``x1`` (iters, m, d), ``var1`` (iters, m) (the algorithm's
    own mean posterior variance) and ``gamma1`` (iters, m)."""
    w = jnp.asarray(w, jnp.float32)
    grid = jnp.asarray(grid, jnp.float32)
    if grid.shape[:2] != w.shape or w.ndim != 2:
        raise ValueError(f"grid must have shape {w.shape} + (K,), got {grid.shape}")
    if not (beta > 0 and np.isfinite(beta)):
        raise ValueError(f"beta must be finite and > 0, got {beta!r}")
    if not (0 < rho <= 1):
        raise ValueError(f"rho must be in (0, 1], got {rho!r}")
    if not (isinstance(iters, int) and iters >= 1):
        raise ValueError(f"iters must be a positive integer, got {iters!r}")
    lp = jnp.zeros(grid.shape) if logprior is None else jnp.asarray(logprior, jnp.float32)
    lam, vecs = jnp.linalg.eigh(jnp.asarray(h, jnp.float32))
    p, xs, vs, gs = _vamp(w, jnp.maximum(lam, 0.0), vecs, jnp.float32(beta), grid, lp, jnp.float32(rho), iters)
    return {"marginals": p, "x1": xs, "var1": vs, "gamma1": gs}


def scalar_mmse(gamma: float, levels: Float[ArrayLike, " K"], n_quad: int = 80) -> float:
    """mmse of q0 ~ U(levels) observed as q0 + N(0, 1/gamma) (Gauss-Hermite quadrature over the noise)."""
    c = np.asarray(levels, np.float64)
    z, wq = np.polynomial.hermite_e.hermegauss(n_quad)
    wq = wq / wq.sum()
    r = c[:, None] + z[None, :] / np.sqrt(gamma)  # (K0, Q)
    logit = -0.5 * gamma * (c[None, None, :] - r[..., None]) ** 2
    logit -= logit.max(-1, keepdims=True)
    p = np.exp(logit)
    p /= p.sum(-1, keepdims=True)
    mean = (p * c).sum(-1)
    var = (p * c**2).sum(-1) - mean**2
    return float(np.mean(var @ wq))


def state_evolution(
    eigenvalues: Float[ArrayLike, " d"], levels: Float[ArrayLike, " K"], *, beta: float, iters: int
) -> Float[np.ndarray, " iters"]:
    """VAMP state evolution (Rangan et al. 2019, Thm. 1; matched model, undamped, started at the LMMSE stage from
    the prior as :func:`vamp`): the predicted per-coordinate MSE E1 of x1 at each iteration."""
    lam = np.maximum(np.asarray(eigenvalues, np.float64), 0.0)
    c = np.asarray(levels, np.float64)
    g2 = float(1.0 / np.var(c))
    out = []
    for _ in range(iters):
        e2 = np.mean(1.0 / (beta * lam + g2))
        g1 = float(np.clip(1.0 / e2 - g2, GAMMA_MIN, GAMMA_MAX))
        e1 = scalar_mmse(g1, c)
        out.append(e1)
        g2 = float(np.clip(1.0 / e1 - g1, GAMMA_MIN, GAMMA_MAX))
    return np.asarray(out)


def planted_problem(
    d: int, n_ratio: float, levels: Float[ArrayLike, " K"], *, beta: float, rows: int, key: jax.Array
) -> dict:
    """The matched model of the state evolution: H = X^T X / n (X Gaussian (n, d), n = n_ratio d: rotationally
    invariant), q0 rows iid uniform on ``levels``, w = q0 + (beta H)^-1/2 z. Returns ``h``, ``q0``, ``w``, ``grid``
    (rows, d, K) and the eigenvalues ``lam`` of H."""
    k1, k2, k3 = jax.random.split(key, 3)
    n = int(round(n_ratio * d))
    if n < d:
        raise ValueError(f"n_ratio must be >= 1 (H full rank), got {n_ratio!r}")
    x = jax.random.normal(k1, (n, d))
    h = x.T @ x / n
    lam, vecs = jnp.linalg.eigh(h)
    lev = jnp.asarray(levels, jnp.float32)
    q0 = lev[jax.random.randint(k2, (rows, d), 0, lev.shape[0])]
    z = jax.random.normal(k3, (rows, d))
    w = q0 + ((z @ vecs) / jnp.sqrt(beta * lam)) @ vecs.T
    return {"h": h, "q0": q0, "w": w, "grid": jnp.broadcast_to(lev, (rows, d, lev.shape[0])), "lam": lam}


def exact_marginals(
    w: Float[ArrayLike, " d"], h: Float[ArrayLike, "d d"], grid: Float[ArrayLike, "d K"], *, beta: float
):
    """Exact posterior marginals (d, K) of one row by enumeration of the K^d codewords (float64, K^d <= 2^20)."""
    d, k = np.shape(grid)
    if k**d > 2**20:
        raise ValueError(f"grid: K^d = {k}^{d} is too many to enumerate (<= 2^20)")
    combos, f = codeword_energies(w, h, grid)
    return marginals_from_energies(combos, f, k, beta=beta)


def marginals_from_energies(combos: Int[np.ndarray, "C d"], f: Float[np.ndarray, " C"], k: int, *, beta: float):
    """Marginals (d, k) of p(c) ~ exp(-beta/2 f(c)) over the codewords ``combos`` with objectives ``f``
    (:func:`codeword_energies`): one enumeration serves every beta."""
    logp = -0.5 * beta * np.asarray(f, np.float64)
    p = np.exp(logp - logp.max())
    p /= p.sum()
    return np.stack([np.bincount(combos[:, j], weights=p, minlength=k) for j in range(combos.shape[1])])


def absolute_beta(beta: float, h: Float[ArrayLike, "d d"], book: Codebook) -> float:
    """The absolute inverse temperature for a relative ``beta``: beta / (mean diag H * mean squared smallest grid
    step), so that moving one coordinate by one grid step costs ~ beta / 2 in the exponent."""
    return float(beta / (float(jnp.mean(jnp.diag(jnp.asarray(h)))) * grid_spread(book)))


def mpq(
    w: Float[ArrayLike, "m d"],
    h: Float[ArrayLike, "d d"],
    book: Codebook,
    *,
    beta: float = 4.0,
    iters: int = 30,
    rho: float = 0.5,
    block: int = 1,
    max_sweeps: int = 100,
) -> Int[Array, "m d"]:
    """MPQ codes: VAMP marginals at the relative inverse temperature ``beta`` (:func:`absolute_beta`), damping
    ``rho``, -> per-coordinate MAP -> exact block coordinate descent (blocks of ``block``)."""
    b_abs = absolute_beta(beta, h, book)
    out = vamp(w, h, book.grid, beta=b_abs, iters=iters, rho=rho)
    init = jnp.argmax(out["marginals"], axis=-1)
    return bcd(w, h, book, init, block=block, max_sweeps=max_sweeps)
