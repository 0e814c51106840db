"""Hessian tools against an independent reference: dense ``jax.hessian`` + ``numpy.linalg.eigvalsh``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from jaxwb.theory import hessian as hs


def _mlp_loss():
    """A small tanh MLP regression loss as a function of its flat parameters (P = 5*8 + 8 + 8*2 + 2 = 66)."""
    k1, k2, k3, k4 = jax.random.split(jax.random.key(0), 4)
    params = {
        "w1": jax.random.normal(k1, (5, 8)) / 2,
        "b1": jnp.zeros(8),
        "w2": jax.random.normal(k2, (8, 2)) / 2,
        "b2": jnp.zeros(2),
    }
    x, y = jax.random.normal(k3, (32, 5)), jax.random.normal(k4, (32, 2))
    flat, unravel = ravel_pytree(params)

    def f(theta):
        p = unravel(theta)
        return jnp.mean((jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"] - y) ** 2)

    return f, flat


def test_hvp_matches_dense_hessian():
    f, x = _mlp_loss()
    h = np.asarray(jax.hessian(f)(x))
    u = jax.random.normal(jax.random.key(1), x.shape)
    np.testing.assert_allclose(hs.hvp(f, x, u), h @ np.asarray(u), rtol=1e-4, atol=1e-5)


def test_lanczos_top_matches_eigvalsh_on_mlp():
    f, x = _mlp_loss()
    ref = np.linalg.eigvalsh(np.asarray(jax.hessian(f)(x), np.float64))[::-1]
    evals, evecs = hs.lanczos_top(lambda u: hs.hvp(f, x, u), x.size, key=jax.random.key(2), iters=40, k=5)
    np.testing.assert_allclose(evals, ref[:5], rtol=2e-3, atol=1e-5)
    np.testing.assert_allclose(np.asarray(evecs).T @ np.asarray(evecs), np.eye(5), atol=1e-4)


def test_lanczos_top_eigvecs_on_known_spectrum():
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(60, 60)))
    spec = np.concatenate([[50.0, 20.0, 9.0], rng.uniform(-1.0, 1.0, 57)])
    a = jnp.asarray((q * spec) @ q.T, jnp.float32)
    evals, evecs = hs.lanczos_top(lambda u: a @ u, 60, key=jax.random.key(0), iters=30, k=3)
    np.testing.assert_allclose(evals, [50.0, 20.0, 9.0], rtol=1e-3)
    np.testing.assert_allclose(np.abs(np.sum(np.asarray(evecs) * q[:, :3], axis=0)), 1.0, atol=1e-3)


def test_power_top_matches_eigvalsh_on_mlp():
    f, x = _mlp_loss()
    h = np.asarray(jax.hessian(f)(x), np.float64)
    ev = np.linalg.eigvalsh(h)
    top = ev[np.argmax(np.abs(ev))]
    lam, u = hs.power_top(lambda u: hs.hvp(f, x, u), jnp.ones_like(x), iters=300)
    np.testing.assert_allclose(lam, top, rtol=1e-3)
    np.testing.assert_allclose(np.linalg.norm(h @ np.asarray(u) - top * np.asarray(u)), 0.0, atol=2e-2 * abs(top))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"iters": 0, "k": 1}, "iters"), ({"iters": 3, "k": 5}, "k must be"), ({"iters": 3, "k": 0}, "k")],
)
def test_lanczos_rejects_bad_sizes(kwargs, match):
    with pytest.raises(ValueError, match=match):
        hs.lanczos_top(lambda u: u, 4, key=jax.random.key(0), **kwargs)


def test_power_rejects_bad_iters():
    with pytest.raises(ValueError, match="iters"):
        hs.power_top(lambda u: u, jnp.ones(3), iters=0)
