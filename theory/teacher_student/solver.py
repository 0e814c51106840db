"""Teacher-student solver: the global maximiser of Phi over the self-consistent points (``solve``, ``solve_grid``).

Why it is global, and the numerics, are in the package docstring and in ``solve``'s."""

from __future__ import annotations

from functools import partial
from typing import NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from jaxwb.theory import validate as v
from jaxwb.theory.teacher_student import closed_forms
from jaxwb.theory.teacher_student.kernel import Kernel, cubic_kernel
from jaxwb.theory.teacher_student.phi import best_branch, f_of_m, one_minus_g, phi_gap  # noqa: F401
from jaxwb.theory.teacher_student.prefix import (
    LANES,
    count_down,
    fast_terms,
    prefix_eps,
    prefix_err,
    prefix_overlaps,
    prefix_phi,
    prefix_tail,
)


class NotConvergedError(RuntimeError):
    """The damped fixed-point iteration did not reach ``tol`` within ``max_iter`` iterations."""


N_CANDIDATES = 4  # learned counts tried between the extreme self-consistent points (cubic kernel; <= 2 seen)
EXTREME_STEPS = 20  # monotone steps bounding the self-consistent points (cubic kernel: bounds only, any count is valid)
BISECT_STEPS = {"float32": 30, "float64": 64}  # log-bisection steps (at most: stops when the bracket is fixed)


class Solution(NamedTuple):
    """Global maximiser of Phi over the self-consistent points at one alpha (under vmap, fields gain a batch axis).

    m (k,) overlaps; s (k,) conjugate SNRs m/(1 - m); delta_eff () effective noise D; eps_bo () Bayes error
    (eq. BO); k_c () number of learned features (m_i > 1/2); n_candidates () self-consistent points (local
    maximisers of Phi) that were found and compared; dphi () Phi(kept) - Phi(runner-up) (inf when only one);
    complete () every learned count between the extreme self-consistent points was tried; converged ()
    ``complete`` and the kept point's residual <= tol; residual () |Delta_eff - Delta - eps(Delta_eff)| / eps.
    """

    m: jax.Array
    s: jax.Array
    delta_eff: jax.Array
    eps_bo: jax.Array
    k_c: jax.Array
    n_candidates: jax.Array
    dphi: jax.Array
    complete: jax.Array
    converged: jax.Array
    residual: jax.Array


def keep_best(phi: Float[Array, " n"], valid: Bool[Array, " n"]) -> Int[Array, ""]:
    """Index of the candidate with the largest Phi among the valid ones (the global maximiser)."""
    return jnp.argmax(jnp.where(valid, phi, -jnp.inf))


def _errors(d, alpha, a2, kernel, cubic):
    m, u = best_branch(alpha * a2 / d, kernel, cubic=cubic)
    return jnp.sum(a2 * one_minus_g(m, u, kernel)), m, u


def _extremes(alpha, a2, delta, kernel, cubic, tol, n_iter, fast=None, hi0=None):
    """Monotone iteration x <- eps(Delta + x) (per-feature best branch) from x = 0 and from x = sum a2.

    x = D - Delta (kept as the state so that a small eps keeps its relative precision). T(D) = Delta + eps(D) is
    non-decreasing in D, so the run from below increases to the smallest self-consistent point and the run from
    above decreases to the largest: after any number of steps they bracket every self-consistent point. Stops at
    relative change <= tol or after ``n_iter`` steps (``hi0``: sum a2 of the full amplitude vector when ``a2`` is
    its learnable head). Returns (x_lo, x_hi, residual). ``fast`` (cubic kernel):
    the ``fast_terms`` tuple; eps(D) is then the prefix error with the count j(D) = #{i: D <= alpha a2_i/c_IT}
    (f(m+(c); c) > 0 iff c > c_IT, so this is the best branch of every feature).
    """
    if fast is None:
        err = lambda x: _errors(delta + x, alpha, a2, kernel, cubic)[0]
    else:
        w, thr, tail = fast
        count = lambda d: count_down(thr, d, n=a2.shape[0])
        err = lambda x: prefix_eps(x, count(delta + x), w, alpha, delta, tail)

    def body(st):
        lo, hi, _, it = st
        # both runs in one pass over the features (a stacked (2,) evaluation: same arithmetic, half the loops)
        n_lo, n_hi = jax.vmap(err)(jnp.stack([lo, hi]))
        res = jnp.maximum(jnp.abs(n_lo - lo) / n_lo, jnp.abs(n_hi - hi) / n_hi)
        return n_lo, jnp.maximum(n_hi, n_lo), res, it + 1

    init = (
        jnp.zeros((), a2.dtype) + 0 * alpha,
        (jnp.sum(a2) if hi0 is None else hi0) + 0 * alpha,
        jnp.asarray(jnp.inf, a2.dtype),
        jnp.zeros((), jnp.int32),
    )
    lo, hi, res, _ = lax.while_loop(lambda st: (st[2] > tol) & (st[3] < n_iter), body, init)
    return lo, hi, res


def _candidates_cubic(alpha, a2, delta, x_lo, x_hi, n_bisect, slack, fast=None):
    """Every learned count j between the extremes: the self-consistent point with features 1..j learned.

    For count j the point lies where feature j is learned and j+1 is not, D in [alpha a2_{j+1}/c_IT,
    alpha a2_j/c_IT] (a2 decreasing: the learned set is always a prefix), intersected with [d_lo, d_hi]; there
    h_j(x) = eps_j(delta + x) - x is continuous, and a downward crossing (h_j >= 0 at the left end, <= 0 at the
    right end) is bisected in log x. Returns per candidate (valid, x, j, eps, t, residual) and ``complete``
    (t: the potential's feature sum, ``prefix_sums``).
    """
    k = a2.shape[0]
    dt = a2.dtype
    w, thr, tail = fast_terms(alpha, a2, delta, fn=True) if fast is None else fast  # learned iff D <= thr(i)
    count = lambda d: count_down(thr, d, n=k)
    j_hi, j_lo = count(delta + x_lo), count(delta + x_hi)
    js = j_lo + jnp.arange(N_CANDIDATES)
    complete = (j_hi - j_lo) < N_CANDIDATES

    def one(j):
        up = jnp.where(j > 0, thr(jnp.maximum(j - 1, 0)), jnp.inf)
        down = jnp.where(j < k, thr(jnp.minimum(j, k - 1)), 0.0)
        a = jnp.maximum(x_lo, down - delta)
        b = jnp.minimum(x_hi, up - delta)
        tiny = jnp.finfo(dt).tiny
        a, b = jnp.maximum(a, tiny), jnp.maximum(b, tiny)
        h = lambda x: prefix_eps(x, j, w, alpha, delta, tail) - x
        h_a, h_b = jax.vmap(h)(jnp.stack([a, b]))  # one pass over the features for both ends
        ok = (j <= j_hi) & (a <= b) & (h_a >= -slack * a) & (h_b <= slack * b)

        def body(st):
            lo, hi, _, it = st
            mid = jnp.sqrt(lo * hi)
            pos = h(mid) >= 0
            n_lo, n_hi = jnp.where(pos, mid, lo), jnp.where(pos, hi, mid)
            return n_lo, n_hi, (n_lo != lo) | (n_hi != hi), it + 1

        # n_bisect steps, stopped early once a step leaves the bracket unchanged: the step is a function of the
        # bracket alone, so every later step would leave it unchanged too (same result as all n_bisect steps);
        # a bracket a = b (both extremes on the same float) is such a fixed point before any step
        lo, hi, _, _ = lax.while_loop(
            lambda st: st[2] & (st[3] < n_bisect), body, (a, b, a != b, jnp.zeros((), jnp.int32))
        )
        e = prefix_err(lo, j, w, alpha, delta, tail)
        return ok, lo, e, jnp.abs(e - lo) / lo

    # only the contested counts j_lo..j_hi are bisected (a data-dependent trip count: under vmap, the batch's
    # largest); counts above j_hi are invalid (ok = False) and keep their initial values, as they did when
    # every count was bisected
    n_run = jnp.clip(j_hi - j_lo + 1, 1, N_CANDIDATES)
    init = (
        jnp.zeros(N_CANDIDATES, bool),
        jnp.ones(N_CANDIDATES, dt),
        jnp.zeros(N_CANDIDATES, dt),
        jnp.full(N_CANDIDATES, jnp.inf, dt),
    )

    def step(c, acc):
        return tuple(a.at[c].set(v_) for a, v_ in zip(acc, one(js[c]), strict=True))

    ok, x, e, res = lax.fori_loop(0, n_run, step, init)
    # the potential's feature sums (a log per feature) only where two or more points are valid: with one valid
    # point (or none) no output depends on them (dphi = inf, the kept index is the valid one); there they are 0
    n_phi = jnp.where(jnp.sum(ok) >= 2, n_run, 0)
    phi = lax.fori_loop(
        0, n_phi, lambda c, p: p.at[c].set(prefix_phi(x[c], js[c], w, delta)), jnp.zeros(N_CANDIDATES, dt)
    )
    return ok, x, js, e, phi, res, complete


@partial(jax.jit, static_argnames=("cubic",))
def solve_fixed_point(alpha, a2, delta, kernel, tol, max_iter, cubic=True, tail=None, hi0=None):
    """The jitted fixed-point solve behind ``solve`` (no input checks, no convergence check)."""
    alpha = jnp.asarray(alpha, a2.dtype)
    delta = jnp.asarray(delta, a2.dtype)
    n_bisect = BISECT_STEPS["float64" if a2.dtype == jnp.float64 else "float32"]
    k = a2.shape[0]
    if cubic:
        # the extremes only bound the search here: a few steps suffice, the bisection does the rest
        fast = fast_terms(alpha, a2, delta, tail, fn=True)
        n_ext = jnp.minimum(max_iter, EXTREME_STEPS)
        x_lo, x_hi, _ = _extremes(alpha, a2, delta, kernel, cubic, tol, n_ext, fast, hi0)
        ok, x, js, e, t, res, complete = _candidates_cubic(alpha, a2, delta, x_lo, x_hi, n_bisect, tol, fast)
    else:
        x_lo, x_hi, r = _extremes(alpha, a2, delta, kernel, cubic, tol, max_iter)
        e, m, u = jax.vmap(lambda x: _errors(delta + x, alpha, a2, kernel, cubic))(jnp.stack([x_lo, x_hi]))
        t = jnp.sum(0.5 * (m + jnp.log(u)), axis=-1)
        ok = jnp.ones(2, bool)
        res = jnp.full(2, r)
        complete = jnp.asarray(True)
    phi = phi_gap(t, e, t[0], e[0], alpha, delta)
    best = keep_best(phi, ok)
    runner = jnp.max(jnp.where(ok & (jnp.arange(ok.shape[0]) != best), phi, -jnp.inf))
    if cubic:  # overlaps of the kept point only (the LANES padding dropped)
        m_b, u_b = (v_[:k] for v_ in prefix_overlaps(x[best], js[best], fast[0], delta))
        # k_c = #{m_b > 1/2} (the learned prefix of m is non-increasing): the search recomputes the overlaps it
        # visits, so m_b is never materialised apart from the outputs it is written to
        m_at = lambda i: prefix_overlaps(x[best], js[best], fast[0][i], delta, index=i)[0]
        k_c = count_down(m_at, 0.5, strict=True, n=k)
    else:
        m_b, u_b = m[best], u[best]
        k_c = jnp.sum(m_b > 0.5)
    e_b = e[best]
    res_b = jnp.where(ok[best], res[best], jnp.inf)
    return Solution(
        m=m_b,
        s=m_b / u_b,
        delta_eff=delta + e_b,
        eps_bo=e_b,
        k_c=k_c,
        n_candidates=jnp.sum(ok),
        dphi=phi[best] - runner,
        complete=complete,
        converged=complete & (res_b <= tol),
        residual=res_b,
    )


def is_cubic(kernel) -> bool:
    """True when ``kernel`` is the default cubic kernel (None or g = m^3), which has the fast solver."""
    if kernel is None:
        return True
    c2 = np.asarray(kernel.c2)
    return c2.shape == (4,) and bool(np.allclose(c2, [0.0, 0.0, 0.0, 1.0]))


def check_solver_params(alpha, a2, delta, tol, max_iter, *, alpha_name: str = "alpha") -> None:
    """The solver's parameter checks (``alpha`` named ``alpha_name``, as the caller passed it)."""
    v.nonnegative(alpha_name, alpha)
    v.positive("delta", delta)
    v.positive("tol", tol)
    v.positive_int("max_iter", max_iter)
    v.check("a2", a2, lambda a: (a.ndim == 1) & (a.size > 0), "a non-empty 1-D array of amplitudes")
    v.nonnegative("a2", a2)
    v.check("a2", a2, lambda a: np.all(np.diff(np.asarray(a)) <= 0), "non-increasing (features sorted by amplitude)")


def check_converged[S: Converged](sol: S, alpha: Float[ArrayLike, "*b"] | None = None) -> S:
    """Raise ``NotConvergedError`` (naming the offending alphas) unless every entry of ``sol`` converged."""
    if not v.is_concrete(sol.converged):
        return sol
    ok = np.asarray(v.primal(sol.converged))  # a host copy: cheaper than dispatching jnp.all
    if ok.all():
        return sol
    bad = ~ok.reshape(-1)
    where = "" if alpha is None else f" at alpha = {np.asarray(alpha).reshape(-1)[bad][:5]}"
    raise NotConvergedError(
        f"teacher-student fixed point did not converge{where}: residual "
        f"{np.asarray(sol.residual).reshape(-1)[bad][:5]}, complete {np.asarray(sol.complete).reshape(-1)[bad][:5]}"
        "; raise max_iter or loosen tol"
    )


def default_tol(dtype) -> float:
    """Convergence tolerance by dtype: 1e-5 in float32, 1e-10 in float64."""
    return 1e-10 if jnp.dtype(dtype) == jnp.float64 else 1e-5


def solve(
    alpha: Float[ArrayLike, ""],
    a2: Float[ArrayLike, " k"],
    delta: Float[ArrayLike, ""],
    *,
    kernel: Kernel | None = None,
    tol: float | None = None,
    max_iter: int = 20000,
    check: bool = True,
) -> Solution:
    """Global maximiser of Phi over the self-consistent points (reconstruction, eqs. D/FP/Phi) at alpha = n/d.

    ``a2`` (k,) squared amplitudes, non-increasing (``amplitudes``), ``delta`` label-noise variance Delta > 0.
    Why this is the global maximiser: -log is convex, so Phi(m) = max_D L(m; D) with L the potential with
    log D linearised at D; hence max_m Phi = max_D G(D), G(D) = sum_i max_m f(m; alpha a2_i/D) - (alpha/2)(log D +
    (Delta + sum a2)/D - 1), a one-dimensional problem, and G'(D) = (alpha/(2 D^2)) (T(D) - D) with
    T(D) = Delta + eps(D) (every feature on its best branch). T is non-decreasing with upward jumps only, so the
    local maxima of G are continuous downward crossings of T(D) - D: self-consistent points with every feature
    on its best branch, learned set a prefix {1..j}. The solver brackets all of them between the extreme
    self-consistent points (monotone iteration from D = Delta and D = Delta + sum a2), solves, for every learned
    count j in between (at most ``N_CANDIDATES``), the continuous equation on the D-interval where exactly j
    features are learned by bisection, evaluates Phi on every point found, and keeps the largest (``keep_best``).
    For a non-cubic kernel only the two extreme points are compared (global when there are at most two).

    ``alpha`` and ``delta`` may be traced (vmap: ``solve_grid``). Eagerly, with ``check``, ``NotConvergedError``
    is raised when the kept point's residual exceeds ``tol`` or more than ``N_CANDIDATES`` counts were contested.
    """
    a2 = jnp.asarray(a2, dtype=jnp.result_type(float))
    tol = default_tol(a2.dtype) if tol is None else tol
    check_solver_params(alpha, a2, delta, tol, max_iter)
    sol = solve_fixed_point(
        alpha, a2, delta, kernel or cubic_kernel(), tol, jnp.asarray(max_iter), cubic=is_cubic(kernel)
    )
    return check_converged(sol, alpha) if check else sol


@partial(jax.jit, static_argnames=("cubic",))
def solve_fixed_point_grid(alphas, a2, delta, kernel, tol, max_iter, cubic=True, tail=None, hi0=None):
    """``solve_fixed_point`` vmapped over a grid of alphas (jitted, no input checks)."""
    return jax.vmap(lambda a: solve_fixed_point(a, a2, delta, kernel, tol, max_iter, cubic=cubic, tail=tail, hi0=hi0))(
        alphas
    )


LEARNABLE_SLACK = 0.99  # a feature is kept when alpha a2_i / c_IT >= 0.99 Delta (float32 rounding is ~1e-7)


def learnable_heads(
    alphas: Float[ArrayLike, " B"], a2: Float[ArrayLike, " k"], delta: Float[ArrayLike, ""]
) -> Int[np.ndarray, " B"]:
    """Per alpha (B,), the length K of the amplitude head the cubic solver needs: every feature with
    alpha a2_i / c_IT >= Delta (it can be learned, as D >= Delta) lies in the head, with slack ``LEARNABLE_SLACK``;
    K is the learnable count rounded up to ``LANES`` x a power of two (few distinct shapes), at most k.
    Features past the head are never learned: they enter the solve only through their summed errors."""
    v.array("alphas", alphas, ndim=1, allow_empty=True)
    v.nonnegative("alphas", alphas)
    v.array("a2", a2, ndim=1)
    v.nonnegative("a2", a2)
    v.positive("delta", delta)
    a2 = np.asarray(a2, np.float64)
    k = a2.shape[0]
    n = _count_prefix(np.asarray(alphas, np.float64), a2, LEARNABLE_SLACK * float(np.asarray(delta)))
    blocks = 2 ** np.ceil(np.log2(np.maximum(np.ceil(n / LANES), 1))).astype(int)
    return np.minimum(LANES * blocks, k)


def _count_prefix(alphas: np.ndarray, a2: np.ndarray, level: float) -> np.ndarray:
    """Per alpha, #{i: alpha a2_i / C_IT >= level} for non-increasing ``a2`` (float64): the predicate is
    monotone in i (rounding is monotone), so the count is the first failing index. ``np.searchsorted`` on the
    rearranged threshold a2_i >= level C_IT / alpha gives it up to rounding; a vectorised binary search over the
    alphas then runs on the window [guess - 2, guess + 2] when the exact predicate confirms that window brackets
    the boundary (else on [0, k]): the exact count in a few (B,) steps, not log2 k of them."""
    k = a2.shape[0]
    holds = lambda i: alphas * a2[np.clip(i, 0, k - 1)] / closed_forms.C_IT >= level
    with np.errstate(divide="ignore"):
        guess = np.searchsorted(-a2, -(level * closed_forms.C_IT / alphas), side="right")
    lo, hi = np.maximum(guess - 2, 0), np.minimum(guess + 2, k)
    ok = ((lo == 0) | holds(lo - 1)) & ((hi == k) | ~holds(hi))
    lo, hi = np.where(ok, lo, 0), np.where(ok, hi, k)
    while np.any(lo < hi):  # invariant: the predicate holds below lo and fails from hi on
        mid = (lo + hi) // 2
        h = holds(mid)
        lo, hi = np.where((lo < hi) & h, mid + 1, lo), np.where((lo < hi) & ~h, mid, hi)
    return lo


def _solve_grid_heads(alphas, a2, delta, kernel, tol, max_iter) -> Solution:
    """``solve_fixed_point_grid`` (cubic kernel, concrete inputs) with each alpha solved on its learnable head only
    (``learnable_heads``): alphas sharing a head length K run as one vmapped solve on a2[:K] with the full
    vector's tails (``prefix_tail``) and sum, so the work per alpha scales with the features it can learn; all heads
    in one compiled call (recompiled only when the multiset of head lengths changes). The skipped features'
    overlaps are 0, exactly what the full solve returns for them."""
    heads = learnable_heads(alphas, a2, delta)
    order = np.argsort(heads, kind="stable")
    lens, counts = np.unique(heads, return_counts=True)
    buckets = tuple((int(a), int(b)) for a, b in zip(lens, counts, strict=True))
    if np.array_equal(order, np.arange(order.size)):  # heads already sorted (an increasing grid): no permutation
        return _solve_heads(alphas, a2, delta, kernel, tol, max_iter, None, None, buckets)
    return _solve_heads(alphas, a2, delta, kernel, tol, max_iter, order, np.argsort(order), buckets)


@partial(jax.jit, static_argnames=("buckets",))
def _solve_heads(alphas, a2, delta, kernel, tol, max_iter, order, inverse, buckets):
    k = a2.shape[0]
    tail, hi0 = prefix_tail(a2), jnp.sum(a2)
    al = alphas if order is None else alphas[order]
    parts, start = [], 0
    # the (B, k) overlaps are written bucket by bucket into one zero buffer (in-place dynamic_update_slices):
    # padding each bucket to k and concatenating copied them twice (0.4 ms of 3.4 at k = 4000, 160 alphas)
    m = s = jnp.zeros((alphas.shape[0], k), a2.dtype)
    for kk, n in buckets:
        sol = jax.vmap(
            lambda a, kk=kk: solve_fixed_point(a, a2[:kk], delta, kernel, tol, max_iter, True, tail[: kk + 1], hi0)
        )(al[start : start + n])
        m, s = (lax.dynamic_update_slice(buf, v_, (start, 0)) for buf, v_ in ((m, sol.m), (s, sol.s)))
        parts.append(sol._replace(m=None, s=None))
        start += n
    out = jax.tree.map(lambda *xs: jnp.concatenate(xs), *parts)._replace(m=m, s=s)
    return out if inverse is None else jax.tree.map(lambda x: x[inverse], out)


def solve_grid(
    alphas: Float[ArrayLike, " B"],
    a2: Float[ArrayLike, " k"],
    delta: Float[ArrayLike, ""],
    *,
    kernel: Kernel | None = None,
    tol: float | None = None,
    max_iter: int = 20000,
    check: bool = True,
    heads: bool = True,
) -> Solution:
    """``solve`` vmapped over a 1-D grid ``alphas`` (B,): every Solution field gains a leading axis B.

    With ``heads`` (cubic kernel, concrete inputs), each alpha is solved on its learnable head of features only
    (``learnable_heads``): the same algorithm on the features that can be learned, the rest entering through
    their summed errors (same result up to float32 summation order; the bench reports the difference)."""
    dt = jnp.result_type(float)
    for name, x in (("alphas", alphas), ("a2", a2), ("delta", delta)):
        v.real(name, x)  # before the casts below: a complex alpha must not lose its imaginary part
    # concrete inputs are checked (and their heads computed) on host copies: no device round trips per check
    host = v.is_plain((alphas, a2, delta))
    a2 = np.asarray(a2, dtype=dt) if host else jnp.asarray(a2, dtype=dt)
    tol = default_tol(a2.dtype) if tol is None else tol
    alphas = np.asarray(alphas, dtype=dt) if host else jnp.asarray(alphas, dt)
    v.shape("alphas", alphas, (None,))
    check_solver_params(alphas, a2, delta, tol, max_iter, alpha_name="alphas")
    kern, cubic = kernel or cubic_kernel(), is_cubic(kernel)
    if cubic and heads and host and alphas.shape[0] > 0:
        sol = _solve_grid_heads(alphas, a2, delta, kern, tol, jnp.asarray(max_iter))
    else:
        sol = solve_fixed_point_grid(alphas, a2, delta, kern, tol, jnp.asarray(max_iter), cubic=cubic)
    return check_converged(sol, alphas) if check else sol


class Converged(Protocol):
    """What :func:`check_converged` reads of a solution: a :class:`Solution`, or any record with these fields."""

    @property
    def converged(self) -> Bool[ArrayLike, "*b"]: ...

    @property
    def residual(self) -> Float[ArrayLike, "*b"]: ...

    @property
    def complete(self) -> Bool[ArrayLike, "*b"]: ...
