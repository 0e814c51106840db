"""Model families fitted at each temperature: Gaussian (from a covariance or its Cholesky factor) and KDE.

``Gaussian(mean, chol)`` is the bare pytree and takes a *Cholesky factor*: passing a covariance there silently
gives the wrong spread (sqrt of it), so user code builds one with ``Gaussian.from_cov(mean, cov)`` or
``Gaussian.from_chol(mean, chol)``, which say what they take and check it. The bare constructor is kept for the
jitted internals (fits of traced samples), which build valid factors by construction.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp
from jaxtyping import Array, ArrayLike, Float

from jaxwb.theory import validate as v
from jaxwb.theory.aldrift.util import LOG2PI, as_float, check_points

FAMILIES = ("mle", "empirical", "kde")


class Gaussian(NamedTuple):
    """N(mean, chol chol^T); mean (n,), chol (n, n) lower-triangular with a positive diagonal.

    Build one with :meth:`from_cov` or :meth:`from_chol` (validated); ``Gaussian(mean, chol)`` itself takes the
    Cholesky factor, not the covariance, and checks nothing.
    """

    mean: Float[Array, " n"]
    chol: Float[Array, "n n"]

    @classmethod
    def from_chol(cls, mean: Float[ArrayLike, " n"], chol: Float[ArrayLike, "n n"]) -> Gaussian:
        """N(mean, chol chol^T) from a lower-triangular Cholesky factor ``chol`` (n, n), positive diagonal."""
        v.array("mean", mean, ndim=1)
        n = np.shape(mean)[0]
        v.array("chol", chol, ndim=2)
        v.shape("chol", chol, (n, n))
        v.check("chol", chol, lambda a: (a == a * (np.arange(n)[:, None] >= np.arange(n)[None, :])),
                "lower-triangular (a Cholesky factor; for a covariance use Gaussian.from_cov)")  # fmt: skip
        v.check("chol", jnp.diagonal(jnp.asarray(chol)), lambda a: a > 0, "a Cholesky factor with a positive diagonal")
        return cls(as_float(mean), as_float(chol))

    @classmethod
    def from_cov(cls, mean: Float[ArrayLike, " n"], cov: Float[ArrayLike, "n n"]) -> Gaussian:
        """N(mean, cov) from a symmetric positive-definite covariance ``cov`` (n, n) (a scalar n = 1 is fine as
        [[var]])."""
        v.array("mean", mean, ndim=1)
        n = np.shape(mean)[0]
        v.array("cov", cov, ndim=2)
        v.shape("cov", cov, (n, n))
        v.check("cov", cov, lambda a: np.abs(a - a.T) <= 1e-6 * (np.abs(a) + np.abs(a.T) + 1e-30), "symmetric")
        chol = jnp.linalg.cholesky(as_float(cov))
        v.check("cov", chol, lambda a: a == a, "positive definite (its Cholesky factorisation failed)")
        return cls(as_float(mean), chol)

    @property
    def cov(self) -> Float[Array, "n n"]:
        """The covariance chol chol^T."""
        return self.chol @ self.chol.T


class KDE(NamedTuple):
    """(1/m) sum_i N(centers_i, h^2 I); centers (m, n), h scalar bandwidth."""

    centers: Float[Array, "m n"]
    h: Float[Array, ""]


def model_dim(model) -> int:
    """The dimension n of a Gaussian or KDE model."""
    if isinstance(model, Gaussian):
        return model.mean.shape[-1]
    if isinstance(model, KDE):
        return model.centers.shape[-1]
    raise TypeError(f"model must be Gaussian or KDE, got {type(model).__name__}")


def log_prob_fn(model: Gaussian | KDE):
    """A function x (..., n) -> log L(x) (...) with the model's factorisation done once (the inverse Cholesky
    factor of a Gaussian is computed here, not per evaluation: a batched triangular solve per point is slow on
    CPU). No input checks in the returned function (it runs inside the IMH scan)."""
    if isinstance(model, Gaussian):
        n = model.mean.shape[-1]
        inv = jnp.linalg.inv(model.chol)
        const = -jnp.sum(jnp.log(jnp.abs(jnp.diagonal(model.chol)))) - 0.5 * n * LOG2PI

        def f(x):
            return -0.5 * jnp.sum(((x - model.mean) @ inv.T) ** 2, axis=-1) + const

        return f
    model_dim(model)
    return partial(log_prob, model)


def log_prob(model: Gaussian | KDE, x: Float[ArrayLike, "*b n"]) -> Float[Array, "*b"]:
    """log L(x) for a Gaussian or KDE model; x (..., n) -> (...)."""
    check_points("x", x, model_dim(model))
    x = as_float(x)
    if isinstance(model, Gaussian):
        n = model.mean.shape[-1]
        z = x - model.mean
        flat = z.reshape(-1, n).T
        sol = jax.scipy.linalg.solve_triangular(model.chol, flat, lower=True).T.reshape(z.shape)
        logdet = jnp.sum(jnp.log(jnp.abs(jnp.diagonal(model.chol))))
        return -0.5 * jnp.sum(sol**2, axis=-1) - logdet - 0.5 * n * LOG2PI
    m, n = model.centers.shape
    sq = jnp.sum((x[..., None, :] - model.centers) ** 2, axis=-1)  # (..., m)
    return logsumexp(-0.5 * sq / model.h**2, axis=-1) - jnp.log(m) - n * jnp.log(model.h) - 0.5 * n * LOG2PI


def sample(model: Gaussian | KDE, shape: tuple[int, ...] = (), *, key: Array) -> Float[Array, "*shape n"]:
    """Draw samples of shape ``shape + (n,)`` from a Gaussian or KDE model."""
    v.prng_key("key", key)
    model_dim(model)
    shape = tuple(shape)
    for i, s in enumerate(shape):
        v.nonnegative_int(f"shape[{i}]", s)
    if isinstance(model, Gaussian):
        n = model.mean.shape[-1]
        z = jax.random.normal(key, (*shape, n), dtype=model.mean.dtype)
        return model.mean + z @ model.chol.T
    m, n = model.centers.shape
    ki, kz = jax.random.split(key)
    idx = jax.random.randint(ki, shape, 0, m)
    return model.centers[idx] + model.h * jax.random.normal(kz, (*shape, n), dtype=model.centers.dtype)


def _check_samples(samples) -> None:
    v.array("samples", samples, ndim=2)


def fit_gaussian_fixed(samples: Float[ArrayLike, "m n"], var: float) -> Gaussian:
    """MLE mean with a fixed (inflated) isotropic variance ``var``: N(mean(samples), var I). samples (m, n)."""
    _check_samples(samples)
    v.positive("var", var)
    samples = as_float(samples)
    n = samples.shape[-1]
    return Gaussian(jnp.mean(samples, axis=0), jnp.sqrt(var) * jnp.eye(n, dtype=samples.dtype))


def fit_gaussian_empirical(samples: Float[ArrayLike, "m n"], jitter: float = 1e-6) -> Gaussian:
    """MLE mean and MLE (1/m) covariance, plus ``jitter`` I (>= 0) for a valid Cholesky. samples (m, n)."""
    _check_samples(samples)
    v.nonnegative("jitter", jitter)
    samples = as_float(samples)
    mean = jnp.mean(samples, axis=0)
    z = samples - mean
    cov = z.T @ z / samples.shape[0] + jitter * jnp.eye(samples.shape[-1], dtype=samples.dtype)
    return Gaussian(mean, jnp.linalg.cholesky(cov))


def pooled_std(samples: Float[ArrayLike, "m n"]) -> Float[Array, ""]:
    """sqrt of the mean per-coordinate (MLE) variance of samples (m, n): the sigma of the KDE bandwidth."""
    _check_samples(samples)
    return jnp.sqrt(jnp.mean(jnp.var(as_float(samples), axis=0)))


def fit_kde(samples: Float[ArrayLike, "m n"], c: float, sigma: float | None = None) -> KDE:
    """KDE on the samples with bandwidth h = c * sigma (sigma defaults to ``pooled_std(samples)``; it must be
    > 0: m identical samples have no spread to scale)."""
    _check_samples(samples)
    v.positive("c", c)
    samples = as_float(samples)
    sig = pooled_std(samples) if sigma is None else sigma
    v.positive("sigma", sig)
    return KDE(samples, c * as_float(sig))


def fit_model(family, samples, *, var, c):
    """Fit a model of ``family`` to the weighted samples (the refit step of ALDRIFT and TOPIFT)."""
    if family == "mle":
        return fit_gaussian_fixed(samples, var)
    if family == "empirical":
        return fit_gaussian_empirical(samples)
    return fit_kde(samples, c)


def draw_noise(model, key, shape):
    """The standard noise behind ``sample(model, shape, key=key)``: (normals (*shape, n), component indices)."""
    v.prng_key("key", key)
    if isinstance(model, Gaussian):
        return jax.random.normal(key, (*shape, model.mean.shape[-1]), dtype=model.mean.dtype), None
    ki, kz = jax.random.split(key)
    m, n = model.centers.shape
    return (jax.random.normal(kz, (*shape, n), dtype=model.centers.dtype), jax.random.randint(ki, shape, 0, m))


def from_noise(model, z, idx):
    """Model draws from the standard noise of ``draw_noise`` (split so that IMH can reuse the noise)."""
    if isinstance(model, Gaussian):
        return model.mean + z @ model.chol.T
    return model.centers[idx] + model.h * z
