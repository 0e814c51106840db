"""Model families fitted at each temperature: Gaussian (from a covariance or its Cholesky factor) and KDE."""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

from theory import _validate as v
from theory.aldrift._util import _LOG2PI

FAMILIES = ("mle", "empirical", "kde")


class Gaussian(NamedTuple):
    """N(mean, chol chol^T); mean (n,), chol (n, n) lower-triangular."""

    mean: jax.Array
    chol: jax.Array


class KDE(NamedTuple):
    """(1/m) sum_i N(centers_i, h^2 I); centers (m, n), h scalar bandwidth."""

    centers: jax.Array
    h: jax.Array


def log_prob_fn(model):
    """A function x (..., n) -> log L(x) with the model's factorisation done once (the inverse Cholesky factor
    of a Gaussian is computed here, not per evaluation: a batched triangular solve per point is slow on CPU)."""
    if isinstance(model, Gaussian):
        n = model.mean.shape[-1]
        inv = jnp.linalg.inv(model.chol)
        const = -jnp.sum(jnp.log(jnp.abs(jnp.diagonal(model.chol)))) - 0.5 * n * _LOG2PI

        def f(x):
            return -0.5 * jnp.sum(((x - model.mean) @ inv.T) ** 2, axis=-1) + const

        return f
    return partial(log_prob, model)


def log_prob(model, x):
    """log L(x) for a Gaussian or KDE model; x (..., n) -> (...)."""
    if isinstance(model, Gaussian):
        n = model.mean.shape[-1]
        z = x - model.mean
        flat = z.reshape(-1, n).T
        sol = jax.scipy.linalg.solve_triangular(model.chol, flat, lower=True).T.reshape(z.shape)
        logdet = jnp.sum(jnp.log(jnp.abs(jnp.diagonal(model.chol))))
        return -0.5 * jnp.sum(sol**2, axis=-1) - logdet - 0.5 * n * _LOG2PI
    if isinstance(model, KDE):
        m, n = model.centers.shape
        sq = jnp.sum((x[..., None, :] - model.centers) ** 2, axis=-1)  # (..., m)
        return (logsumexp(-0.5 * sq / model.h**2, axis=-1) - jnp.log(m)
                - n * jnp.log(model.h) - 0.5 * n * _LOG2PI)
    raise TypeError(f"model must be Gaussian or KDE, got {type(model).__name__}")


def sample(model, key, shape=()):
    """Draw samples of shape ``shape + (n,)`` from a Gaussian or KDE model."""
    if isinstance(model, Gaussian):
        n = model.mean.shape[-1]
        z = jax.random.normal(key, (*shape, n), dtype=model.mean.dtype)
        return model.mean + z @ model.chol.T
    if isinstance(model, KDE):
        m, n = model.centers.shape
        ki, kz = jax.random.split(key)
        idx = jax.random.randint(ki, shape, 0, m)
        return model.centers[idx] + model.h * jax.random.normal(kz, (*shape, n), dtype=model.centers.dtype)
    raise TypeError(f"model must be Gaussian or KDE, got {type(model).__name__}")


def fit_gaussian_fixed(samples, var) -> Gaussian:
    """MLE mean with a fixed (inflated) isotropic variance ``var``: N(mean(samples), var I). samples (m, n)."""
    v.positive("var", var)
    n = samples.shape[-1]
    return Gaussian(jnp.mean(samples, axis=0), jnp.sqrt(var) * jnp.eye(n, dtype=samples.dtype))


def fit_gaussian_empirical(samples, jitter: float = 1e-6) -> Gaussian:
    """MLE mean and MLE (1/m) covariance, plus ``jitter`` I for a valid Cholesky. samples (m, n)."""
    mean = jnp.mean(samples, axis=0)
    z = samples - mean
    cov = z.T @ z / samples.shape[0] + jitter * jnp.eye(samples.shape[-1], dtype=samples.dtype)
    return Gaussian(mean, jnp.linalg.cholesky(cov))


def pooled_std(samples):
    """sqrt of the mean per-coordinate (MLE) variance of samples (m, n): the sigma of the KDE bandwidth."""
    return jnp.sqrt(jnp.mean(jnp.var(samples, axis=0)))


def fit_kde(samples, c, sigma=None) -> KDE:
    """KDE on the samples with bandwidth h = c * sigma (sigma defaults to ``pooled_std(samples)``)."""
    v.positive("c", c)
    sigma = pooled_std(samples) if sigma is None else sigma
    return KDE(samples, c * sigma)


def _fit(family, samples, *, var, c):
    if family == "mle":
        return fit_gaussian_fixed(samples, var)
    if family == "empirical":
        return fit_gaussian_empirical(samples)
    return fit_kde(samples, c)


def _noise(model, key, shape):
    """The standard noise behind ``sample(model, key, shape)``: (normals (*shape, n), component indices)."""
    if isinstance(model, Gaussian):
        return jax.random.normal(key, (*shape, model.mean.shape[-1]), dtype=model.mean.dtype), None
    ki, kz = jax.random.split(key)
    m, n = model.centers.shape
    return (jax.random.normal(kz, (*shape, n), dtype=model.centers.dtype),
            jax.random.randint(ki, shape, 0, m))


def _from_noise(model, z, idx):
    if isinstance(model, Gaussian):
        return model.mean + z @ model.chol.T
    return model.centers[idx] + model.h * z
