"""Hard-decision PTQ solvers on the layer objective (w - q)^T H (w - q).

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

Checked (``ValueError`` naming the parameter; ``TypeError`` for a ``book`` that is not a Codebook): ``w`` a
finite real non-empty (m, d) array; ``h`` a finite real (d, d) array, symmetric (to sqrt(eps) of max |h|) and,
for the solvers that factor or minimise over it (GPTQ, LDLQ, BCD, MPQ, :func:`udu`, :func:`gptq_factor`),
positive definite: the Cholesky factor of ``h - 8 eps max(diag h) I`` must exist (eps of h's dtype), so a
singular, indefinite or numerically singular H is refused, never regularised silently: damp it first
(:func:`damp`, or ``damping`` > 0 in :func:`proxy_hessian`, which makes a proxy Hessian definite); ``book.grid``
(m, d, K) finite; codes in [0, K); integer options as documented. Value checks run eagerly (and on the primal
of ``jax.grad``, every member of an eager ``jax.vmap``) and under ``jit`` only inside ``jaxwb.theory.checked``.

Scale. The codes of every solver are invariant to the scale of H in exact arithmetic; an H whose largest
diagonal entry lies outside [2^-32, 2^32] is multiplied by 4^-k first (exact; the steps are homogeneous in H, so
an H inside the range gives the same floats as before and one outside it the codes of the rescaled H, without
overflow or underflow). :func:`proxy_hessian` computes X^T X / n from x * 2^-e when max |x| is outside
[2^-32, 2^32] and refuses by name an x whose H overflows or underflows the float dtype.
"""

from __future__ import annotations

import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from jaxwb.theory import validate as v
from jaxwb.theory.mpq import checks as c
from jaxwb.theory.mpq.codebooks import Codebook, check_codebook, nearest_unchecked, values_unchecked

X_SAFE = 32  # proxy_hessian: x is rescaled by 2^-e only when max |x| is outside [2^-X_SAFE, 2^X_SAFE]


def as_float(x: ArrayLike) -> Array:
    """``x`` as a float array of at least float32 precision (float64 stays float64 under ``jax_enable_x64``)."""
    return c.as_float(x)


def damp(h: Float[ArrayLike, "d d"], lam: float) -> Float[Array, "d d"]:
    """``H + lam * mean(diag H) * I`` (the GPTQ paper's dampening, ``percdamp``).

    Checked: ``h`` a finite real square array; ``lam`` a real number, finite and >= 0, small enough that the
    result is finite (else refused by name)."""
    c.hessian("h", h, None, definite=None)
    c.real_scalar("lam", lam)
    v.nonnegative("lam", lam)
    h = as_float(h)
    out = h + lam * jnp.mean(jnp.diag(h)) * jnp.eye(h.shape[0], dtype=h.dtype)
    co = c.concrete(out)
    if co is not None and not np.all(np.isfinite(co)):
        md = float(np.mean(np.diag(np.asarray(c.concrete(h), np.float64))))
        raise ValueError(
            f"lam must be small enough that lam * mean(diag h) = {float(lam) * md:.3g} is finite in "
            f"{h.dtype.name}, got {float(lam):.3g}"
        )
    return out


def _proxy_hessian(x: Array, damping) -> Array:
    """X^T X / n of the checked float ``x``, damped: on ``x * 2^-e`` when max |x| is outside the safe range (e = 0
    otherwise: the plain formula), then times 4^e; refuses an overflowing or underflowing result by name."""
    cx = c.concrete(x)
    amax = 0.0 if cx is None else float(np.max(np.abs(cx)))
    e = c.pow2_exponent(amax, X_SAFE)
    xs = c.times_pow2(x, -e)
    hs = damp(xs.T @ xs / xs.shape[0], damping)
    if e == 0:
        return hs
    fi = jnp.finfo(hs.dtype)
    chs = c.concrete(hs)
    assert chs is not None  # e != 0 only for a concrete x
    top = float(np.max(np.abs(chs))) * 4.0**e  # float64: may exceed the dtype's range
    if top > float(fi.max) / 2:
        raise ValueError(
            f"x must be small enough that X^T X / n is finite in {hs.dtype.name} (max |x| below about "
            f"{math.sqrt(float(fi.max) / 2):.2g}), got max |x| = {amax:.3g}: scale x down (GPTQ and MPQ codes do not "
            "depend on the scale of H)"
        )
    if top * float(fi.eps) < float(fi.tiny):
        raise ValueError(
            f"x must be large enough that X^T X / n keeps its precision in {hs.dtype.name} (max |x| above about "
            f"{math.sqrt(float(fi.tiny) / float(fi.eps)):.2g}), got max |x| = {amax:.3g}: scale x up (GPTQ and MPQ "
            "codes do not depend on the scale of H)"
        )
    return c.times_pow2(hs, 2 * e)


def proxy_hessian(x: Float[ArrayLike, "n d"], *, damping: float = 0.01) -> Float[Array, "d d"]:
    """Damped proxy Hessian ``X^T X / n + damping * mean(diag) * I`` of calibration inputs ``x`` (n, d)
    (GPTQ paper Sec. 3 and its ``percdamp``).

    Checked: ``x`` a finite real non-empty 2-D array; ``damping`` a real number, finite and >= 0. Scaled form:
    when max |x| is outside [2^-32, 2^32], X^T X / n is computed from x * 2^-e (exact) and multiplied by 4^e, so
    an x whose entries overflow when squared still gives its H; an H that itself overflows the dtype, or loses
    its precision to underflow, is refused naming ``x``. ``damping`` > 0 makes the result positive definite
    (what the solvers require) for any x that is not all zero."""
    c.array("x", x, ndim=2)
    c.real_scalar("damping", damping)
    v.nonnegative("damping", damping)
    return _proxy_hessian(as_float(x), damping)


def objective(w: Float[ArrayLike, "m d"], q: Float[ArrayLike, "m d"], h: Float[ArrayLike, "d d"]) -> Float[Array, " m"]:
    """Per-row layer-output error ``(w - q)^T H (w - q)``.

    Checked: ``w`` and ``q`` finite real (m, d) arrays; ``h`` a finite real (d, d) array (any square matrix: the
    quadratic form of its symmetric part); a result that overflows the dtype is refused naming ``w - q``."""
    c.array("w", w, ndim=2)
    c.array("q", q, ndim=2)
    v.same_shape("w", w, "q", q)
    d = np.shape(w)[1]
    c.hessian("h", h, d, definite=None, why=" (d = w.shape[1])")
    e = as_float(w) - as_float(q)
    out = jnp.einsum("md,de,me->m", e, as_float(h), e)
    v.check(
        "w - q",
        out,
        lambda a: a == a,
        f"small enough that (w - q)^T h (w - q) is finite in {out.dtype.name}",
        finite=True,
        elementwise=True,
    )
    return out


def check_inputs(w: ArrayLike, h: ArrayLike, book: Codebook, *, definite: bool = True) -> tuple[Array, Array]:
    """The checks every solver makes (see the module docstring); returns (w, h) as float arrays."""
    c.array("w", w, ndim=2)
    shp = tuple(np.shape(w))
    check_codebook("book", book, shp)
    c.hessian("h", h, shp[1], definite="definite" if definite else None, why=" (d = w.shape[1])")
    return as_float(w), as_float(h)


def normalised(h: Array) -> Array:
    """``h * 4^-k`` with its largest diagonal entry in [2^-32, 2^32] (``h`` itself inside that range)."""
    return c.times_pow2(h, -2 * c.hessian_exponent(h))


def rtn(w: Float[ArrayLike, "m d"], book: Codebook) -> Int[Array, "m d"]:
    """Round to nearest: codes of the nearest grid value, coordinate by coordinate.

    Checked: ``w`` a finite real (m, d) array; ``book`` a Codebook with a finite (m, d, K) grid."""
    c.array("w", w, ndim=2)
    check_codebook("book", book, tuple(np.shape(w)))
    return nearest_unchecked(as_float(w), book.grid)


def column_feedback(u_block: Float[Array, "b b"], i: Array) -> Float[Array, " b"]:
    """Row ``i`` of GPTQ's block of the Cholesky factor: where column i's scaled error is pushed (entries left of
    i are zero; entry i itself turns w_i into q_i). A step inside the jitted GPTQ: no checks."""
    return u_block[i]


def gptq_factor_unchecked(h: Array) -> Array:
    lo = jnp.linalg.cholesky(h)
    hinv = jax.scipy.linalg.cho_solve((lo, True), jnp.eye(h.shape[0], dtype=h.dtype))
    return jnp.linalg.cholesky(hinv).T


def gptq_factor(h: Float[ArrayLike, "d d"]) -> Float[Array, "d d"]:
    """Upper Cholesky factor U of H^-1 (H^-1 = U^T U), as the GPTQ reference code computes it.

    Checked: ``h`` finite, real, square, symmetric and positive definite (see the module docstring)."""
    c.hessian("h", h, None)
    return gptq_factor_unchecked(as_float(h))


@functools.partial(jax.jit, static_argnames=("block",))
def gptq_from_factor(w, u, grid, block: int):
    """GPTQ of ``w`` (rows, d) onto ``grid`` given ``u = gptq_factor(h)`` (d, d), in column blocks of ``block``:
    the jitted core of :func:`gptq` (codes (rows, d)), public so that benchmarks can lower it. No checks (the
    caller's: :func:`gptq`)."""
    d = w.shape[1]
    codes = []
    for i1 in range(0, d, block):
        i2 = min(i1 + block, d)
        ub = u[i1:i2, i1:i2]

        def step(w1, i, ub=ub, g=grid[:, i1:i2]):
            code = nearest_unchecked(w1[:, i], g[:, i])
            qi = jnp.take_along_axis(g[:, i], code[:, None], axis=-1)[:, 0]
            err = (w1[:, i] - qi) / ub[i, i]
            return w1 - err[:, None] * column_feedback(ub, i)[None, :], (code, err)

        _, (code, err) = jax.lax.scan(step, w[:, i1:i2], jnp.arange(i2 - i1))
        codes.append(code.T)
        w = w.at[:, i2:].add(-(err.T @ u[i1:i2, i2:]))
    return jnp.concatenate(codes, axis=1)


def gptq(
    w: Float[ArrayLike, "m d"], h: Float[ArrayLike, "d d"], book: Codebook, *, block: int = 128
) -> Int[Array, "m d"]:
    """GPTQ codes (Frantar et al. 2023, Alg. 1, lazy batches of ``block`` columns) for the damped ``h``.

    Checked: ``w``, ``h`` (symmetric positive definite), ``book`` as in the module docstring; ``block`` a
    positive integer. ``h`` is rescaled by 4^-k when its largest diagonal entry is outside [2^-32, 2^32]."""
    w, h = check_inputs(w, h, book)
    c.int_option("block", block)
    return gptq_from_factor(w, gptq_factor_unchecked(normalised(h)), as_float(book.grid), int(block))


def _udu(h: Array) -> tuple[Array, Array]:
    cf = jnp.linalg.cholesky(h[::-1, ::-1])
    dc = jnp.diag(cf)
    return (cf / dc[None, :])[::-1, ::-1], (dc**2)[::-1]


def udu(h: Float[ArrayLike, "d d"]) -> tuple[Float[Array, "d d"], Float[Array, " d"]]:
    """``H = U diag(D) U^T`` with U unit upper triangular (the LDL factorisation of the index-reversed H).

    Checked: ``h`` finite, real, square, symmetric and positive definite (see the module docstring)."""
    c.hessian("h", h, None)
    return _udu(as_float(h))


@jax.jit
def _ldlq(w, u, grid):
    def step(e, k):
        a = w[:, k] + e @ u[:, k]
        code = nearest_unchecked(a, grid[:, k])
        qk = jnp.take_along_axis(grid[:, k], code[:, None], axis=-1)[:, 0]
        return e.at[:, k].set(w[:, k] - qk), code

    _, codes = jax.lax.scan(step, jnp.zeros_like(w), jnp.arange(w.shape[1]))
    return codes.T


def ldlq(w: Float[ArrayLike, "m d"], h: Float[ArrayLike, "d d"], book: Codebook) -> Int[Array, "m d"]:
    """LDLQ codes (QuIP, eq. 4): q_k = Q(w_k + sum_{j<k} U_jk (w_j - q_j)), H = U D U^T.

    Checked: ``w``, ``h`` (symmetric positive definite), ``book`` as in the module docstring; ``h`` is rescaled
    by 4^-k when its largest diagonal entry is outside [2^-32, 2^32]."""
    w, h = check_inputs(w, h, book)
    u, _ = _udu(normalised(h))
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

    e0 = w - values_unchecked(codes, grid)
    state = (codes, e0, e0 @ h, True, 0)
    codes, *_ = jax.lax.while_loop(lambda s: s[3] & (s[4] < max_sweeps), sweep, state)
    return codes


GRID_SAFE = 8  # bcd / mpq: w and the grid are rescaled by 2^-e only when max |grid| is outside [2^-8, 2^8]


def grid_exponent(grid) -> int:
    """e such that ``grid * 2^-e`` has max |grid| in [2^-8, 2^8] (0 inside that range or when traced)."""
    cg = c.concrete(grid)
    return 0 if cg is None else c.pow2_exponent(float(np.max(np.abs(cg))), GRID_SAFE)


def check_block(block, d: int, k: int) -> int:
    c.int_option("block", block)
    if d % block:
        raise ValueError(f"block must divide d={d} (w.shape[1]), got {block!r}")
    if k**block > 4096:
        raise ValueError(f"block must keep K^block <= 4096 codewords per block (K={k}), got {block!r}")
    return int(block)


def bcd_run(wa, ha, grid, start, block: int, max_sweeps: int):
    """:func:`bcd` on checked inputs: h rescaled by 4^-k, w and the grid by 2^-e, outside their safe ranges
    (the codes of exact arithmetic are unchanged; the decrease test's absolute floor 1e-30 stays negligible)."""
    e = grid_exponent(grid)
    return _bcd(c.times_pow2(wa, -e), normalised(ha), c.times_pow2(grid, -e), start, block, max_sweeps)


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
    ``max_sweeps`` sweeps, stops at the first sweep that changes nothing.

    Checked: ``w``, ``h`` (symmetric positive definite), ``book`` as in the module docstring; ``init`` an integer
    (m, d) array of codes in [0, K); ``block`` a positive integer dividing d with K^block <= 4096; ``max_sweeps``
    an integer >= 0 (0: ``init`` itself). Outside their safe ranges h is rescaled by 4^-k (largest diagonal
    entry in [2^-32, 2^32]) and w with the grid by 2^-e (max |grid| in [2^-8, 2^8])."""
    wa, ha = check_inputs(w, h, book)
    d, k = wa.shape[1], np.shape(book.grid)[-1]
    block = check_block(block, d, k)
    max_sweeps = c.int_option("max_sweeps", max_sweeps, minimum=0)
    c.codes("init", init, tuple(wa.shape), k)
    start = jnp.asarray(init, jnp.int32)
    return bcd_run(wa, ha, as_float(book.grid), start, block, max_sweeps)


def all_codewords(d: int, k: int) -> Int[np.ndarray, "C d"]:
    """Every codeword of d coordinates with k codes each, (k^d, d) int64, in ``itertools.product`` order
    (lexicographic, the last coordinate fastest). Checked: ``d``, ``k`` positive integers, k^d <= 2^22."""
    c.int_option("d", d)
    c.int_option("k", k)
    if k**d > 2**22:
        raise ValueError(f"d must keep k^d <= 2^22 codewords (k={k}), got {d}")
    return np.indices((k,) * d, dtype=np.int64).reshape(d, -1).T


def check_row(w, h, grid, limit: int) -> tuple[int, int]:
    """One row: ``w`` (d,), ``h`` (d, d) finite and symmetric, ``grid`` (d, K) finite, K^d <= ``limit``."""
    c.array("w", w, ndim=1)
    d = np.shape(w)[0]
    c.grid("grid", grid, (d,))
    k = np.shape(grid)[1]
    if k**d > limit:
        raise ValueError(f"grid: K^d = {k}^{d} codewords is too many to enumerate (<= 2^{int(math.log2(limit))})")
    c.hessian("h", h, d, definite="symmetric", why=" (d = w.shape[0])")
    return d, k


def codeword_energies(w: Float[ArrayLike, " d"], h: Float[ArrayLike, "d d"], grid: Float[ArrayLike, "d K"]):
    """Every codeword of one row and its objective (w - q)^T H (w - q), float64 NumPy, by enumeration (K^d <=
    2^22): ``(codes (K^d, d), objectives (K^d,))``.

    Checked: ``w`` a finite real (d,) array, ``h`` a finite real symmetric (d, d) array (definiteness is not
    needed: the minimum over a finite set exists), ``grid`` a finite real (d, K) array, K^d <= 2^22. NumPy only
    (not traceable)."""
    d, k = check_row(w, h, grid, 2**22)
    wn, hn, gn = (np.asarray(v.primal(a), np.float64) for a in (w, h, grid))
    combos = all_codewords(d, k)
    e = wn[None] - gn[np.arange(d)[None], combos]
    return combos, np.sum((e @ hn) * e, axis=1)


def exact_minimum(w: Float[ArrayLike, " d"], h: Float[ArrayLike, "d d"], grid: Float[ArrayLike, "d K"]):
    """Minimum of (w - q)^T H (w - q) over all K^d codewords of one row by enumeration (float64 NumPy; K^d <=
    2^22). Returns ``(min objective, codes)``. Checked as :func:`codeword_energies`."""
    combos, f = codeword_energies(w, h, grid)
    i = int(np.argmin(f))
    return float(f[i]), combos[i]
