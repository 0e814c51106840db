"""VAMP for the PTQ posterior (scalar and diagonal precisions), its state evolution, exact marginals of tiny
problems, and MPQ.

Posterior of one row at inverse temperature beta (the seed abstract's "row-wise
PTQ is posterior inference over discrete codebooks"):
    p(q | w) ~ exp(-beta/2 (w - q)^T H (w - q)) prod_j pi_j(q_j),   q_j in the grid C_j (pi_j uniform on C_j),
the posterior of the Gaussian linear model "beta H w = beta H q + noise". VAMP (Rangan, Schniter, Fletcher, *Vector
approximate message passing*, IEEE Trans. Inf. Theory 2019, Alg. 1) with A^T A / sigma^2 -> beta H and
A^T y / sigma^2 -> beta H w, started at the LMMSE stage from the prior (r2 = prior mean, gamma2 = 1 / prior
variance). Two forms of its messages' precisions:

``precision="scalar"`` (their Alg. 1: one precision per stage and row)
    LMMSE     x2 = (beta H + gamma2 I)^-1 (beta H w + gamma2 r2),  eta2 = 1 / mean_j [(beta H + gamma2 I)^-1]_jj
              gamma1 = eta2 - gamma2,  r1 = x2 + gamma2 (x2 - r2) / gamma1                    (extrinsic)
    denoiser  p_jk ~ pi_jk exp(-gamma1/2 (c_jk - r1_j)^2),  x1 = E p,  eta1 = 1 / mean_j Var_j p
              gamma2 = eta1 - gamma1,  r2 = x1 + gamma1 (x1 - r1) / gamma2                    (extrinsic)
``precision="diagonal"`` (one precision per coordinate: Gamma = diag(gamma_j), the per-coordinate variances the
    VAMP paper's Sec. III averages; this is expectation propagation with diagonal Gaussian messages, Opper & Winther
    2005, Minka 2001)
    LMMSE     C = (beta H + diag(gamma2))^-1,  x2 = C (beta H w + gamma2 * r2),  eta2_j = 1 / C_jj
    denoiser  as above with gamma1_j per coordinate, eta1_j = 1 / Var_j p
    and the same extrinsic updates coordinate by coordinate.
(r1 = x2 + gamma2 (x2 - r2) / gamma1 is their line 6, (eta2 x2 - gamma2 r2) / gamma1, rearranged so that it stays
finite when gamma1 is small.) Why the diagonal form: to first order in beta the exact marginal of coordinate j is
pi_j(q_j) exp(-beta/2 [H_jj (w_j - q_j)^2 + 2 (w_j - q_j) sum_{k != j} H_jk E_pi(w_k - q_k)]), a Gaussian factor of
precision beta H_jj. The diagonal form gives gamma1_j = beta H_jj + O(beta^2) (C_jj = 1/gamma2_j - beta H_jj /
gamma2_j^2 + O(beta^2)), exact to first order for every H; the scalar form gives every coordinate
beta mean_j H_jj, exact to first order only when H's diagonal is constant (tested against enumeration,
``tests/theory/test_mpq.py``; measured, the scalar form's error / departure-from-prior stays ~0.13 as beta -> 0 on an
unequal diagonal, the diagonal form's falls as beta^2). The diagonal form costs a (d, d) inverse per row and
iteration (O(m d^3), done by 2 x 2 block inversion with Cholesky leaves of <= 16: matrix products), the scalar one
an eigendecomposition of H per call.

"extrinsic" is :func:`extrinsic`: subtracting the incoming message is the Onsager correction. A precision that
would be <= 1e-8 (eta <= gamma: a bimodal denoiser posterior wider than its incoming Gaussian message) makes the
message uninformative (precision 1e-8, mean x) instead; precisions are capped at 1e8 (relative to the normalised
problem: H with unit mean diagonal, see :func:`mpq`). Damping (``rho`` < 1) averages each new message with the
previous one in natural parameters: gamma <- rho gamma' + (1 - rho) gamma, gamma r <- rho gamma' r' +
(1 - rho) gamma r. Annealing (``anneal`` < 1, the seed abstract's "run VAMP at a finite beta (or anneal it)"):
iteration t of T runs at beta_t = beta * anneal^(1 - t / (T - 1)), geometric from anneal * beta up to beta.

State evolution (Rangan et al. 2019, Thm. 1) for the SCALAR form on rotationally invariant H (H = O^T diag(lambda)
O, O Haar) in the matched (planted) model w = q0 + (beta H)^-1/2 z, q0_j iid uniform on a grid C, z ~ N(0, I),
undamped, beta fixed:
    E2(gamma2) = mean_i 1 / (beta lambda_i + gamma2),          gamma1 = 1 / E2 - gamma2
    E1(gamma1) = mmse of q0 ~ U(C) from q0 + N(0, 1 / gamma1),  gamma2 = 1 / E1 - gamma1
and E1 at iteration t is the measured per-coordinate MSE of x1 against q0 (as d -> infinity). It is proven for the
scalar form only (its precisions are the large-d limits the theorem tracks); the diagonal form's per-coordinate
precisions follow each coordinate's denoiser and no state evolution is claimed for it.

MPQ (the seed abstract: "VAMP computes approximate blockwise posteriors, then exact block coordinate descent refines
a hard-decision initialisation"; :func:`mpq`): VAMP (diagonal, annealed to a near-zero temperature) -> the
per-coordinate MAP of its marginals; the hard-decision initialisation is, per row, the better (lower objective) of
that MAP and GPTQ's solution (= LDLQ's, the abstract's "existing solvers ... zero-temperature, hard-decision
limit"), ``start="best"``; ``start="map"`` uses the MAP alone -> exact block coordinate descent
(:func:`jaxwb.theory.mpq.solvers.bcd`).

Checked (``ValueError`` naming the parameter, ``TypeError`` for a ``book`` that is not a Codebook): arrays finite,
real, non-empty, of the documented ranks and shapes; ``h`` symmetric and positive semidefinite for :func:`vamp`
(its eigenvalues are read as a spectrum; the diagonal form adds the positive gamma2 before inverting), positive
definite for :func:`mpq` (as every solver of :mod:`~jaxwb.theory.mpq.solvers`); inverse temperatures finite and > 0
(not subnormal), small enough that beta times the largest eigenvalue of h is finite in float32; ``rho`` and
``anneal`` in (0, 1]; ``precision`` and ``start`` one of their names; counts positive integers; codes in [0, K).
:func:`extrinsic`, :func:`denoise` and the jitted cores check nothing.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from jaxwb.theory import validate as v
from jaxwb.theory.mpq import checks as c
from jaxwb.theory.mpq.codebooks import Codebook, check_codebook, nearest_unchecked, spread_of_grid, values_unchecked
from jaxwb.theory.mpq.solvers import (
    as_float,
    bcd_run,
    check_block,
    check_inputs,
    check_row,
    codeword_energies,
    gptq_factor_unchecked,
    gptq_from_factor,
    grid_exponent,
    normalised,
)

GAMMA_MIN, GAMMA_MAX = 1e-8, 1e8
PRECISIONS = ("diagonal", "scalar")
STARTS = ("best", "map")
INV_LEAF = 16  # _inv_spd: Cholesky leaves of at most this size, the rest matrix products
ROW_CHUNK_FLOATS = 2**25  # diagonal VAMP: rows per call so that the (rows, d, d) matrices stay <= 128 MiB


def extrinsic(eta: Array, x: Array, gamma: Array, r: Array) -> tuple[Array, Array]:
    """Extrinsic message of a VAMP stage (Rangan et al. 2019, Alg. 1, lines 5-6 and 10-11): from the stage's
    posterior mean ``x`` with precision ``eta`` and its incoming message (``r``, ``gamma``), the outgoing
    precision ``eta - gamma`` and mean ``x + gamma (x - r) / (eta - gamma)`` (= (eta x - gamma r) / (eta - gamma),
    the Onsager-corrected mean). Elementwise (scalar or diagonal precisions alike). An outgoing precision below
    1e-8 gives the uninformative message (1e-8, x); precisions are capped at 1e8."""
    raw = eta - gamma
    ok = raw > GAMMA_MIN
    g = jnp.where(ok, jnp.minimum(raw, GAMMA_MAX), GAMMA_MIN)
    return g, jnp.where(ok, x + gamma * (x - r) / g, x)


def denoise(r: Float[Array, "m d"], gamma: Float[Array, "m d"], grid: Float[Array, "m d K"], logprior):
    """Posterior of each coordinate over its grid given r = q + N(0, 1/gamma) (``gamma`` per coordinate, or
    broadcast from (m, 1)): (probabilities (m, d, K), mean, variance (m, d))."""
    logit = logprior - 0.5 * gamma[..., None] * (grid - r[..., None]) ** 2
    p = jax.nn.softmax(logit, axis=-1)
    x = jnp.sum(p * grid, axis=-1)
    var = jnp.sum(p * (grid - x[..., None]) ** 2, axis=-1)
    return p, x, var


def _damped(rho, new, old):
    """Natural-parameter damping of a message (gamma, r): gamma <- rho gamma' + (1 - rho) gamma, gamma r <-
    rho gamma' r' + (1 - rho) gamma r (``rho`` = 1: the new message)."""
    (gn, rn), (go, ro) = new, old
    g = rho * gn + (1 - rho) * go
    return g, (rho * gn * rn + (1 - rho) * go * ro) / g


def _schedule(beta, anneal, iters: int):
    """beta_t = beta * anneal^(1 - t / (iters - 1)), t = 0 .. iters - 1 (beta throughout when iters = 1)."""
    t = jnp.arange(iters, dtype=jnp.result_type(beta))
    frac = 1.0 - t / max(iters - 1, 1) if iters > 1 else jnp.zeros(1, t.dtype)
    return beta * anneal**frac


def _prior_message(grid, logprior):
    prior = jax.nn.softmax(logprior, axis=-1)
    r2 = jnp.sum(prior * grid, axis=-1)
    var = jnp.sum(prior * (grid - r2[..., None]) ** 2, axis=-1)
    return r2, var


@functools.partial(jax.jit, static_argnames=("iters",))
def _vamp(w, lam, vecs, betas, grid, logprior, rho, iters: int):
    """Scalar-precision VAMP on the rows of ``w`` (H = vecs diag(lam) vecs^T), beta_t = ``betas[t]``."""
    r2, var0 = _prior_message(grid, logprior)
    g2 = 1.0 / jnp.maximum(jnp.mean(var0, axis=-1), 1e-30)[:, None]  # (m, 1)
    hw = (w @ vecs) * lam  # (H w) in the eigenbasis
    r1, g1 = jnp.zeros_like(w), jnp.ones_like(g2)

    def step(carry, t):
        r1, g1, r2, g2 = carry
        beta = betas[t]
        den = beta * lam[None, :] + g2  # (m, d)
        x2 = ((beta * hw + g2 * (r2 @ vecs)) / den) @ vecs.T
        eta2 = 1.0 / jnp.mean(1.0 / den, axis=-1, keepdims=True)
        g1n, r1n = extrinsic(eta2, x2, g2, r2)
        g1, r1 = _damped(jnp.where(t == 0, 1.0, rho), (g1n, r1n), (g1, r1))
        _, x1, v1 = denoise(r1, jnp.broadcast_to(g1, r1.shape), grid, logprior)
        v1 = jnp.maximum(jnp.mean(v1, axis=-1, keepdims=True), 1e-30)
        g2n, r2n = extrinsic(1.0 / v1, x1, g1, r1)
        g2, r2 = _damped(rho, (g2n, r2n), (g2, r2))
        return (r1, g1, r2, g2), (x1, v1[:, 0], g1[:, 0])

    (r1, g1, _, _), (xs, vs, gs) = jax.lax.scan(step, (r1, g1, r2, g2), jnp.arange(iters))
    p, _, _ = denoise(r1, jnp.broadcast_to(g1, r1.shape), grid, logprior)
    return p, xs, vs, gs


def _inv_spd(a: Array) -> Array:
    """Inverse of a batch of symmetric positive definite matrices (..., d, d) by 2 x 2 block inversion through the
    Schur complement (itself positive definite), with Cholesky leaves of <= :data:`INV_LEAF`: matrix products
    carry the O(d^3) work (XLA's batched CPU Cholesky of d >= 64 measured 10-40x slower than a matrix product of
    the same size here). A step inside the jitted diagonal VAMP: no checks."""
    d = a.shape[-1]
    if d <= INV_LEAF:
        lo = jnp.linalg.cholesky(a)
        eye = jnp.broadcast_to(jnp.eye(d, dtype=a.dtype), a.shape)
        li = jax.scipy.linalg.solve_triangular(lo, eye, lower=True)
        return jnp.swapaxes(li, -1, -2) @ li
    k = d // 2
    a11, a12, a22 = a[..., :k, :k], a[..., :k, k:], a[..., k:, k:]
    x11 = _inv_spd(a11)
    t = x11 @ a12
    s = a22 - jnp.swapaxes(a12, -1, -2) @ t
    xs = _inv_spd(0.5 * (s + jnp.swapaxes(s, -1, -2)))
    txs = t @ xs
    top = jnp.concatenate([x11 + txs @ jnp.swapaxes(t, -1, -2), -txs], axis=-1)
    return jnp.concatenate([top, jnp.concatenate([-jnp.swapaxes(txs, -1, -2), xs], axis=-1)], axis=-2)


def lmmse_precision(cov: Float[Array, "m d d"]) -> Float[Array, "m d"]:
    """The diagonal form's LMMSE precisions eta2_j = 1 / C_jj of each row's posterior covariance
    C = (beta H + diag(gamma2))^-1 (the per-coordinate version of Rangan et al. 2019, Alg. 1, line 4). A step inside
    the jitted diagonal VAMP: no checks."""
    return 1.0 / jnp.diagonal(cov, axis1=-2, axis2=-1)


@functools.partial(jax.jit, static_argnames=("iters",))
def _vamp_diag(w, h, betas, grid, logprior, rho, iters: int):
    """Diagonal-precision VAMP on the rows of ``w``, beta_t = ``betas[t]`` (see the module docstring)."""
    r2, var0 = _prior_message(grid, logprior)
    g2 = 1.0 / jnp.maximum(var0, 1e-30)  # (m, d)
    hw = w @ h
    eye = jnp.eye(h.shape[0], dtype=h.dtype)
    r1, g1 = jnp.zeros_like(w), jnp.ones_like(w)

    def step(carry, t):
        r1, g1, r2, g2 = carry
        beta = betas[t]
        cov = _inv_spd(beta * h[None] + g2[:, :, None] * eye[None])  # (m, d, d)
        x2 = jnp.einsum("mjk,mk->mj", cov, beta * hw + g2 * r2)
        eta2 = lmmse_precision(cov)
        g1n, r1n = extrinsic(eta2, x2, g2, r2)
        g1, r1 = _damped(jnp.where(t == 0, 1.0, rho), (g1n, r1n), (g1, r1))
        _, x1, v1 = denoise(r1, g1, grid, logprior)
        g2n, r2n = extrinsic(1.0 / jnp.maximum(v1, 1e-30), x1, g1, r1)
        g2, r2 = _damped(rho, (g2n, r2n), (g2, r2))
        return (r1, g1, r2, g2), (x1, v1, g1)

    (r1, g1, _, _), (xs, vs, gs) = jax.lax.scan(step, (r1, g1, r2, g2), jnp.arange(iters))
    p, _, _ = denoise(r1, g1, grid, logprior)
    return p, xs, vs, gs


def _vamp_run(w, h, grid, beta, iters: int, rho, logprior, *, anneal=1.0, precision: str = "scalar") -> dict:
    """:func:`vamp` on checked inputs (in h's float dtype: float32, or float64 under ``jax_enable_x64``); refuses a
    beta * max eigenvalue that overflows."""
    h = as_float(h)  # float32, or float64 under jax_enable_x64 with a float64 h
    dt = h.dtype
    w, grid = jnp.asarray(w, dt), jnp.asarray(grid, dt)
    lp = jnp.zeros(grid.shape, dt) if logprior is None else jnp.asarray(logprior, dt)
    lam, vecs = jnp.linalg.eigh(h)
    shift = jnp.maximum(-jnp.min(lam), 0.0)  # rounding-level negative eigenvalues (checked): read as 0
    lam = jnp.maximum(lam, 0.0)
    top = c.concrete(jnp.max(lam))
    cb = c.concrete(beta)
    if top is not None and cb is not None and float(cb) * float(top) > float(jnp.finfo(dt).max) / 4:
        raise ValueError(
            f"beta must be small enough that beta * the largest eigenvalue of h ({float(top):.3g}) is finite in "
            f"{dt.name}, got {float(cb):.3g}"
        )
    betas = _schedule(jnp.asarray(beta, dt), jnp.asarray(anneal, dt), iters)
    rho = jnp.asarray(rho, dt)
    if precision == "scalar":
        p, xs, vs, gs = _vamp(w, lam, vecs, betas, grid, lp, rho, iters)
        return {"marginals": p, "x1": xs, "var1": vs, "gamma1": gs}
    d = w.shape[1]
    chunk = max(1, ROW_CHUNK_FLOATS // (d * d))
    h = 0.5 * (h + h.T) + shift * jnp.eye(d, dtype=h.dtype)
    outs = [
        _vamp_diag(w[i : i + chunk], h, betas, grid[i : i + chunk], lp[i : i + chunk], rho, iters)
        for i in range(0, w.shape[0], chunk)
    ]
    p, xs, vs, gs = (jnp.concatenate(parts, axis=0 if j == 0 else 1) for j, parts in enumerate(zip(*outs, strict=True)))
    return {"marginals": p, "x1": xs, "var1": vs, "gamma1": gs}


def _check_choice(name: str, value, options: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def _check_anneal(anneal) -> None:
    c.real_scalar("anneal", anneal)
    v.check("anneal", anneal, lambda a: (a > 0) & (a <= 1), "in (0, 1]", elementwise=True)
    v.normal("anneal", anneal)


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
    precision: str = "diagonal",
    anneal: float = 1.0,
) -> dict:
    """VAMP on each row of ``w`` for the posterior at inverse temperature ``beta`` (absolute) with grids ``grid``
    and log prior weights ``logprior`` (uniform if None): Rangan et al. 2019, Alg. 1, with ``precision``
    "diagonal" (one precision per coordinate; exact to first order in beta for any H) or "scalar" (their
    algorithm as printed; its state evolution, :func:`state_evolution`, applies); damping ``rho`` in (0, 1];
    ``anneal`` in (0, 1]: beta_t rises geometrically from anneal * beta to beta over the iterations (1: fixed beta).
    See the module docstring for the updates. Returns ``marginals`` (m, d, K) of the last denoiser, and per
    iteration ``x1`` (iters, m, d), ``var1`` and ``gamma1`` (the denoiser's posterior variance and input precision:
    (iters, m) for "scalar", (iters, m, d) for "diagonal").

    Checked: ``w`` a finite real (m, d) array; ``h`` a finite real (d, d) array, symmetric and positive
    semidefinite (eigenvalues >= -8 eps max(diag h); rounding-level negatives are read as 0); ``grid`` a finite
    real (m, d, K) array; ``beta`` finite and > 0, with beta * max eigenvalue of h finite in h's dtype (float32;
    float64 for a float64 h under ``jax_enable_x64``); ``iters`` a positive integer; ``rho`` and ``anneal`` in
    (0, 1] (``anneal`` not subnormal); ``precision`` "diagonal" or "scalar"; ``logprior`` (m, d, K), no NaN and no
    +inf (-inf excludes a value), at least one value not excluded per coordinate. Cost: "diagonal" inverts a
    (d, d) matrix per row and iteration (O(m d^3) per iteration, rows in chunks of <= 2^25 / d^2); "scalar" one
    eigendecomposition of h."""
    c.array("w", w, ndim=2)
    shp = tuple(np.shape(w))
    c.grid("grid", grid, shp)
    c.hessian("h", h, shp[1], definite="semidefinite", why=" (d = w.shape[1])")
    c.positive_scalar("beta", beta)
    c.int_option("iters", iters)
    _check_rho(rho)
    _check_choice("precision", precision, PRECISIONS)
    _check_anneal(anneal)
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
    return _vamp_run(w, h, grid, beta, int(iters), rho, logprior, anneal=anneal, precision=precision)


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
    _, k = check_row(w, h, grid, 2**20)
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
    check_codebook("book", book)
    spread = spread_of_grid(book.grid)
    if not (np.isfinite(spread) and spread > 0):
        raise ValueError("book must hold two distinct values in some coordinate's grid (every grid step is 0)")
    return float(beta / (float(jnp.mean(jnp.diag(jnp.asarray(h)))) * spread))


# MPQ's defaults (docs/papers/mpq.md, "What we implement"): diagonal VAMP annealed over 30 iterations from
# beta/100 to a relative beta of 1024 (one grid step costs ~512 nats at the end: the zero-temperature limit the
# MAP is read from), damped by half; the start is the better of its MAP and GPTQ's solution per row.
BETA, ITERS, RHO, ANNEAL = 1024.0, 30, 0.5, 0.01


def check_mpq_options(beta, iters, rho, anneal, precision, start) -> None:
    c.positive_scalar("beta", beta)
    c.int_option("iters", iters)
    _check_rho(rho)
    _check_anneal(anneal)
    _check_choice("precision", precision, PRECISIONS)
    _check_choice("start", start, STARTS)


def _start_run(wn, hn, gn, beta, iters, rho, anneal, precision, start) -> dict:
    """:func:`mpq_start` on checked, normalised inputs (h rescaled, w and the grid scaled by 2^-e)."""
    spread = spread_of_grid(gn)
    b_abs = float(beta / (float(jnp.mean(jnp.diag(hn))) * spread))
    out = _vamp_run(wn, hn, gn, b_abs, int(iters), rho, None, anneal=anneal, precision=precision)
    vmap_codes = jnp.argmax(out["marginals"], axis=-1).astype(jnp.int32)
    hard = gptq_from_factor(wn, gptq_factor_unchecked(hn), gn, 128).astype(jnp.int32)

    def obj(codes):
        e = wn - values_unchecked(codes, gn)
        return jnp.einsum("md,de,me->m", e, hn, e)

    f_map, f_hard = obj(vmap_codes), obj(hard)
    use_map = jnp.isfinite(f_map) & (f_map < f_hard) if start == "best" else jnp.ones(wn.shape[0], bool)
    codes = jnp.where(use_map[:, None], vmap_codes, hard)
    return {"codes": codes, "map": vmap_codes, "gptq": hard, "from_map": use_map}


def mpq_start(
    w: Float[ArrayLike, "m d"],
    h: Float[ArrayLike, "d d"],
    book: Codebook,
    *,
    beta: float = BETA,
    iters: int = ITERS,
    rho: float = RHO,
    anneal: float = ANNEAL,
    precision: str = "diagonal",
    start: str = "best",
) -> dict:
    """MPQ's hard-decision initialisation (the seed abstract: "VAMP computes approximate blockwise posteriors, then
    exact block coordinate descent refines a hard-decision initialisation"): VAMP's marginals (``precision``,
    damping ``rho``, annealed by ``anneal`` up to the relative inverse temperature ``beta``, :func:`absolute_beta`)
    -> the per-coordinate MAP ``map``; ``start="best"``: per row the one of ``map`` and GPTQ's codes ``gptq``
    (Frantar et al. 2023 = LDLQ, QuIP Thm. 6: the abstract's zero-temperature, hard-decision solution, which its
    text admits as "a hard-decision initialisation") with the lower objective (w - q)^T H (w - q) (ties: GPTQ's);
    ``start="map"``: the MAP alone. Returns ``codes`` (the start), ``map``, ``gptq`` and ``from_map`` (m,) bool.

    Checked: as :func:`mpq` (without ``block`` and ``max_sweeps``)."""
    wa, ha = check_inputs(w, h, book)
    check_mpq_options(beta, iters, rho, anneal, precision, start)
    grid = as_float(book.grid)
    e = grid_exponent(grid)
    wn, gn, hn = c.times_pow2(wa, -e), c.times_pow2(grid, -e), normalised(ha)
    if not np.isfinite(spread_of_grid(gn)):  # every coordinate's grid holds one value: nothing to choose
        near = nearest_unchecked(wa, grid)
        return {"codes": near, "map": near, "gptq": near, "from_map": jnp.zeros(wa.shape[0], bool)}
    return _start_run(wn, hn, gn, beta, iters, rho, anneal, precision, start)


def mpq(
    w: Float[ArrayLike, "m d"],
    h: Float[ArrayLike, "d d"],
    book: Codebook,
    *,
    beta: float = BETA,
    iters: int = ITERS,
    rho: float = RHO,
    anneal: float = ANNEAL,
    precision: str = "diagonal",
    start: str = "best",
    block: int = 1,
    max_sweeps: int = 100,
) -> Int[Array, "m d"]:
    """MPQ codes: :func:`mpq_start` (VAMP marginals at the relative inverse temperature ``beta`` reached by
    annealing from ``anneal * beta``, ``precision`` "diagonal" or "scalar", damping ``rho``; their per-coordinate
    MAP, or per row the better of it and GPTQ's solution with ``start="best"``) -> exact block coordinate descent
    (blocks of ``block``) to a block-wise minimum. Defaults: beta 1024, 30 iterations, rho 0.5, anneal 0.01,
    diagonal precisions, start "best" (``docs/papers/mpq.md``). With ``start="best"`` MPQ's objective is at most
    GPTQ's on every row (coordinate descent never increases it).

    Checked: ``w``, ``h`` (symmetric positive definite) and ``book`` as for every solver
    (:mod:`~jaxwb.theory.mpq.solvers`); ``beta`` finite and > 0; ``iters`` a positive integer; ``rho`` and
    ``anneal`` in (0, 1]; ``precision`` one of ("diagonal", "scalar"); ``start`` one of ("best", "map"); ``block``
    a positive integer dividing d with K^block <= 4096; ``max_sweeps`` an integer >= 0. Scale: h is multiplied by
    4^-k when its largest diagonal entry is outside [2^-32, 2^32], and w with the grid by 2^-e when max |grid| is
    outside [2^-8, 2^8] (exact; the codes of exact arithmetic do not depend on either scale, and inputs inside
    the ranges give the same floats as without the rescaling). A grid whose every coordinate holds one distinct
    value leaves no choice: its codes are the nearest ones. Cost: see :func:`vamp` ("diagonal": O(m d^3) per
    iteration)."""
    wa, ha = check_inputs(w, h, book)
    d, k = wa.shape[1], np.shape(book.grid)[-1]
    check_mpq_options(beta, iters, rho, anneal, precision, start)
    block = check_block(block, d, k)
    max_sweeps = c.int_option("max_sweeps", max_sweeps, minimum=0)
    grid = as_float(book.grid)
    e = grid_exponent(grid)
    wn, gn, hn = c.times_pow2(wa, -e), c.times_pow2(grid, -e), normalised(ha)
    if not np.isfinite(spread_of_grid(gn)):  # every coordinate's grid holds one value: nothing to choose
        return nearest_unchecked(wa, grid)
    init = _start_run(wn, hn, gn, beta, iters, rho, anneal, precision, start)["codes"]
    return bcd_run(wn, hn, gn, init, block, max_sweeps)
