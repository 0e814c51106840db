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

Branch selection. Phi(m) >= L(m; D*) where L is Phi with log D linearised at the optimum D*, with equality at the
optimum, and L is separable over features; so the maximiser of Phi has every feature on the per-feature branch
that maximises f(.; c_i(D*)). The solver therefore iterates (damped) with per-feature branch selection: for every
feature it tracks the iterate started at m = 0 and the one started at m = 1 and keeps the one with the larger
f. Several self-consistent D can exist near a threshold; the solver runs the whole damped iteration from the
uninformed start (all m = 0, D = Delta + 1) and from the informed start (all m = 1, D = Delta), which converge to
the extreme self-consistent points, and keeps the run with the larger Phi (compared as a difference, so large
alpha does not swamp it). With three or more self-consistent points it could miss the middle one (not seen).

Closed forms for g = m^3 (D frozen): non-trivial branch m+(c) = (1 + sqrt(1 - 4/(3 c)))/2 for c >= 4/3
(spinodal c_sp = 4/3, m+ = 1/2 there); information-theoretic threshold c_IT = 1.4558 where f(m+(c); c) = 0,
jump 0 -> m+(c_IT) = 0.645. Hence feature i is learned once alpha a2_i / D >= c_IT: alpha_i ~ c_IT D Z i^(2 beta),
and the effective width is k_c ~ (alpha / (c_IT D Z))^(1/(2 beta)) (eq. kc). Bayes error: learned features
contribute ~D/alpha each, the unlearned tail ~k_c^(1-2 beta): eps_BO = Theta(k_c D / alpha) ~
alpha^(1/(2 beta) - 1) while k_c < k, ~k D / alpha once every feature is learned (refinement).

Numerics: the branch started at m = 0 is seeded at s = 1e-6 (so a continuous transition, e.g. g = m^2, can grow
out of it); for g = m^3 that seed decays to remnants below 1e-10, numerically zero. The state is s (not m), and
1 - m = 1/(1 + s), 1 - g(m) = (1 - m) sum_l mu_l^2 (1 + ... + m^(l-1)), so errors down to 1e-12 are exact in
float32; the convergence residual is |delta s|/(1 + s), i.e. relative in 1 - m for learned features. In float32,
Delta_eff resolves ~1e-7 relative: near the thresholds of features with a_i^2 below that, the two self-consistent
configurations are numerically tied and the choice between them is arbitrary (harmless for eps_BO). Every
function is jit/vmap compatible; ``solve`` raises ``NotConvergedError`` (a RuntimeError) when called eagerly and
an iteration did not converge, and returns a ``converged`` flag that vmapped callers check with
``check_converged``.
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from theory import _validate as v

SPINODAL_C = 4.0 / 3.0  # c where the non-trivial branch of g = m^3 appears (m+ = 1/2)


class NotConvergedError(RuntimeError):
    """The damped fixed-point iteration did not reach ``tol`` within ``max_iter`` iterations."""


# ---------------------------------------------------------------------------------------------------------
# Amplitudes and overlap kernels
# ---------------------------------------------------------------------------------------------------------


def normaliser(k: int, beta) -> jax.Array:
    """Z = sum_{j<=k} j^(-2 beta) (eq. A)."""
    v.positive_int("k", k)
    v.check("beta", beta, lambda b: b > 0.5, "> 1/2")
    return jnp.sum(jnp.arange(1, k + 1, dtype=jnp.result_type(float)) ** (-2.0 * beta))


def amplitudes(k: int, beta) -> jax.Array:
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


def hermite_kernel(mu) -> Kernel:
    """Kernel from Hermite coefficients ``mu`` = (mu_1, ..., mu_L) of the activation (normalised basis).

    mu_0 (a constant output) carries no feature information and is excluded. Raises ValueError when every
    coefficient is zero.
    """
    mu = jnp.atleast_1d(jnp.asarray(mu, dtype=jnp.result_type(float)))
    v.check("mu", jnp.sum(mu**2), lambda s: s > 0, "a non-zero vector of Hermite coefficients")
    c2 = jnp.concatenate([jnp.zeros(1, mu.dtype), mu**2])
    return Kernel(c2 / jnp.sum(c2))


def cubic_kernel() -> Kernel:
    """g(m) = m^3: activation He_3 / sqrt 6 (the default)."""
    return hermite_kernel([0.0, 0.0, 1.0])


def g(m, kernel: Kernel | None = None):
    """Overlap kernel g(m) (eq. G); broadcasts over ``m``."""
    c2 = (kernel or cubic_kernel()).c2
    return jnp.polyval(c2[::-1], m)


def g_prime(m, kernel: Kernel | None = None):
    """g'(m); broadcasts over ``m``."""
    c2 = (kernel or cubic_kernel()).c2
    ls = jnp.arange(c2.shape[0], dtype=c2.dtype)
    return jnp.polyval((ls * c2)[1:][::-1], m)


def one_minus_g_from_s(s, kernel: Kernel | None = None):
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


def m_plus(c):
    """Non-trivial (stable) branch for g = m^3: m+(c) = (1 + sqrt(1 - 4/(3c)))/2, NaN-free: 0 below c = 4/3."""
    c = jnp.asarray(c, dtype=jnp.result_type(float))
    disc = 1.0 - 4.0 / (3.0 * jnp.maximum(c, SPINODAL_C))
    return jnp.where(c >= SPINODAL_C, 0.5 * (1.0 + jnp.sqrt(jnp.maximum(disc, 0.0))), 0.0)


def feature_potential(m, c, kernel: Kernel | None = None):
    """Per-feature potential f(m; c) = (m + log(1 - m) + c g(m)) / 2 with D frozen (eq. f); f(0) = 0.

    Its stationary points are exactly eq. FP (m/(1 - m) = c g'(m)); the learned branch wins when f(m+) > 0.
    """
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


def threshold_closed_form(i, beta, k: int, delta_eff):
    """alpha_i ~ c_IT Delta_eff / a2_i = c_IT Delta_eff Z i^(2 beta) (g = m^3, Delta_eff frozen). ``i`` 1-based."""
    v.check("delta_eff", delta_eff, lambda d: d > 0, "> 0")
    return C_IT * delta_eff * normaliser(k, beta) * jnp.asarray(i, jnp.result_type(float)) ** (2.0 * beta)


def k_c_closed_form(alpha, beta, k: int, delta_eff):
    """Effective width k_c ~ (alpha / (c_IT Delta_eff Z))^(1/(2 beta)), capped at k (eq. kc; g = m^3)."""
    v.nonnegative("alpha", alpha)
    return jnp.minimum((alpha / (C_IT * delta_eff * normaliser(k, beta))) ** (0.5 / beta), float(k))


# ---------------------------------------------------------------------------------------------------------
# The damped fixed-point solver
# ---------------------------------------------------------------------------------------------------------


class Solution(NamedTuple):
    """Fixed point of eqs. D/FP at one alpha (shapes for k features; under vmap every field gains a batch axis).

    m (k,) overlaps; s (k,) conjugate SNRs; delta_eff () effective noise D; eps_bo () Bayes error (eq. BO);
    k_c () number of learned features (m_i > 1/2); informed () True when the run started from m = 1 won the
    potential comparison; dphi () Phi(informed run) - Phi(uninformed run); converged () both runs met ``tol``;
    iterations () the larger iteration count of the two runs; residual () the larger final residual.
    """

    m: jax.Array
    s: jax.Array
    delta_eff: jax.Array
    eps_bo: jax.Array
    k_c: jax.Array
    informed: jax.Array
    dphi: jax.Array
    converged: jax.Array
    iterations: jax.Array
    residual: jax.Array


def _select(s_lo, s_hi, c, kernel):
    """Per-feature branch with the larger f(.; c): returns (s, took_hi)."""
    m_lo, m_hi = s_lo / (1.0 + s_lo), s_hi / (1.0 + s_hi)
    f_lo = 0.5 * (m_lo - jnp.log1p(s_lo) + c * g(m_lo, kernel))
    f_hi = 0.5 * (m_hi - jnp.log1p(s_hi) + c * g(m_hi, kernel))
    hi = f_hi > f_lo
    return jnp.where(hi, s_hi, s_lo), hi


def _run(d0, alpha, a2, delta, kernel, damping, tol, max_iter):
    """One damped iteration (with per-feature branch tracking) from effective noise d0."""
    c_max = alpha * a2 / delta
    s_lo0 = jnp.full_like(a2, 1e-6)
    s_hi0 = c_max * g_prime(jnp.ones_like(a2), kernel)

    def step(state):
        s_lo, s_hi, d, _, it = state
        c = alpha * a2 / d
        upd = lambda s: (1.0 - damping) * s + damping * c * g_prime(s / (1.0 + s), kernel)
        n_lo, n_hi = upd(s_lo), upd(s_hi)
        s_sel, _ = _select(n_lo, n_hi, c, kernel)
        d_new = (1.0 - damping) * d + damping * (delta + jnp.sum(a2 * one_minus_g_from_s(s_sel, kernel)))
        # residual: change of the selected s relative to 1 + s (absolute in m for small s, relative in 1 - m and
        # hence in the error 1 - g(m) for large s), and relative change of D
        old_sel, _ = _select(s_lo, s_hi, c, kernel)
        dm = jnp.max(jnp.abs(s_sel - old_sel) / (1.0 + jnp.minimum(s_sel, old_sel)))
        res = jnp.maximum(dm, jnp.abs(d_new - d) / d)
        return n_lo, n_hi, d_new, res, it + 1

    def cond(state):
        return (state[3] > tol) & (state[4] < max_iter)

    init = (s_lo0, s_hi0, jnp.asarray(d0, a2.dtype), jnp.asarray(jnp.inf, a2.dtype), jnp.zeros_like(max_iter))
    s_lo, s_hi, d, res, it = lax.while_loop(cond, step, init)
    s, _ = _select(s_lo, s_hi, alpha * a2 / d, kernel)
    return s, d, res, it


def _phi_terms(s):
    m = s / (1.0 + s)
    return 0.5 * (m - jnp.log1p(s))  # (m + log(1 - m)) / 2


@jax.jit
def _solve(alpha, a2, delta, kernel, damping, tol, max_iter):
    alpha = jnp.asarray(alpha, a2.dtype)
    s_u, d_u, r_u, i_u = _run(delta + jnp.sum(a2), alpha, a2, delta, kernel, damping, tol, max_iter)
    s_i, d_i, r_i, i_i = _run(delta, alpha, a2, delta, kernel, damping, tol, max_iter)
    dphi = jnp.sum(_phi_terms(s_i) - _phi_terms(s_u)) - 0.5 * alpha * jnp.log1p((d_i - d_u) / d_u)
    informed = dphi > 0
    s = jnp.where(informed, s_i, s_u)
    d = jnp.where(informed, d_i, d_u)
    m = s / (1.0 + s)
    eps = jnp.sum(a2 * one_minus_g_from_s(s, kernel))
    res = jnp.maximum(r_u, r_i)
    return Solution(m=m, s=s, delta_eff=d, eps_bo=eps, k_c=jnp.sum(m > 0.5), informed=informed, dphi=dphi,
                    converged=res <= tol, iterations=jnp.maximum(i_u, i_i), residual=res)


def _check_params(alpha, a2, delta, damping, tol, max_iter):
    v.nonnegative("alpha", alpha)
    v.positive("Delta", delta)
    v.in_interval("damping", damping, 0.0, 1.0, closed_hi=True)
    v.positive("damping", damping)
    v.positive("tol", tol)
    v.positive_int("max_iter", max_iter)
    v.check("a2", a2, lambda a: (a.ndim == 1) & (a.size > 0), "a non-empty 1-D array of amplitudes")
    v.nonnegative("a2", a2)


def check_converged(sol: Solution, alpha=None) -> Solution:
    """Raise ``NotConvergedError`` (naming the offending alphas) unless every entry of ``sol`` converged."""
    ok = jnp.asarray(sol.converged)
    if not v.is_concrete(ok) or bool(jnp.all(ok)):
        return sol
    bad = ~ok.reshape(-1)
    where = "" if alpha is None else f" at alpha = {jnp.asarray(alpha).reshape(-1)[bad][:5]}"
    raise NotConvergedError(
        f"teacher-student fixed point did not converge{where}: residual "
        f"{jnp.asarray(sol.residual).reshape(-1)[bad][:5]} after {int(jnp.max(sol.iterations))} iterations; "
        "raise max_iter, lower damping or loosen tol")


def default_tol(dtype) -> float:
    """Convergence tolerance by dtype: 1e-5 in float32, 1e-10 in float64."""
    return 1e-10 if jnp.dtype(dtype) == jnp.float64 else 1e-5


def solve(alpha, a2, delta, *, kernel: Kernel | None = None, damping=0.7, tol=None, max_iter: int = 20000,
          check: bool = True) -> Solution:
    """Bayes-optimal fixed point (reconstruction, eqs. D/FP/Phi) at sample ratio ``alpha`` = n/d.

    ``a2`` (k,) squared amplitudes (``amplitudes``), ``delta`` label-noise variance Delta > 0. ``alpha``,
    ``delta`` and ``damping`` may be traced (vmap over alpha grids: ``solve_grid``). When called eagerly with
    ``check`` the convergence flag is checked and ``NotConvergedError`` raised on failure.
    """
    a2 = jnp.asarray(a2, dtype=jnp.result_type(float))
    tol = default_tol(a2.dtype) if tol is None else tol
    _check_params(alpha, a2, delta, damping, tol, max_iter)
    sol = _solve(alpha, a2, delta, kernel or cubic_kernel(), damping, tol, jnp.asarray(max_iter))
    return check_converged(sol, alpha) if check else sol


@jax.jit
def _solve_grid(alphas, a2, delta, kernel, damping, tol, max_iter):
    return jax.vmap(_solve, in_axes=(0, None, None, None, None, None, None))(
        alphas, a2, delta, kernel, damping, tol, max_iter)


def solve_grid(alphas, a2, delta, *, kernel: Kernel | None = None, damping=0.7, tol=None,
               max_iter: int = 20000, check: bool = True) -> Solution:
    """``solve`` vmapped over a 1-D grid ``alphas`` (B,): every Solution field gains a leading axis B."""
    a2 = jnp.asarray(a2, dtype=jnp.result_type(float))
    tol = default_tol(a2.dtype) if tol is None else tol
    alphas = jnp.asarray(alphas, a2.dtype)
    v.shape("alphas", alphas, (None,))
    _check_params(alphas, a2, delta, damping, tol, max_iter)
    sol = _solve_grid(alphas, a2, delta, kernel or cubic_kernel(), damping, tol, jnp.asarray(max_iter))
    return check_converged(sol, alphas) if check else sol


def potential(m, alpha, a2, delta, kernel: Kernel | None = None):
    """Global potential Phi(m) = sum_i (m_i + log(1 - m_i))/2 - (alpha/2) log D(m) (eq. Phi, m-form)."""
    d = delta + jnp.sum(a2 * (1.0 - g(m, kernel)))
    return jnp.sum(0.5 * (m + jnp.log1p(-m))) - 0.5 * alpha * jnp.log(d)


def potential_notes_form(m, alpha, a2, delta, kernel: Kernel | None = None):
    """Phi in the notes' form sum_i [psi(s_i) - s_i m_i/2] - (alpha/2) log D with s_i = alpha a2_i g'(m_i)/D.

    Equals ``potential`` at a fixed point (tested); away from one the two differ.
    """
    d = delta + jnp.sum(a2 * (1.0 - g(m, kernel)))
    s = alpha * a2 * g_prime(m, kernel) / d
    psi = 0.5 * (s - jnp.log1p(s))
    return jnp.sum(psi - 0.5 * s * m) - 0.5 * alpha * jnp.log(d)


# ---------------------------------------------------------------------------------------------------------
# Errors, effective width, thresholds
# ---------------------------------------------------------------------------------------------------------


def bayes_error(m, a2, kernel: Kernel | None = None):
    """eps_BO = sum_i a2_i (1 - g(m_i)) (eq. BO). ``m`` (..., k)."""
    return jnp.sum(a2 * (1.0 - g(m, kernel)), axis=-1)


def gibbs_error(m, a2, kernel: Kernel | None = None, q_self=1.0):
    """Gibbs error sum_i a2_i (g(q_self) + g(1) - 2 g(q_i)): a posterior sample against the teacher.

    Nishimori: a sample's overlap with the teacher equals the overlap between two samples, q_i = m_i, and its
    self-overlap equals the teacher's, q_self = 1; then eps_G = 2 eps_BO (eq. Gibbs).
    """
    return jnp.sum(a2 * (g(q_self, kernel) + g(1.0, kernel) - 2.0 * g(m, kernel)), axis=-1)


def effective_width(m, threshold=0.5):
    """k_c = number of features with overlap above ``threshold`` (default 1/2 < m+(c_IT) = 0.645)."""
    return jnp.sum(jnp.asarray(m) > threshold, axis=-1)


@partial(jax.jit, static_argnames=("iters",))
def _thresholds(idx, a2, delta, kernel, lo, hi, iters, damping, tol, max_iter):
    def one(i):
        def body(_, br):
            a, b = br
            mid = jnp.sqrt(a * b)
            learned = _solve(mid, a2, delta, kernel, damping, tol, max_iter).m[i] > 0.5
            return jnp.where(learned, a, mid), jnp.where(learned, mid, b)

        a, b = lax.fori_loop(0, iters, body, (jnp.asarray(lo, a2.dtype), jnp.asarray(hi, a2.dtype)))
        return jnp.sqrt(a * b)

    return jax.vmap(one)(idx)


def thresholds(idx, a2, delta, *, kernel: Kernel | None = None, lo=1e-3, hi=1e12, iters: int = 44,
               damping=0.7, tol=None, max_iter: int = 20000) -> jax.Array:
    """Per-feature thresholds alpha_i: the alpha where feature ``idx`` (0-based, (F,)) first has m_i > 1/2.

    Bisection in log(alpha) on [lo, hi] with ``iters`` solves each, vmapped over features; returns (F,).
    (m_i is non-decreasing in alpha, a tested property, so the bisection is well posed.)
    """
    a2 = jnp.asarray(a2, dtype=jnp.result_type(float))
    tol = default_tol(a2.dtype) if tol is None else tol
    _check_params(lo, a2, delta, damping, tol, max_iter)
    v.positive("lo", lo)
    v.check("hi", hi, lambda h: h > lo, f"> lo={lo}")
    idx = jnp.atleast_1d(jnp.asarray(idx))
    v.check("idx", idx, lambda i: (i >= 0) & (i < a2.shape[0]), f"in [0, {a2.shape[0]})")
    return _thresholds(idx, a2, delta, kernel or cubic_kernel(), lo, hi, iters, damping, tol, jnp.asarray(max_iter))
