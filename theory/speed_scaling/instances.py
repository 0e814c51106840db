"""Instance generators (LAS's uniform-deadline model, random windows, AVR's lower-bound family) and
predictions of workloads and machine speeds."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, ArrayLike, Float

from jaxwb.theory import validate as v
from jaxwb.theory.speed_scaling.model import SPEED_PREDICTIONS, WORK_PREDICTIONS, check_alpha


def las_instance(
    n_jobs: int = 200, window: int = 20, low: float = 20.0, high: float = 80.0, step: float = 5.0, *, key: Array
) -> tuple[Float[Array, " n_jobs"], Float[Array, " n_jobs"], Float[Array, " n_jobs"]]:
    """LAS's uniform-deadline model: job i released at time i with deadline i + window (``D``), workloads a
    random walk in [low, high]: w_0 ~ U[low, high], w_{i+1} = w_i + U[-step, step], reflected at the walls.

    The step distribution is our choice (the paper's generator is not specified in our notes).
    Returns (release, deadline, work), each (n_jobs,).
    """
    v.prng_key("key", key)
    v.positive_int("n_jobs", n_jobs)
    v.positive_int("window", window)
    v.nonnegative("low", low)
    v.check("high", high, lambda a: a > low, f"> low = {low}", finite=True)
    v.nonnegative("step", step)
    k0, k1 = jax.random.split(key)
    w0 = jax.random.uniform(k0, (), minval=low, maxval=high)
    steps = jax.random.uniform(k1, (n_jobs - 1,), minval=-step, maxval=step)

    def reflect(w, s):
        x = w + s
        x = jnp.where(x > high, 2 * high - x, x)
        x = jnp.where(x < low, 2 * low - x, x)
        return x, x

    _, ws = lax.scan(reflect, w0, steps)
    work = jnp.concatenate([w0[None], ws])
    release = jnp.arange(n_jobs, dtype=work.dtype)
    return release, release + window, work


def random_instance(
    n_jobs: int, horizon: int, min_window: int = 1, max_window: int = 10, max_work: float = 10.0, *, key: Array
) -> tuple[Float[Array, " n_jobs"], Float[Array, " n_jobs"], Float[Array, " n_jobs"]]:
    """Jobs with integer releases U{0 .. horizon - max_window}, integer window lengths U{min .. max_window}
    and work U(0.1, max_work). Returns (release, deadline, work), each (n_jobs,)."""
    v.prng_key("key", key)
    v.positive_int("n_jobs", n_jobs)
    v.positive_int("horizon", horizon)
    v.positive_int("min_window", min_window)
    v.check("max_work", max_work, lambda a: a > 0.1, "> 0.1 (works are U(0.1, max_work))", finite=True)
    v.check("max_window", max_window, lambda a: (a >= min_window) & (a <= horizon), f"in [min_window, {horizon}]")
    k0, k1, k2 = jax.random.split(key, 3)
    r = jax.random.randint(k0, (n_jobs,), 0, horizon - max_window + 1).astype(jnp.result_type(float))
    length = jax.random.randint(k1, (n_jobs,), min_window, max_window + 1).astype(r.dtype)
    w = jax.random.uniform(k2, (n_jobs,), minval=0.1, maxval=max_work)
    return r, r + length, w


def avr_lower_bound_instance(
    n_jobs: int, alpha: float, kappa: float, t_min: float | None = None
) -> tuple[Float[Array, " n_jobs"], Float[Array, " n_jobs"], Float[Array, " n_jobs"]]:
    """The family on which AVR's ratio tends to alpha^alpha: common release 0, deadlines d_i geometric in
    [t_min, 1], work w_i = int_{d_{i+1}}^{d_i} t^-gamma dt with gamma = (1 - kappa) / alpha.

    Continuum limit (OPT(t) = t^-gamma, AVR(t) = (t^-gamma - 1) / gamma):
    ratio(kappa) = (1 - gamma alpha) gamma^-alpha int_0^1 (t^-gamma - 1)^alpha dt  ->  alpha^alpha as kappa ->
    0 (``avr_lower_bound_ratio``). t_min defaults to exp(-6 / kappa): the truncated mass is ~ e^-6 of the
    total (use float64 for kappa < 0.15). The discrete ratio approaches the continuum one as the log-spacing
    6 / (kappa n_jobs) -> 0.
    """
    v.positive_int("n_jobs", n_jobs)
    check_alpha(alpha)
    v.in_interval("kappa", kappa, 0.0, 1.0)
    v.positive("kappa", kappa)
    v.check("t_min", t_min, lambda a: (a > 0) & (a < 1), "in (0, 1)")
    gamma = (1.0 - kappa) / alpha
    log_tmin = math.log(t_min) if t_min is not None else -6.0 / kappa
    dtype = jnp.result_type(float)
    d = jnp.exp(jnp.linspace(0.0, log_tmin, n_jobs + 1, dtype=dtype))  # d_0 = 1 > d_1 > ... > d_n
    prim = d ** (1.0 - gamma) / (1.0 - gamma)
    work = prim[:-1] - prim[1:]
    deadline = d[:-1]
    return jnp.zeros_like(deadline), deadline, work


def avr_lower_bound_ratio(alpha: float, kappa: float, n_quad: int = 20001) -> float:
    """Continuum AVR / OPT on the lower-bound family (see ``avr_lower_bound_instance``), by quadrature in
    u = -log t (float64 NumPy; a reference value, not jitted)."""
    import numpy as np

    check_alpha(alpha)
    v.in_interval("kappa", kappa, 0.0, 1.0)
    v.positive("kappa", kappa)
    v.check("n_quad", n_quad, lambda a: a >= 2, ">= 2")
    gamma = (1.0 - kappa) / alpha
    u = np.linspace(0.0, 80.0 / kappa, n_quad)
    f = np.exp((gamma * alpha - 1.0) * u) * (-np.expm1(-gamma * u)) ** alpha  # (e^{gamma u} - 1)^alpha e^{-u}
    integral = np.trapezoid(f, u)
    return float((1.0 - gamma * alpha) * gamma ** (-alpha) * integral)


def predict_work(
    work: Float[ArrayLike, " n"],
    kind: str = "accurate",
    noise: float = 0.0,
    low: float = 20.0,
    high: float = 80.0,
    *,
    key: Array | None = None,
) -> Float[Array, " n"]:
    """Job-workload predictions w_hat (n,) for LAS.

    accurate    w (1 + noise N(0, 1)), clipped at 0 (noise = 0: perfect)
    random      U[low, high], independent of w                      (LAS's "random predictor")
    misleading  low + high - w: the mirror image inside [low, high]  (LAS's "misleading predictor")
    """
    v.one_of("kind", kind, WORK_PREDICTIONS)
    v.nonnegative("noise", noise)
    v.array("work", work, ndim=1)
    v.nonnegative("work", work)
    v.check("high", high, lambda a: a >= low, f">= low = {low}", finite=True)
    if kind in ("accurate", "random") and key is None:
        raise ValueError(f"key must be a PRNG key for kind={kind!r}, got None")
    work = jnp.asarray(work)
    if key is not None and kind == "accurate":
        return jnp.maximum(work * (1.0 + noise * jax.random.normal(key, work.shape, work.dtype)), 0.0)
    if key is not None and kind == "random":
        return jax.random.uniform(key, work.shape, work.dtype, minval=low, maxval=high)
    return low + high - work


def predict_speed(
    opt_speed: Float[ArrayLike, " n_slots"],
    kind: str = "noisy",
    noise: float = 0.0,
    *,
    shift: int = 0,
    scale: float = 1.0,
    period: int = 10,
    key: Array | None = None,
) -> Float[Array, " n_slots"]:
    """Machine-speed predictions s_hat (n_slots,) built from the optimal grid speed ``opt_speed`` (n_slots,).

    accurate  s*                         noisy     s* exp(noise z - noise^2 / 2), z ~ N(0, 1) per slot
    zero      0                          scaled    scale s*
    shifted   s* rolled by ``shift`` slots (early/late by |shift| dt)
    reversed  s*(T - t)                  uniform   the mean of s* everywhere (right total work, wrong timing)
    spikes    all of s*'s work of each block of ``period`` slots packed into its first slot
    """
    v.one_of("kind", kind, SPEED_PREDICTIONS)
    v.nonnegative("noise", noise)
    v.array("opt_speed", opt_speed, ndim=1)
    v.nonnegative("opt_speed", opt_speed)
    v.nonnegative("scale", scale)
    v.positive_int("period", period)
    if kind == "noisy" and key is None:
        raise ValueError("key must be a PRNG key for kind='noisy', got None")
    s = jnp.asarray(opt_speed)
    if kind == "accurate":
        return s
    if key is not None and kind == "noisy":
        z = jax.random.normal(key, s.shape, s.dtype)
        return s * jnp.exp(noise * z - 0.5 * noise**2)
    if kind == "zero":
        return jnp.zeros_like(s)
    if kind == "scaled":
        return scale * s
    if kind == "shifted":
        return jnp.roll(s, shift)
    if kind == "reversed":
        return s[::-1]
    if kind == "uniform":
        return jnp.full_like(s, jnp.mean(s))
    n = s.shape[0]
    pad = (-n) % period
    blocks = jnp.concatenate([s, jnp.zeros(pad, s.dtype)]).reshape(-1, period)
    out = jnp.zeros_like(blocks).at[:, 0].set(blocks.sum(1))
    return out.reshape(-1)[:n]


def prediction_error(pred: Float[ArrayLike, " m"], truth: Float[ArrayLike, " m"], alpha: float) -> Float[Array, ""]:
    """Relative L_alpha error ||pred - truth||_alpha / ||truth||_alpha (speeds on one grid or workloads)."""
    check_alpha(alpha)
    v.array("pred", pred, ndim=1)
    v.array("truth", truth, ndim=1)
    v.same_shape("truth", truth, "pred", pred)
    v.check("truth", truth, lambda a: (a != 0).any(), "not all zero (the error is relative to it)")
    pred, truth = jnp.asarray(pred), jnp.asarray(truth)
    num = jnp.sum(jnp.abs(pred - truth) ** alpha) ** (1.0 / alpha)
    return num / jnp.sum(jnp.abs(truth) ** alpha) ** (1.0 / alpha)
