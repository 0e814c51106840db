"""Teacher and Adam-trained student networks for the extensive-width teacher-student result.

Both are the same Equinox two-layer MLP  f(x) = sum_j v_j sigma(w_j . x / |w_j|),  sigma = He_3 / sqrt 6
(so E[sigma(u) sigma(u')] = rho^3 for unit Gaussians with correlation rho: the overlap kernel g(m) = m^3 of
``theory.teacher_student``). The teacher has k orthonormal rows w*_i and readout v*_i = a_i (a_i^2 ~ i^(-2 beta),
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

SQRT6 = 6.0**0.5


def he3(z):
    """Normalised third Hermite polynomial He_3(z)/sqrt 6 = (z^3 - 3 z)/sqrt 6 (unit variance under N(0,1))."""
    return (z**3 - 3.0 * z) / SQRT6


class TwoLayer(eqx.Module):
    """f(x) = sum_j (mask_j v_j) He_3(w_j . x / |w_j|)/sqrt 6. w (h, d), v (h,), mask (h,) (not trained)."""

    w: jax.Array
    v: jax.Array
    mask: jax.Array

    def __call__(self, x):
        """x (..., d) -> (...)."""
        wn = self.w / jnp.linalg.norm(self.w, axis=-1, keepdims=True)
        return he3(x @ wn.T) @ (self.v * jax.lax.stop_gradient(self.mask))


def make_teacher(key, d: int, a2) -> TwoLayer:
    """Teacher with k = len(a2) <= d orthonormal hidden directions and readout a_i = sqrt(a2_i)."""
    a2 = jnp.asarray(a2)
    k = a2.shape[0]
    if k > d:
        raise ValueError(f"k (= len(a2) = {k}) must be <= d = {d} for orthonormal teacher directions")
    q, _ = jnp.linalg.qr(jax.random.normal(key, (d, k)))
    return TwoLayer(q.T, jnp.sqrt(a2), jnp.ones(k))


def init_student(key, d: int, mask, v_scale: float = 0.1) -> TwoLayer:
    """Student of max width h = len(mask): w ~ N(0, I), v ~ v_scale N(0, 1)/sqrt(h); units with mask 0 are off."""
    mask = jnp.asarray(mask, jnp.float32)
    h = mask.shape[0]
    kw, kv = jax.random.split(key)
    return TwoLayer(jax.random.normal(kw, (h, d)), v_scale * jax.random.normal(kv, (h,)) / jnp.sqrt(h), mask)


def sample(key, teacher: TwoLayer, n: int, delta):
    """n samples (x (n, d), y (n,)) with y = f*(x) + sqrt(delta) z."""
    kx, kz = jax.random.split(key)
    x = jax.random.normal(kx, (n, teacher.w.shape[1]))
    return x, teacher(x) + jnp.sqrt(delta) * jax.random.normal(kz, (n,))


@partial(jax.jit, static_argnames=("n_max", "steps", "evals", "n_test"))
def train_student(data_key, init_key, teacher: TwoLayer, mask, n, *, n_max: int, delta, steps: int, lr,
                  evals: int = 40, n_test: int = 4096, val_frac: float = 0.2):
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
    x, y = sample(kd, teacher, n_max, delta)
    j = jnp.arange(n_max)
    n_val = jnp.maximum(1, jnp.round(val_frac * n)).astype(j.dtype)
    w_tr = ((j >= n_val) & (j < n)).astype(x.dtype)
    w_va = (j < n_val).astype(x.dtype)
    xte = jax.random.normal(kt, (n_test, teacher.w.shape[1]))
    fte = teacher(xte)
    student = init_student(ki, teacher.w.shape[1], mask)
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


def select_restart(best, best_val, axis: int = -1):
    """Test error of the restart with the lowest validation loss along ``axis`` (restarts share their data)."""
    i = jnp.expand_dims(jnp.argmin(best_val, axis=axis), axis)
    return jnp.squeeze(jnp.take_along_axis(best, i, axis=axis), axis)
