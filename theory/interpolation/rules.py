"""Parameters: the momentum rule (eq. RULE), its saturation point and the sufficient stability condition
(eq. STAB) (notation: ``jaxwb.theory.interpolation``)."""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from jaxwb.theory import validate as v
from jaxwb.theory.interpolation.problem import METHODS
from jaxwb.theory.river_valley import spectral_radius

# ---------------------------------------------------------------------------------------------------------
# Parameters: the momentum rule and the sufficient stability condition
# ---------------------------------------------------------------------------------------------------------


def momentum_rule(
    mu: Float[ArrayLike, "*b"],
    L: Float[ArrayLike, "*b"],
    L_max: Float[ArrayLike, "*b"],
    batch_size: Float[ArrayLike, "*b"],
    method: str = "hb",
    a: float | None = None,
) -> tuple[Float[ArrayLike, "*b"], Float[ArrayLike, "*b"]]:
    """(lr, beta) of the simple batch-size rule (module docstring, eq. RULE):

        lr = min(4 mu (B / L_max)^2, a / L),   heavy ball: beta = (1 - sqrt(lr mu))^2  (a = 2),
                                               Nesterov:   beta = (1 - sqrt(lr mu)) / (1 + sqrt(lr mu))  (a =
                                               1),
    i.e. critically damp the slowest mode and grow the step like B^2 so that the effective step
    lr / (1 - beta) ~= B / L_max stays at half of the noise limit 2 B / L_max of eq. STAB; it saturates at
    B = L_max sqrt(a) / (2 sqrt(L mu)) ~ tr H / sqrt(L mu). For "sgd": lr = 1 / (L (1 - 1/B) + L_max / B),
    beta = 0 (the step minimising the Lyapunov bound E||e'||^2 <= (1 - lr (2 - lr L_B') mu) ||e||^2)."""
    v.one_of("method", method, METHODS)
    v.positive("mu", mu)
    v.positive("L", L)
    v.positive("L_max", L_max)
    v.positive("batch_size", batch_size, allow_inf=True)
    if method == "sgd":
        return 1.0 / (L * (1.0 - 1.0 / batch_size) + L_max / batch_size), 0.0 * jnp.asarray(mu)
    a = (2.0 if method == "hb" else 1.0) if a is None else a
    v.positive("a", a)
    lr = jnp.minimum(4.0 * mu * (batch_size / L_max) ** 2, a / L)
    s = jnp.sqrt(lr * mu)
    return lr, ((1.0 - s) ** 2 if method == "hb" else (1.0 - s) / (1.0 + s))


def rule_saturation(
    mu: Float[ArrayLike, "*b"],
    L: Float[ArrayLike, "*b"],
    L_max: Float[ArrayLike, "*b"],
    method: str = "hb",
    a: float | None = None,
) -> Float[ArrayLike, "*b"]:
    """Batch size where the rule's step reaches a / L: B = L_max sqrt(a) / (2 sqrt(L mu))."""
    v.one_of("method", method, ("hb", "nesterov"))
    v.positive("mu", mu)
    v.positive("L", L)
    v.positive("L_max", L_max)
    a = (2.0 if method == "hb" else 1.0) if a is None else a
    v.positive("a", a)
    return L_max * jnp.sqrt(a) / (2.0 * jnp.sqrt(L * mu))


def stable_sufficient(
    lr: Float[ArrayLike, ""],
    beta: Float[ArrayLike, ""],
    batch_size: Float[ArrayLike, ""],
    h: Float[ArrayLike, " d"],
    L_max: Float[ArrayLike, ""],
) -> Bool[Array, ""]:
    """Sufficient condition (eq. STAB) for mean-square stability of SGD / heavy ball: True when the
    deterministic HB on every eigenvalue ``h`` (array (d,)) is stable and
    max_h (lr / B)(L_max - h)(1 + beta) / ((1 - beta)(2(1 + beta) - lr h)) < 1."""
    v.positive("lr", lr)
    v.in_interval("beta", beta, 0.0, 1.0)
    v.positive("batch_size", batch_size, allow_inf=True)
    v.array("h", h, ndim=(0, 1))
    v.positive("h", h)
    v.positive("L_max", L_max)
    h = jnp.asarray(h)
    mean_ok = jnp.all(spectral_radius(lr, h, beta, "hb") < 1.0)
    denom = (1.0 - beta) * (2.0 * (1.0 + beta) - lr * h)
    val = (lr / batch_size) * (L_max - h) * (1.0 + beta) / denom
    return mean_ok & jnp.all(denom > 0) & (jnp.max(val) < 1.0)
