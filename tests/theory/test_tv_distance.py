"""Tests of theory/tv_distance/ against exact enumeration and an independent NumPy reference.

Shapes are fixed (K=3, n=4 for the Markov pairs; K=5, n=3 for the transformer) so jit compiles once.
"""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxwb.theory import tv_distance as tv

K, N = 3, 4
M = 20000


def pair(seed, delta=0.7, scale=1.0):
    k1, k2 = jax.random.split(jax.random.key(seed))
    p = tv.random_ngram(K, 1, scale, key=k1)
    return p, tv.perturb(p, delta, key=k2)


def numpy_seq_probs(model, n):
    """P(x) for every x in lexicographic order, by an explicit product over positions (NumPy, float64)."""
    table = np.exp(np.asarray(model.params, np.float64))  # (K+1, K): row K = initial distribution
    Kk = table.shape[-1]
    probs = []
    for x in itertools.product(range(Kk), repeat=n):
        prev, pr = Kk, 1.0
        for t in x:
            pr *= table[prev, t]
            prev = t
        probs.append(pr)
    return np.array(probs)


# ---------------------------------------------------------------------------------------------------------
# exact values
# ---------------------------------------------------------------------------------------------------------


@given(seed=st.integers(0, 2**16), delta=st.floats(0.0, 3.0))
def test_exact_tv_matches_numpy_and_basic_facts(seed, delta):
    p, q = pair(seed, delta)
    P, Q = numpy_seq_probs(p, N), numpy_seq_probs(q, N)
    assert abs(P.sum() - 1) < 1e-5
    ref_tv = 0.5 * np.abs(P - Q).sum()
    ref_kl = np.sum(P * (np.log(P) - np.log(Q)))
    t, kl = float(tv.exact_tv(p, q, N)), float(tv.exact_kl(p, q, N))
    assert t == pytest.approx(ref_tv, abs=2e-5)
    assert kl == pytest.approx(ref_kl, rel=1e-3, abs=2e-5)
    assert 0.0 <= t <= 1.0 + 1e-6
    assert float(tv.exact_tv(q, p, N)) == pytest.approx(t, abs=1e-6)  # symmetry
    assert float(tv.exact_tv(p, p, N)) == 0.0  # TV(P, P) = 0
    assert t <= math.sqrt(max(kl, 0.0) / 2) + 1e-5  # Pinsker


def test_markov_model_is_the_ngram_table():
    init, trans = jnp.array([0.0, 1.0, -1.0]), jnp.arange(9.0).reshape(3, 3) / 4
    m = tv.markov_model(init, trans)
    toks = jnp.array([[2, 0, 1, 1]])
    lp = np.asarray(m.all_logprobs(toks))[0]
    np.testing.assert_allclose(lp[0], jax.nn.log_softmax(init), atol=1e-6)
    np.testing.assert_allclose(lp[2], jax.nn.log_softmax(trans[0]), atol=1e-6)
    step = np.stack([np.asarray(m.logprobs(toks, t))[0] for t in range(4)])
    np.testing.assert_allclose(step, lp, atol=1e-6)


def test_second_order_ngram_step_matches_teacher_forcing():
    m = tv.random_ngram(K, 2, 1.0, key=jax.random.key(3))
    toks = tv.all_sequences(K, N)
    step = jnp.stack([m.logprobs(toks, t) for t in range(N)], 1)
    np.testing.assert_allclose(np.asarray(step), np.asarray(m.all_logprobs(toks)), atol=1e-6)
    assert float(jnp.sum(jnp.exp(tv.sequence_logprob(m, toks)))) == pytest.approx(1.0, abs=1e-5)


# ---------------------------------------------------------------------------------------------------------
# logit access
# ---------------------------------------------------------------------------------------------------------


def exact_variances(p, q, n):
    """Exact Var of the plain and RB estimators by enumeration (NumPy, float64)."""
    P, Q = numpy_seq_probs(p, n), numpy_seq_probs(q, n)
    z = np.maximum(1 - Q / P, 0)
    var_plain = np.sum(P * z**2) - np.sum(P * z) ** 2
    P2, Q2 = P.reshape(-1, K), Q.reshape(-1, K)  # rows: prefixes x_<n, columns: last token
    zrb = np.maximum(P2 - Q2, 0).sum(1) / P2.sum(1)  # E[plain | x_<n]
    var_rb = np.sum(P2.sum(1) * zrb**2) - np.sum(P2.sum(1) * zrb) ** 2
    return var_plain, var_rb


@pytest.mark.parametrize("kind", tv.LOGIT_KINDS)
def test_logit_estimators_unbiased_and_bounded(kind):
    p, q = pair(1)
    exact = float(tv.exact_tv(p, q, N))
    z = np.asarray(tv.tv_logit_z(p, q, N, M, kind, key=jax.random.key(7)), np.float64)
    assert z.shape == (M,)
    assert np.all((z >= 0) & (z <= 1))
    se = z.std() / math.sqrt(M)
    assert abs(z.mean() - exact) <= 4 * se
    est = tv.tv_logit(p, q, N, M, kind, key=jax.random.key(7))
    assert est.queries == 2 * N * M
    assert float(est.value) == pytest.approx(z.mean(), abs=1e-6)


def test_variance_bounds_exact_and_measured():
    p, q = pair(2)
    exact = float(tv.exact_tv(p, q, N))
    var_plain, var_rb = exact_variances(p, q, N)
    assert var_plain <= exact  # Var Z <= E Z^2 <= E Z = TV  (0 <= Z <= 1)
    assert var_rb <= var_plain  # Rao-Blackwell
    zp = np.asarray(tv.tv_logit_z(p, q, N, M, "plain", key=jax.random.key(8)), np.float64)
    zr = np.asarray(tv.tv_logit_z(p, q, N, M, "rb", key=jax.random.key(8)), np.float64)
    assert zp.var() == pytest.approx(var_plain, rel=0.1)
    assert zr.var() == pytest.approx(var_rb, rel=0.1)


def test_identical_models_give_zero():
    p, _ = pair(4)
    for kind in tv.LOGIT_KINDS:
        assert float(tv.tv_logit(p, p, N, M, kind, key=jax.random.key(0)).value) == 0.0
    assert float(tv.kl_logit(p, p, N, M, key=jax.random.key(0)).value) == 0.0


def test_decode_samples_from_p():
    p, q = pair(5)
    d = tv.decode(p, q, jnp.zeros((M,), bool), key=jax.random.key(9), n=N, m=M)
    first = np.bincount(np.asarray(d.tokens[:, 0]), minlength=K) / M
    np.testing.assert_allclose(first, np.exp(np.asarray(p.params[K])), atol=4 * math.sqrt(0.25 / M))
    # logged log-probs are those of the sampled tokens under both models
    ref = np.asarray(jnp.take_along_axis(q.all_logprobs(d.tokens), d.tokens[..., None], -1)[..., 0])
    np.testing.assert_allclose(np.asarray(d.lq), ref, atol=1e-6)


def test_kl_estimator_unbiased():
    p, q = pair(6)
    z = np.asarray(tv.kl_logit_z(p, q, N, M, key=jax.random.key(3)), np.float64)
    assert abs(z.mean() - float(tv.exact_kl(p, q, N))) <= 4 * z.std() / math.sqrt(M)


def test_hoeffding_m():
    assert tv.hoeffding_m(0.05, 0.1) == math.ceil(math.log(20) / (2 * 0.05**2)) == 600
    assert tv.hoeffding_m(1.0, 0.5) == 1
    with pytest.raises(ValueError, match="eps"):
        tv.hoeffding_m(0.0, 0.1)
    with pytest.raises(ValueError, match="delta"):
        tv.hoeffding_m(0.1, 1.0)


@pytest.mark.parametrize("eps, delta", [(0.05, 0.1), (0.1, 0.05), (0.2, 0.3)])
def test_hoeffding_coverage_holds_for_any_bounded_unbiased_estimator(eps, delta):
    # Hoeffding's guarantee, exactly (binomial law, no sampling): the mean of m = hoeffding_m(eps, delta) i.i.d.
    # values in [0, 1] lies within eps of its expectation with probability >= 1 - delta, even for the worst law
    # (Bernoulli(1/2)); for a law of small variance (Bernoulli(0.05) here; the simulation's Var Z is 0.03-0.09)
    # also with a bias of eps / 2, which is why coverage of eps is not a claim of the simulation
    # (sims/tv_distance: the CLT eps' with the exact Var Z is, and a bias fails it)
    from scipy import stats

    m = tv.hoeffding_m(eps, delta)
    for p in (0.5, 0.3, 0.05):
        k = np.arange(m + 1)
        pmf = stats.binom.pmf(k, m, p)
        assert pmf[np.abs(k / m - p) <= eps].sum() >= 1 - delta
    k = np.arange(m + 1)
    pmf = stats.binom.pmf(k, m, 0.05)
    assert pmf[np.abs(k / m + eps / 2 - 0.05) <= eps].sum() >= 1 - delta  # biased by eps / 2: still covered


# ---------------------------------------------------------------------------------------------------------
# noisy logits and samples
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("r", [1, 8])
def test_noisy_plugin_bias_bound_and_simex(r):
    p, q = pair(1)
    sigma = 0.3
    exact = float(tv.exact_tv(p, q, N))
    zp = np.asarray(tv.tv_noisy_logit_z(p, q, N, M, sigma, r, "plugin", key=jax.random.key(2)), np.float64)
    zs = np.asarray(tv.tv_noisy_logit_z(p, q, N, M, sigma, r, "simex", key=jax.random.key(2)), np.float64)
    se_p, se_s = zp.std() / math.sqrt(M), zs.std() / math.sqrt(M)
    bound = float(tv.noisy_plugin_bias_bound(sigma, N, r))
    assert abs(zp.mean() - exact) <= bound + 4 * se_p
    # our SIMEX design removes most of the plugin bias on this smooth example
    assert abs(zs.mean() - exact) <= 0.5 * abs(zp.mean() - exact) + 4 * se_s
    assert np.all((zp >= 0) & (zp <= 1))
    e = tv.tv_noisy_logit(p, q, N, M, sigma, r, "plugin", key=jax.random.key(2))
    assert e.queries == 2 * N * r * M


def test_noiseless_limits():
    p, q = pair(1)
    L = jnp.linspace(-3, 3, 13)
    np.testing.assert_allclose(np.asarray(tv.correct(L, 0.0, "simex")), np.asarray(tv.plain_z(L)), atol=1e-6)
    # the closed-form Gaussian smoothing matches Monte Carlo
    xi = jax.random.normal(jax.random.key(0), (200000,))
    for mu, s2 in ((0.3, 0.5), (-0.5, 2.0), (2.0, 0.1)):
        mc = float(jnp.mean(tv.plain_z(mu + math.sqrt(s2) * xi)))
        assert float(tv.smoothed_z(jnp.float32(mu), jnp.float32(s2))) == pytest.approx(mc, abs=3e-3)
    # sigma = 0: the noisy-logit estimator is the plain logit estimator (same law)
    z = np.asarray(tv.tv_noisy_logit_z(p, q, N, M, 0.0, 1, "simex", key=jax.random.key(1)), np.float64)
    assert abs(z.mean() - float(tv.exact_tv(p, q, N))) <= 4 * z.std() / math.sqrt(M)


def test_sample_access_consistent_for_large_s():
    p, q = pair(1)
    exact = float(tv.exact_tv(p, q, N))
    e = tv.tv_sample(p, q, N, M, 4096, "plugin", key=jax.random.key(4))
    assert e.queries == (2 * 4096 + 1) * N * M
    assert abs(float(e.value) - exact) <= 0.02 + 4 * float(e.stderr)
    e_small = tv.tv_sample(p, q, N, M, 4, "plugin", key=jax.random.key(4))
    assert abs(float(e_small.value) - exact) > abs(float(e.value) - exact)  # few samples: biased


def test_sample_counts_mean_relative_variance_is_k_minus_1_over_s(s=32):
    # the paper's noise model of sample access: p_t(x_t) estimated from s samples, x_t ~ p_t, has mean relative
    # variance E (c/s - p)^2 / p^2 = E (1 - p) / (s p) = (K - 1) / s (so sigma^2 ~ K / s, the K of n^2 K / eps^2)
    p, q = pair(2)
    d = tv.decode(p, q, jnp.zeros((M,), bool), key=jax.random.key(5), n=N, m=M)
    c_p, _ = tv.sample_counts(d, float(s), key=jax.random.key(6))
    prob = np.exp(np.asarray(d.lp, np.float64))
    rel = ((np.asarray(c_p, np.float64) / s - prob) / prob) ** 2
    assert abs(rel.mean() - (K - 1) / s) <= 5 * rel.std() / math.sqrt(rel.size)


# ---------------------------------------------------------------------------------------------------------
# tiny transformer engines
# ---------------------------------------------------------------------------------------------------------


def test_transformer_engines():
    f32 = tv.random_transformer(5, 3, d_model=16, n_layers=1, key=jax.random.key(0))
    bf16 = tv.with_dtype(f32, "bfloat16")
    toks = tv.all_sequences(5, 3)
    for m, atol in ((f32, 1e-5), (bf16, 0.0)):
        lp = m.all_logprobs(toks)
        np.testing.assert_allclose(np.asarray(jnp.exp(lp).sum(-1)), 1.0, atol=1e-5)
        # one well-defined distribution whatever the surrounding program: bit-exact for the bf16 engine
        # (its rounding is explicit), float32 up to XLA's reassociation
        step = jax.jit(lambda tk, m=m: jnp.stack([m.logprobs(tk, t) for t in range(3)], 1))(toks)
        np.testing.assert_allclose(np.asarray(step), np.asarray(lp), rtol=0, atol=atol)
        # causal: position t does not see tokens at positions >= t
        np.testing.assert_allclose(
            np.asarray(m.logprobs(toks.at[:, 1:].set(0), 1)), np.asarray(lp[:, 1]), rtol=0, atol=atol
        )
    exact = float(tv.exact_tv(f32, bf16, 3))
    assert 0 < exact < 0.5
    e = tv.tv_logit(f32, bf16, 3, 2048, "rb", key=jax.random.key(1))
    assert abs(float(e.value) - exact) <= 4 * float(e.stderr)
    x = jnp.array([1.0, 1.00390625, 1.001953125, 3.14159])
    np.testing.assert_array_equal(np.asarray(tv.round_bf16(x)), np.asarray(x.astype(jnp.bfloat16).astype(jnp.float32)))


# ---------------------------------------------------------------------------------------------------------
# input validation
# ---------------------------------------------------------------------------------------------------------


def test_bad_inputs_raise():
    p, q = pair(0)
    other = tv.random_ngram(K + 1, 1, key=jax.random.key(0))
    with pytest.raises(ValueError, match="K"):
        tv.exact_tv(p, other, N)
    with pytest.raises(ValueError, match="kind"):
        tv.tv_logit(p, q, N, 8, kind="bogus", key=jax.random.key(0))
    with pytest.raises(ValueError, match="n"):
        tv.exact_tv(p, q, 40)
    with pytest.raises(ValueError, match="m"):
        tv.tv_logit(p, q, N, 0, key=jax.random.key(0))
    with pytest.raises(ValueError, match="sigma"):
        tv.tv_noisy_logit(p, q, N, 8, -1.0, key=jax.random.key(0))
    with pytest.raises(ValueError, match="s"):
        tv.tv_sample(p, q, N, 8, 0, key=jax.random.key(0))
    with pytest.raises(ValueError, match="dtype"):
        tv.random_transformer(4, 4, dtype=jnp.float16, key=jax.random.key(0))
    with pytest.raises(ValueError, match="logits"):
        tv.ngram_model(jnp.zeros((3, 3)))


@settings(max_examples=5)
@given(seed=st.integers(0, 1000))
def test_no_recompilation_across_models(seed):
    p, q = pair(seed)
    before = tv.tv_logit_z_jit._cache_size()
    tv.tv_logit_z(p, q, N, M, "plain", key=jax.random.key(seed))
    tv.tv_logit_z(q, p, N, M, "plain", key=jax.random.key(seed + 1))
    assert tv.tv_logit_z_jit._cache_size() - before <= 1


# ---------------------------------------------------------------------------------------------------------
# identities (not claims), the interval estimate and the default sample kind
# ---------------------------------------------------------------------------------------------------------


def test_pinsker_and_self_distance_exact():
    for seed in range(3):
        p, q = pair(seed, delta=2.0 * seed + 0.5)
        t, kl = float(tv.exact_tv(p, q, N)), float(tv.exact_kl(p, q, N))
        assert t <= math.sqrt(kl / 2) + 1e-6  # Pinsker
        assert float(tv.exact_tv(p, p, N)) == pytest.approx(0.0, abs=1e-6)  # TV(P, P) = 0
    f32 = tv.random_transformer(5, 3, d_model=16, n_layers=1, key=jax.random.key(0))
    bf16 = tv.with_dtype(f32, "bfloat16")
    assert float(tv.exact_tv(bf16, bf16, 3)) == pytest.approx(0.0, abs=1e-6)


def test_estimate_halfwidth_and_bias():
    e = tv.Estimate(jnp.float32(0.3), jnp.float32(0.01), 10, jnp.float32(0.02))
    assert float(e.halfwidth(0.95)) == pytest.approx(1.959964 * 0.01 + 0.02, rel=1e-5)
    assert float(tv.Estimate(0.3, 0.01, 10).halfwidth()) == pytest.approx(0.0196, rel=1e-3)  # logit: bias 0
    with pytest.raises(ValueError, match="level"):
        e.halfwidth(1.5)
    p, q = pair(1)
    en = tv.tv_noisy_logit(p, q, N, 4000, 0.3, 1, key=jax.random.key(2))  # simex: bias vs the plugin
    zp = np.asarray(tv.tv_noisy_logit_z(p, q, N, 4000, 0.3, 1, "plugin", key=jax.random.key(2)), np.float64)
    assert float(en.bias) == pytest.approx(abs(float(en.value) - zp.mean()), abs=1e-5)
    assert float(tv.tv_logit(p, q, N, 100, key=jax.random.key(0)).bias) == 0.0


def test_lower_order_and_auto_kind():
    assert tv.lower_order("simex", 2) == ("plugin", 2)
    assert tv.lower_order("simex", 1) == ("plugin", 2)
    assert tv.lower_order("plugin", 2) == ("simex", 2)
    assert tv.resolve_sample_kind("auto", tv.SIMEX_MIN_S - 1) == "plugin"
    assert tv.resolve_sample_kind("auto", tv.SIMEX_MIN_S) == "simex"
    assert tv.resolve_sample_kind("plugin", 1000) == "plugin"
    with pytest.raises(ValueError, match="kind"):
        tv.resolve_sample_kind("bogus", 4)
    p, q = pair(1)
    z_auto = tv.tv_sample_z(p, q, N, 64, 4, key=jax.random.key(3))
    z_plug = tv.tv_sample_z(p, q, N, 64, 4, "plugin", key=jax.random.key(3))
    np.testing.assert_array_equal(np.asarray(z_auto), np.asarray(z_plug))
