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

Checked (``ValueError`` naming the parameter, ``TypeError`` for a ``book`` that is not a Codebook): arrays finite,
real, non-empty, of the documented ranks and shapes; ``h`` symmetric and positive semidefinite for :func:`vamp`
(its eigenvalues are read as a spectrum), positive definite for :func:`mpq` (as every solver of
:mod:`~jaxwb.theory.mpq.solvers`); inverse temperatures finite and > 0 (not subnormal), small enough that beta
times the largest eigenvalue of h is finite in float32; ``rho`` in (0, 1]; counts positive integers; codes in
[0, K). :func:`extrinsic`, :func:`denoise` and ``_vamp`` are steps inside the jitted VAMP and check nothing.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from jaxwb.theory import validate as v
from jaxwb.theory.mpq import _checks as c
from jaxwb.theory.mpq.codebooks import Codebook, _nearest, _spread
from jaxwb.theory.mpq.solvers import (
    _bcd_run,
    _check,
    _check_row,
    _normalised,
    as_float,
    check_block,
    codeword_energies,
    grid_exponent,
)

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


def _vamp_run(w, h, grid, beta, iters: int, rho, logprior) -> dict:
    """:func:`vamp` on checked inputs (float32 throughout); refuses a beta * max eigenvalue that overflows."""
    w = jnp.asarray(w, jnp.float32)
    grid = jnp.asarray(grid, jnp.float32)
    lp = jnp.zeros(grid.shape) if logprior is None else jnp.asarray(logprior, jnp.float32)
    lam, vecs = jnp.linalg.eigh(jnp.asarray(h, jnp.float32))
    lam = jnp.maximum(lam, 0.0)
    top = c.concrete(jnp.max(lam))
    cb = c.concrete(beta)
    if top is not None and cb is not None and float(cb) * float(top) > float(jnp.finfo(jnp.float32).max) / 4:
        raise ValueError(
            f"beta must be small enough that beta * the largest eigenvalue of h ({float(top):.3g}) is finite in "
            f"float32, got {float(cb):.3g}"
        )
    p, xs, vs, gs = _vamp(w, lam, vecs, jnp.float32(beta), grid, lp, jnp.float32(rho), iters)
    return {"marginals": p, "x1": xs, "var1": vs, "gamma1": gs}


def _check_rho(rho) -> None:
    c.real_scalar("rho", rho)
    v.check("rho", rho, lambda a: (a > 0) & (a <= 1), "in (0, 1]", elementwise=True)


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
    own mean posterior variance) and ``gamma1`` (iters, m).

    Checked: ``w`` a finite real (m, d) array; ``h`` a finite real (d, d) array, symmetric and positive
    semidefinite (eigenvalues >= -8 eps max(diag h); rounding-level negatives are read as 0); ``grid`` a finite
    real (m, d, K) array; ``beta`` finite and > 0, with beta * max eigenvalue of h finite in float32; ``iters`` a
    positive integer; ``rho`` in (0, 1]; ``logprior`` (m, d, K), no NaN and no +inf (-inf excludes a value), at
    least one value not excluded per coordinate."""
    c.array("w", w, ndim=2)
    shp = tuple(np.shape(w))
    c.grid("grid", grid, shp)
    c.hessian("h", h, shp[1], definite="semidefinite", why=" (d = w.shape[1])")
    c.positive_scalar("beta", beta)
    c.int_option("iters", iters)
    _check_rho(rho)
    if logprior is not None:
        if isinstance(logprior, (str, bytes)):
            raise ValueError(f"logprior must be an array, got {type(logprior).__name__}")
        v.array("logprior", logprior, ndim=3, finite=False)
        c.shape_is("logprior", logprior, tuple(np.shape(grid)), " (the grid's)")
        v.check(
            "logprior",
            logprior,
            lambda a: (a == a) & (a < np.inf),
            "a log weight (no NaN or +inf; -inf excludes a value)",
            elementwise=True,
        )
        v.check(
            "logprior",
            logprior,
            lambda a: (np.any if isinstance(a, np.ndarray) else jnp.any)(a > -np.inf, axis=-1),
            "above -inf for at least one value of every coordinate",
        )
    return _vamp_run(w, h, grid, beta, int(iters), rho, logprior)


def _scalar_mmse(gamma: float, levels, n_quad: int = 80) -> float:
    c_ = np.asarray(levels, np.float64)
    z, wq = np.polynomial.hermite_e.hermegauss(n_quad)
    wq = wq / wq.sum()
    r = c_[:, None] + z[None, :] / np.sqrt(gamma)  # (K0, Q)
    logit = -0.5 * gamma * (c_[None, None, :] - r[..., None]) ** 2
    logit -= logit.max(-1, keepdims=True)
    p = np.exp(logit)
    p /= p.sum(-1, keepdims=True)
    mean = (p * c_).sum(-1)
    var = (p * c_**2).sum(-1) - mean**2
    return float(np.mean(var @ wq))


def _check_levels(levels, *, distinct: int = 1) -> None:
    c.array("levels", levels, ndim=1)
    if distinct > 1:
        n = len(np.unique(np.asarray(v.primal(levels), np.float64)))
        if n < distinct:
            raise ValueError(f"levels must hold at least {distinct} distinct values, got {n}")


def scalar_mmse(gamma: float, levels: Float[ArrayLike, " K"], n_quad: int = 80) -> float:
    """mmse of q0 ~ U(levels) observed as q0 + N(0, 1/gamma) (Gauss-Hermite quadrature over the noise).

    Checked: ``gamma`` finite and > 0; ``levels`` a finite real non-empty 1-D array; ``n_quad`` a positive
    integer. NumPy (float64) only."""
    c.positive_scalar("gamma", gamma)
    _check_levels(levels)
    c.int_option("n_quad", n_quad)
    return _scalar_mmse(float(v.primal(gamma)), v.primal(levels), int(n_quad))


def state_evolution(
    eigenvalues: Float[ArrayLike, " d"], levels: Float[ArrayLike, " K"], *, beta: float, iters: int
) -> Float[np.ndarray, " iters"]:
    """VAMP state evolution (Rangan et al. 2019, Thm. 1; matched model, undamped, started at the LMMSE stage from
    the prior as :func:`vamp`): the predicted per-coordinate MSE E1 of x1 at each iteration.

    Checked: ``eigenvalues`` a finite real non-empty 1-D array, >= 0 (rounding-level negatives down to
    -8 eps(float32) max |eigenvalue| are read as 0); ``levels`` a finite real 1-D array with at least 2 distinct
    values; ``beta`` finite and > 0; ``iters`` a positive integer. NumPy (float64) only."""
    c.array("eigenvalues", eigenvalues, ndim=1)
    tol = c.DEF_EPS * float(np.finfo(np.float32).eps)
    v.check(
        "eigenvalues",
        eigenvalues,
        lambda a: a >= -tol * np.max(np.abs(a)),
        f">= 0 (a positive semidefinite H; down to -{tol:.2g} max |eigenvalue| read as 0)",
    )
    _check_levels(levels, distinct=2)
    c.positive_scalar("beta", beta)
    c.int_option("iters", iters)
    beta = float(v.primal(beta))
    lam = np.maximum(np.asarray(v.primal(eigenvalues), np.float64), 0.0)
    c_ = np.asarray(v.primal(levels), np.float64)
    g2 = float(1.0 / np.var(c_))
    out = []
    with np.errstate(over="ignore", divide="ignore"):  # beta * lam beyond float64: 1 / inf = 0, the limit
        for _ in range(iters):
            e2 = np.mean(1.0 / (beta * lam + g2))
            g1 = float(np.clip(1.0 / e2 - g2, GAMMA_MIN, GAMMA_MAX))
            e1 = _scalar_mmse(g1, c_)
            out.append(e1)
            g2 = float(np.clip(1.0 / e1 - g1, GAMMA_MIN, GAMMA_MAX))
    return np.asarray(out)


def planted_problem(
    d: int, n_ratio: float, levels: Float[ArrayLike, " K"], *, beta: float, rows: int, key: jax.Array
) -> dict:
    """The matched model of the state evolution: H = X^T X / n (X Gaussian (n, d), n = n_ratio d: rotationally
    invariant), q0 rows iid uniform on ``levels``, w = q0 + (beta H)^-1/2 z. Returns ``h``, ``q0``, ``w``, ``grid``
    (rows, d, K) and the eigenvalues ``lam`` of H.

    Checked: ``d`` and ``rows`` positive integers; ``n_ratio`` finite with round(n_ratio d) >= d (H full rank);
    ``levels`` a finite real non-empty 1-D array; ``beta`` finite and > 0; ``key`` a PRNG key."""
    c.int_option("d", d)
    c.real_scalar("n_ratio", n_ratio)
    v.finite("n_ratio", n_ratio)
    _check_levels(levels)
    c.positive_scalar("beta", beta)
    c.int_option("rows", rows)
    v.prng_key("key", key)
    k1, k2, k3 = jax.random.split(key, 3)
    n = int(round(float(v.primal(n_ratio)) * d))
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
    """Exact posterior marginals (d, K) of one row by enumeration of the K^d codewords (float64, K^d <= 2^20).

    Checked: ``w`` a finite real (d,) array, ``h`` a finite real symmetric (d, d) array, ``grid`` a finite real
    (d, K) array with K^d <= 2^20, ``beta`` finite and > 0. NumPy only."""
    _, k = _check_row(w, h, grid, 2**20)
    c.positive_scalar("beta", beta)
    combos, f = codeword_energies(w, h, grid)
    return marginals_from_energies(combos, f, k, beta=beta)


def marginals_from_energies(combos: Int[np.ndarray, "C d"], f: Float[np.ndarray, " C"], k: int, *, beta: float):
    """Marginals (d, k) of p(c) ~ exp(-beta/2 f(c)) over the codewords ``combos`` with objectives ``f``
    (:func:`codeword_energies`): one enumeration serves every beta.

    Checked: ``k`` a positive integer; ``combos`` an integer (C, d) array of codes in [0, k); ``f`` a finite real
    (C,) array; ``beta`` finite and > 0. Where -beta/2 f overflows float64 the weights are computed from
    f - min f (the same distribution). NumPy only."""
    k = c.int_option("k", k)
    if isinstance(combos, (str, bytes)):
        raise ValueError(f"combos must be an array, got {type(combos).__name__}")
    v.array("combos", combos, ndim=2, integer=True)
    c.codes("combos", combos, tuple(np.shape(combos)), k)
    c.array("f", f, ndim=1)
    c.shape_is("f", f, (np.shape(combos)[0],), " (one objective per codeword in combos)")
    c.positive_scalar("beta", beta)
    combos = np.asarray(v.primal(combos))
    fn = np.asarray(v.primal(f), np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        logp = -0.5 * beta * fn
        p = np.exp(logp - logp.max())
    if not (np.all(np.isfinite(p)) and p.sum() > 0):  # -beta/2 f overflowed: the same weights from f - min f
        with np.errstate(over="ignore"):
            p = np.exp(-0.5 * beta * (fn - fn.min()))
    p /= p.sum()
    return np.stack([np.bincount(combos[:, j], weights=p, minlength=k) for j in range(combos.shape[1])])


def absolute_beta(beta: float, h: Float[ArrayLike, "d d"], book: Codebook) -> float:
    """The absolute inverse temperature for a relative ``beta``: beta / (mean diag H * mean squared smallest grid
    step), so that moving one coordinate by one grid step costs ~ beta / 2 in the exponent.

    Checked: ``beta`` finite and > 0; ``h`` a finite real square array with mean diagonal > 0; ``book`` a
    Codebook with a finite grid and two distinct values in some coordinate's grid."""
    c.positive_scalar("beta", beta)
    c.hessian("h", h, None, definite=None)
    v.check("h", jnp.mean(jnp.diag(jnp.asarray(h))), lambda a: a > 0, "of mean diagonal > 0")
    c.codebook("book", book)
    spread = _spread(book.grid)
    if not (np.isfinite(spread) and spread > 0):
        raise ValueError("book must hold two distinct values in some coordinate's grid (every grid step is 0)")
    return float(beta / (float(jnp.mean(jnp.diag(jnp.asarray(h)))) * spread))


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
    ``rho``, -> per-coordinate MAP -> exact block coordinate descent (blocks of ``block``).

    Checked: ``w``, ``h`` (symmetric positive definite) and ``book`` as for every solver
    (:mod:`~jaxwb.theory.mpq.solvers`); ``beta`` finite and > 0; ``iters`` a positive integer; ``rho`` in (0, 1];
    ``block`` a positive integer dividing d with K^block <= 4096; ``max_sweeps`` an integer >= 0. Scale: h is
    multiplied by 4^-k when its largest diagonal entry is outside [2^-32, 2^32], and w with the grid by 2^-e when
    max |grid| is outside [2^-8, 2^8] (exact; the codes of exact arithmetic do not depend on either scale, and
    inputs inside the ranges give the same floats as without the rescaling). A grid whose every coordinate holds
    one distinct value leaves no choice: its codes are the nearest ones."""
    wa, ha = _check(w, h, book)
    d, k = wa.shape[1], np.shape(book.grid)[-1]
    c.positive_scalar("beta", beta)
    c.int_option("iters", iters)
    _check_rho(rho)
    block = check_block(block, d, k)
    max_sweeps = c.int_option("max_sweeps", max_sweeps, minimum=0)
    grid = as_float(book.grid)
    e = grid_exponent(grid)
    wn, gn, hn = c.times_pow2(wa, -e), c.times_pow2(grid, -e), _normalised(ha)
    spread = _spread(gn)
    if not np.isfinite(spread):  # every coordinate's grid holds one value: nothing to choose
        return _nearest(wa, grid)
    b_abs = float(beta / (float(jnp.mean(jnp.diag(jnp.asarray(hn)))) * spread))
    out = _vamp_run(wn, hn, gn, b_abs, int(iters), rho, None)
    init = jnp.argmax(out["marginals"], axis=-1)
    return _bcd_run(wn, hn, gn, jnp.asarray(init, jnp.int32), block, max_sweeps)
