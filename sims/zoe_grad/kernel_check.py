"""zoe_grad: fake_quant's backward vs the score estimator through the NVFP4 kernels (3)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxwb.pallas_kernels.quant.fake_quant import fake_quant
from jaxwb.pallas_kernels.quant.nvfp4 import nvfp4_dequantize, nvfp4_quantize
from jaxwb.sims.zoe_grad.config import KERNEL_ANCHOR_SCALE, MC_LAWS, Config
from jaxwb.theory import zoe_grad as zg

# ---------------------------------------------------------------------------------------------------------
# 3. fake_quant's backward vs the score estimator through the NVFP4 kernels
# ---------------------------------------------------------------------------------------------------------


def kernel_blocks(n_points: int):
    """Blocks of 16: an anchor 6 * scale at element 0 pins the NVFP4 block scale; 15 test points each in
    z = x / scale in [-4.6, 4.6] (|z + sigma u| stays < 6 with overwhelming probability; clipped anyway)."""
    z = jnp.linspace(-4.6, 4.6, n_points).reshape(-1, 15)
    anchor = jnp.full((z.shape[0], 1), 6.0)
    return jnp.concatenate([anchor, z], axis=1) * KERNEL_ANCHOR_SCALE


@functools.partial(jax.jit, static_argnums=0)
def run_kernel_check(cfg: Config, key) -> dict:
    xb = kernel_blocks(cfg.kernel_points)
    # the scale pinned by the anchor, known by construction (a unit test checks the kernels agree): taking it
    # from fake_quant's own adapter would let a bug there cancel from both sides of the check
    s = jnp.full(xb[:, 1:].shape, KERNEL_ANCHOR_SCALE, jnp.float32)
    sigma = cfg.sigma
    out = {"z": (xb[:, 1:] / s).ravel(), "scale": s.ravel()}

    def kernel_q(xfull):  # (..., nblocks, 16) -> NVFP4 round trip through the library's kernels
        flat = xfull.reshape(-1, 16)
        return nvfp4_dequantize(nvfp4_quantize(flat)).reshape(xfull.shape)

    for li, law in enumerate(MC_LAWS):
        grad = jax.grad(lambda x, law=law: jnp.sum(fake_quant(x, fmt="nvfp4", surrogate=law, sigma=sigma)))(xb)
        # the theory's bump sum on the E2M1 levels at z (the scale cancels): what the backward must equal
        out[law] = {"vjp": grad[:, 1:].ravel(), "closed": zg.surrogate_grad(out["z"], zg.e2m1_levels(), sigma, law=law)}

        def one(k, law=law):
            u = zg.sample((cfg.kernel_samples, *xb[:, 1:].shape), law, key=k)
            anchor = jnp.broadcast_to(xb[:, :1], (cfg.kernel_samples, xb.shape[0], 1))

            def q_at(sign):  # |z| is clipped below 6, where Q is saturated anyway: the anchor keeps the scale
                xp = jnp.clip(xb[:, 1:] + sign * sigma * s * u, -5.99 * s, 5.99 * s)
                return kernel_q(jnp.concatenate([anchor, xp], -1))[..., 1:]

            g = (q_at(1.0) - q_at(-1.0)) * zg.score(u, law) / (2 * sigma * s)  # two-point estimator (eq. 5)
            return jnp.mean(g, axis=0).ravel()

        out[law]["mc"] = jax.lax.map(one, jax.random.split(jax.random.fold_in(key, li), cfg.mc_seeds))
    return out
