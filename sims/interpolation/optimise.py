"""Grid optimisation of (lr, beta) on the exact mean-square rate rho(T) (eq. MS, float64), in fixed-size
chunks so that one compiled function serves every call."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.theory import interpolation as ip

# ---------------------------------------------------------------------------------------------------------
# Grid optimisation of the exact rate
# ---------------------------------------------------------------------------------------------------------


_CHUNK = 128


@partial(jax.jit, static_argnames=("iters",))
def _rate_chunk(h, K, lr, beta, nu, B, iters):
    return jax.vmap(lambda a, b, c, e: ip.rate_jit(h, K, a, b, c, e, iters, 2.0))(lr, beta, nu, B)


def rates(kernel, lr, beta, method, B, iters=40):
    """rho(T) for flat arrays of (lr, beta, B) (broadcast), evaluated in fixed-size chunks so that one
    compiled
    function serves every call (float64 inside)."""
    lr, beta, B = np.broadcast_arrays(
        np.asarray(lr, np.float64), np.asarray(beta, np.float64), np.asarray(B, np.float64)
    )
    shape = lr.shape
    nu = np.full(shape, 1.0 if method == "nesterov" else 0.0)
    if method == "sgd":
        beta = np.zeros(shape)
    flat = [a.ravel() for a in (lr, beta, nu, B)]
    n = flat[0].size
    pad = (-n) % _CHUNK
    flat = [np.concatenate([a, np.repeat(a[-1:], pad)]) for a in flat]
    out = []
    with jax.enable_x64(True):
        h, K = jnp.asarray(kernel.h, jnp.float64), jnp.asarray(kernel.K, jnp.float64)
        for s in range(0, n + pad, _CHUNK):
            out.append(np.asarray(_rate_chunk(h, K, *[jnp.asarray(a[s : s + _CHUNK]) for a in flat], iters)))
    return np.concatenate(out)[:n].reshape(shape)


def grid_optimise(kernel, batch_sizes, method, *, n_grid, n_zoom, zoom_points, L, iters=16):
    """Minimise rho(T) over (log lr, log(1 - beta)) for every B: a coarse grid, then ``n_zoom`` rounds of a
    zoom_points^2 grid spanning +-1 previous spacing around the best point. The grid ranks points with ``iters``
    root-finding steps (16: the same optimum as 40 on the full preset, lr and beta bitwise equal); the returned
    rho is re-evaluated at the optimum with 40 (~1e-12). Returns (lr, beta, rho), each (nB,)."""
    B = np.asarray(batch_sizes, np.float64)[:, None]
    sgd = method == "sgd"
    # coordinates: u = log(lr / (1 - beta)) (the effective step; the noise limit is a line u = const),
    # w = log(1 - beta)
    u = np.linspace(np.log(1e-3 / L), np.log(4.0 / L) if sgd else np.log(1e3 / L), 3 * n_grid if sgd else n_grid)
    w = np.zeros(1) if sgd else np.linspace(np.log(1e-4), 0.0, n_grid)
    U, W = (a.ravel()[None].repeat(len(B), 0) for a in np.meshgrid(u, w, indexing="ij"))
    du, dw = u[1] - u[0], (0.0 if sgd else w[1] - w[0])
    best = None
    for round_ in range(n_zoom + 1):  # noqa: B007
        r = rates(kernel, np.exp(U + W), 1.0 - np.exp(W), method, B, iters)
        i = np.argmin(r, axis=1)
        cand = (U[np.arange(len(B)), i], W[np.arange(len(B)), i], r[np.arange(len(B)), i])
        if best is None:
            best = cand
        else:
            better = cand[2] < best[2]
            best = tuple(np.where(better, c_, b_) for c_, b_ in zip(cand, best, strict=True))
        off = np.linspace(-1.0, 1.0, zoom_points)
        ou, ow = np.meshgrid(off * du, off * dw if not sgd else np.zeros(1), indexing="ij")
        U = best[0][:, None] + ou.ravel()[None]
        W = np.minimum(best[1][:, None] + ow.ravel()[None], -1e-12) if not sgd else np.zeros_like(U)
        du, dw = du * 2.0 / (zoom_points - 1), dw * 2.0 / (zoom_points - 1)
    assert best is not None  # the loop above runs n_zoom + 1 >= 1 times
    lr, beta = np.exp(best[0] + best[1]), (np.zeros(len(B)) if sgd else 1.0 - np.exp(best[1]))
    return lr, beta, rates(kernel, lr, beta, method, B[:, 0])
