"""Teacher-student solver, cubic fast path: the error and potential sums with the first j features learned
(the prefix form of eq. BO for g = m^3), in lane sums. See the package docstring (Numerics)."""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from jaxwb.theory.teacher_student import closed_forms

LANES = 16  # sums over features run as LANES independent partial sums (XLA vectorises them; a plain sum does not)


def _lane_sum(x):
    """Sum over the last axis (length a multiple of LANES) as LANES interleaved partial sums, then across them."""
    return jnp.sum(jnp.sum(x.reshape(x.shape[:-1] + (x.shape[-1] // LANES, LANES)), axis=-2), axis=-1)


def prefix_tail(a2):
    """tail (k + 1,): tail[j] = sum_{i>=j} a2_i (the unlearned features' errors when 1..j are learned)."""
    return jnp.concatenate([jnp.cumsum(a2[::-1])[::-1], jnp.zeros(1, a2.dtype)])


def fast_terms(alpha, a2, delta, tail=None, *, fn: bool = False):
    """Per-alpha constants of the cubic prefix error: w (k_pad,) = 1/(alpha a2_i) (inf on padding and where
    alpha a2_i = 0), d_thr (k,) = alpha a2_i / c_IT (feature i learned iff D <= d_thr_i), tail (k + 1,) with
    tail[j] = sum_{i>=j} a2_i (``prefix_tail``; passed in when ``a2`` is the learnable head of a longer vector).
    ``fn``: d_thr as the function i -> alpha a2_i / c_IT (same value, bit for bit) for ``count_down``'s
    searches, which visit log2 k entries: no (k,) vector of thresholds is computed per alpha."""
    k = a2.shape[0]
    pad = (-k) % LANES
    aa = jnp.concatenate([alpha * a2, jnp.zeros(pad, a2.dtype)])
    w = jnp.where(aa > 0, 1.0 / jnp.where(aa > 0, aa, 1.0), jnp.inf)
    thr = (lambda i: alpha * a2[i] / closed_forms.C_IT) if fn else alpha * a2 / closed_forms.C_IT
    return w, thr, prefix_tail(a2) if tail is None else tail


def prefix_eps(x, j, w, alpha, delta, tail):
    """eps with exactly the first j features learned (g = m^3) at D = delta + x, the form the loops evaluate.

    On the learned branch c_i = alpha a2_i / D, r_i = sqrt(1 - 4/(3 c_i)) = sqrt(1 - 4 D w_i / 3), t_i = 1 + r_i,
    m_i = t_i/2, u_i = (2/(3 c_i))/t_i, so a2_i u_i (1 + m_i + m_i^2) = (2D/(3 alpha)) (t_i/4 + 1/2 + 1/t_i):
    eps_j = (2D/(3 alpha)) sum_{i<j} (t_i/4 + 1/2 + 1/t_i) + tail[j]. One sqrt and one division per feature, no
    cancellation (every term lies in [3/2, 7/4]). Tested against sum a2_i (1 - m+(c_i)^3).
    """
    d = delta + x
    t = 1.0 + jnp.sqrt(jnp.maximum(1.0 - (4.0 / 3.0) * d * w, 0.0))
    on = jnp.arange(w.shape[-1]) < j
    s = _lane_sum(jnp.where(on, 0.25 * t + 0.5 + 1.0 / t, 0.0))
    return jnp.where(j > 0, (2.0 / 3.0) * (d / alpha) * s, 0.0) + tail[j]


def _prefix_t(x, w, delta):
    """(q, t) at D = delta + x: q_i = D w_i, t_i = 1 + sqrt(1 - 4 q_i / 3) (the form ``prefix_sums`` uses)."""
    q = (delta + x) * w
    return q, 1.0 + jnp.sqrt(jnp.maximum(1.0 - (4.0 / 3.0) * q, 0.0))


def prefix_err(x, j, w, alpha, delta, tail):
    """The eps of ``prefix_sums`` alone (same expressions, bit for bit): the kept point's error without the
    potential's log pass, which only a comparison of two or more valid candidates needs."""
    d = delta + x
    _, t = _prefix_t(x, w, delta)
    on = jnp.arange(w.shape[-1]) < j
    s = _lane_sum(jnp.where(on, 0.25 * t + 0.5 + 1.0 / t, 0.0))
    return jnp.where(j > 0, (2.0 / 3.0) * (d / alpha) * s, 0.0) + tail[j]


def prefix_phi(x, j, w, delta):
    """The potential's feature sum of ``prefix_sums`` alone: sum_{i<j} (m_i + log(1 - m_i))/2."""
    q, t = _prefix_t(x, w, delta)
    on = jnp.arange(w.shape[-1]) < j
    return _lane_sum(jnp.where(on, 0.25 * t + 0.5 * jnp.log((2.0 / 3.0) * q / t), 0.0))


def prefix_sums(x, j, w, alpha, delta, tail):
    """``prefix_eps`` and the potential's feature sum in one pass: (eps, t) at D = delta + x with
    t = sum_i (m_i + log(1 - m_i))/2 (eq. Phi; unlearned features contribute 0). Learned features (i < j):
    m_i = t_i/2, u_i = 1 - m_i = (2/3) D w_i / t_i (= (2/(3 c_i))/(1 + r_i), no cancellation as m_i -> 1).
    Equals (``prefix_err``, ``prefix_phi``), which the solver calls separately.
    """
    return prefix_err(x, j, w, alpha, delta, tail), prefix_phi(x, j, w, delta)


def count_down(v, level, *, strict: bool = False, n: int | None = None):
    """#{i: level <= v_i} (``strict``: level < v_i) for a non-increasing ``v`` (k,), as a binary search (log2 k
    gathers, not k comparisons and a reduction): the exact count of ``jnp.sum(level <= v)`` when ``v`` is sorted
    (a2 non-increasing makes d_thr = alpha a2 / c_IT and the learned prefix of m non-increasing: rounding is
    monotone). ``v`` may also be a function i -> v_i of an int32 index, with ``n`` entries: the search then
    evaluates only the log2 n entries it visits, and no (k,) vector (nor its negation, which
    ``jnp.searchsorted`` on an ascending order needed) is materialised."""
    if not callable(v):
        arr = jnp.asarray(v)
        n = arr.shape[-1]
        v = lambda i: arr[i]
    if n is None:
        raise ValueError("n must be given when v is a function of the index")
    hit = (lambda x: level < x) if strict else (lambda x: level <= x)

    def step(_, st):  # invariant: hit on [0, lo), miss on [hi, n)
        lo, hi = st
        mid = (lo + hi) // 2
        h = (lo < hi) & hit(v(jnp.minimum(mid, n - 1)))
        return jnp.where(h, mid + 1, lo), jnp.where((lo < hi) & ~h, mid, hi)

    lo, _ = lax.fori_loop(0, max(n, 1).bit_length(), step, (jnp.int32(0), jnp.int32(n)))
    return lo.astype(jnp.result_type(int))


def prefix_overlaps(x, j, w, delta, *, index=None):
    """Overlaps (m, u = 1 - m), shape (k_pad,), with exactly the first j features learned at D = delta + x.
    ``index``: ``w`` is the entry w[index] and the overlaps are that feature's (same expressions)."""
    q = (delta + x) * w
    t = 1.0 + jnp.sqrt(jnp.maximum(1.0 - (4.0 / 3.0) * q, 0.0))
    on = (jnp.arange(w.shape[-1]) if index is None else index) < j
    return jnp.where(on, 0.5 * t, 0.0), jnp.where(on, (2.0 / 3.0) * q / t, 1.0)
