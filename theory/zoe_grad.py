"""ZOE-Grad: surrogate gradients of a quantizer as expectations of zeroth-order estimators
(NeurIPS 2026; the paper's estimator and theorems are not public, so everything below is a
*reconstruction* from the abstract: a standard derivation, stated and proved here).

Quantizer (one dimension, applied element-wise). Levels ``q_0 < q_1 < ... < q_K`` (an array ``levels[..., K+1]``),
decision boundaries ``b_k = (q_{k-1} + q_k) / 2`` (round to nearest), steps ``D_k = q_k - q_{k-1}``, k = 1..K:

    (1)  Q(x) = q_0 + sum_k D_k 1[x > b_k]                     (clips to [q_0, q_K] outside)   -> ``quantize``

Uniform INT-b (unit step, symmetric): ``q = -M..M``, ``M = 2^(b-1) - 1`` -> ``int_levels``; a real INT-b
tensor is ``Delta * Q(x / Delta)``. FP4 E2M1 with a block scale s: ``s * Q_E2M1(x / s)`` with levels
{0, .5, 1, 1.5, 2, 3, 4, 6} and negatives -> ``E2M1_LEVELS``. Because ``d/dx [s Q(x/s)] = Q'(x/s)``, every
formula below is written on the unit-scale levels ("z space", z = x / scale) and the scale drops out of the
gradient; in the fake-quantization op the scale is held constant in the backward pass (``stop_gradient``).

Perturbation laws (``LAWS``): u with a symmetric density p of zero mean and **unit variance**; the perturbation
is sigma * u, so ``sigma`` is its standard deviation (in units of the grid / block scale):

    law          density p(u)                              CDF F                    score psi = -p'/p
    gaussian     exp(-u^2/2) / sqrt(2 pi)                  Phi(u)                   u
    logistic     sech^2(u / 2s) / (4 s), s = sqrt(3)/pi    sigmoid(u / s)           tanh(u / 2s) / s
    triangular   (a - |u|) / a^2 on |u| < a, a = sqrt 6    piecewise quadratic      sign(u) / (a - |u|)
    uniform      1 / (2a) on |u| < a, a = sqrt 3           clip((u + a) / 2a)       point masses at u = +-a

Smoothed quantizer and the closed-form surrogate (a sum of bumps centred on the boundaries):

    (2)  Q_sigma(x) = E[Q(x + sigma u)] = q_0 + sum_k D_k (1 - F((b_k - x) / sigma))          -> ``smoothed``
    (3)  g_sigma(x) = d/dx Q_sigma(x)   = sum_k D_k p_sigma(b_k - x),  p_sigma(t) = p(t/sigma)/sigma
                                                                                       -> ``surrogate_grad``

Zeroth-order estimators (only evaluations of the hard quantizer Q; u ~ p):

    (4)  score function   g1(x; u) = Q(x + sigma u) psi(u) / sigma                     -> ``score_estimator``
    (5)  two-point        g2(x; u) = (Q(x + sigma u) - Q(x - sigma u)) psi(u) / (2 sigma) -> ``two_point_estimator``

    E[g1] = E[g2] = g_sigma(x)   (integration by parts: d/dx int Q(x + sigma u) p(u) du = (1/sigma) int Q(x +
    sigma u) (-p'(u)) du, the boundary terms vanish because Q is bounded and p -> 0 at the ends of its support;
    g2 is the antithetic average of g1 and g1 at -u, equal in law for a symmetric p.)

STE as the degenerate case. The uniform law has no density score: its density's derivative is the pair of
point masses p' = (delta(u + a) - delta(u - a)) / (2a), so (4)-(5) collapse to the deterministic edge difference

    (6)  g_unif(x) = (Q(x + sigma a) - Q(x - sigma a)) / (2 sigma a),  a = sqrt 3,

and for unit-step levels with window 2 sigma a = 1 (sigma = 1/sqrt 12) every window holds exactly one boundary
inside the clip range: g_unif = g_sigma = 1[q_0 < x < q_K], the clipped STE, *for every x* (a unit test).
Its density is discontinuous, which is why its surrogate ignores where the boundaries are.

Second moment of (4) in closed form (laws with finite Fisher information; Q^2 is again a step function):

    (7)  E[g1^2] = ( q_0^2 I + sum_k (q_k^2 - q_{k-1}^2) m2((b_k - x)/sigma) ) / sigma^2,
         m2(t) = int_t^inf psi^2 p du:  gaussian t phi(t) + 1 - Phi(t) (I = 1);
         logistic (1 - tanh^3(t / 2s)) / (6 s^2)  (I = 1/(3 s^2) = pi^2/9)            -> ``score_second_moment``
    The triangular law has I = infinity (psi^2 p ~ 1/(a^2 (a - |u|)), log-divergent at the edges): g1 and g2
    are unbiased but have infinite variance; decide their means on the spread of per-seed means.

Fourier check of the sigma sweep (Poisson summation; an independent closed form). For the infinite unit grid,
sum_k p_sigma(k + 1/2 - x) = sum_m phi(2 pi m sigma) exp(2 pi i m (x - 1/2)), phi the law's characteristic
function (gaussian exp(-t^2/2), logistic pi s t / sinh(pi s t), triangular sinc^2(a t / 2), uniform
sin(a t)/(a t)), so far from the clip ends

    (8)  g_sigma(level) = 1 + 2 sum_{m>=1} (-1)^m phi(2 pi m sigma),  g_sigma(boundary) = 1 + 2 sum phi(2 pi m sigma)
                                                                                       -> ``grid_ripple``
    The uniform law's phi(2 pi m / sqrt 12 * sqrt 3) = sin(pi m)/(pi m) = 0: (8) is exactly 1 (STE again).

Bounded-error convergence (theorem proved here; ``convergence_bound``, ``bias_bound``). Objective
f(Q(w)) with f L_f-smooth; smoothed objective F_sigma(w) = f(Q_sigma(w)) (element-wise Q_sigma), assumed
L-smooth. QAT backprop with the surrogate (closed form or a ZO estimate g_hat with E g_hat = g_sigma) gives

    h_t = grad f(Q(w_t)) * g_hat(w_t) = grad F_sigma(w_t) + b_t + xi_t,
    b_t = (grad f(Q(w_t)) - grad f(Q_sigma(w_t))) * g_sigma(w_t)   (bias: forward uses Q, not Q_sigma),
    |b_t| <= B := L_f eps_sigma G_sigma,  eps_sigma = sup|Q - Q_sigma|, G_sigma = sup g_sigma    (9)
    E[xi_t | w_t] = 0, E|xi_t|^2 <= V  (V = 0 for the closed-form backward).
SGD w_{t+1} = w_t - eta h_t with eta <= 1/(4L). Descent lemma, <a, b> >= -(|a|^2 + |b|^2)/2 and
|a + b|^2 <= 2|a|^2 + 2|b|^2:  E F_{t+1} <= F_t - (eta/4)|grad F_t|^2 + (3 eta/4)|b_t|^2 + (L eta^2 / 2) V.
Summing over t < T:

    (10) (1/T) sum_t E|grad F_sigma(w_t)|^2 <= 4 (F_sigma(w_0) - inf F_sigma) / (eta T) + 3 B^2 + 2 L eta V.

SGD with the surrogate reaches a neighbourhood (radius^2 3 B^2 + 2 L eta V) of a stationary point of the
*smoothed* objective; the neighbourhood shrinks with the step size (V term) and with the bias. The bias bound
(9) is not monotone in sigma: for sigma -> 0, G_sigma ~ max_k D_k p(0)/sigma blows up while eps_sigma -> max D/2;
for large sigma, G_sigma -> the mean slope but F_sigma moves away from f(Q) (|Q - Q_sigma| grows near the clip
ends). This differs from the notes' "shrinks with sigma" reading; see ``sims/zoe_grad/``.

All functions are jit/vmap compatible; ``law`` and the level count are static. Parameters are checked eagerly
(outside jit) with ValueErrors naming them; inside ``jaxwb.theory.checked`` also under jit.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from jaxwb.theory import validate as v

LAWS = ("gaussian", "logistic", "triangular", "uniform")
SCORE_LAWS = ("gaussian", "logistic", "triangular")  # laws with a density score psi = -p'/p
LOGISTIC_S = math.sqrt(3.0) / math.pi  # unit-variance logistic scale
TRIANGULAR_A = math.sqrt(6.0)  # unit-variance triangular half-width
UNIFORM_A = math.sqrt(3.0)  # unit-variance uniform half-width
STE_SIGMA = 1.0 / math.sqrt(12.0)  # the uniform law of width one grid step (std of U[-1/2, 1/2])
E2M1_LEVELS = (-6.0, -4.0, -3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def _law(law: str) -> None:
    v.one_of("law", law, LAWS)


def _sigma(sigma) -> None:
    v.positive("sigma", sigma)


def _x(x) -> None:
    v.array("x", x, allow_empty=True)


def int_levels(bits: int) -> Float[Array, " L"]:
    """Symmetric unit-step INT-b levels ``-M..M``, ``M = 2^(b-1) - 1`` (``2^b - 1`` levels; b >= 2)."""
    v.positive_int("bits", bits)
    if bits < 2:
        raise ValueError(f"bits must be >= 2 (symmetric INT-b needs M = 2^(b-1) - 1 >= 1), got {bits}")
    m = 2 ** (bits - 1) - 1
    return jnp.arange(-m, m + 1, dtype=jnp.float32)


def e2m1_levels() -> Float[Array, " 15"]:
    """The 15 distinct FP4 E2M1 values (+0 and -0 merged), ascending."""
    return jnp.asarray(E2M1_LEVELS, jnp.float32)


def check_levels(levels: Float[ArrayLike, "*b L"], *, ndim: int | None = None) -> None:
    """``levels[..., L]``: real, L >= 2, finite and strictly increasing along the last axis (rank ``ndim``
    when given). Eager; under ``jaxwb.theory.checked`` also for traced levels."""
    v.array("levels", levels, min_ndim=1, ndim=ndim)
    if np.shape(levels)[-1] < 2:
        raise ValueError(f"levels must have a last axis of length >= 2, got shape {np.shape(levels)}")
    v.check("levels", levels, lambda a: (a[..., 1:] > a[..., :-1]).all(), "strictly increasing along the last axis")


def boundaries(levels: Float[ArrayLike, "*b L"]) -> Float[Array, "*b L-1"]:
    """Round-to-nearest decision boundaries ``b_k = (q_{k-1} + q_k) / 2`` (eq. 1)."""
    check_levels(levels)
    return _boundaries(jnp.asarray(levels))


def _boundaries(levels):
    return 0.5 * (levels[..., 1:] + levels[..., :-1])


def steps(levels: Float[ArrayLike, "*b L"]) -> Float[Array, "*b L-1"]:
    """Level steps ``D_k = q_k - q_{k-1}``."""
    check_levels(levels)
    return _steps(jnp.asarray(levels))


def _steps(levels):
    return levels[..., 1:] - levels[..., :-1]


# ---------------------------------------------------------------------------------------------------------
# Perturbation laws (unit variance)
# ---------------------------------------------------------------------------------------------------------


def pdf(t: Float[ArrayLike, "*b"], law: str) -> Float[Array, "*b"]:
    """Density p(t) of the unit-variance ``law`` (table in the module docstring); ``t`` real, not NaN
    (+-inf gives 0)."""
    _law(law)
    _not_nan("t", t)
    return _pdf(t, law)


def _not_nan(name, t) -> None:
    v.check(name, t, lambda a: a == a, "a real number (not NaN)")


def _pdf(t, law):
    t = jnp.asarray(t, jnp.float32)
    if law == "gaussian":
        return jnp.exp(-0.5 * t * t) / np.float32(math.sqrt(2 * math.pi))
    if law == "logistic":
        s = np.float32(LOGISTIC_S)
        e = jnp.exp(-jnp.abs(t) / s)
        return e / (s * (1.0 + e) ** 2)
    if law == "triangular":
        a = np.float32(TRIANGULAR_A)
        return jnp.maximum(a - jnp.abs(t), 0.0) / (a * a)
    if law == "uniform":
        a = np.float32(UNIFORM_A)
        return jnp.where(jnp.abs(t) < a, 1.0 / (2 * a), 0.0).astype(jnp.float32)
    raise ValueError(f"law must be one of {LAWS}, got {law!r}")


def cdf(t: Float[ArrayLike, "*b"], law: str) -> Float[Array, "*b"]:
    """Distribution function F(t) of the unit-variance ``law``; ``t`` real, not NaN (+-inf gives 0 / 1)."""
    _law(law)
    _not_nan("t", t)
    return _cdf(t, law)


def _cdf(t, law):
    t = jnp.asarray(t, jnp.float32)
    if law == "gaussian":
        return jax.scipy.stats.norm.cdf(t)
    if law == "logistic":
        return jax.nn.sigmoid(t / np.float32(LOGISTIC_S))
    if law == "triangular":
        a = np.float32(TRIANGULAR_A)
        r = jnp.clip(a - jnp.abs(t), 0.0, a)
        tail = r * r / (2 * a * a)  # mass beyond |t| on one side
        return jnp.where(t < 0, tail, 1.0 - tail)
    if law == "uniform":
        a = np.float32(UNIFORM_A)
        return jnp.clip((t + a) / (2 * a), 0.0, 1.0)
    raise ValueError(f"law must be one of {LAWS}, got {law!r}")


def score(u: Float[ArrayLike, "*b"], law: str) -> Float[Array, "*b"]:
    """Score psi(u) = -p'(u)/p(u) of a law with a density score (not ``uniform``: its score is two point masses,
    see ``two_point_estimator``). ``u`` finite."""
    _law(law)
    v.finite("u", u)
    return _score(u, law)


def _score(u, law):
    u = jnp.asarray(u, jnp.float32)
    if law == "gaussian":
        return u
    if law == "logistic":
        s = np.float32(LOGISTIC_S)
        return jnp.tanh(u / (2 * s)) / s
    if law == "triangular":
        a = np.float32(TRIANGULAR_A)
        return jnp.sign(u) / jnp.maximum(a - jnp.abs(u), np.float32(1e-30))
    if law == "uniform":
        raise ValueError(
            "law 'uniform' has no density score (its score is a pair of point masses at +-a); "
            "use two_point_estimator, which evaluates the edges"
        )
    raise ValueError(f"law must be one of {LAWS}, got {law!r}")


def sample(shape: tuple[int, ...], law: str, *, key: PRNGKeyArray) -> Float[Array, "*shape"]:
    """Draws of the unit-variance ``law`` (float32 of ``shape``); triangular = sum of two uniforms."""
    v.prng_key("key", key)
    _law(law)
    if not isinstance(shape, tuple) or not all(isinstance(d, (int, np.integer)) and d >= 0 for d in shape):
        raise ValueError(f"shape must be a tuple of non-negative integers, got {shape!r}")
    return _sample(key, shape, law)


def _sample(key, shape, law):
    if law == "gaussian":
        return jax.random.normal(key, shape)
    if law == "logistic":
        return jax.random.logistic(key, shape) * np.float32(LOGISTIC_S)
    if law == "triangular":
        k1, k2 = jax.random.split(key)
        h = np.float32(TRIANGULAR_A / 2)
        return jax.random.uniform(k1, shape, minval=-h, maxval=h) + jax.random.uniform(k2, shape, minval=-h, maxval=h)
    a = np.float32(UNIFORM_A)
    return jax.random.uniform(key, shape, minval=-a, maxval=a)


def char_fn(t: Float[ArrayLike, "*b"], law: str) -> Float[Array, "*b"]:
    """Characteristic function E[exp(i t u)] (real: the laws are symmetric), used by ``grid_ripple`` (eq. 8).
    ``t`` finite."""
    _law(law)
    v.finite("t", t)
    return _char_fn(t, law)


def _char_fn(t, law):
    t = jnp.asarray(t, jnp.float32)
    if law == "gaussian":
        return jnp.exp(-0.5 * t * t)
    if law == "logistic":
        z = np.float32(math.pi * LOGISTIC_S) * t
        return jnp.where(jnp.abs(z) < 1e-6, 1.0, z / jnp.sinh(jnp.where(jnp.abs(z) < 1e-6, 1.0, z)))
    if law == "triangular":
        return jnp.sinc(np.float32(TRIANGULAR_A / 2) * t / np.pi) ** 2
    if law == "uniform":
        return jnp.sinc(np.float32(UNIFORM_A) * t / np.pi)
    raise ValueError(f"law must be one of {LAWS}, got {law!r}")


# ---------------------------------------------------------------------------------------------------------
# Quantizer, smoothed quantizer, closed-form surrogate
# ---------------------------------------------------------------------------------------------------------


def quantize(x: Float[ArrayLike, "*b"], levels: Float[ArrayLike, "*b L"]) -> Float[Array, "*b"]:
    """Hard round-to-nearest quantizer (eq. 1) on ``levels[..., L]`` (broadcast against ``x[...]``); ``x``
    finite."""
    _x(x)
    check_levels(levels)
    return _quantize(x, levels)


def _quantize(x, levels):
    x = jnp.asarray(x, jnp.float32)
    lv = jnp.asarray(levels, jnp.float32)
    return lv[..., 0] + jnp.sum(_steps(lv) * (x[..., None] > _boundaries(lv)), axis=-1)


def smoothed(
    x: Float[ArrayLike, "*b"], levels: Float[ArrayLike, "*b L"], sigma: Float[ArrayLike, ""], *, law: str
) -> Float[Array, "*b"]:
    """Q_sigma(x) = E[Q(x + sigma u)] (eq. 2), u ~ ``law`` with unit variance."""
    _law(law)
    _sigma(sigma)
    _x(x)
    check_levels(levels)
    return _smoothed(x, levels, sigma, law)


def _smoothed(x, levels, sigma, law):
    x = jnp.asarray(x, jnp.float32)
    lv = jnp.asarray(levels, jnp.float32)
    t = (_boundaries(lv) - x[..., None]) / sigma
    return lv[..., 0] + jnp.sum(_steps(lv) * (1.0 - _cdf(t, law)), axis=-1)


def surrogate_grad(
    x: Float[ArrayLike, "*b"], levels: Float[ArrayLike, "*b L"], sigma: Float[ArrayLike, "*b"], *, law: str
) -> Float[Array, "*b"]:
    """Closed-form surrogate g_sigma(x) = sum_k D_k p_sigma(b_k - x) (eq. 3): the derivative of ``smoothed``.

    ``x[...]``, ``levels[L]`` or ``levels[..., L]`` (per-element levels, e.g. RaZeR's per-block special value),
    ``sigma`` > 0 (scalar or broadcastable against ``x``)."""
    _law(law)
    _sigma(sigma)
    _x(x)
    check_levels(levels)
    return _surrogate_grad(x, levels, sigma, law)


def _surrogate_grad(x, levels, sigma, law):
    x = jnp.asarray(x, jnp.float32)
    lv = jnp.asarray(levels, jnp.float32)
    sig = jnp.asarray(sigma, jnp.float32)
    t = (_boundaries(lv) - x[..., None]) / sig[..., None]
    return jnp.sum(_steps(lv) * _pdf(t, law), axis=-1) / sig


def score_second_moment(
    x: Float[ArrayLike, "*b"], levels: Float[ArrayLike, "*b L"], sigma: Float[ArrayLike, ""], *, law: str
) -> Float[Array, "*b"]:
    """E[g1(x; u)^2] of the score-function estimator with the hard quantizer on ``levels`` (eq. 7);
    gaussian and logistic only (the triangular law has infinite Fisher information)."""
    v.one_of("law", law, ("gaussian", "logistic"))
    _sigma(sigma)
    _x(x)
    check_levels(levels)
    x = jnp.asarray(x, jnp.float32)
    lv = jnp.asarray(levels, jnp.float32)
    t = (_boundaries(lv) - x[..., None]) / sigma
    if law == "gaussian":
        m2 = t * _pdf(t, "gaussian") + 1.0 - _cdf(t, "gaussian")
        info = 1.0
    else:
        s = LOGISTIC_S
        m2 = (1.0 - jnp.tanh(t / (2 * s)) ** 3) / (6 * s * s)
        info = 1.0 / (3 * s * s)
    dq2 = lv[..., 1:] ** 2 - lv[..., :-1] ** 2
    return (lv[..., 0] ** 2 * info + jnp.sum(dq2 * m2, axis=-1)) / sigma**2


# ---------------------------------------------------------------------------------------------------------
# Zeroth-order estimators
# ---------------------------------------------------------------------------------------------------------


def score_estimator(
    q_fn: Callable[[Float[Array, "*s"]], Float[Array, "*s"]],
    x: Float[ArrayLike, "*s"],
    sigma: Float[ArrayLike, ""],
    *,
    law: str,
    key: PRNGKeyArray,
    n: int,
) -> Float[Array, "n ..."]:
    """``n`` draws of g1(x; u) = Q(x + sigma u) psi(u) / sigma (eq. 4): shape ``(n, *x.shape)``.

    ``q_fn`` is the hard quantizer (any callable mapping an array to its quantized values element-wise, e.g.
    ``lambda z: quantize(z, levels)`` or a kernel's quantize-dequantize round trip)."""
    v.prng_key("key", key)
    v.one_of("law", law, SCORE_LAWS)
    _sigma(sigma)
    v.positive_int("n", n)
    _x(x)
    if not callable(q_fn):
        raise ValueError(f"q_fn must be callable, got {type(q_fn).__name__}")
    x = jnp.asarray(x, jnp.float32)
    u = _sample(key, (n, *x.shape), law)
    return q_fn(x + sigma * u) * _score(u, law) / sigma


def two_point_estimator(
    q_fn: Callable[[Float[Array, "*s"]], Float[Array, "*s"]],
    x: Float[ArrayLike, "*s"],
    sigma: Float[ArrayLike, ""],
    *,
    law: str,
    key: PRNGKeyArray,
    n: int,
) -> Float[Array, "n ..."]:
    """``n`` draws of g2(x; u) = (Q(x + sigma u) - Q(x - sigma u)) psi(u) / (2 sigma) (eq. 5); for
    ``law="uniform"`` the degenerate edge difference (eq. 6), the same value for every draw."""
    v.prng_key("key", key)
    _law(law)
    _sigma(sigma)
    v.positive_int("n", n)
    _x(x)
    if not callable(q_fn):
        raise ValueError(f"q_fn must be callable, got {type(q_fn).__name__}")
    x = jnp.asarray(x, jnp.float32)
    if law == "uniform":
        h = sigma * np.float32(UNIFORM_A)
        g = (q_fn(x + h) - q_fn(x - h)) / (2 * h)
        return jnp.broadcast_to(g, (n, *x.shape))
    u = _sample(key, (n, *x.shape), law)
    return (q_fn(x + sigma * u) - q_fn(x - sigma * u)) * _score(u, law) / (2 * sigma)


# ---------------------------------------------------------------------------------------------------------
# Fourier check of the sigma sweep, convergence bound
# ---------------------------------------------------------------------------------------------------------


def grid_ripple(
    sigma: Float[ArrayLike, "*b"], *, law: str, at: str = "level", n_terms: int = 4096
) -> Float[Array, "*b"]:
    """g_sigma on the infinite unit grid at a level (``at="level"``) or a boundary (eq. 8, Poisson summation)."""
    _law(law)
    _sigma(sigma)
    v.one_of("at", at, ("level", "boundary"))
    v.positive_int("n_terms", n_terms)
    m = jnp.arange(1, n_terms + 1, dtype=jnp.float32)
    sig = jnp.asarray(sigma, jnp.float32)
    phi = _char_fn(2 * np.pi * m * sig[..., None], law)
    sign = jnp.where(m % 2 == 1, -1.0, 1.0) if at == "level" else jnp.ones_like(m)
    return 1.0 + 2.0 * jnp.sum(sign * phi, axis=-1)


def sup_on_grid(
    fn: Callable[[Float[Array, " G"]], Float[Array, " G"]],
    levels: Float[ArrayLike, " L"],
    n: int = 4097,
    pad: float = 3.0,
) -> Float[Array, ""]:
    """max of ``fn`` over a dense grid of [q_0 - pad, q_K + pad] that contains every boundary and level
    (the sups in eq. 9; exact for bumps peaking at the boundaries, otherwise within the grid spacing)."""
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {type(fn).__name__}")
    check_levels(levels, ndim=1)
    v.positive_int("n", n)
    v.check("n", n, lambda a: a >= 2, ">= 2")
    v.nonnegative("pad", pad)
    return _sup_on_grid(fn, levels, n, pad)


def _sup_on_grid(fn, levels, n=4097, pad=3.0):
    lv = jnp.asarray(levels, jnp.float32)
    grid = jnp.concatenate([jnp.linspace(lv[0] - pad, lv[-1] + pad, n), lv, 0.5 * (lv[1:] + lv[:-1])])
    return jnp.max(fn(grid))


def bias_bound(
    levels: Float[ArrayLike, " L"], sigma: Float[ArrayLike, ""], *, law: str, lf: float = 1.0
) -> Float[Array, ""]:
    """B = L_f sup|Q - Q_sigma| sup g_sigma (eq. 9), the per-coordinate bias bound of the surrogate gradient.
    ``sup|Q - Q_sigma|`` includes the one-sided limits of Q at the boundaries (where it is attained)."""
    _law(law)
    _sigma(sigma)
    check_levels(levels, ndim=1)
    v.positive("lf", lf)
    lv = jnp.asarray(levels, jnp.float32)
    b = _boundaries(lv)
    eps_grid = _sup_on_grid(lambda z: jnp.abs(_quantize(z, lv) - _smoothed(z, lv, sigma, law)), lv)
    # at a boundary Q jumps: sup includes |q_k - Q_sigma(b_k)| and |q_{k-1} - Q_sigma(b_k)|
    qs_b = _smoothed(b, lv, sigma, law)
    eps_b = jnp.maximum(jnp.max(jnp.abs(lv[1:] - qs_b)), jnp.max(jnp.abs(lv[:-1] - qs_b)))
    g = _sup_on_grid(lambda z: _surrogate_grad(z, lv, sigma, law), lv)
    return lf * jnp.maximum(eps_grid, eps_b) * g


def convergence_bound(
    gap: Float[ArrayLike, "*b"],
    *,
    eta: Float[ArrayLike, "*b"],
    smooth: Float[ArrayLike, "*b"],
    steps_t: int,
    bias_sq: Float[ArrayLike, "*b"],
    var: Float[ArrayLike, "*b"],
) -> Float[ArrayLike, "*b"]:
    """Right-hand side of eq. 10: ``4 gap / (eta T) + 3 B^2 + 2 L eta V`` (valid for eta <= 1/(4L)).

    gap = F_sigma(w_0) - inf F_sigma, smooth = L, steps_t = T, bias_sq = B^2 (summed over coordinates),
    var = V (the estimator's variance, summed over coordinates)."""
    v.nonnegative("gap", gap)
    v.positive("eta", eta)
    v.positive("smooth", smooth)
    v.positive_int("steps_t", steps_t)
    v.nonnegative("bias_sq", bias_sq)
    v.nonnegative("var", var)
    if v.is_concrete((eta, smooth)):
        eta_, smooth_ = float(v.primal(eta)), float(v.primal(smooth))
        if eta_ * smooth_ > 0.25 * (1 + 1e-5):
            raise ValueError(f"eta must be <= 1/(4 smooth) = {0.25 / smooth_:.4g}, got {eta_}")
    return 4.0 * gap / (eta * steps_t) + 3.0 * bias_sq + 2.0 * smooth * eta * var
