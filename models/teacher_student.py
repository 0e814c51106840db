"""Teacher and Adam-trained student networks for the extensive-width teacher-student result.

Both are the same Equinox two-layer MLP  f(x) = sum_j v_j sigma(w_j . x / |w_j|),  sigma = He_3 / sqrt 6
(so E[sigma(u) sigma(u')] = rho^3 for unit Gaussians with correlation rho: the overlap kernel g(m) = m^3 of
``jaxwb.theory.teacher_student``). The teacher has k orthonormal rows w*_i and readout v*_i = a_i (a_i^2 ~ i^(-2 beta),
summing to 1, so E f*^2 = 1). Data: x ~ N(0, I_d), y = f*(x) + sqrt(Delta) z. The student is trained by full-batch
Adam on the squared loss; a ``mask`` over hidden units fixes the student's effective width inside a fixed-size
array, so students of different widths and seeds share one vmapped, compiled training loop.
"""

from __future__ import annotations

from functools import partial

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, ArrayLike, Bool, Float, Int, PRNGKeyArray

from jaxwb.theory import validate as V

SQRT6 = 6.0**0.5


def he3(z: Float[Array, "*shape"]) -> Float[Array, "*shape"]:
    """Normalised third Hermite polynomial He_3(z)/sqrt 6 = (z^3 - 3 z)/sqrt 6 (unit variance under N(0,1))."""
    return (z**3 - 3.0 * z) / SQRT6


class TwoLayer(eqx.Module):
    """f(x) = sum_j (mask_j v_j) He_3(w_j . x / |w_j|)/sqrt 6. w (h, d), v (h,), mask (h,) (not trained)."""

    w: jax.Array
    v: jax.Array
    mask: jax.Array

    def __call__(self, x: Float[Array, "*b d"]) -> Float[Array, "*b"]:
        """x (..., d) -> (...)."""
        wn = self.w / jnp.linalg.norm(self.w, axis=-1, keepdims=True)
        return he3(x @ wn.T) @ (self.v * jax.lax.stop_gradient(self.mask))


def make_teacher(d: int, a2: Float[ArrayLike, " k"], *, key: PRNGKeyArray) -> TwoLayer:
    """Teacher with k = len(a2) <= d orthonormal hidden directions and readout a_i = sqrt(a2_i)."""
    V.prng_key("key", key)
    V.positive_int("d", d)
    V.array("a2", a2, ndim=1)
    V.nonnegative("a2", a2)
    a2 = jnp.asarray(a2)
    k = a2.shape[0]
    if k > d:
        raise ValueError(f"k (= len(a2) = {k}) must be <= d = {d} for orthonormal teacher directions")
    q, _ = jnp.linalg.qr(jax.random.normal(key, (d, k)))
    return TwoLayer(q.T, jnp.sqrt(a2), jnp.ones(k))


def init_student(d: int, mask: Float[ArrayLike, " h"], *, key: PRNGKeyArray, v_scale: float = 0.1) -> TwoLayer:
    """Student of max width h = len(mask): w ~ N(0, I), v ~ v_scale N(0, 1)/sqrt(h); units with mask 0 are off."""
    V.prng_key("key", key)
    V.positive_int("d", d)
    V.array("mask", mask, ndim=1)
    V.nonnegative("v_scale", v_scale)
    mask = jnp.asarray(mask, jnp.float32)
    h = mask.shape[0]
    kw, kv = jax.random.split(key)
    return TwoLayer(jax.random.normal(kw, (h, d)), v_scale * jax.random.normal(kv, (h,)) / jnp.sqrt(h), mask)


def sample(
    teacher: TwoLayer, n: int, delta: Float[ArrayLike, ""], *, key: PRNGKeyArray
) -> tuple[Float[Array, "n d"], Float[Array, " n"]]:
    """n samples (x (n, d), y (n,)) with y = f*(x) + sqrt(delta) z."""
    V.prng_key("key", key)
    V.positive_int("n", n)
    V.nonnegative("delta", delta)
    kx, kz = jax.random.split(key)
    x = jax.random.normal(kx, (n, teacher.w.shape[1]))
    return x, teacher(x) + jnp.sqrt(delta) * jax.random.normal(kz, (n,))


@partial(jax.jit, static_argnames=("n_max", "steps", "evals", "n_test"))
def train_student(
    teacher: TwoLayer,
    mask: Float[ArrayLike, " h"],
    n: Int[ArrayLike, ""],
    *,
    data_key: PRNGKeyArray,
    init_key: PRNGKeyArray,
    n_max: int,
    delta: Float[ArrayLike, ""],
    steps: int,
    lr: float,
    evals: int = 40,
    n_test: int = 4096,
    val_frac: float = 0.2,
):
    """Train one student by full-batch Adam on the first ``n`` of ``n_max`` noisy samples; early stopping.

    ``data_key`` draws the samples and the test inputs, ``init_key`` the student's initialisation: restarts
    with one ``data_key`` and several ``init_key`` see the same data (selection among them by validation loss
    is then a legitimate learner, see ``select_restart``).

    ``n`` may be traced (<= n_max, the static padded size), so students for every sample size, width (``mask``)
    and seed share one compiled, vmapped loop. The n samples are split into a training part and a validation
    part (``val_frac``; noisy labels, as the learner would have); the test error E_x (f(x) - f*(x))^2 is measured
    on ``n_test`` fresh noiseless inputs. Adam with a cosine learning-rate decay (lr -> lr/10).
    Returns dict: test (evals + 1,) test error at init and each evaluation, val (evals + 1,) validation loss,
    best () test error at the evaluation with the lowest validation loss, best_val () that validation loss,
    final () test error at the end.
    Non-finite values are replaced by +inf (a blown-up run is flagged, never NaN).
    """
    kd, kt = jax.random.split(data_key)
    ki = init_key
    x, y = sample(teacher, n_max, delta, key=kd)
    j = jnp.arange(n_max)
    n_val = jnp.maximum(1, jnp.round(val_frac * n)).astype(j.dtype)
    w_tr = ((j >= n_val) & (j < n)).astype(x.dtype)
    w_va = (j < n_val).astype(x.dtype)
    xte = jax.random.normal(kt, (n_test, teacher.w.shape[1]))
    fte = teacher(xte)
    student = init_student(teacher.w.shape[1], mask, key=ki)
    params, static = eqx.partition(student, eqx.is_inexact_array)
    opt = optax.adam(optax.cosine_decay_schedule(lr, steps, alpha=0.1))
    state = opt.init(params)

    def loss(p, w):
        return jnp.sum(w * (eqx.combine(p, static)(x) - y) ** 2) / jnp.sum(w)

    def step(carry, _):
        p, s = carry
        grads = jax.grad(loss)(p, w_tr)
        upd, s = opt.update(grads, s, p)
        return (optax.apply_updates(p, upd), s), None

    def chunk(carry, _):
        carry, _ = jax.lax.scan(step, carry, None, length=steps // evals)
        p = carry[0]
        test = jnp.mean((eqx.combine(p, static)(xte) - fte) ** 2)
        return carry, (test, loss(p, w_va))

    init_eval = (jnp.mean((student(xte) - fte) ** 2), loss(params, w_va))  # step 0: early stopping may keep it
    _, (test, val) = jax.lax.scan(chunk, (params, state), None, length=evals)
    test = jnp.concatenate([init_eval[0][None], test])
    val = jnp.concatenate([init_eval[1][None], val])
    test = jnp.where(jnp.isfinite(test), test, jnp.inf)
    val = jnp.where(jnp.isfinite(val), val, jnp.inf)
    i = jnp.argmin(val)
    return {"test": test, "val": val, "best": test[i], "best_val": val[i], "final": test[-1]}


def select_restart(
    best: Float[ArrayLike, "*b r"], best_val: Float[ArrayLike, "*b r"], axis: int = -1
) -> Float[Array, "*b"]:
    """Test error of the restart with the lowest validation loss along ``axis`` (restarts share their data)."""
    i = jnp.expand_dims(jnp.argmin(best_val, axis=axis), axis)
    return jnp.squeeze(jnp.take_along_axis(best, i, axis=axis), axis)


# ---------------------------------------------------------------------------------------------------------
# Teacher from the reconstruction's prior, MAP students (random or warm start at the teacher)
# ---------------------------------------------------------------------------------------------------------


class PriorNet(eqx.Module):
    """f(x) = sum_j v_j He_3(w_j . x / sqrt d)/sqrt 6 with unnormalised rows w (h, d): the Gaussian-prior model of
    the reconstruction (w_j ~ N(0, I_d), so w_j . x / sqrt d has variance |w_j|^2/d ~ 1)."""

    w: jax.Array
    v: jax.Array

    def __call__(self, x: Float[Array, "*b d"]) -> Float[Array, "*b"]:
        return he3(x @ self.w.T / jnp.sqrt(self.w.shape[1])) @ self.v


def prior_teacher(d: int, a2: Float[ArrayLike, " k"], *, key: PRNGKeyArray) -> PriorNet:
    """Teacher drawn from the prior the reconstruction assumes: w*_i ~ N(0, I_d), readout a_i = sqrt(a2_i)."""
    V.prng_key("key", key)
    V.positive_int("d", d)
    V.array("a2", a2, ndim=1)
    V.nonnegative("a2", a2)
    a2 = jnp.asarray(a2)
    return PriorNet(jax.random.normal(key, (a2.shape[0], d)), jnp.sqrt(a2))


@partial(jax.jit, static_argnames=("n", "steps", "evals", "n_test"))
def train_map(
    teacher: PriorNet,
    *,
    data_key: PRNGKeyArray,
    init_key: PRNGKeyArray,
    n: int,
    delta: Float[ArrayLike, ""],
    steps: int,
    lr: float,
    warm: Bool[ArrayLike, ""],
    evals: int = 25,
    n_test: int = 4096,
    val_frac: float = 0.2,
):
    """Adam on the negative log posterior sum_train (y - f)^2 / (2 Delta) + |w|^2 / 2 (the Gaussian prior; v free).

    ``warm`` (bool, may be traced): start at the teacher (w*, v*): the estimator then sits in the teacher's
    basin, so its error separates a too-optimistic Bayes error from an optimisation failure; else w ~ N(0, I),
    v ~ 0.1 N(0,1)/sqrt h.
    Same width as the teacher. Returns test (evals + 1,) errors E_x (f - f*)^2 on fresh inputs, val (evals + 1,)
    validation loss (noisy labels), best / final (test error at the lowest validation loss / at the end), w, v (end).
    """
    kd, kt = jax.random.split(data_key)
    d = teacher.w.shape[1]
    kx, kz = jax.random.split(kd)
    x = jax.random.normal(kx, (n, d))
    y = teacher(x) + jnp.sqrt(delta) * jax.random.normal(kz, (n,))
    n_val = max(1, int(round(val_frac * n)))
    xtr, ytr, xva, yva = x[n_val:], y[n_val:], x[:n_val], y[:n_val]
    xte = jax.random.normal(kt, (n_test, d))
    fte = teacher(xte)
    kw, kv = jax.random.split(init_key)
    h = teacher.w.shape[0]
    rand = PriorNet(jax.random.normal(kw, (h, d)), 0.1 * jax.random.normal(kv, (h,)) / jnp.sqrt(h))
    params = jax.tree.map(lambda t, r: jnp.where(warm, t, r), teacher, rand)  # ``warm`` may be traced
    opt = optax.adam(optax.cosine_decay_schedule(lr, steps, alpha=0.1))
    state = opt.init(params)
    n_tr = xtr.shape[0]

    def objective(p):
        return (jnp.sum((p(xtr) - ytr) ** 2) / (2.0 * delta) + 0.5 * jnp.sum(p.w**2)) / n_tr

    def step(carry, _):
        p, s = carry
        upd, s = opt.update(jax.grad(objective)(p), s, p)
        return (optax.apply_updates(p, upd), s), None

    def measure(p):
        return jnp.mean((p(xte) - fte) ** 2), jnp.mean((p(xva) - yva) ** 2)

    def chunk(carry, _):
        carry, _ = jax.lax.scan(step, carry, None, length=steps // evals)
        return carry, measure(carry[0])

    t0, v0 = measure(params)
    (end, _), (test, val) = jax.lax.scan(chunk, (params, state), None, length=evals)
    test = jnp.where(jnp.isfinite(test), test, jnp.inf)
    val = jnp.where(jnp.isfinite(val), val, jnp.inf)
    test = jnp.concatenate([t0[None], test])
    val = jnp.concatenate([v0[None], val])
    i = jnp.argmin(val[1:]) + 1  # never the initialisation (for a warm start that would be the teacher itself)
    return {"test": test, "val": val, "best": test[i], "best_val": val[i], "final": test[-1], "w": end.w, "v": end.v}


# ---------------------------------------------------------------------------------------------------------
# AMP on a spiked cubic tensor: the per-feature channel of the reconstruction, run on data
# ---------------------------------------------------------------------------------------------------------


def symmetric_noise(n: int, *, key: PRNGKeyArray) -> Float[Array, "n n n"]:
    """Symmetric Gaussian tensor (n, n, n): the mean of the 6 index permutations of an iid N(0,1) tensor, times
    sqrt 6, so entries with distinct indices have unit variance."""
    V.prng_key("key", key)
    V.positive_int("n", n)
    z = jax.random.normal(key, (n, n, n))
    perms = ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))
    return sum(jnp.transpose(z, p) for p in perms) / jnp.sqrt(6.0)


def amp_onsager(
    theta: Float[ArrayLike, ""],
    eta_prime: Float[Array, "*b 1"],
    xhat_prev: Float[Array, "*b n"],
    xhat: Float[Array, "*b n"],
) -> Float[Array, "*b n"]:
    """Onsager term of tensor AMP (order 3, symmetric unit noise / n, ordered sums):
    (p-1)(p-1)! <eta'> <xhat^{t-1} xhat^t> xhat^{t-1} = 4 <eta'> <xhat^{t-1} xhat^t> xhat^{t-1}."""
    return 4.0 * eta_prime * jnp.mean(xhat_prev * xhat, axis=-1, keepdims=True) * xhat_prev


@partial(jax.jit, static_argnames=("n", "iters", "signals"))
def spiked_tensor_amp(
    cs: Float[ArrayLike, " C"], *, key: PRNGKeyArray, n: int, iters: int, m0: float, signals: int = 1
) -> tuple[Float[Array, "C T S"], Float[Array, "C T S"]]:
    """AMP on Y = theta x(x)x(x)x / n^2 + G / n (G ``symmetric_noise``), theta = sqrt(6 c), |x|^2 = n.

    x is a Gaussian vector rescaled to |x|^2 = n (the Gaussian prior up to its norm, which only adds O(n^-1/2)
    noise to every overlap). Channel: the local field B = Y{xhat}^2 - Onsager is A x + sigma z with A = theta m^2
    and sigma^2 = 2 q^2 (q = <xhat^2>), i.e. SNR r = 3 c m^2 at the Nishimori point: the per-feature equation
    m = r/(1 + r) of the reconstruction with c = alpha a2 / Delta_eff. The denoiser is the Gaussian-prior
    posterior mean with A estimated from the data, A^2 = <B^2> - 2 q^2 (empirical Bayes: scale free, so the norm
    of xhat cannot run away). Started from a side channel of overlap ``m0`` (continuation from the learned side).
    ``cs`` (C,) SNRs; ``signals`` independent spikes x share one noise tensor G (one matrix product per step).
    Returns overlap (C, iters + 1, signals) <xhat x> and mse (C, iters + 1, signals) <(xhat - x)^2>.
    """
    V.prng_key("key", key)
    kx, kg, k0 = jax.random.split(key, 3)
    x = jax.random.normal(kx, (signals, n))
    x = x * jnp.sqrt(n) / jnp.linalg.norm(x, axis=1, keepdims=True)
    gmat = symmetric_noise(n, key=kg).reshape(n, n * n) / n
    z0 = jax.random.normal(k0, (signals, n))
    r0 = m0 / (1.0 - m0)
    xhat0 = jnp.sqrt(r0) * (jnp.sqrt(r0) * x + z0) / (1.0 + r0)
    mean = lambda v: jnp.mean(v, axis=1, keepdims=True)

    def run(c):
        theta = jnp.sqrt(6.0 * c)

        def step(carry, _):
            xh, xh_prev, ep = carry
            quad = (xh[:, :, None] * xh[:, None, :]).reshape(signals, n * n)
            b = theta * x * mean(x * xh) ** 2 + quad @ gmat.T
            b = b - amp_onsager(theta, ep, xh_prev, xh)
            s2 = 2.0 * mean(xh**2) ** 2
            a2 = jnp.maximum(mean(b * b) - s2, 1e-12 * s2)
            scale = (jnp.sqrt(a2) / s2) / (1.0 + a2 / s2)
            new = scale * b
            return (new, xh, scale), (mean(new * x)[:, 0], mean((new - x) ** 2)[:, 0])

        # first step: xhat0 is independent of G, no Onsager term (eta' = 0 plays that role)
        init = (xhat0, xhat0, jnp.zeros((signals, 1)))
        _, (ov, mse) = jax.lax.scan(step, init, None, length=iters)
        return (
            jnp.concatenate([mean(xhat0 * x)[:, 0][None], ov]),
            jnp.concatenate([mean((xhat0 - x) ** 2)[:, 0][None], mse]),
        )

    return jax.lax.map(run, jnp.asarray(cs))
