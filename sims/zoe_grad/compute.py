"""zoe_grad: the simulation, ``run`` and its parts (what is measured: the package docstring)."""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from jaxwb.models import corpus
from jaxwb.models import train as tr
from jaxwb.models.tiny_lm import TinyLM, linear_weights, replace_linear_weights
from jaxwb.pallas_kernels.quant import fp4
from jaxwb.pallas_kernels.quant.fake_quant import fake_quant
from jaxwb.pallas_kernels.quant.nvfp4 import nvfp4_dequantize, nvfp4_quantize
from jaxwb.sims.zoe_grad.config import ESTIMATORS, GRIDS, KERNEL_ANCHOR_SCALE, MC_LAWS, Config
from jaxwb.theory import zoe_grad as zg

# ---------------------------------------------------------------------------------------------------------
# Hard quantizers for the Monte Carlo (independent of theory.zoe_grad's level tables)
# ---------------------------------------------------------------------------------------------------------


def hard_quantizer(grid: str, bits: int):
    """The hard quantizer on unit-scale levels: ``round`` clipped to +-M (INT) or the kernels' E2M1 codec."""
    if grid == "int":
        m = float(2 ** (bits - 1) - 1)
        return lambda z: jnp.clip(jnp.round(z), -m, m)
    return lambda z: fp4.e2m1_decode(fp4.e2m1_encode(z.astype(jnp.float32)))


def grid_levels(grid: str, bits: int):
    return zg.int_levels(bits) if grid == "int" else zg.e2m1_levels()


def x_grid(grid: str, bits: int, n: int):
    top = float(2 ** (bits - 1) - 1) + 1.0 if grid == "int" else 7.0
    # offset by 1/97 step so no grid point sits exactly on a level (where the uniform law's window edges touch
    # two boundaries: a measure-zero tie)
    return jnp.linspace(-top, top, n) + top / 97.0 / n


def claim_point(grid: str, sigma: float) -> float:
    """Where the point claims look: half a sigma above a boundary (0.5 on INT, 2.5 on E2M1), on the bump's flank."""
    return (0.5 if grid == "int" else 2.5) + 0.5 * sigma


def _mc_means(q_fn, xs, sigma, law, estimator, key, n_seeds, n):
    """Per-seed means (and second moments) of one estimator at every x: arrays (n_seeds, len(xs))."""
    fn = zg.score_estimator if estimator == "score" else zg.two_point_estimator

    def one(k):
        g = fn(q_fn, xs, sigma, law=law, key=k, n=n)
        return jnp.mean(g, axis=0), jnp.mean(g * g, axis=0)

    return jax.lax.map(one, jax.random.split(key, n_seeds))


@functools.partial(jax.jit, static_argnums=(0, 1))
def _grid_estimators(grid: str, cfg: Config, key) -> dict:
    gi = GRIDS.index(grid)
    q_fn = hard_quantizer(grid, cfg.int_bits)
    lv = grid_levels(grid, cfg.int_bits)
    xs = jnp.concatenate([x_grid(grid, cfg.int_bits, cfg.n_x), jnp.asarray([claim_point(grid, cfg.sigma)])])
    g = {"x": xs, "levels": lv}
    for li, law in enumerate(MC_LAWS):
        g[law] = {"closed": zg.surrogate_grad(xs, lv, cfg.sigma, law=law)}
        if law in ("gaussian", "logistic"):
            g[law]["second_moment"] = zg.score_second_moment(xs, lv, cfg.sigma, law=law)
        for ei, est in enumerate(ESTIMATORS):
            k = jax.random.fold_in(key, 100 * gi + 10 * li + ei)
            m, m2 = _mc_means(q_fn, xs, cfg.sigma, law, est, k, cfg.mc_seeds, cfg.mc_samples)
            g[law][est] = m
            g[law][est + "_m2"] = m2
    # the uniform law: degenerate edge estimator at the Monte Carlo sigma and at the STE width
    g["uniform"] = {}
    for tag, s in (("sigma", cfg.sigma), ("ste", zg.STE_SIGMA)):
        g["uniform"][f"closed_{tag}"] = zg.surrogate_grad(xs, lv, s, law="uniform")
        g["uniform"][f"edge_{tag}"] = zg.two_point_estimator(q_fn, xs, s, law="uniform", key=key, n=1)[0]
    return g


def run_estimators(cfg: Config, key) -> dict:
    return {grid: _grid_estimators(grid, cfg, key) for grid in GRIDS}


@functools.partial(jax.jit, static_argnums=0)
def run_sweep(cfg: Config) -> dict:
    lv = zg.int_levels(8)  # 255 levels: the centre is far from the clip ends (infinite-grid prediction)
    sig = jnp.asarray(cfg.sweep_sigmas, jnp.float32)
    out = {"sigmas": sig}
    for law in zg.LAWS:
        out[law] = {
            "level": jax.vmap(lambda s, law=law: zg.surrogate_grad(0.0, lv, s, law=law))(sig),
            "boundary": jax.vmap(lambda s, law=law: zg.surrogate_grad(0.5, lv, s, law=law))(sig),
            "level_pred": zg.grid_ripple(sig, law=law, at="level"),
            "boundary_pred": zg.grid_ripple(sig, law=law, at="boundary"),
        }
    # curves for the figure
    curves = {}
    for grid in GRIDS:
        lvg = grid_levels(grid, cfg.int_bits)
        xs = x_grid(grid, cfg.int_bits, 801)
        curves[grid] = {
            "x": xs,
            "g": jax.vmap(lambda s, lvg=lvg, xs=xs: zg.surrogate_grad(xs, lvg, s, law="gaussian"))(sig),
        }
    out["curves"] = curves
    return out


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
        grad = jax.grad(lambda x, law=law: jnp.sum(fake_quant(x, format="nvfp4", surrogate=law, sigma=sigma)))(xb)
        out[law] = {"vjp": grad[:, 1:].ravel()}

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


# ---------------------------------------------------------------------------------------------------------
# 4. convergence toy: f(q) = |q - c|^2 / 2 over INT-3 weights
# ---------------------------------------------------------------------------------------------------------


def toy_constants(cfg: Config, c) -> dict:
    """Constants of eq. 9-10 for the toy: G = sup g, H = sup |g'|, eps = sup |Q - Q_sigma|, L, B, V."""
    lv = zg.int_levels(cfg.int_bits)
    s = cfg.toy_sigma
    g_fn = lambda z: zg.surrogate_grad(z, lv, s, law="gaussian")
    dg = jax.vmap(jax.grad(lambda z: g_fn(z)))
    big_g = zg.sup_on_grid(g_fn, lv)
    big_h = zg.sup_on_grid(lambda z: jnp.abs(dg(z)), lv)
    r = lv[-1] + jnp.max(jnp.abs(c))  # sup |Q_sigma - c|
    smooth = big_g**2 + r * big_h
    b = zg.bias_bound(lv, s, law="gaussian", lf=1.0)
    m2 = zg.sup_on_grid(lambda z: zg.score_second_moment(z, lv, s, law="gaussian"), lv)
    var = cfg.toy_dim * r**2 * m2 / cfg.toy_zo  # E|xi|^2 <= sum_i (Q_i - c_i)^2 E g1^2 / n_zo
    return {"G": big_g, "H": big_h, "R": r, "L": smooth, "B": b, "V": var, "eta": 0.25 / smooth}


@functools.partial(jax.jit, static_argnums=0)
def run_toy(cfg: Config, key) -> dict:
    kc, kw, kn = jax.random.split(key, 3)
    lv = zg.int_levels(cfg.int_bits)
    m = float(2 ** (cfg.int_bits - 1) - 1)
    c = jax.random.uniform(kc, (cfg.toy_dim,), minval=-m + 0.5, maxval=m - 0.5)
    w0 = jax.random.uniform(kw, (cfg.toy_dim,), minval=-m, maxval=m)
    k = toy_constants(cfg, c)
    s, eta = cfg.toy_sigma, k["eta"]
    q_fn = hard_quantizer("int", cfg.int_bits)

    def grad_f_sigma(w):
        return (zg.smoothed(w, lv, s, law="gaussian") - c) * zg.surrogate_grad(w, lv, s, law="gaussian")

    def f_sigma(w):
        return 0.5 * jnp.sum((zg.smoothed(w, lv, s, law="gaussian") - c) ** 2)

    def trajectory(key):
        def step(w, kk):
            ghat = jnp.mean(zg.score_estimator(q_fn, w, s, law="gaussian", key=kk, n=cfg.toy_zo), axis=0)
            qw, g = q_fn(w), zg.surrogate_grad(w, lv, s, law="gaussian")
            h = (qw - c) * ghat
            bias_sq = jnp.sum(((qw - zg.smoothed(w, lv, s, law="gaussian")) * g) ** 2)
            var_g = zg.score_second_moment(w, lv, s, law="gaussian") - g**2  # eq. 7, one draw
            var = jnp.sum((qw - c) ** 2 * var_g) / cfg.toy_zo
            return w - eta * h, (jnp.sum(grad_f_sigma(w) ** 2), bias_sq, var)

        w_t, (gn, bias_sq, var) = jax.lax.scan(step, w0, jax.random.split(key, cfg.toy_steps))
        return gn, bias_sq, var, f_sigma(w_t)

    gn, bias_sq, var, f_t = jax.vmap(trajectory)(jax.random.split(kn, cfg.toy_seeds))
    f0 = f_sigma(w0)
    # eq. 10 with the realized terms of its proof: E F_T for inf F, the mean |b_t|^2 and E|xi_t|^2 per step
    realized = 4 * (f0 - f_t) / (eta * cfg.toy_steps) + 3 * jnp.mean(bias_sq, 1) + 2 * k["L"] * eta * jnp.mean(var, 1)
    bound = zg.convergence_bound(
        f0, eta=eta, smooth=k["L"], steps_t=cfg.toy_steps, bias_sq=cfg.toy_dim * k["B"] ** 2, var=k["V"]
    )
    ws = jnp.linspace(-m - 1, m + 1, 2001)
    bias = jnp.abs(q_fn(ws) - zg.smoothed(ws, lv, s, law="gaussian")) * zg.surrogate_grad(ws, lv, s, law="gaussian")
    # the one-sided limits at the boundaries, where sup |Q - Q_sigma| g_sigma is attained
    bnd = zg.boundaries(lv)
    gb = zg.surrogate_grad(bnd, lv, s, law="gaussian")
    qsb = zg.smoothed(bnd, lv, s, law="gaussian")
    bias_at_b = jnp.maximum(jnp.abs(lv[1:] - qsb), jnp.abs(lv[:-1] - qsb)) * gb
    return {
        "grad_norm_sq": gn,
        "f_final": f_t,
        "f0": f0,
        "bound": jnp.asarray(bound),
        "realized_bound": realized,
        "bias_sq": bias_sq,
        "var": var,
        "constants": {kk: jnp.asarray(vv) for kk, vv in k.items()},
        "bias_w": ws,
        "bias": bias,
        "bias_sup": jnp.maximum(jnp.max(bias), jnp.max(bias_at_b)),
    }


# ---------------------------------------------------------------------------------------------------------
# 5. QAT on the tiny LM
# ---------------------------------------------------------------------------------------------------------


class QATModel(eqx.Module):
    """The tiny LM with every block matmul weight fake-quantized in the forward (``arm="fp"``: no quantization)."""

    inner: TinyLM
    arm: str = eqx.field(static=True)
    format: str = eqx.field(static=True)
    bits: int = eqx.field(static=True)
    block: int = eqx.field(static=True)
    sigma: float = eqx.field(static=True)

    @property
    def config(self):
        return self.inner.config

    def __call__(self, tokens):
        if self.arm == "fp":
            return self.inner(tokens)
        surrogate = self.arm if self.arm != "ptq" else "ste"
        kw = {"bits": self.bits, "block_size": self.block} if self.format == "int" else {}
        ws = {
            k: fake_quant(w, format=self.format, surrogate=surrogate, sigma=self.sigma, **kw)
            for k, w in linear_weights(self.inner).items()
            if k != "embed"
        }
        return replace_linear_weights(self.inner, ws)(tokens)


def qat_wrap(model, cfg: Config, arm: str) -> QATModel:
    return QATModel(model, arm, cfg.qat_format, cfg.qat_bits, cfg.qat_block, cfg.qat_sigma)


def run_qat(cfg: Config, key) -> dict:
    model, pre_losses = tr.trained_model(cfg.model, cfg.pretrain, desc=None)
    train, val = corpus.load_corpus(max_bytes=cfg.corpus_bytes)
    x, y = tr.eval_windows(val, cfg.ctx, cfg.eval_windows)
    data = jnp.asarray(train)
    opt = optax.adam(cfg.qat_lr)
    ev = eqx.filter_jit(lambda m: tr.evaluate(m, x, y))
    out = {"fp": ev(model), "ptq": ev(qat_wrap(model, cfg, "ptq")), "pretrain_losses": pre_losses}
    keys = jax.random.split(key, cfg.qat_seeds)  # the same data order for every arm (paired comparison)

    def finetune(arm):
        f = eqx.filter_jit(
            lambda k: tr.train_scan(
                qat_wrap(model, cfg, arm), opt, data, key=k, steps=cfg.qat_steps, batch_size=cfg.qat_batch
            )[0]
        )
        states = eqx.filter_vmap(f)(keys)
        inner = states[0].inner
        quant = eqx.filter_vmap(lambda m: tr.evaluate(qat_wrap(m, cfg, "ptq"), x, y))(inner)
        return quant, bool(jnp.any(states[2]))

    diverged = {}
    out["fp_ptq"], diverged["fp_ptq"] = finetune("fp")
    for arm in cfg.qat_surrogates:
        out[arm], diverged[arm] = finetune(arm)
    out["diverged"] = jnp.asarray([diverged[a] for a in ("fp_ptq", *cfg.qat_surrogates)])
    return out


# ---------------------------------------------------------------------------------------------------------
# The result contract
# ---------------------------------------------------------------------------------------------------------


def run(cfg: Config, *, key) -> dict:
    import time

    k1, k2, k3, k4 = jax.random.split(key, 4)
    parts = (
        ("estimators", lambda: run_estimators(cfg, k1)),
        ("sweep", lambda: run_sweep(cfg)),
        ("kernel", lambda: run_kernel_check(cfg, k2)),
        ("toy", lambda: run_toy(cfg, k3)),
    )
    if cfg.qat:
        parts += (("qat", lambda: run_qat(cfg, k4)),)
    out, wall = {}, {}
    for name, fn in parts:
        t0 = time.perf_counter()
        out[name] = jax.block_until_ready(fn())
        wall[name] = jnp.asarray(time.perf_counter() - t0)
    out["wall_s"] = wall
    return out
