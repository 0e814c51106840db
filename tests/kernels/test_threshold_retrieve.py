"""Louver-style threshold retrieval: zero false negatives (property test), kernel bound == XLA bound,
attention over retrieved keys vs dense, and the work saved on clustered keys."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxwb.pallas_kernels.attention import (
    attention_reference,
    block_lists_to_mask,
    retrieval_block_lists,
    threshold_attention,
    threshold_retrieve,
)

B, LQ, LK, H, HKV, D = 1, 8, 32, 2, 1, 16
_floats = st.floats(-4, 4, width=32, allow_subnormal=False)


@functools.cache
def _retrieve(block_size, bound, impl="xla"):
    return jax.jit(functools.partial(threshold_retrieve, block_size=block_size, bound=bound, implementation=impl))


@given(
    q=hnp.arrays(np.float32, (B, LQ, H, D), elements=_floats),
    k=hnp.arrays(np.float32, (B, LK, HKV, D), elements=_floats),
    tau=st.floats(-30, 30, width=32),
    block_size=st.sampled_from([4, 8]),
    bound=st.sampled_from(["ball", "box"]),
    k_shift=st.sampled_from([0.0, 3.0]),
)
def test_zero_false_negatives(q, k, tau, block_size, bound, k_shift):
    k = k + np.float32(k_shift)  # keys away from the origin: the bound is far from tight, the check still exact
    r = _retrieve(block_size, bound)(q, k, tau)
    exact = np.einsum("bqhd,bkd->bhqk", q.astype(np.float64), k[:, :, 0].astype(np.float64))  # Hkv = 1
    needed = exact >= tau
    touched = np.repeat(np.asarray(r.block_mask), block_size, axis=-1)
    assert not np.any(needed & ~touched), "a key with q.k >= tau sits in a skipped block"
    assert np.all(
        np.asarray(r.upper_bound)[..., None].repeat(block_size, -1).reshape(exact.shape) >= exact - 1e-12
    )  # the bound bounds every key of its block
    got = np.asarray(r.key_mask)
    assert not np.any(needed & ~got), "a key with exact q.k >= tau was not retrieved"
    _assert_extras_within_margin(got, needed, exact, q, k[:, :, 0], tau)


def _assert_extras_within_margin(got, needed, exact, q, k, tau):
    """Keys retrieved beyond the exact answer lie within the proven rounding margin of tau."""
    mag = np.einsum("bqhd,bkd->bhqk", np.abs(q.astype(np.float64)), np.abs(k.astype(np.float64)))
    eps = float(np.finfo(np.float32).eps)
    margin = (q.shape[-1] + 2) * eps * mag * (1 + 1e-6) + 2 * eps * abs(float(tau)) + 1e-30
    extra = got & ~needed
    assert np.all(tau - exact[extra] <= margin[extra])


def _exact_scores(q, k):
    """q.k of float32 inputs, correctly rounded to float64 (products exact in float64, math.fsum exact)."""
    import math

    qq, kk = q.astype(np.float64)[0, :, 0], k.astype(np.float64)[0, :, 0]  # [Lq, D], [Lk, D]
    return np.array([[math.fsum(a * b) for b in kk] for a in qq])


@pytest.mark.parametrize("bound", ["ball", "box"])
def test_tau_exactly_at_key_scores_has_no_false_negative(bound):
    """tau placed exactly at (float32 roundings of) key scores: every key with exact q.k >= tau is retrieved,
    including those whose float32 score rounds below tau (the case the rounding margin exists for)."""
    rng = np.random.default_rng(0)
    D = 64
    q = rng.standard_normal((1, 4, 1, D)).astype(np.float32)
    k = rng.standard_normal((1, 64, 1, D)).astype(np.float32)
    exact = _exact_scores(q, k)  # [Lq, Lk]
    f32 = np.asarray(jnp.einsum("bqhd,bkhd->bhqk", q, k))[0, 0]
    rounded_below = 0
    for i in range(q.shape[1]):
        for j in range(0, k.shape[1], 4):
            for tau in (np.float32(exact[i, j]), np.nextafter(np.float32(exact[i, j]), np.float32(-np.inf))):
                r = _retrieve(16, bound)(q, k, jnp.full((1, 1, q.shape[1]), tau))
                got = np.asarray(r.key_mask)[0, 0]
                needed = exact >= np.float64(tau)
                assert not np.any(needed & ~got), f"false negative at tau = score({i}, {j}) = {tau!r}"
                rounded_below += int(np.sum(needed & (f32 < tau)))
    assert rounded_below > 0  # the test does hit keys that a plain float32 filter would have dropped


@pytest.mark.parametrize("bound", ["ball", "box"])
def test_kernel_bound_equals_xla(bound):
    ks = jax.random.split(jax.random.key(0), 2)
    q = jax.random.normal(ks[0], (1, 32, 2, 16))
    k = jax.random.normal(ks[1], (1, 64, 1, 16)) + 1.0
    a = _retrieve(8, bound, "interpret")(q, k, 2.0)
    b = _retrieve(8, bound, "xla")(q, k, 2.0)
    np.testing.assert_allclose(a.upper_bound, b.upper_bound, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(a.key_mask, b.key_mask)


@functools.partial(jax.jit, static_argnames=("block_size",))
def _clustered_case(key, taus, *, block_size=8):
    """Keys in tight clusters (one per block) and queries aimed at one cluster each."""
    kc, kn, kq, kv = jax.random.split(key, 4)
    nb = LK // block_size
    centres = 2.0 * jax.random.normal(kc, (nb, D))
    k = (jnp.repeat(centres, block_size, axis=0) + 0.2 * jax.random.normal(kn, (LK, D)))[None, :, None, :]
    target = jax.random.randint(kq, (LQ * H,), 0, nb)
    q = (centres[target] / 2.0).reshape(1, LQ, H, D)
    v = jax.random.normal(kv, k.shape)
    dense = attention_reference(q, k, v)

    def at(tau):
        out, r = threshold_attention(q, k, v, tau, block_size=block_size, bound="ball", implementation="xla")
        err = jnp.linalg.norm(out - dense) / jnp.linalg.norm(dense)
        return err, r.touched_fraction, jnp.mean(r.key_mask)

    return jax.vmap(at)(taus)


def test_attention_over_retrieved_keys_and_work_fraction():
    taus = jnp.array([-1e9, 0.0, 5.0, 20.0, 1e9])
    err, touched, kept = _clustered_case(jax.random.key(1), taus)
    err, touched, kept = map(np.asarray, (err, touched, kept))
    assert err[0] < 1e-6 and touched[0] == 1.0  # tau = -inf: every key, equals dense attention
    assert np.all(np.diff(touched) <= 0) and np.all(np.diff(kept) <= 0)  # higher tau: less work, fewer keys
    assert touched[3] < 0.5 and kept[3] > 0  # clustered keys: most blocks skipped, the right ones kept
    assert err[3] < 0.1  # softmax mass sits on the retrieved cluster
    assert touched[-1] == 0.0 and err[-1] == pytest.approx(1.0)  # nothing retrieved: output 0 (no NaN)
    assert np.all(kept <= touched)


def test_retrieval_block_lists_cover_retrieved_keys():
    ks = jax.random.split(jax.random.key(2), 2)
    q = jax.random.normal(ks[0], (1, 32, 2, 16))
    k = jax.random.normal(ks[1], (1, 64, 1, 16))
    r = _retrieve(8, "box")(q, k, 3.0)
    cnt, idx = retrieval_block_lists(r, block_q=16)
    bm = np.asarray(block_lists_to_mask(cnt, idx, 8))  # [B, H, 2, 8]
    per_query = np.repeat(np.repeat(bm, 16, axis=2), 8, axis=3)
    assert not np.any(np.asarray(r.key_mask) & ~per_query)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(bound="sphere"), "bound"),
        (dict(block_size=5), "block_size"),
        (dict(implementation="gpu"), "implementation"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        threshold_retrieve(jnp.ones((1, 8, 1, 16)), jnp.ones((1, 32, 1, 16)), 0.0, **kwargs)


def _dot_precisions(jaxpr):
    """The precision of every dot_general in a (closed) jaxpr, sub-jaxprs (pallas_call's kernel, jit) included."""
    out = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            out.append(eqn.params["precision"])
        for v in eqn.params.values():
            for sub in v if isinstance(v, (tuple, list)) else (v,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    out += _dot_precisions(inner)
    return out


def test_every_product_is_float32_whatever_the_default_precision():
    """The rounding margins hold for float32 products; a GPU's default float32 dot is TF32 (an H200 run lost
    keys with q.k >= tau under it). Every dot_general of the op, the kernel's included, asks for HIGHEST,
    also under jax.default_matmul_precision("bfloat16")."""
    q = jnp.ones((1, 16, 1, 16), jnp.float32)
    k = jnp.ones((1, 64, 1, 16), jnp.float32)
    highest = (jax.lax.Precision.HIGHEST, jax.lax.Precision.HIGHEST)
    for impl, n in (("xla", 4), ("interpret", 4)):  # ball bound: q.c, |q|.|c|; then scores and |q|.|k|
        with jax.default_matmul_precision("bfloat16"):
            closed = jax.make_jaxpr(lambda q, k, impl=impl: threshold_retrieve(q, k, 1.0, implementation=impl))(q, k)
        precisions = _dot_precisions(closed.jaxpr)
        assert len(precisions) >= n, (impl, precisions)
        assert all(p == highest for p in precisions), (impl, precisions)
