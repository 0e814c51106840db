# ruff: noqa: F722  (jaxtyping shape strings)
"""Teacher-student feature learning at extensive width: a decoupled fixed-point model (OUR RECONSTRUCTION).

Paper: Barbier & Nguyen, "Sharp feature-learning transitions and Bayes-optimal neural scaling laws in
extensive-width networks" (arXiv 2605.10395, 2026); notes in ``shared/papers/teacher_student.md``. The paper's
equations are not public. Everything below is the leave-one-out *decoupled* model written in those notes (our
own derivation, labelled "reconstruction" everywhere it is used): it reproduces the laws the paper states, it is
not the paper's exact replica formula.

Setting: a one-hidden-layer teacher f*(x) = sum_{i<=k} a_i sigma(w_i . x / sqrt d) with k ~ d hidden units,
hierarchical readout amplitudes a_i^2 ~ i^(-2 beta) (beta > 1/2), n = alpha d noisy samples (noise variance
Delta), Gaussian prior on the w_i. Notation:

  a2_i    = i^(-2 beta) / Z,  Z = sum_{j<=k} j^(-2 beta)              (eq. A, ``amplitudes``; sum_i a2_i = 1)
  g(m)    = sum_l mu_l^2 m^l / sum_l mu_l^2                             (eq. G, overlap kernel; activation
            sigma = sum_l mu_l He_l / sqrt(l!); default sigma = He_3/sqrt 6, g(m) = m^3)
  D       = Delta_eff = Delta + sum_j a2_j (1 - g(m_j))                  (eq. D, effective noise)
  c_i     = alpha a2_i / D                                              (per-feature signal-to-noise ratio)
  s_i     = c_i g'(m_i),   m_i = s_i / (1 + s_i)                         (eq. FP, Gaussian-prior scalar channel)
  Phi     = sum_i [psi(s_i) - s_i m_i / 2] - (alpha/2) log D,  psi(r) = (r - log(1 + r))/2      (eq. Phi)
          = sum_i (m_i + log(1 - m_i))/2 - (alpha/2) log D(m)   at a fixed point (the form used here: it needs
            no s, is stationary exactly at eq. FP, and gives the variational per-feature potential below)
  f(m; c) = (m + log(1 - m) + c g(m)) / 2                               (eq. f, per-feature potential, D frozen)
  eps_BO  = sum_i a2_i (1 - g(m_i)) = D - Delta                         (eq. BO, Bayes error)
  eps_G   = sum_i a2_i (g(1) + g(1) - 2 g(m_i)) = 2 eps_BO              (eq. Gibbs, Nishimori: q = m)

Global maximiser (``solve``). -log is convex, so Phi(m) = max_D L(m; D) with L the potential with log D
linearised at D, and max_m Phi = max_D G(D), G(D) = sum_i max_m f(m; alpha a2_i/D) - (alpha/2)(log D +
(Delta + sum a2)/D - 1): a one-dimensional problem. G'(D) = (alpha/(2 D^2)) (T(D) - D), T(D) = Delta + eps(D) with
every feature on its best branch; T is non-decreasing with upward jumps only, so every local maximiser of G is a
continuous downward crossing of T(D) - D: a self-consistent point with every feature on its best branch, the
learned set a prefix {1..j} (a2 decreasing). ``solve`` brackets all of them between the two extreme self-consistent
points (monotone iteration from D = Delta and D = Delta + sum a2), solves for every learned count j in between the
continuous equation on the D-interval where exactly j features are learned (bisection in log(D - Delta): roots
are never taken at jumps), evaluates Phi on every point found and keeps the largest. Tested against an
independent float64 method (dense starting points, plain iteration, no branch selection). Non-cubic kernels:
only the two extreme points are compared.

Closed forms for g = m^3 (D frozen): non-trivial branch m+(c) = (1 + sqrt(1 - 4/(3 c)))/2 for c >= 4/3
(spinodal c_sp = 4/3, m+ = 1/2 there); information-theoretic threshold c_IT = 1.4558 where f(m+(c); c) = 0,
jump 0 -> m+(c_IT) = 0.645. Hence feature i is learned once alpha a2_i / D >= c_IT: alpha_i ~ c_IT D Z i^(2 beta),
and the effective width is k_c ~ (alpha / (c_IT D Z))^(1/(2 beta)) (eq. kc). Bayes error: learned features
contribute ~D/alpha each, the unlearned tail ~k_c^(1-2 beta): eps_BO = Theta(k_c D / alpha) ~
alpha^(1/(2 beta) - 1) while k_c < k, ~k D / alpha once every feature is learned (refinement).

Numerics: the state is x = Delta_eff - Delta = eps (not D, whose float32 ulp would swamp a small eps), the
learned branch is carried as (m, u = 1 - m) with u+ = (2/(3c))/(1 + sqrt(1 - 4/(3c))) and 1 - g(m) = u sum_l c2_l
(1 + ... + m^(l-1)), so errors down to 1e-12 are exact in float32; the residual is |eps(D) - x|/x. The cubic
loops evaluate eps with the first j features learned as (2D/(3 alpha)) sum_{i<j} (t_i/4 + 1/2 + 1/t_i) + sum_{i>=j}
a2_i, t_i = 1 + sqrt(1 - 4 D w_i/3), w_i = 1/(alpha a2_i) precomputed (``_prefix_eps``: one sqrt and one division
per feature, terms in [3/2, 7/4], no cancellation), summed as ``LANES`` partial sums (XLA vectorises those; a
plain float reduction is latency-bound), and the potential from its feature sums (``phi_gap``). Near the
thresholds of features with a_i^2 below float32 resolution the competing points are numerically tied (harmless
for eps_BO). Every function is jit/vmap compatible; ``solve`` raises ``NotConvergedError`` (a RuntimeError)
when called eagerly and did not converge, and returns a ``converged`` flag that vmapped callers check with
``check_converged``.
"""

from __future__ import annotations

import math
from functools import cache, partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from theory import _validate as v

SPINODAL_C = 4.0 / 3.0  # c where the non-trivial branch of g = m^3 appears (m+ = 1/2)


class NotConvergedError(RuntimeError):
    """The damped fixed-point iteration did not reach ``tol`` within ``max_iter`` iterations."""


# ---------------------------------------------------------------------------------------------------------
# Amplitudes and overlap kernels
# ---------------------------------------------------------------------------------------------------------


def normaliser(k: int, beta: Float[ArrayLike, ""]) -> Float[Array, ""]:
    """Z = sum_{j<=k} j^(-2 beta) (eq. A)."""
    v.positive_int("k", k)
    v.check("beta", beta, lambda b: b > 0.5, "> 1/2")
    return jnp.sum(jnp.arange(1, k + 1, dtype=jnp.result_type(float)) ** (-2.0 * beta))


def amplitudes(k: int, beta: Float[ArrayLike, ""]) -> Float[Array, " k"]:
    """Squared readout amplitudes a2_i = i^(-2 beta) / Z, i = 1..k, shape (k,), summing to 1 (eq. A).

    ``k`` is static; ``beta`` (> 1/2) may be traced.
    """
    v.positive_int("k", k)
    v.check("beta", beta, lambda b: b > 0.5, "> 1/2")
    w = jnp.arange(1, k + 1, dtype=jnp.result_type(float)) ** (-2.0 * jnp.asarray(beta))
    return w / jnp.sum(w)


class Kernel(NamedTuple):
    """Overlap kernel g(m) = sum_l c2_l m^l with c2_0 = 0 and sum_l c2_l = 1 (c2 has shape (L + 1,)).

    For an activation sigma = sum_l mu_l He_l / sqrt(l!) the teacher/student correlation of two units with
    overlap m is sum_l mu_l^2 m^l; c2_l = mu_l^2 / sum mu^2 (eq. G). A NamedTuple of arrays: a pytree.
    """

    c2: jax.Array


def hermite_kernel(mu: Float[ArrayLike, " L"]) -> Kernel:
    """Kernel from Hermite coefficients ``mu`` = (mu_1, ..., mu_L) of the activation (normalised basis).

    mu_0 (a constant output) carries no feature information and is excluded. Raises ValueError when every
    coefficient is zero.
    """
    mu = jnp.atleast_1d(jnp.asarray(mu, dtype=jnp.result_type(float)))
    v.check("mu", jnp.sum(mu**2), lambda s: s > 0, "a non-zero vector of Hermite coefficients")
    c2 = jnp.concatenate([jnp.zeros(1, mu.dtype), mu**2])
    return Kernel(c2 / jnp.sum(c2))


def cubic_kernel() -> Kernel:
    """g(m) = m^3: activation He_3 / sqrt 6 (the default). Built once per float dtype (an immutable constant:
    building it eagerly costs ~1 ms of dispatches, paid on every default-kernel call before)."""
    return _cubic_kernel(jnp.dtype(jnp.result_type(float)).name)


@cache
def _cubic_kernel(dtype_name: str) -> Kernel:
    return hermite_kernel([0.0, 0.0, 1.0])


def g(m: Float[ArrayLike, "*shape"], kernel: Kernel | None = None) -> Float[Array, "*shape"]:
    """Overlap kernel g(m) (eq. G); broadcasts over ``m``."""
    v.finite("m", m)
    c2 = (kernel or cubic_kernel()).c2
    return jnp.polyval(c2[::-1], m)


def g_prime(m: Float[ArrayLike, "*shape"], kernel: Kernel | None = None) -> Float[Array, "*shape"]:
    """g'(m); broadcasts over ``m``."""
    c2 = (kernel or cubic_kernel()).c2
    ls = jnp.arange(c2.shape[0], dtype=c2.dtype)
    return jnp.polyval((ls * c2)[1:][::-1], m)


def one_minus_g_from_s(s: Float[ArrayLike, "*shape"], kernel: Kernel | None = None) -> Float[Array, "*shape"]:
    """1 - g(m) at m = s/(1 + s), computed without cancellation: (1 - m) sum_l c2_l (1 + m + ... + m^(l-1))."""
    c2 = (kernel or cubic_kernel()).c2
    s = jnp.asarray(s)
    m = s / (1.0 + s)
    u = 1.0 / (1.0 + s)
    # sum_l c2_l sum_{j<l} m^j = sum_j m^j (sum_{l>j} c2_l) = polynomial with coefficients tail sums
    tail = jnp.cumsum(c2[::-1])[::-1][1:]  # tail_j = sum_{l>j} c2_l, j = 0..L-1
    return u * jnp.polyval(tail[::-1], m)


# ---------------------------------------------------------------------------------------------------------
# Closed forms (g = m^3)
# ---------------------------------------------------------------------------------------------------------


def m_plus(c: Float[ArrayLike, "*shape"]) -> Float[Array, "*shape"]:
    """Non-trivial (stable) branch for g = m^3: m+(c) = (1 + sqrt(1 - 4/(3c)))/2, NaN-free: 0 below c = 4/3."""
    v.finite("c", c)
    c = jnp.asarray(c, dtype=jnp.result_type(float))
    disc = 1.0 - 4.0 / (3.0 * jnp.maximum(c, SPINODAL_C))
    return jnp.where(c >= SPINODAL_C, 0.5 * (1.0 + jnp.sqrt(jnp.maximum(disc, 0.0))), 0.0)


def feature_potential(
    m: Float[ArrayLike, "*shape"], c: Float[ArrayLike, "*shape"], kernel: Kernel | None = None
) -> Float[Array, "*shape"]:
    """Per-feature potential f(m; c) = (m + log(1 - m) + c g(m)) / 2 with D frozen (eq. f); f(0) = 0.

    Its stationary points are exactly eq. FP (m/(1 - m) = c g'(m)); the learned branch wins when f(m+) > 0.
    ``m`` is an overlap in [0, 1) (log(1 - m) is undefined beyond), ``c`` finite.
    """
    v.in_interval("m", m, 0.0, 1.0)
    v.finite("c", c)
    m = jnp.asarray(m)
    return 0.5 * (m + jnp.log1p(-m) + c * g(m, kernel))


def _it_equation(m: float) -> float:
    # f(m+(c); c) with c = 1/(3 m (1 - m)) eliminated via 3 c m^2 - 3 c m + 1 = 0
    return m + math.log1p(-m) + m * m / (3.0 * (1.0 - m))


def information_threshold() -> tuple[float, float]:
    """(c_IT, m_jump) for g = m^3: the c where f(m+(c); c) = 0, and m+(c_IT). (1.4558, 0.645) by bisection.

    Pure Python floats (a constant); tested against scipy's brentq on the potential itself.
    """
    lo, hi = 0.5 + 1e-12, 1.0 - 1e-12  # _it_equation < 0 at m = 1/2, -> +inf as m -> 1
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _it_equation(mid) > 0:
            hi = mid
        else:
            lo = mid
    m = 0.5 * (lo + hi)
    return 1.0 / (3.0 * m * (1.0 - m)), m


C_IT, M_JUMP = information_threshold()


def threshold_closed_form(
    i: Int[ArrayLike, "*shape"], beta: Float[ArrayLike, ""], k: int, delta_eff: Float[ArrayLike, ""]
) -> Float[Array, "*shape"]:
    """alpha_i ~ c_IT Delta_eff / a2_i = c_IT Delta_eff Z i^(2 beta) (g = m^3, Delta_eff frozen). ``i`` 1-based."""
    v.check("delta_eff", delta_eff, lambda d: d > 0, "> 0")
    return C_IT * delta_eff * normaliser(k, beta) * jnp.asarray(i, jnp.result_type(float)) ** (2.0 * beta)


def k_c_closed_form(
    alpha: Float[ArrayLike, "*shape"], beta: Float[ArrayLike, ""], k: int, delta_eff: Float[ArrayLike, "*shape"]
) -> Float[Array, "*shape"]:
    """Effective width k_c ~ (alpha / (c_IT Delta_eff Z))^(1/(2 beta)), capped at k (eq. kc; g = m^3)."""
    v.nonnegative("alpha", alpha)
    return jnp.minimum((alpha / (C_IT * delta_eff * normaliser(k, beta))) ** (0.5 / beta), float(k))


# ---------------------------------------------------------------------------------------------------------
# The solver: every local maximiser of Phi, the largest kept
# ---------------------------------------------------------------------------------------------------------

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


def _fm(m, u, c, kernel):
    """f(m; c) (eq. f) from m and u = 1 - m (so that log(1 - m) keeps its precision for m -> 1)."""
    return 0.5 * (m + jnp.log(u) + c * g(m, kernel))


def _one_minus_g(m, u, kernel):
    """1 - g(m) = u sum_l c2_l (1 + m + ... + m^(l-1)) with u = 1 - m: no cancellation as m -> 1."""
    c2 = kernel.c2
    tail = jnp.cumsum(c2[::-1])[::-1][1:]
    return u * jnp.polyval(tail[::-1], m)


def _learned_branch(c):
    """Non-trivial branch of g = m^3 as (m, u = 1 - m): m+(c), u+ = (2/(3c))/(1 + sqrt(1 - 4/(3c))), c >= 4/3."""
    cc = jnp.maximum(c, SPINODAL_C)
    r = jnp.sqrt(jnp.maximum(1.0 - 4.0 / (3.0 * cc), 0.0))
    return 0.5 * (1.0 + r), (2.0 / (3.0 * cc)) / (1.0 + r)


def best_branch(
    c: Float[ArrayLike, "*shape"], kernel: Kernel | None = None, *, cubic: bool = True, n_inner: int = 400
) -> tuple[Float[Array, "*shape"], Float[Array, "*shape"]]:
    """Per-feature maximiser of f(.; c) with D frozen (eq. f), as (m, u = 1 - m); broadcasts over ``c``.

    Cubic kernel: the larger of f(0) = 0 and f(m+(c); c) (learned iff c > c_IT). Other kernels: the fixed points
    of s <- c g'(s/(1+s)) reached from s = 0 and from s = c g'(1) (the smallest and the largest: the map is
    monotone), ``n_inner`` iterations each, the one with the larger f kept.
    """
    kernel = kernel or cubic_kernel()
    c = jnp.asarray(c)
    if cubic:
        m_hi, u_hi = _learned_branch(c)
        hi = (c >= SPINODAL_C) & (_fm(m_hi, u_hi, c, kernel) > 0.0)
        return jnp.where(hi, m_hi, 0.0), jnp.where(hi, u_hi, 1.0)

    def fixed(s0):
        s = lax.fori_loop(0, n_inner, lambda _, s: c * g_prime(s / (1.0 + s), kernel), s0)
        return s / (1.0 + s), 1.0 / (1.0 + s)

    m_lo, u_lo = fixed(jnp.zeros_like(c))
    m_hi, u_hi = fixed(c * g_prime(jnp.ones_like(c), kernel))
    hi = _fm(m_hi, u_hi, c, kernel) > _fm(m_lo, u_lo, c, kernel)
    return jnp.where(hi, m_hi, m_lo), jnp.where(hi, u_hi, u_lo)


def potential_gap(
    m_a: Float[ArrayLike, "*b k"],
    u_a: Float[ArrayLike, "*b k"],
    e_a: Float[ArrayLike, "*b"],
    m_b: Float[ArrayLike, "*b k"],
    u_b: Float[ArrayLike, "*b k"],
    e_b: Float[ArrayLike, "*b"],
    alpha: Float[ArrayLike, ""],
    delta: Float[ArrayLike, ""],
) -> Float[Array, "*b"]:
    """Phi(a) - Phi(b) for two configurations (eq. Phi, m-form), with D = delta + e and u = 1 - m per feature.

    Phi = sum_i (m_i + log(1 - m_i))/2 - (alpha/2) log D; the log D difference is log1p((e_a - e_b)/(delta + e_b))
    so that a large alpha does not swamp a small gap. (``phi_gap`` on the feature sums.)
    """
    return phi_gap(
        jnp.sum(0.5 * (m_a + jnp.log(u_a)), axis=-1),
        e_a,
        jnp.sum(0.5 * (m_b + jnp.log(u_b)), axis=-1),
        e_b,
        alpha,
        delta,
    )


def phi_gap(
    t_a: Float[ArrayLike, "*b"],
    e_a: Float[ArrayLike, "*b"],
    t_b: Float[ArrayLike, "*b"],
    e_b: Float[ArrayLike, "*b"],
    alpha: Float[ArrayLike, ""],
    delta: Float[ArrayLike, ""],
) -> Float[Array, "*b"]:
    """Phi(a) - Phi(b) from the feature sums t = sum_i (m_i + log(1 - m_i))/2 and the errors e (eq. Phi):
    t_a - t_b - (alpha/2) log((delta + e_a)/(delta + e_b)), the log as log1p((e_a - e_b)/(delta + e_b))."""
    return t_a - t_b - 0.5 * alpha * jnp.log1p((e_a - e_b) / (delta + e_b))


def keep_best(phi: Float[Array, " n"], valid: Bool[Array, " n"]) -> Int[Array, ""]:
    """Index of the candidate with the largest Phi among the valid ones (the global maximiser)."""
    return jnp.argmax(jnp.where(valid, phi, -jnp.inf))


def _errors(d, alpha, a2, kernel, cubic):
    m, u = best_branch(alpha * a2 / d, kernel, cubic=cubic)
    return jnp.sum(a2 * _one_minus_g(m, u, kernel)), m, u


def _extremes(alpha, a2, delta, kernel, cubic, tol, n_iter, fast=None, hi0=None):
    """Monotone iteration x <- eps(Delta + x) (per-feature best branch) from x = 0 and from x = sum a2.

    x = D - Delta (kept as the state so that a small eps keeps its relative precision). T(D) = Delta + eps(D) is
    non-decreasing in D, so the run from below increases to the smallest self-consistent point and the run from
    above decreases to the largest: after any number of steps they bracket every self-consistent point. Stops at
    relative change <= tol or after ``n_iter`` steps (``hi0``: sum a2 of the full amplitude vector when ``a2`` is
    its learnable head). Returns (x_lo, x_hi, residual). ``fast`` (cubic kernel):
    the ``_fast_terms`` tuple; eps(D) is then the prefix error with the count j(D) = #{i: D <= alpha a2_i/c_IT}
    (f(m+(c); c) > 0 iff c > c_IT, so this is the best branch of every feature).
    """
    if fast is None:
        err = lambda x: _errors(delta + x, alpha, a2, kernel, cubic)[0]  # noqa: E731
    else:
        w, d_thr, tail = fast
        err = lambda x: _prefix_eps(x, jnp.sum(delta + x <= d_thr), w, alpha, delta, tail)  # noqa: E731

    def body(st):
        lo, hi, _, it = st
        n_lo, n_hi = err(lo), err(hi)
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


LANES = 16  # sums over features run as LANES independent partial sums (XLA vectorises them; a plain sum does not)


def _lane_sum(x):
    """Sum over the last axis (length a multiple of LANES) as LANES interleaved partial sums, then across them."""
    return jnp.sum(jnp.sum(x.reshape(x.shape[:-1] + (x.shape[-1] // LANES, LANES)), axis=-2), axis=-1)


def _tail(a2):
    """tail (k + 1,): tail[j] = sum_{i>=j} a2_i (the unlearned features' errors when 1..j are learned)."""
    return jnp.concatenate([jnp.cumsum(a2[::-1])[::-1], jnp.zeros(1, a2.dtype)])


def _fast_terms(alpha, a2, delta, tail=None):
    """Per-alpha constants of the cubic prefix error: w (k_pad,) = 1/(alpha a2_i) (inf on padding and where
    alpha a2_i = 0), d_thr (k,) = alpha a2_i / c_IT (feature i learned iff D <= d_thr_i), tail (k + 1,) with
    tail[j] = sum_{i>=j} a2_i (``_tail``; passed in when ``a2`` is the learnable head of a longer vector)."""
    k = a2.shape[0]
    pad = (-k) % LANES
    aa = jnp.concatenate([alpha * a2, jnp.zeros(pad, a2.dtype)])
    w = jnp.where(aa > 0, 1.0 / jnp.where(aa > 0, aa, 1.0), jnp.inf)
    return w, alpha * a2 / C_IT, _tail(a2) if tail is None else tail


def _prefix_eps(x, j, w, alpha, delta, tail):
    """eps with exactly the first j features learned (g = m^3) at D = delta + x, the form the loops evaluate.

    On the learned branch c_i = alpha a2_i / D, r_i = sqrt(1 - 4/(3 c_i)) = sqrt(1 - 4 D w_i / 3), t_i = 1 + r_i,
    m_i = t_i/2, u_i = (2/(3 c_i))/t_i, so a2_i u_i (1 + m_i + m_i^2) = (2D/(3 alpha)) (t_i/4 + 1/2 + 1/t_i):
    eps_j = (2D/(3 alpha)) sum_{i<j} (t_i/4 + 1/2 + 1/t_i) + tail[j]. One sqrt and one division per feature, no
    cancellation (every term lies in [3/2, 7/4]). Tested against sum a2_i (1 - m+(c_i)^3).
    """
    d = delta + x
    t = 1.0 + jnp.sqrt(jnp.maximum(1.0 - (4.0 / 3.0) * d * w, 0.0))
    on = jnp.arange(w.shape[-1]) < j
    s = _lane_sum(jnp.where(on, 0.25 * t + 0.5 + 1.0 / t, 0.0))
    return jnp.where(j > 0, (2.0 / 3.0) * (d / alpha) * s, 0.0) + tail[j]


def _prefix_sums(x, j, w, alpha, delta, tail):
    """``_prefix_eps`` and the potential's feature sum in one pass: (eps, t) at D = delta + x with
    t = sum_i (m_i + log(1 - m_i))/2 (eq. Phi; unlearned features contribute 0). Learned features (i < j):
    m_i = t_i/2, u_i = 1 - m_i = (2/3) D w_i / t_i (= (2/(3 c_i))/(1 + r_i), no cancellation as m_i -> 1).
    """
    d = delta + x
    q = d * w
    t = 1.0 + jnp.sqrt(jnp.maximum(1.0 - (4.0 / 3.0) * q, 0.0))
    on = jnp.arange(w.shape[-1]) < j
    s = _lane_sum(jnp.where(on, 0.25 * t + 0.5 + 1.0 / t, 0.0))
    e = jnp.where(j > 0, (2.0 / 3.0) * (d / alpha) * s, 0.0) + tail[j]
    phi = _lane_sum(jnp.where(on, 0.25 * t + 0.5 * jnp.log((2.0 / 3.0) * q / t), 0.0))
    return e, phi


def _prefix_overlaps(x, j, w, delta):
    """Overlaps (m, u = 1 - m), shape (k_pad,), with exactly the first j features learned at D = delta + x."""
    q = (delta + x) * w
    t = 1.0 + jnp.sqrt(jnp.maximum(1.0 - (4.0 / 3.0) * q, 0.0))
    on = jnp.arange(w.shape[-1]) < j
    return jnp.where(on, 0.5 * t, 0.0), jnp.where(on, (2.0 / 3.0) * q / t, 1.0)


def _candidates_cubic(alpha, a2, delta, x_lo, x_hi, n_bisect, slack, fast=None):
    """Every learned count j between the extremes: the self-consistent point with features 1..j learned.

    For count j the point lies where feature j is learned and j+1 is not, D in [alpha a2_{j+1}/c_IT,
    alpha a2_j/c_IT] (a2 decreasing: the learned set is always a prefix), intersected with [d_lo, d_hi]; there
    h_j(x) = eps_j(delta + x) - x is continuous, and a downward crossing (h_j >= 0 at the left end, <= 0 at the
    right end) is bisected in log x. Returns per candidate (valid, x, j, eps, t, residual) and ``complete``
    (t: the potential's feature sum, ``_prefix_sums``).
    """
    k = a2.shape[0]
    dt = a2.dtype
    w, d_thr, tail = _fast_terms(alpha, a2, delta) if fast is None else fast  # feature i learned iff D <= d_thr[i]
    count = lambda d: jnp.sum(d <= d_thr)  # noqa: E731
    j_hi, j_lo = count(delta + x_lo), count(delta + x_hi)
    js = j_lo + jnp.arange(N_CANDIDATES)
    complete = (j_hi - j_lo) < N_CANDIDATES

    def one(j):
        up = jnp.where(j > 0, d_thr[jnp.maximum(j - 1, 0)], jnp.inf)
        down = jnp.where(j < k, d_thr[jnp.minimum(j, k - 1)], 0.0)
        a = jnp.maximum(x_lo, down - delta)
        b = jnp.minimum(x_hi, up - delta)
        tiny = jnp.finfo(dt).tiny
        a, b = jnp.maximum(a, tiny), jnp.maximum(b, tiny)
        h = lambda x: _prefix_eps(x, j, w, alpha, delta, tail) - x  # noqa: E731
        ok = (j <= j_hi) & (a <= b) & (h(a) >= -slack * a) & (h(b) <= slack * b)

        def body(st):
            lo, hi, _, it = st
            mid = jnp.sqrt(lo * hi)
            pos = h(mid) >= 0
            n_lo, n_hi = jnp.where(pos, mid, lo), jnp.where(pos, hi, mid)
            return n_lo, n_hi, (n_lo != lo) | (n_hi != hi), it + 1

        # n_bisect steps, stopped early once a step leaves the bracket unchanged: the step is a function of the
        # bracket alone, so every later step would leave it unchanged too (same result as all n_bisect steps)
        lo, hi, _, _ = lax.while_loop(
            lambda st: st[2] & (st[3] < n_bisect), body, (a, b, jnp.asarray(True), jnp.zeros((), jnp.int32))
        )
        e, phi = _prefix_sums(lo, j, w, alpha, delta, tail)
        return ok, lo, e, phi, jnp.abs(e - lo) / lo

    # only the contested counts j_lo..j_hi are bisected (a data-dependent trip count: under vmap, the batch's
    # largest); counts above j_hi are invalid (ok = False) and keep their initial values, as they did when
    # every count was bisected
    n_run = jnp.clip(j_hi - j_lo + 1, 1, N_CANDIDATES)
    init = (
        jnp.zeros(N_CANDIDATES, bool),
        jnp.ones(N_CANDIDATES, dt),
        jnp.zeros(N_CANDIDATES, dt),
        jnp.full(N_CANDIDATES, -jnp.inf, dt),
        jnp.full(N_CANDIDATES, jnp.inf, dt),
    )

    def step(c, acc):
        return tuple(a.at[c].set(v_) for a, v_ in zip(acc, one(js[c]), strict=True))

    ok, x, e, phi, res = lax.fori_loop(0, n_run, step, init)
    return ok, x, js, e, phi, res, complete


@partial(jax.jit, static_argnames=("cubic",))
def _solve(alpha, a2, delta, kernel, tol, max_iter, cubic=True, tail=None, hi0=None):
    alpha = jnp.asarray(alpha, a2.dtype)
    delta = jnp.asarray(delta, a2.dtype)
    n_bisect = BISECT_STEPS["float64" if a2.dtype == jnp.float64 else "float32"]
    k = a2.shape[0]
    if cubic:
        # the extremes only bound the search here: a few steps suffice, the bisection does the rest
        fast = _fast_terms(alpha, a2, delta, tail)
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
        m_b, u_b = (v_[:k] for v_ in _prefix_overlaps(x[best], js[best], fast[0], delta))
    else:
        m_b, u_b = m[best], u[best]
    e_b = e[best]
    res_b = jnp.where(ok[best], res[best], jnp.inf)
    return Solution(
        m=m_b,
        s=m_b / u_b,
        delta_eff=delta + e_b,
        eps_bo=e_b,
        k_c=jnp.sum(m_b > 0.5),
        n_candidates=jnp.sum(ok),
        dphi=phi[best] - runner,
        complete=complete,
        converged=complete & (res_b <= tol),
        residual=res_b,
    )


def _is_cubic(kernel) -> bool:
    if kernel is None:
        return True
    c2 = np.asarray(kernel.c2)
    return c2.shape == (4,) and bool(np.allclose(c2, [0.0, 0.0, 0.0, 1.0]))


def _check_params(alpha, a2, delta, tol, max_iter):
    v.nonnegative("alpha", alpha)
    v.positive("delta", delta)
    v.positive("tol", tol)
    v.positive_int("max_iter", max_iter)
    v.check("a2", a2, lambda a: (a.ndim == 1) & (a.size > 0), "a non-empty 1-D array of amplitudes")
    v.nonnegative("a2", a2)
    v.check("a2", a2, lambda a: np.all(np.diff(np.asarray(a)) <= 0), "non-increasing (features sorted by amplitude)")


def check_converged(sol: Solution, alpha: Float[ArrayLike, "*b"] | None = None) -> Solution:
    """Raise ``NotConvergedError`` (naming the offending alphas) unless every entry of ``sol`` converged."""
    if not v.is_concrete(sol.converged):
        return sol
    ok = np.asarray(sol.converged)  # a host copy: cheaper than dispatching jnp.all
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
    _check_params(alpha, a2, delta, tol, max_iter)
    sol = _solve(alpha, a2, delta, kernel or cubic_kernel(), tol, jnp.asarray(max_iter), cubic=_is_cubic(kernel))
    return check_converged(sol, alpha) if check else sol


@partial(jax.jit, static_argnames=("cubic",))
def _solve_grid(alphas, a2, delta, kernel, tol, max_iter, cubic=True, tail=None, hi0=None):
    return jax.vmap(lambda a: _solve(a, a2, delta, kernel, tol, max_iter, cubic=cubic, tail=tail, hi0=hi0))(alphas)


LEARNABLE_SLACK = 0.99  # a feature is kept when alpha a2_i / c_IT >= 0.99 Delta (float32 rounding is ~1e-7)


def learnable_heads(
    alphas: Float[ArrayLike, " B"], a2: Float[ArrayLike, " k"], delta: Float[ArrayLike, ""]
) -> Int[np.ndarray, " B"]:
    """Per alpha (B,), the length K of the amplitude head the cubic solver needs: every feature with
    alpha a2_i / c_IT >= Delta (it can be learned, as D >= Delta) lies in the head, with slack ``LEARNABLE_SLACK``;
    K is the learnable count rounded up to ``LANES`` x a power of two (few distinct shapes), at most k.
    Features past the head are never learned: they enter the solve only through their summed errors."""
    a2 = np.asarray(a2, np.float64)
    k = a2.shape[0]
    n = _count_prefix(np.asarray(alphas, np.float64), a2, LEARNABLE_SLACK * float(delta))
    blocks = 2 ** np.ceil(np.log2(np.maximum(np.ceil(n / LANES), 1))).astype(int)
    return np.minimum(LANES * blocks, k)


def _count_prefix(alphas: np.ndarray, a2: np.ndarray, level: float) -> np.ndarray:
    """Per alpha, #{i: alpha a2_i / C_IT >= level} for non-increasing ``a2`` (float64): the predicate is
    monotone in i (rounding is monotone), so the count is the first failing index, found by a vectorised binary
    search over the alphas (log2 k steps of (B,) arrays, not one (B, k) comparison)."""
    lo, hi = np.zeros(alphas.shape, np.int64), np.full(alphas.shape, a2.shape[0], np.int64)
    while np.any(lo < hi):  # invariant: the predicate holds below lo and fails from hi on
        mid = (lo + hi) // 2
        holds = alphas * a2[np.minimum(mid, a2.shape[0] - 1)] / C_IT >= level
        lo, hi = np.where((lo < hi) & holds, mid + 1, lo), np.where((lo < hi) & ~holds, mid, hi)
    return lo


def _solve_grid_heads(alphas, a2, delta, kernel, tol, max_iter) -> Solution:
    """``_solve_grid`` (cubic kernel, concrete inputs) with each alpha solved on its learnable head only
    (``learnable_heads``): alphas sharing a head length K run as one vmapped solve on a2[:K] with the full
    vector's tails (``_tail``) and sum, so the work per alpha scales with the features it can learn; all heads
    in one compiled call (recompiled only when the multiset of head lengths changes). The skipped features'
    overlaps are 0, exactly what the full solve returns for them."""
    heads = learnable_heads(alphas, a2, delta)
    order = np.argsort(heads, kind="stable")
    lens, counts = np.unique(heads, return_counts=True)
    buckets = tuple((int(a), int(b)) for a, b in zip(lens, counts, strict=True))
    return _solve_heads(alphas, a2, delta, kernel, tol, max_iter, order, np.argsort(order), buckets)


@partial(jax.jit, static_argnames=("buckets",))
def _solve_heads(alphas, a2, delta, kernel, tol, max_iter, order, inverse, buckets):
    k = a2.shape[0]
    tail, hi0 = _tail(a2), jnp.sum(a2)
    al = alphas[order]
    parts, start = [], 0
    for kk, n in buckets:
        sol = jax.vmap(lambda a, kk=kk: _solve(a, a2[:kk], delta, kernel, tol, max_iter, True, tail[: kk + 1], hi0))(
            al[start : start + n]
        )
        pad = lambda x, kk=kk, n=n: jnp.concatenate([x, jnp.zeros((n, k - kk), x.dtype)], axis=1)  # noqa: E731
        parts.append(sol._replace(m=pad(sol.m), s=pad(sol.s)))
        start += n
    return jax.tree.map(lambda *xs: jnp.concatenate(xs)[inverse], *parts)


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
    a2 = jnp.asarray(a2, dtype=jnp.result_type(float))
    tol = default_tol(a2.dtype) if tol is None else tol
    alphas = jnp.asarray(alphas, a2.dtype)
    v.shape("alphas", alphas, (None,))
    _check_params(alphas, a2, delta, tol, max_iter)
    kern, cubic = kernel or cubic_kernel(), _is_cubic(kernel)
    if cubic and heads and v.is_concrete((alphas, a2, delta)) and alphas.shape[0] > 0:
        sol = _solve_grid_heads(alphas, a2, delta, kern, tol, jnp.asarray(max_iter))
    else:
        sol = _solve_grid(alphas, a2, delta, kern, tol, jnp.asarray(max_iter), cubic=cubic)
    return check_converged(sol, alphas) if check else sol


def potential(
    m: Float[ArrayLike, " k"],
    alpha: Float[ArrayLike, ""],
    a2: Float[ArrayLike, " k"],
    delta: Float[ArrayLike, ""],
    kernel: Kernel | None = None,
) -> Float[Array, ""]:
    """Global potential Phi(m) = sum_i (m_i + log(1 - m_i))/2 - (alpha/2) log D(m) (eq. Phi, m-form)."""
    d = delta + jnp.sum(a2 * (1.0 - g(m, kernel)))
    return jnp.sum(0.5 * (m + jnp.log1p(-m))) - 0.5 * alpha * jnp.log(d)


def potential_notes_form(
    m: Float[ArrayLike, " k"],
    alpha: Float[ArrayLike, ""],
    a2: Float[ArrayLike, " k"],
    delta: Float[ArrayLike, ""],
    kernel: Kernel | None = None,
) -> Float[Array, ""]:
    """Phi in the notes' form sum_i [psi(s_i) - s_i m_i/2] - (alpha/2) log D with s_i = alpha a2_i g'(m_i)/D.

    Equals ``potential`` at a fixed point (tested); away from one the two differ.
    """
    d = delta + jnp.sum(a2 * (1.0 - g(m, kernel)))
    s = alpha * a2 * g_prime(m, kernel) / d
    psi = 0.5 * (s - jnp.log1p(s))
    return jnp.sum(psi - 0.5 * s * m) - 0.5 * alpha * jnp.log(d)


def first_crossing(y: Float[ArrayLike, "*b n"], level: Float[ArrayLike, ""]) -> Int[Array, "*b"]:
    """Index of the first entry of ``y`` (..., n) above ``level`` along the last axis (n when none): the grid
    point where a jump is detected (a feature's overlap, or an AMP overlap read from the large-c side)."""
    above = jnp.asarray(y) > level
    return jnp.where(jnp.any(above, axis=-1), jnp.argmax(above, axis=-1), above.shape[-1])


# ---------------------------------------------------------------------------------------------------------
# Errors, effective width, thresholds
# ---------------------------------------------------------------------------------------------------------


def bayes_error(
    m: Float[ArrayLike, "*b k"], a2: Float[ArrayLike, " k"], kernel: Kernel | None = None
) -> Float[Array, "*b"]:
    """eps_BO = sum_i a2_i (1 - g(m_i)) (eq. BO). ``m`` (..., k)."""
    return jnp.sum(a2 * (1.0 - g(m, kernel)), axis=-1)


def gibbs_error(
    m: Float[ArrayLike, "*b k"], a2: Float[ArrayLike, " k"], kernel: Kernel | None = None, q_self: float = 1.0
) -> Float[Array, "*b"]:
    """Gibbs error sum_i a2_i (g(q_self) + g(1) - 2 g(q_i)): a posterior sample against the teacher.

    Nishimori: a sample's overlap with the teacher equals the overlap between two samples, q_i = m_i, and its
    self-overlap equals the teacher's, q_self = 1; then eps_G = 2 eps_BO (eq. Gibbs).
    """
    return jnp.sum(a2 * (g(q_self, kernel) + g(1.0, kernel) - 2.0 * g(m, kernel)), axis=-1)


def effective_width(m: Float[ArrayLike, "*b k"], threshold: float = 0.5) -> Int[Array, "*b"]:
    """k_c = number of features with overlap above ``threshold`` (default 1/2 < m+(c_IT) = 0.645)."""
    return jnp.sum(jnp.asarray(m) > threshold, axis=-1)


@partial(jax.jit, static_argnames=("iters", "cubic"))
def _thresholds(idx, a2, delta, kernel, lo, hi, iters, tol, max_iter, cubic=True):
    def one(i):
        def body(_, br):
            a, b = br
            mid = jnp.sqrt(a * b)
            learned = _solve(mid, a2, delta, kernel, tol, max_iter, cubic=cubic).m[i] > 0.5
            return jnp.where(learned, a, mid), jnp.where(learned, mid, b)

        a, b = lax.fori_loop(0, iters, body, (jnp.asarray(lo, a2.dtype), jnp.asarray(hi, a2.dtype)))
        return jnp.sqrt(a * b)

    return jax.vmap(one)(idx)


def thresholds(
    idx: Int[ArrayLike, " F"],
    a2: Float[ArrayLike, " k"],
    delta: Float[ArrayLike, ""],
    *,
    kernel: Kernel | None = None,
    lo: float = 1e-3,
    hi: float = 1e12,
    iters: int = 44,
    tol: float | None = None,
    max_iter: int = 20000,
) -> Float[Array, " F"]:
    """Per-feature thresholds alpha_i: the alpha where feature ``idx`` (0-based, (F,)) first has m_i > 1/2.

    Bisection in log(alpha) on [lo, hi] with ``iters`` solves each, vmapped over features; returns (F,).
    (m_i is non-decreasing in alpha, a tested property, so the bisection is well posed.)
    """
    a2 = jnp.asarray(a2, dtype=jnp.result_type(float))
    tol = default_tol(a2.dtype) if tol is None else tol
    _check_params(lo, a2, delta, tol, max_iter)
    v.positive("lo", lo)
    v.check("hi", hi, lambda h: h > lo, f"> lo={lo}")
    idx = jnp.atleast_1d(jnp.asarray(idx))
    v.check("idx", idx, lambda i: (i >= 0) & (i < a2.shape[0]), f"in [0, {a2.shape[0]})")
    return _thresholds(
        idx, a2, delta, kernel or cubic_kernel(), lo, hi, iters, tol, jnp.asarray(max_iter), cubic=_is_cubic(kernel)
    )
