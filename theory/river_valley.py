"""River-valley landscapes and momentum: closed forms for heavy ball (HB), Nesterov and GD.

Reference: "Towards understanding momentum acceleration in river-valley loss landscapes" (NeurIPS 2026);
background: Wen et al., ICLR 2025 (warmup-stable-decay, river valley).

Notation (used throughout):
  ``lr``   learning rate (eta),            ``beta`` momentum coefficient in [0, 1),
  ``lam``  valley (sharp) curvature,       ``mu``   river (flat) curvature, mu << lam,
  ``h = lr * lam``  the step measured in units of the curvature.

Heavy ball:  x_{t+1} = x_t - lr * grad(x_t) + beta * (x_t - x_{t-1}),          x_{-1} = x_0   (v_0 = 0)
Nesterov:    y_t = x_t + beta * (x_t - x_{t-1});  x_{t+1} = y_t - lr * grad(y_t)
GD is heavy ball with beta = 0.

On a 1-D quadratic of curvature lam both are linear two-step recursions whose characteristic polynomial is
z^2 - c1 z + c0 with
  HB:        c1 = 1 + beta - h,               c0 = beta                 (eq. HB-char)
  Nesterov:  c1 = (1 + beta)(1 - h),          c0 = beta (1 - h)         (eq. NAG-char)
Everything in this module is a pure function, jit/vmap-compatible; bad concrete parameters raise ValueError.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, ArrayLike, Bool, Complex, Float, Int

from jaxwb.theory import validate as v

METHODS = ("gd", "hb", "nesterov")

# ---------------------------------------------------------------------------------------------------------
# Landscapes
# ---------------------------------------------------------------------------------------------------------


class Valley(NamedTuple):
    """A river valley  L(x, y) = l(x) + 1/2 sum_i lams_i (y_i - a sin(k x))^2,  l(x) = mu/2 (x - x*)^2 + g x.

    theta = (x, y_1, ..., y_d), shape (1 + d,). ``x`` is the river coordinate, ``y`` the valley coordinates.
      straight valley:      a = 0, g = 0          L = mu/2 (x - x*)^2 + lam/2 y^2
      curved valley:        d = 1, a != 0         L = mu/2 (x - x*)^2 + lam/2 (y - a sin(k x))^2
      high-dimensional:     d > 1, a spectrum of valley curvatures lams (see ``valley_spectrum``)
      linear river:         mu = 0, g > 0         the river slopes down forever at constant gradient g
    Fields are arrays so that a Valley is a pytree (vmappable over landscapes).
    """

    mu: Float[Array, ""]
    g: Float[Array, ""]
    lams: Float[Array, " d"]
    a: Float[Array, ""]
    k: Float[Array, ""]
    x_star: Float[Array, ""]


def _valley(mu, g, lams, a, k, x_star, lam_name: str = "lam") -> Valley:
    v.nonnegative("mu", mu)
    v.nonnegative("g", g)
    v.array(lam_name, lams, ndim=(0, 1), finite=False)
    v.positive(lam_name, lams)
    v.finite("a", a)
    v.nonnegative("k", k)
    v.finite("x_star", x_star)
    f = lambda z: jnp.asarray(z, dtype=jnp.result_type(float))
    return Valley(f(mu), f(g), jnp.atleast_1d(f(lams)), f(a), f(k), f(x_star))


def straight_valley(mu: float, lam: float, x_star: float = 0.0) -> Valley:
    """L = mu/2 (x - x*)^2 + lam/2 y^2 (paper's straight valley)."""
    return _valley(mu, 0.0, lam, 0.0, 0.0, x_star)


def curved_valley(mu: float, lam: float, a: float, k: float, x_star: float = 0.0) -> Valley:
    """L = mu/2 (x - x*)^2 + lam/2 (y - a sin(k x))^2 (paper's curved valley)."""
    return _valley(mu, 0.0, lam, a, k, x_star)


def linear_river(g: float, lam: float) -> Valley:
    """L = g x + lam/2 y^2: a river of constant slope g (used for the exact transient and river speed)."""
    return _valley(0.0, g, lam, 0.0, 0.0, 0.0)


def curved_river(g: float, lam: float, a: float, k: float) -> Valley:
    """L = g x + lam/2 (y - a sin(k x))^2: a river of constant slope g along a curved floor y = a sin(k x).

    On the floor the loss is g x; gradient flow that follows the floor moves x at dx/dt = -g / (1 + h'(x)^2),
    h(x) = a sin(k x), so over a whole period 2 pi / k the mean river speed is g / (1 + a^2 k^2 / 2) (the mean of
    1 + a^2 k^2 cos^2 over a period); heavy ball at lr moves at lr / (1 - beta) times that per step (``river_speed``
    in ``sims/river_valley``; curved-river speed of the paper)."""
    return _valley(0.0, g, lam, a, k, 0.0)


def curved_river_speed(
    lr: Float[ArrayLike, "*b"], g: Float[ArrayLike, "*b"], beta: Float[ArrayLike, "*b"], a: float, k: float
) -> Float[ArrayLike, "*b"]:
    """Mean speed along the curved river ``curved_river(g, lam, a, k)`` per step, averaged over whole periods of
    the floor, in the adiabatic limit (the iterate follows the floor; the valley mode settled):

        v = lr g / ((1 - beta) (1 + a^2 k^2 / 2)).

    ``lr`` > 0, ``g`` >= 0, ``beta`` in [0, 1), ``a``, ``k`` finite; broadcasts."""
    _check_lr_beta(lr, beta)
    v.nonnegative("g", g)
    v.finite("a", a)
    v.finite("k", k)
    return lr * g / ((1.0 - beta) * (1.0 + 0.5 * (a * k) ** 2))


def valley_spectrum(d: int, lam_min: float, lam_max: float) -> Float[Array, " d"]:
    """Geometric spectrum of d valley curvatures from lam_min to lam_max, shape (d,)."""
    v.positive_int("d", d)
    v.positive("lam_min", lam_min)
    v.check("lam_max", lam_max, lambda a: a >= lam_min, f">= lam_min={lam_min}")
    v.finite("lam_max", lam_max)
    return jnp.geomspace(lam_min, lam_max, d)


def high_dim_valley(
    mu: float, lams: Float[ArrayLike, " d"], a: float = 0.0, k: float = 0.0, x_star: float = 0.0
) -> Valley:
    """L = l(x) + 1/2 (y - h(x))^T diag(lams) (y - h(x)), h(x) = a sin(k x) 1: the high-dimensional valley."""
    return _valley(mu, 0.0, lams, a, k, x_star, lam_name="lams")


def _check_valley(valley: Valley) -> None:
    if not isinstance(valley, Valley):
        raise ValueError(f"valley must be a Valley (straight_valley, curved_valley, ...), got {type(valley).__name__}")
    for field in ("mu", "g", "a", "k", "x_star"):
        v.finite(f"valley.{field}", getattr(valley, field))
    v.array("valley.lams", valley.lams, ndim=1)
    v.positive("valley.lams", valley.lams)


def _check_theta(name: str, theta, valley: Valley, batched: bool = False) -> None:
    d1 = 1 + valley.lams.shape[0]
    v.array(name, theta, min_ndim=1 if batched else None, ndim=None if batched else 1)
    if np.shape(theta)[-1] != d1:
        raise ValueError(
            f"{name} must have last axis 1 + d = {d1} (river + valley coordinates), got shape {np.shape(theta)}"
        )


def valley_loss(theta: Float[Array, " 1+d"], valley: Valley) -> Float[Array, ""]:
    """Loss of ``theta`` (shape (1 + d,)) on ``valley``; returns a scalar."""
    _check_valley(valley)
    _check_theta("theta", theta, valley)
    return _valley_loss(theta, valley)


def _valley_loss(theta, valley):
    x, y = theta[0], theta[1:]
    river = 0.5 * valley.mu * (x - valley.x_star) ** 2 + valley.g * x
    off = y - valley.a * jnp.sin(valley.k * x)
    return river + 0.5 * jnp.sum(valley.lams * off**2)


def river_distance(theta: Float[Array, "*batch 1+d"], valley: Valley) -> Float[Array, "*batch"]:
    """|x - x*|: distance along the river still to travel. theta (..., 1 + d) -> (...)."""
    _check_valley(valley)
    _check_theta("theta", theta, valley, batched=True)
    return jnp.abs(theta[..., 0] - valley.x_star)


# ---------------------------------------------------------------------------------------------------------
# Optimisers
# ---------------------------------------------------------------------------------------------------------


def _check_lr_beta(lr, beta) -> None:
    v.positive("lr", lr)
    v.in_interval("beta", beta, 0.0, 1.0)


def momentum_step(
    grad_fn: Callable[[Float[Array, "*s"]], Float[Array, "*s"]],
    x: Float[Array, "*s"],
    x_prev: Float[Array, "*s"],
    *,
    lr: Float[ArrayLike, ""],
    beta: Float[ArrayLike, ""],
    method: str,
) -> tuple[Float[Array, "*s"], Float[Array, "*s"]]:
    """One step of ``method`` in {"gd", "hb", "nesterov"}: returns (x_next, x). Shapes follow ``x``."""
    v.one_of("method", method, METHODS)
    _check_lr_beta(lr, beta)
    v.same_shape("x", x, "x_prev", x_prev)
    return _momentum_step(grad_fn, x, x_prev, lr=lr, beta=beta, method=method)


def _momentum_step(grad_fn, x, x_prev, *, lr, beta, method):
    if method == "nesterov":
        y = x + beta * (x - x_prev)
        return y - lr * grad_fn(y), x
    b = 0.0 if method == "gd" else beta
    return x - lr * grad_fn(x) + b * (x - x_prev), x


@partial(jax.jit, static_argnames=("steps", "method", "blowup"))
def _optimize(valley, theta0, lr, beta, steps, method, blowup):
    grad_fn = jax.grad(_valley_loss)
    scale = blowup * (1.0 + jnp.max(jnp.abs(theta0)))

    def body(carry, _):
        x, x_prev, diverged = carry
        x_new, x_old = _momentum_step(lambda z: grad_fn(z, valley), x, x_prev, lr=lr, beta=beta, method=method)
        bad = diverged | ~jnp.all(jnp.isfinite(x_new)) | (jnp.max(jnp.abs(x_new)) > scale)
        # once diverged, freeze the iterate: the trajectory stays finite and the flag records the blow-up
        x_new = jnp.where(bad, x, x_new)
        x_old = jnp.where(bad, x_prev, x_old)
        return (x_new, x_old, bad), x_new

    (_, _, diverged), traj = lax.scan(body, (theta0, theta0, jnp.array(False)), None, length=steps)
    return jnp.concatenate([theta0[None], traj]), diverged


def optimize(
    valley: Valley,
    theta0: Float[ArrayLike, " 1+d"],
    *,
    lr: Float[ArrayLike, ""],
    beta: Float[ArrayLike, ""] = 0.0,
    steps: int,
    method: str = "hb",
    blowup: float = 1e6,
) -> tuple[Float[Array, "steps+1 1+d"], Bool[Array, ""]]:
    """Run ``steps`` iterations of GD / heavy ball / Nesterov on ``valley`` from ``theta0`` (v_0 = 0).

    Returns ``(trajectory, diverged)``: trajectory shape (steps + 1, 1 + d) including theta0; ``diverged`` is a
    bool scalar, True once any |theta| exceeded ``blowup * (1 + max|theta0|)`` or became non-finite (the
    iterate is then frozen at its last finite value, so no NaN or inf leaves this function for a finite
    ``theta0``, which is checked). ``lr`` and ``beta`` may be traced (vmap over grids).
    """
    v.one_of("method", method, METHODS)
    v.positive_int("steps", steps)
    _check_lr_beta(lr, beta)
    v.positive("blowup", blowup)
    _check_valley(valley)
    _check_theta("theta0", theta0, valley)
    theta0 = jnp.asarray(theta0, dtype=valley.mu.dtype)
    return _optimize(valley, theta0, lr, beta, steps, method, blowup)


# ---------------------------------------------------------------------------------------------------------
# Stability thresholds and spectral radii (1-D quadratic of curvature lam)
# ---------------------------------------------------------------------------------------------------------


def gd_threshold(lam: Float[ArrayLike, "*b"]) -> Float[ArrayLike, "*b"]:
    """Largest stable GD learning rate on curvature lam: lr < 2 / lam."""
    v.positive("lam", lam)
    return 2.0 / lam


def hb_threshold(lam: Float[ArrayLike, "*b"], beta: Float[ArrayLike, "*b"]) -> Float[ArrayLike, "*b"]:
    """Largest stable heavy-ball learning rate: lr < 2 (1 + beta) / lam   (|beta| < 1)."""
    v.positive("lam", lam)
    v.in_interval("beta", beta, 0.0, 1.0)
    return 2.0 * (1.0 + beta) / lam


def nesterov_threshold(lam: Float[ArrayLike, "*b"], beta: Float[ArrayLike, "*b"]) -> Float[ArrayLike, "*b"]:
    """Largest stable Nesterov learning rate (constant beta): lr < 2 (1 + beta) / ((1 + 2 beta) lam)."""
    v.positive("lam", lam)
    v.in_interval("beta", beta, 0.0, 1.0)
    return 2.0 * (1.0 + beta) / ((1.0 + 2.0 * beta) * lam)


def char_coeffs(
    lr: Float[ArrayLike, "*b"], lam: Float[ArrayLike, "*b"], beta: Float[ArrayLike, "*b"], method: str = "hb"
) -> tuple[Float[ArrayLike, "*b"], Float[ArrayLike, "*b"]]:
    """(c1, c0) of the characteristic polynomial z^2 - c1 z + c0 (eqs. HB-char, NAG-char).

    ``lr`` > 0, ``lam`` >= 0 (a curvature; 0 is a flat direction), ``beta`` in [0, 1), all finite; broadcast.
    """
    v.one_of("method", method, METHODS)
    _check_lr_beta(lr, beta)
    v.nonnegative("lam", lam)
    h = lr * lam
    fmax = float(jnp.finfo(v.compute_dtype(h)).max)
    v.check("lr * lam", h, lambda a: np.abs(a) <= fmax, f"<= {fmax:.4g} (lr * lam overflows the float dtype)",
            elementwise=True)  # fmt: skip
    if method == "nesterov":
        return (1.0 + beta) * (1.0 - h), beta * (1.0 - h)
    b = 0.0 * beta if method == "gd" else beta
    return 1.0 + b - h, b


def quadratic_roots(
    c1: Float[ArrayLike, "*b"], c0: Float[ArrayLike, "*b"]
) -> tuple[Complex[Array, "*b"], Complex[Array, "*b"]]:
    """Roots of z^2 - c1 z + c0 as complex arrays (r1, r2) with |r1| >= |r2|. Broadcasts over inputs
    (finite real coefficients)."""
    v.finite("c1", c1)
    v.finite("c0", c0)
    return roots_for(c1, c0)


def quadratic_roots_unchecked(c1, c0):
    """``quadratic_roots`` without input checks: the textbook formula, as the simulations compile it (under
    ``jit`` a discriminant c1^2 - 4 c0 that overflows the float dtype gives inf roots; use x64 there)."""
    c1 = jnp.asarray(c1, dtype=jnp.result_type(float))
    disc = (c1**2 - 4.0 * c0).astype(jnp.result_type(c1, jnp.complex64))
    s = jnp.sqrt(disc)
    r1, r2 = (c1 + s) / 2.0, (c1 - s) / 2.0
    swap = jnp.abs(r2) > jnp.abs(r1)
    return jnp.where(swap, r2, r1), jnp.where(swap, r1, r2)


def quadratic_roots_scaled(c1, c0):
    """``quadratic_roots_unchecked`` in the scaled form that cannot overflow: the roots of w^2 - (c1/m) w + c0/m^2
    times m, m = max(|c1|, sqrt|c0|) where c1^2 - 4 c0 overflows (m = 1 elsewhere)."""
    c1 = jnp.asarray(c1, dtype=jnp.result_type(float))
    over = ~jnp.isfinite(c1**2 - 4.0 * c0)
    # the scale's inputs are masked too (1 where unused): no inf * 0 = NaN in the gradient of the ordinary case
    c1_s, c0_s = jnp.where(over, c1, 1.0), jnp.where(over, c0, 1.0)
    m = jnp.where(over, jnp.maximum(jnp.abs(c1_s), jnp.sqrt(jnp.abs(c0_s))), 1.0).astype(c1.dtype)
    m = jax.lax.stop_gradient(m)  # the roots scale exactly with m: a constant scale keeps the gradient exact
    r1, r2 = quadratic_roots_unchecked(c1 / m, c0 / m / m)
    return jnp.where(over, r1 * m, r1), jnp.where(over, r2 * m, r2)


def roots_for(c1, c0):
    """The roots by the textbook formula, or by the scaled form when the values are concrete (an eager call, or
    grad/vjp/jvp of one) and the discriminant overflows there: compiled programs (the simulations) stay
    exactly as they were, and an eager call with extreme finite coefficients gets finite roots."""
    values = v.primal((c1, c0))  # under grad/vjp/jvp of an eager call: the concrete primal values
    if v.is_plain(values):
        dt = jnp.result_type(float)
        with np.errstate(over="ignore", invalid="ignore"):
            c1n, c0n = np.asarray(values[0], dtype=dt), np.asarray(values[1], dtype=dt)
            if not np.all(np.isfinite(c1n * c1n - 4.0 * c0n)):
                return quadratic_roots_scaled(c1, c0)
    return quadratic_roots_unchecked(c1, c0)


def spectral_radius(
    lr: Float[ArrayLike, "*b"], lam: Float[ArrayLike, "*b"], beta: Float[ArrayLike, "*b"], method: str = "hb"
) -> Float[Array, "*b"]:
    """Spectral radius of the linear iteration on curvature lam: max |root|; < 1 iff the method converges.

    In the complex regime of HB, (1 - sqrt beta)^2 <= lr lam <= (1 + sqrt beta)^2, it equals sqrt(beta).
    Broadcasts over lr, lam, beta; checks as ``char_coeffs`` (lr > 0, lam >= 0, beta in [0, 1), finite).
    """
    c1, c0 = char_coeffs(lr, lam, beta, method)
    r1, _ = roots_for(c1, c0)
    return jnp.abs(r1)


def hb_optimal_params(
    mu: Float[ArrayLike, "*b"], L: Float[ArrayLike, "*b"]
) -> tuple[Float[Array, "*b"], Float[Array, "*b"], Float[Array, "*b"]]:
    """Polyak's optimal heavy ball on curvatures in [mu, L], kappa = L / mu.

    Returns (lr, beta, rate): lr = 4 / (sqrt L + sqrt mu)^2, beta = ((sqrt k - 1)/(sqrt k + 1))^2,
    rate = (sqrt k - 1)/(sqrt k + 1) (the spectral radius on every curvature in [mu, L]).
    """
    v.positive("mu", mu)
    v.check("L", L, lambda a: a >= mu, f">= mu={mu}")
    v.finite("L", L)
    ratio = jnp.asarray(L) / jnp.asarray(mu)
    # L / mu overflows (or underflows) for extreme finite inputs: sqrt(L) / sqrt(mu) there, same floats elsewhere
    sk = jnp.where(jnp.isfinite(ratio), jnp.sqrt(ratio), jnp.sqrt(jnp.asarray(L)) / jnp.sqrt(jnp.asarray(mu)))
    rate = (sk - 1.0) / (sk + 1.0)
    return 4.0 / (jnp.sqrt(L) + jnp.sqrt(mu)) ** 2, rate**2, rate


# ---------------------------------------------------------------------------------------------------------
# The river: effective rate, speed gain, exact transient
# ---------------------------------------------------------------------------------------------------------


def effective_river_lr(lr: Float[ArrayLike, "*b"], beta: Float[ArrayLike, "*b"]) -> Float[ArrayLike, "*b"]:
    """Effective learning rate along a flat direction: lr / (1 - beta) (slow root ~ 1 - lr mu / (1 - beta))."""
    _check_lr_beta(lr, beta)
    return lr / (1.0 - beta)


def river_slow_root(
    lr: Float[ArrayLike, "*b"], mu: Float[ArrayLike, "*b"], beta: Float[ArrayLike, "*b"]
) -> Float[ArrayLike, "*b"]:
    """First-order slow root of HB on the river curvature mu: 1 - lr mu / (1 - beta)."""
    v.nonnegative("mu", mu)
    return 1.0 - effective_river_lr(lr, beta) * mu


def overdamped(
    lr: Float[ArrayLike, "*b"], mu: Float[ArrayLike, "*b"], beta: Float[ArrayLike, "*b"]
) -> Bool[ArrayLike, "*b"]:
    """True where the river mode is overdamped (real roots): lr mu <= (1 - sqrt beta)^2."""
    _check_lr_beta(lr, beta)
    v.nonnegative("mu", mu)
    return lr * mu <= (1.0 - jnp.sqrt(beta)) ** 2


def max_stable_river_speed(
    lam_valley: Float[ArrayLike, "*b"], beta: Float[ArrayLike, "*b"], g: Float[ArrayLike, "*b"] = 1.0
) -> Float[ArrayLike, "*b"]:
    """Largest river speed (distance per step on a slope g) at the edge of valley stability.

    HB: 2 (1 + beta) g / ((1 - beta) lam);  GD (beta = 0): 2 g / lam.
    """
    v.positive("lam_valley", lam_valley)
    v.nonnegative("g", g)
    return effective_river_lr(hb_threshold(lam_valley, beta), beta) * g


def river_speed_gain(beta: Float[ArrayLike, "*b"]) -> Float[ArrayLike, "*b"]:
    """Gain of HB's largest stable river speed over GD's: (1 + beta) / (1 - beta) (19x at beta = 0.9)."""
    v.in_interval("beta", beta, 0.0, 1.0)
    return (1.0 + beta) / (1.0 - beta)


def linear_river_transient(
    t: Float[ArrayLike, "*b"],
    x0: Float[ArrayLike, "*b"],
    lr: Float[ArrayLike, "*b"],
    g: Float[ArrayLike, "*b"],
    beta: Float[ArrayLike, "*b"],
) -> Float[ArrayLike, "*b"]:
    """Exact HB position on a linear river of slope g from rest (v_0 = 0):

        x_t = x0 - (lr g / (1 - beta)) [ t - beta (1 - beta^t) / (1 - beta) ].

    ``t`` (>= 0) may be an integer array; broadcasts.
    """
    _check_lr_beta(lr, beta)
    v.nonnegative("t", t)
    v.finite("x0", x0)
    v.nonnegative("g", g)
    t = jnp.asarray(t, dtype=jnp.result_type(float))
    return x0 - (lr * g / (1.0 - beta)) * (t - beta * (1.0 - beta**t) / (1.0 - beta))


def quadratic_trajectory(
    x0: Float[ArrayLike, ""],
    lr: Float[ArrayLike, ""],
    lam: Float[ArrayLike, ""],
    beta: Float[ArrayLike, ""],
    steps: int,
    method: str = "hb",
) -> Float[Array, " steps+1"]:
    """Exact iterates x_0..x_steps of ``method`` on the 1-D quadratic lam/2 x^2 (v_0 = 0), shape (steps + 1,).

    Computed from the 2x2 companion recursion x_{t+1} = c1 x_t - c0 x_{t-1} with the convention x_{-1} = x_0.
    For Nesterov the first step also satisfies this recursion with x_{-1} = x_0.
    Divergence: where ``spectral_radius(lr, lam, beta, method) > 1`` the iterates grow like rho^t and
    overflow to +-inf (NaN after inf - inf) once rho^t exceeds the dtype's range; check the radius first.
    """
    v.positive_int("steps", steps)
    v.finite("x0", x0)
    c1, c0 = char_coeffs(lr, lam, beta, method)

    def body(carry, _):
        x, xp = carry
        xn = c1 * x - c0 * xp
        return (xn, x), xn

    x0 = jnp.asarray(x0, dtype=jnp.result_type(float))
    _, xs = lax.scan(body, (x0, x0), None, length=steps)
    return jnp.concatenate([x0[None], xs])


def quadratic_closed_form(
    t: Int[ArrayLike, "*b"],
    x0: Float[ArrayLike, "*b"],
    lr: Float[ArrayLike, "*b"],
    lam: Float[ArrayLike, "*b"],
    beta: Float[ArrayLike, "*b"],
    method: str = "hb",
    *,
    double_tol: float = 1e-12,
) -> Float[Array, "*b"]:
    """Closed-form iterate x_t of ``method`` on the 1-D quadratic lam/2 x^2 from rest (x_{-1} = x_0), from the
    roots r1, r2 of z^2 - c1 z + c0 (eqs. HB-char, NAG-char) -- no recursion is iterated:

        x_1 = (1 - h) x_0                                  (every method, h = lr lam)
        x_t = A r1^t + B r2^t,  A = (x_1 - r2 x_0)/(r1 - r2),  B = x_0 - A        (distinct roots)
        x_t = r^t x_0 + t r^(t-1) (x_1 - r x_0)                                  (double root r)

    The double-root branch is taken where |c1^2 - 4 c0| <= ``double_tol`` c1^2 (Polyak's optimum sits exactly
    there: x_t = x_0 r^t (1 + (1 - r) t) on the mu edge). ``t`` is an array of non-negative integers; the
    result has the broadcast shape of (t, x0, lr, lam, beta), real. Evaluate in float64 (``jax.enable_x64``)
    when the roots are close: the distinct-root branch loses ~eps / |r1 - r2| relative accuracy.
    Divergence: where the spectral radius exceeds 1, x_t overflows to +-inf for large t (as the iteration
    does); check ``spectral_radius`` first.
    """
    v.one_of("method", method, METHODS)
    v.nonnegative("t", t)
    v.finite("x0", x0)
    v.nonnegative("double_tol", double_tol)
    c1, c0 = char_coeffs(lr, lam, beta, method)
    dt = jnp.result_type(c1, float)
    c1 = jnp.asarray(c1, dt)
    c0 = jnp.asarray(c0, dt)
    t = jnp.asarray(t, dt)
    x0 = jnp.asarray(x0, dt)
    x1 = (1.0 - jnp.asarray(lr, dt) * jnp.asarray(lam, dt)) * x0
    r1, r2 = quadratic_roots_unchecked(c1, c0)
    disc = c1**2 - 4.0 * c0
    double = jnp.abs(disc) <= double_tol * jnp.maximum(c1**2, jnp.finfo(dt).tiny)
    sep = jnp.where(double, 1.0, r1 - r2)
    A = (x1 - r2 * x0) / sep
    distinct = A * r1**t + (x0 - A) * r2**t
    r = 0.5 * (r1 + r2)
    tm1 = jnp.maximum(t - 1.0, 0.0)
    rep = r**t * x0 + t * r**tm1 * (x1 - r * x0)
    return jnp.real(jnp.where(double, rep, distinct))


# ---------------------------------------------------------------------------------------------------------
# Practical guidance
# ---------------------------------------------------------------------------------------------------------


class Guidance(NamedTuple):
    lr: Float[Array, ""]
    beta: Float[Array, ""]
    river_rate: Float[Array, ""]  # 1 - spectral radius on mu: fraction of the remaining river distance removed per step
    gd_river_rate: Float[Array, ""]  # the same for GD at safety * 2 / lam
    valley_radius: Float[Array, ""]  # spectral radius on lam at the recommended point (< 1)


def hb_guidance(
    lam_valley: Float[ArrayLike, ""], mu_river: Float[ArrayLike, ""], *, safety: float = 0.9, num_betas: int = 512
) -> Guidance:
    """Recommend (lr, beta) for heavy ball on a valley of curvature lam and a river of curvature mu.

    Rule: for each beta take the largest safe learning rate lr(beta) = safety * 2 (1 + beta) / lam (valley
    stability with a margin), then choose beta maximising the river rate 1 - rho(lr(beta), mu, beta). This is
    the paper's guidance made explicit: raise beta together with lr, as long as the river mode stays
    overdamped (lr mu <~ (1 - sqrt beta)^2); past that the river oscillates and the rate drops to
    1 - sqrt(beta).
    """
    v.positive("lam_valley", lam_valley)
    v.positive("mu_river", mu_river)
    v.check("mu_river", mu_river, lambda a: a < lam_valley, f"< lam_valley={lam_valley}")
    v.in_interval("safety", safety, 0.0, 1.0)
    v.positive("safety", safety)
    v.positive_int("num_betas", num_betas)
    betas = jnp.linspace(0.0, 0.999, num_betas)
    lrs = safety * 2.0 * (1.0 + betas) / lam_valley
    rates = 1.0 - spectral_radius(lrs, mu_river, betas)
    i = jnp.argmax(rates)
    gd_rate = 1.0 - spectral_radius(safety * 2.0 / lam_valley, mu_river, 0.0)
    return Guidance(lrs[i], betas[i], rates[i], gd_rate, spectral_radius(lrs[i], lam_valley, betas[i]))
