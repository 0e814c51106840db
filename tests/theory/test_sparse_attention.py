"""Step-dLLM mask policy: pooled importance, budgets, anchor refresh, masked attention (numpy references)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxwb.theory import sparse_attention as sa

H, L, D, BLK = 4, 64, 16, 16
NB = L // BLK


def _key(seed):
    return jax.random.key(seed, impl="unsafe_rbg")  # fast to compile on XLA:CPU


@functools.partial(jax.jit, static_argnums=1)
def _qkv(seed, sharp=2.0):
    ks = jax.random.split(_key(seed), 3)
    q = sharp * jax.random.normal(ks[0], (H, L, D))
    return q, jax.random.normal(ks[1], (H, L, D)), jax.random.normal(ks[2], (H, L, D))


def test_block_importance_matches_numpy():
    q, k, _ = _qkv(0)
    a = np.asarray(sa.block_importance(q, k, block_q=BLK, block_k=BLK))
    qn, kn = np.asarray(q, np.float64), np.asarray(k, np.float64)
    qb = qn.reshape(H, NB, BLK, D).mean(2)
    kb = kn.reshape(H, NB, BLK, D).mean(2)
    s = np.einsum("hid,hjd->hij", qb, kb) / np.sqrt(D)
    p = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(a, p / p.sum(-1, keepdims=True), rtol=1e-4, atol=1e-6)


@given(seed=st.integers(0, 1000), budget=st.sampled_from([0.25, 0.5, 0.75, 1.0]))
def test_budgets(seed, budget):
    q, k, _ = _qkv(seed)
    imp = sa.block_importance(q, k, block_q=BLK, block_k=BLK)
    uni = np.asarray(sa.select_blocks(imp, budget, allocation="uniform"))
    assert np.all(uni.sum(-1) == max(1, round(budget * NB)))
    kh = np.asarray(sa.head_budgets(imp, budget))
    conc = np.asarray(sa.head_concentration(imp))
    assert np.all((conc >= -1e-6) & (conc <= 1 + 1e-6))
    if np.all(kh < NB):  # no cap binds: the global budget is spent exactly
        assert kh.sum() == round(budget * H * NB)
    adapt = np.asarray(sa.select_blocks(imp, budget, allocation="concentration"))
    np.testing.assert_array_equal(adapt.sum(-1), np.broadcast_to(kh[:, None], (H, NB)))
    glob = np.asarray(sa.select_blocks(imp, budget, allocation="global"))
    assert np.all(glob.sum(-1) >= 1) and glob.sum() >= round(budget * H * NB * NB)
    # each row keeps its most important blocks
    ranks = np.argsort(np.argsort(-np.asarray(imp), axis=-1, kind="stable"), axis=-1, kind="stable")
    np.testing.assert_array_equal(adapt, ranks < kh[:, None, None])


def test_concentrated_heads_get_more_blocks():
    imp = np.full((2, NB, NB), 1.0 / NB)  # head 0 uniform
    imp[1] = np.eye(NB) * 0.9 + 0.1 / NB  # head 1 nearly one-hot
    kh = np.asarray(sa.head_budgets(jnp.asarray(imp / imp.sum(-1, keepdims=True)), 0.5))
    assert kh[1] > kh[0] and kh.sum() == 4


def test_anchor_schedule_and_reuse():
    np.testing.assert_array_equal(sa.anchor_steps(7, 3), [1, 0, 0, 1, 0, 0, 1])
    np.testing.assert_array_equal(sa.anchor_steps(5, 9), [1, 0, 0, 0, 0])
    # a concrete period inside a jit trace (its check must not build a tracer) and a traced one agree
    np.testing.assert_array_equal(jax.jit(lambda: sa.anchor_steps(5, 2))(), jax.jit(lambda p: sa.anchor_steps(5, p))(2))
    imps = jax.nn.softmax(jax.random.normal(_key(1), (6, H, NB, NB)), axis=-1)
    masks = np.asarray(sa.mask_trajectory(imps, sa.anchor_steps(6, 2), 0.5, allocation="uniform"))
    for t in range(6):
        anchor = t - t % 2
        np.testing.assert_array_equal(masks[t], sa.select_blocks(imps[anchor], 0.5, allocation="uniform"))


@jax.jit
def _masked_case(seed, density):
    q, k, v = _qkv(seed)
    bm = jax.random.bernoulli(_key(seed + 1), density, (H, NB, NB))
    bm = bm.at[0, 0].set(False)  # an empty row
    full = jnp.ones((H, NB, NB), bool)
    om, od, rec = sa.masked_attention(q, k, v, bm)
    rec_full = sa.masked_attention(q, k, v, full)[2]
    rec_sup = sa.masked_attention(q, k, v, bm | jnp.roll(bm, 1, axis=-1))[2]
    err, r = sa.evaluate_masks(q[None], k[None], v[None], full[None])
    return om, rec, rec_full, rec_sup, err[0], r[0]


@given(seed=st.integers(0, 1000), density=st.sampled_from([0.2, 0.5]))
def test_masked_attention_recall_and_error(seed, density):
    om, rec, rec_full, rec_sup, err, r = map(np.asarray, _masked_case(seed, density))
    assert np.all(np.isfinite(om)) and np.all(om[0, :BLK] == 0)  # empty row: 0, not NaN
    np.testing.assert_allclose(rec_full, 1.0, atol=1e-5)
    assert np.all(rec_sup >= rec - 1e-6)  # more blocks, more recall
    assert float(err) < 1e-5 and abs(float(r) - 1) < 1e-5


def test_trajectory_transition_is_abrupt():
    """Unit test of the policy machinery on the synthetic toy trajectory (it builds the transition in; no claim
    of ``jaxwb.sims.sparse_attention`` uses it: those come from a trained diffusion LM's attention)."""
    sharp = jnp.array([1.0, 8.0])
    q, k, v = sa.synthetic_trajectory(
        key=_key(0),
        num_steps=6,
        num_heads=2,
        seq_len=64,
        head_dim=16,
        block=16,
        transitions=(3,),
        sharpness=sharp,
        num_targets=1,
        drift=0.0,
    )
    imp = jax.vmap(lambda a, b: sa.block_importance(a, b, block_q=16, block_k=16))(q, k)
    top = np.asarray(jnp.argmax(imp[:, 1], axis=-1))  # sharp head's best block per query block
    np.testing.assert_array_equal(top[0], top[2])  # stable within a phase
    assert np.any(top[2] != top[3])  # redrawn at the transition
    assert float(sa.head_concentration(imp[0])[1]) > float(sa.head_concentration(imp[0])[0])


def test_block_attention_mass_matches_numpy():
    q, k, _ = _qkv(1)
    a = np.asarray(sa.block_attention_mass(q, k, BLK))
    s = np.einsum("hqd,hkd->hqk", np.asarray(q, np.float64), np.asarray(k, np.float64)) / np.sqrt(D)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    ref = p.reshape(H, NB, BLK, NB, BLK).sum(-1).mean(2)
    np.testing.assert_allclose(a, ref, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-5)


def test_overlap_and_topk_mass():
    a = jnp.asarray([[[True, True, False, False]]])
    b = jnp.asarray([[[True, False, True, False]]])
    assert float(sa.mask_overlap(a, a)[0]) == 1.0 and float(sa.mask_overlap(a, b)[0]) == 0.5
    assert float(sa.mask_overlap(a, ~a)[0]) == 0.0
    uniform = jnp.full((2, 3, 8), 1 / 8)
    np.testing.assert_allclose(sa.topk_mass(uniform, 2), 0.25, rtol=1e-6)
    onehot = jax.nn.one_hot(jnp.zeros((2, 3), int), 8)
    np.testing.assert_allclose(sa.topk_mass(onehot, 1), 1.0)
    with pytest.raises(ValueError, match="k"):
        sa.topk_mass(uniform, 0)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda imp: sa.select_blocks(imp, 0.0), "budget"),
        (lambda imp: sa.select_blocks(imp, 0.5, allocation="topk"), "allocation"),
        (lambda imp: sa.anchor_steps(4, 0), "period"),
        (
            lambda imp: sa.block_importance(jnp.ones((1, 20, 4)), jnp.ones((1, 20, 4)), block_q=16, block_k=4),
            "block_q",
        ),
    ],
)
def test_bad_parameters_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call(jnp.full((1, 2, 2), 0.5))
