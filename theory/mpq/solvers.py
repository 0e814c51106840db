"""Hard-decision PTQ solvers on the layer objective (w - q)^T H (w - q) (``shared/papers/mpq.md``, "Math").

All solvers take the float rows ``w`` (m, d), the damped proxy Hessian ``H`` (d, d) and a
:class:`~jaxwb.theory.mpq.codebooks.Codebook` (grid (m, d, K)) and return integer codes (m, d) (indices into
the grid); :func:`~jaxwb.theory.mpq.codebooks.values` turns them into the quantized rows q.

* :func:`rtn`: round every coordinate to its nearest grid value.
* :func:`gptq`: GPTQ (Frantar, Ashkboos, Hoefler, Alistarh, ICLR 2023, Alg. 1): U = upper Cholesky factor of
  H^-1; columns in order, q_i = Q(w_i), err_i = (w_i - q_i) / U_ii, w_{>i} -= err_i U_{i,>i}; "lazy batch"
  blocks of B columns (inside a block the updates are applied column by column, the rest of the row receives
  one matmul per block).
* :func:`ldlq`: LDLQ (Chee, Cai, Kuleshov, De Sa, QuIP, NeurIPS 2023, eq. (4)): H = U D U^T with U unit upper
  triangular (:func:`udu`), q_k = Q(w_k + sum_{j<k} U_{jk} (w_j - q_j)). QuIP's Theorem: GPTQ = LDLQ (tested).
* :func:`bcd`: exact block coordinate descent: blocks of b consecutive coordinates, each replaced by its best
  codeword given the others (all K^b enumerated), a block changes only on a strict decrease; sweeps until no
  block changes. The objective never increases (tested).
* :func:`exact_minimum`: the minimiser by enumeration of all K^d codewords (tiny d only).
"""

from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from jaxwb.theory.mpq.codebooks import Codebook, nearest, values


def as_float(x: ArrayLike) -> Array:
    """``x`` as a float array of at least float32 precision (float64 stays float64 under ``jax_enable_x64``)."""
    x = jnp.asarray(x)
    return x.astype(jnp.promote_types(x.dtype, jnp.float32))


def damp(h: Float[ArrayLike, "d d"], lam: float) -> Float[Array, "d d"]:
    """``H + lam * mean(diag H) * I`` (the GPTQ paper's dampening, ``percdamp``)."""
    h = as_float(h)
    return h + lam * jnp.mean(jnp.diag(h)) * jnp.eye(h.shape[0], dtype=h.dtype)


def proxy_hessian(x: Float[ArrayLike, "n d"], *, damping: float = 0.01) -> Float[Array, "d d"]:
    """Damped proxy Hessian ``X^T X / n + damping * mean(diag) * I`` of calibration inputs ``x`` (n, d)
    (``shared/papers/mpq.md``; GPTQ paper Sec. 3 and its ``percdamp``)."""
    x = as_float(x)
    if x.ndim != 2 or x.shape[0] < 1:
        raise ValueError(f"x must be a 2-D (n, d) array with n >= 1, got shape {x.shape}")
    if not (isinstance(damping, (int, float)) and damping >= 0):
        raise ValueError(f"damping must be a float >= 0, got {damping!r}")
    return damp(x.T @ x / x.shape[0], damping)


def objective(w: Float[ArrayLike, "m d"], q: Float[ArrayLike, "m d"], h: Float[ArrayLike, "d d"]) -> Float[Array, " m"]:
    """Per-row layer-output error ``(w - q)^T H (w - q)``."""
    e = as_float(w) - as_float(q)
    return jnp.einsum("md,de,me->m", e, as_float(h), e)


def _check(w: ArrayLike, h: ArrayLike, book: Codebook) -> tuple[Array, Array]:
    w = as_float(w)
    h = as_float(h)
    if w.ndim != 2:
        raise ValueError(f"w must be 2-D (m, d), got shape {w.shape}")
    if h.shape != (w.shape[1], w.shape[1]):
        raise ValueError(f"h must be ({w.shape[1]}, {w.shape[1]}), got shape {h.shape}")
    if book.grid.shape[:2] != w.shape:
        raise ValueError(f"book.grid must be {w.shape} + (K,), got shape {book.grid.shape}")
    return w, h


def rtn(w: Float[ArrayLike, "m d"], book: Codebook) -> Int[Array, "m d"]:
    """Round to nearest: codes of the nearest grid value, coordinate by coordinate."""
    return nearest(as_float(w), book.grid)


def column_feedback(u_block: Float[Array, "b b"], i: Array) -> Float[Array, " b"]:
    """Row ``i`` of GPTQ's block of the Cholesky factor: where column i's scaled error is pushed (entries left of
    i are zero; entry i itself turns w_i into q_i)."""
    return u_block[i]


def gptq_factor(h: Float[ArrayLike, "d d"]) -> Float[Array, "d d"]:
    """Upper Cholesky factor U of H^-1 (H^-1 = U^T U), as the GPTQ reference code computes it."""
    h = as_float(h)
    lo = jnp.linalg.cholesky(h)
    hinv = jax.scipy.linalg.cho_solve((lo, True), jnp.eye(h.shape[0], dtype=h.dtype))
    return jnp.linalg.cholesky(hinv).T


@functools.partial(jax.jit, static_argnames=("block",))
def gptq_from_factor(w, u, grid, block: int):
    """GPTQ of ``w`` (rows, d) onto ``grid`` given ``u = gptq_factor(h)`` (d, d), in column blocks of ``block``:
    the jitted core of :func:`gptq` (codes (rows, d)), public so that benchmarks can lower it."""
    d = w.shape[1]
    codes = []
    for i1 in range(0, d, block):
        i2 = min(i1 + block, d)
        ub = u[i1:i2, i1:i2]

        def step(w1, i, ub=ub, g=grid[:, i1:i2]):
            c = nearest(w1[:, i], g[:, i])
            qi = jnp.take_along_axis(g[:, i], c[:, None], axis=-1)[:, 0]
            err = (w1[:, i] - qi) / ub[i, i]
            return w1 - err[:, None] * column_feedback(ub, i)[None, :], (c, err)

        _, (c, err) = jax.lax.scan(step, w[:, i1:i2], jnp.arange(i2 - i1))
        codes.append(c.T)
        w = w.at[:, i2:].add(-(err.T @ u[i1:i2, i2:]))
    return jnp.concatenate(codes, axis=1)


def gptq(
    w: Float[ArrayLike, "m d"], h: Float[ArrayLike, "d d"], book: Codebook, *, block: int = 128
) -> Int[Array, "m d"]:
    """GPTQ codes (Frantar et al. 2023, Alg. 1, lazy batches of ``block`` columns) for the damped ``h``."""
    w, h = _check(w, h, book)
    if not (isinstance(block, int) and block >= 1):
        raise ValueError(f"block must be a positive integer, got {block!r}")
    return gptq_from_factor(w, gptq_factor(h), as_float(book.grid), block)


def udu(h: Float[ArrayLike, "d d"]) -> tuple[Float[Array, "d d"], Float[Array, " d"]]:
    """``H = U diag(D) U^T`` with U unit upper triangular (the LDL factorisation of the index-reversed H)."""
    h = as_float(h)
    c = jnp.linalg.cholesky(h[::-1, ::-1])
    dc = jnp.diag(c)
    return (c / dc[None, :])[::-1, ::-1], (dc**2)[::-1]


@jax.jit
def _ldlq(w, u, grid):
    def step(e, k):
        a = w[:, k] + e @ u[:, k]
        c = nearest(a, grid[:, k])
        qk = jnp.take_along_axis(grid[:, k], c[:, None], axis=-1)[:, 0]
        return e.at[:, k].set(w[:, k] - qk), c

    _, codes = jax.lax.scan(step, jnp.zeros_like(w), jnp.arange(w.shape[1]))
    return codes.T


def ldlq(w: Float[ArrayLike, "m d"], h: Float[ArrayLike, "d d"], book: Codebook) -> Int[Array, "m d"]:
    """LDLQ codes (QuIP, eq. 4): q_k = Q(w_k + sum_{j<k} U_jk (w_j - q_j)), H = U D U^T."""
    w, h = _check(w, h, book)
    u, _ = udu(h)
    return _ldlq(w, u - jnp.eye(u.shape[0], dtype=u.dtype), as_float(book.grid))


@functools.partial(jax.jit, static_argnames=("block", "max_sweeps"))
def _bcd(w, h, grid, codes, block: int, max_sweeps: int):
    m, d = w.shape
    k = grid.shape[-1]
    combos = jnp.asarray(list(itertools.product(range(k), repeat=block)), jnp.int32)  # (C, b)

    def one_block(carry, s):
        codes, e, he, changed = carry
        idx = s * block + jnp.arange(block)
        hbb = h[idx][:, idx]
        eb = e[:, idx]
        g = he[:, idx] - eb @ hbb  # H_{B, rest} e_rest
        cand = jnp.take_along_axis(grid[:, idx], jnp.broadcast_to(combos.T[None], (m, block, combos.shape[0])), -1)
        ec = w[:, idx][:, :, None] - cand  # (m, b, C)
        f = jnp.einsum("mbc,bk,mkc->mc", ec, hbb, ec) + 2 * jnp.einsum("mbc,mb->mc", ec, g)
        f_cur = jnp.einsum("mb,bk,mk->m", eb, hbb, eb) + 2 * jnp.einsum("mb,mb->m", eb, g)
        best = jnp.argmin(f, axis=-1)
        f_best = jnp.take_along_axis(f, best[:, None], -1)[:, 0]
        better = f_best < f_cur - 1e-6 * (jnp.abs(f_cur) + jnp.abs(f_best)) - 1e-30
        new_codes = jnp.where(better[:, None], combos[best], codes[:, idx])
        new_eb = w[:, idx] - jnp.take_along_axis(grid[:, idx], new_codes[..., None], -1)[..., 0]
        he = he + (new_eb - eb) @ h[idx]
        return (codes.at[:, idx].set(new_codes), e.at[:, idx].set(new_eb), he, changed | jnp.any(better)), None

    def sweep(state):
        codes, e, he, _, n = state
        (codes, e, he, changed), _ = jax.lax.scan(one_block, (codes, e, he, False), jnp.arange(d // block))
        return codes, e, he, changed, n + 1

    e0 = w - values(codes, grid)
    state = (codes, e0, e0 @ h, True, 0)
    codes, *_ = jax.lax.while_loop(lambda s: s[3] & (s[4] < max_sweeps), sweep, state)
    return codes


def bcd(
    w: Float[ArrayLike, "m d"],
    h: Float[ArrayLike, "d d"],
    book: Codebook,
    init: Int[ArrayLike, "m d"],
    *,
    block: int = 1,
    max_sweeps: int = 100,
) -> Int[Array, "m d"]:
    """Exact block coordinate descent from the codes ``init``: each block of ``block`` consecutive coordinates
    takes its best codeword (all K^block enumerated) given the rest, on a strict decrease only; at most
    ``max_sweeps`` sweeps, stops at the first sweep that changes nothing."""
    wa, ha = _check(w, h, book)
    d, k = wa.shape[1], book.grid.shape[-1]
    if not (isinstance(block, int) and block >= 1 and d % block == 0 and k**block <= 4096):
        raise ValueError(f"block must be a positive integer dividing d={d} with K^block <= 4096, got {block!r}")
    start = jnp.asarray(init, jnp.int32)
    if start.shape != wa.shape:
        raise ValueError(f"init must have shape {wa.shape}, got {start.shape}")
    return _bcd(wa, ha, as_float(book.grid), start, block, max_sweeps)


def all_codewords(d: int, k: int) -> Int[np.ndarray, "C d"]:
    """Every codeword of d coordinates with k codes each, (k^d, d) int64, in ``itertools.product`` order
    (lexicographic, the last coordinate fastest)."""
    return np.indices((k,) * d, dtype=np.int64).reshape(d, -1).T


def codeword_energies(w: Float[ArrayLike, " d"], h: Float[ArrayLike, "d d"], grid: Float[ArrayLike, "d K"]):
    """Every codeword of one row and its objective (w - q)^T H (w - q), float64 NumPy, by enumeration (K^d <=
    2^22): ``(codes (K^d, d), objectives (K^d,))``."""
    wn, hn, gn = (np.asarray(a, np.float64) for a in (w, h, grid))
    d, k = gn.shape
    if k**d > 2**22:
        raise ValueError(f"grid: K^d = {k}^{d} codewords is too many to enumerate (<= 2^22)")
    combos = all_codewords(d, k)
    e = wn[None] - gn[np.arange(d)[None], combos]
    return combos, np.sum((e @ hn) * e, axis=1)


def exact_minimum(w: Float[ArrayLike, " d"], h: Float[ArrayLike, "d d"], grid: Float[ArrayLike, "d K"]):
    """Minimum of (w - q)^T H (w - q) over all K^d codewords of one row by enumeration (float64 NumPy; K^d <=
    2^22). Returns ``(min objective, codes)``."""
    combos, f = codeword_energies(w, h, grid)
    i = int(np.argmin(f))
    return float(f[i]), combos[i]
