"""End-to-end: the quick preset of sims/tv_distance/ runs, writes its files, and every claim's outcome is its
expected one; the pieces the claims rest on (measured query counts, NumPy sample counts, the batched
queries-to-eps, the bootstrap slope, the Wilson interval)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jaxwb.sims import tv_distance
from jaxwb.sims.core.harness import execute
from jaxwb.sims.tv_distance import reference
from tests.sims.expected import assert_config_refuses, assert_outputs


@pytest.mark.slow  # the quick preset's decisions (and `workbench all --quick`); default run: test_smoke.py
def test_quick_preset_end_to_end(tmp_path):
    outcome = execute(tv_distance, preset="quick", out_dir=tmp_path, verbose=False)
    unexpected = [c.statement for c in outcome.claims if not c.as_expected]
    assert not unexpected, unexpected
    manifest = assert_outputs(tmp_path, tv_distance.NAME)
    assert manifest["nonfinite_arrays"] == [] or all("queries" in k for k in manifest["nonfinite_arrays"])
    data = np.load(tmp_path / "data.npz")
    assert "exact/tv" in data.files
    assert len(json.loads((tmp_path / "claims.json").read_text())) == len(outcome.claims)


def test_queries_to_eps_closed_form():
    # one parameter value, no bias: queries = cost * var / eps^2
    q = tv_distance.queries_to_eps(np.array([[0.0]]), np.array([[0.2]]), np.array([[0.0]]), np.array([[10.0]]), 0.1)
    np.testing.assert_allclose(q, [10 * 0.2 / 0.01])
    # an unresolved bias disqualifies the point
    q = tv_distance.queries_to_eps(np.array([[0.2]]), np.array([[0.2]]), np.array([[0.0]]), np.array([[10.0]]), 0.1)
    assert np.isnan(q).all()


def test_config_validation():
    bad = [("K", 0), ("eps", 1.5), ("sigma", float("nan")), ("noisy_r", (3,)), ("slope_n", (8,))]
    bad += [("tf_exact_n", 7), ("k_grid", (4,)), ("k_seeds", 1)]
    assert_config_refuses(tv_distance.PRESETS["quick"], bad)


def test_enumerated_reference_matches_theory():
    import jax

    from jaxwb.theory import tv_distance as tv

    p, q = tv_distance.markov_pair(jax.random.key(3), 3, 1.0, 0.6)
    ref = tv_distance.enumerated_reference(p, q, 4, 0.3, (1,))
    assert ref["tv"] == pytest.approx(float(tv.exact_tv(p, q, 4)), abs=1e-5)
    assert ref["tv_halfsum"] == pytest.approx(ref["tv"], abs=1e-6)
    assert 0 <= ref["var"]["rb"] <= ref["var"]["plain"] <= ref["tv"]
    # the NumPy smoothing against the JAX closed form
    mu, s2 = np.array([-1.0, 0.2, 2.0]), np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(reference.smoothed_np(mu, s2), np.asarray(tv.smoothed_z(mu, s2)), atol=1e-5)


def test_sample_reference_matches_theory_and_its_hand_values():
    from jaxwb.theory import tv_distance as tv

    # hand values: one position, c_p = 3, c_q = 1 of s = 4: L = log(3.5 / 1.5), plugin 1 - 1.5 / 3.5
    c_p, c_q = np.array([[3.0]]), np.array([[1.0]])
    np.testing.assert_allclose(reference.sample_z_np(c_p, c_q, 4.0, "plugin"), [1 - 1.5 / 3.5], rtol=1e-12)
    v = 1 / 3.5 + 1 / 1.5 - 2 / 5
    L = np.log(3.5 / 1.5)
    g = [reference.smoothed_np(L, k * v) for k in (1, 2)]
    np.testing.assert_allclose(reference.sample_z_np(c_p, c_q, 4.0, "simex"), [3 * (1 - 1.5 / 3.5) - 3 * g[0] + g[1]])
    with pytest.raises(ValueError, match="kind"):
        reference.sample_z_np(c_p, c_q, 4.0, "auto")
    rng = np.random.default_rng(0)
    for s in (4, 16):
        c_p, c_q = (rng.binomial(s, p, (64, 5)).astype(np.float32) for p in (0.4, 0.3))
        for kind in tv.NOISY_KINDS:
            got = np.asarray(tv.sample_z_from_counts(c_p, c_q, float(s), kind), np.float64)
            np.testing.assert_allclose(got, reference.sample_z_np(c_p, c_q, float(s), kind), atol=1e-5)


def test_queries_to_eps_batched_equals_rowwise():
    rng = np.random.default_rng(0)
    bias, var = rng.normal(0, 0.03, (3, 4, 6)), rng.uniform(0.01, 0.3, (3, 4, 6))
    se, cost = rng.uniform(0, 0.005, (3, 4, 6)), np.geomspace(10, 1e4, 6) * np.arange(1, 5)[:, None]
    q = tv_distance.queries_to_eps(bias, var, se, cost, 0.05)
    for b in range(3):
        for i in range(4):
            xf = np.linspace(0, 5, 256)
            rows = (bias[b, i], var[b, i], se[b, i], np.log(cost[i]))
            bb, vv, ss, cc = (np.interp(xf, np.arange(6), a) for a in rows)
            ok = np.abs(bb) + 2 * ss < 0.05
            want = np.min(np.exp(cc[ok]) * vv[ok] / (0.05**2 - bb[ok] ** 2)) if ok.any() else np.nan
            np.testing.assert_allclose(q[b, i], want, rtol=1e-12)


def test_loglog_slope_and_bootstrap_interval():
    from jaxwb.sims.tv_distance import pieces

    n = np.array([8, 16, 32])
    np.testing.assert_allclose(pieces.loglog_slope(n, 3.0 * n**1.5), 1.5)
    np.testing.assert_allclose(pieces.loglog_slope(n, np.array([8.0, np.nan, 32.0])), 1.0)
    assert np.isnan(pieces.loglog_slope(n, np.array([8.0, np.nan, np.nan])))
    # variance growing like n: queries = cost * var / eps^2 grow like n^2 with a cost of n per sequence
    rng = np.random.default_rng(1)
    z = np.stack([rng.normal(0.5, 0.05 * np.sqrt(k), (1, 4096)) for k in (1, 2, 4)])
    rb = z[:, 0] + rng.normal(0, 1e-4, (3, 4096))
    cost = n[:, None].astype(float)
    slope = pieces.slope_stats(z, rb, cost, 0.05, n)["slope"]
    lo, hi = pieces.bootstrap_slope(z, rb, cost, 0.05, n, seed=0, n_resamples=199)
    assert lo < slope < hi and lo < 2.0 < hi and hi - lo < 0.3


def test_markov_law_references_match_enumeration_and_brute_force():
    # the grid laws of reference.py against exact enumeration (logit moments at n = 6, 8) and against a brute-force
    # sum over every sequence and every pair of counts (the sample plugin at K = 3, n = 2, s = 1, 3)
    import itertools

    import jax
    from scipy import stats

    p, q = tv_distance.markov_pair(jax.random.key(0), 4, 1.0, 0.6)
    lp, lq = np.asarray(p.params, np.float64), np.asarray(q.params, np.float64)
    for n in (2, 6, 8):
        ref = reference.enumerated_reference(p, q, n, 0.3, (1,))
        mom = reference.logit_moments_np(lp, lq, n)
        assert abs(mom["tv"] - float(ref["tv"])) < 1e-6
        assert abs(mom["var_plain"] - float(ref["var"]["plain"])) < 1e-6
        assert abs(mom["var_rb"] - float(ref["var"]["rb"])) < 1e-6
    p3, q3 = tv_distance.markov_pair(jax.random.key(1), 3, 1.0, 0.8)
    lp3, lq3 = np.asarray(p3.params, np.float64), np.asarray(q3.params, np.float64)
    for s in (1, 3):
        total = 0.0
        for x in itertools.product(range(3), repeat=2):
            ctx = (3, x[0])
            P = np.exp(lp3[ctx[0], x[0]] + lp3[ctx[1], x[1]])
            for c in itertools.product(range(s + 1), repeat=4):
                w = np.prod(
                    [
                        stats.binom.pmf(c[2 * i], s, np.exp(lp3[ctx[i], x[i]]))
                        * stats.binom.pmf(c[2 * i + 1], s, np.exp(lq3[ctx[i], x[i]]))
                        for i in range(2)
                    ]
                )
                L = sum(np.log(c[2 * i] + 0.5) - np.log(c[2 * i + 1] + 0.5) for i in range(2))
                total += P * w * max(0.0, -np.expm1(-L))
        assert abs(reference.sample_plugin_mean_np(lp3, lq3, 2, s) - total) < 2e-5
        assert abs(reference.sample_plugin_mean_np(lp3, lq3, 2, s, h=1e-4) - total) < 2e-6
    # the grid at n = 6 (the claims' length): step h against h / 2
    for s in (4, 64):
        a, b = (reference.sample_plugin_mean_np(lp, lq, 6, s, h=h) for h in (1e-3, 5e-4))
        assert abs(a - b) < 1e-5


def test_bootstrap_slopes_shares_one_resample():
    from jaxwb.sims.tv_distance import pieces

    n = np.array([8, 16, 32])
    rng = np.random.default_rng(2)
    z = np.stack([rng.normal(0.5, 0.05 * np.sqrt(k), (1, 2048)) for k in (1, 2, 4)])
    rb = z[:, 0] + rng.normal(0, 1e-4, (3, 2048))
    cost = n[:, None].astype(float)
    both = pieces.bootstrap_slopes({"a": z, "b": z.copy()}, rb, {"a": cost, "b": cost}, 0.05, n, seed=0, n_resamples=99)
    assert both["a"] == both["b"]  # the same resamples for every estimator on the same pools
    one = pieces.bootstrap_slope(z, rb, cost, 0.05, n, seed=0, n_resamples=99)
    np.testing.assert_allclose(both["a"], one, rtol=1e-9)  # alone: the same resamples (matmul rounding aside)


def test_measured_query_counts_and_numpy_sample_counts():
    import jax
    import jax.numpy as jnp

    from jaxwb.sims.tv_distance import pieces
    from jaxwb.theory import tv_distance as tv

    p, q = tv_distance.markov_pair(jax.random.key(0), 4, 1.0, 0.6)
    d = tv.decode(p, q, jnp.zeros((512,), bool), key=jax.random.key(1), n=5, m=512)
    assert np.all(np.asarray(d.queries) == 2)  # one next-token query to each model per position (the paper)
    s_grid = (4, 64)
    c, draws = pieces.sample_counts_np(d.lp, d.lq, s_grid, 3, np.random.default_rng(0))
    assert c.shape == (2, 2, 512, 3) and np.all(draws == np.array(s_grid)[:, None] * 2 * 3)
    prob = np.exp(np.stack([np.asarray(d.lp), np.asarray(d.lq)]))[..., :3]
    for i, s in enumerate(s_grid):
        ref = np.stack(tv.sample_counts(d, float(s), key=jax.random.key(2)))[..., :3]
        for counts in (c[i], ref):  # both Binomial(s, p): standardised means within 5 sigma
            z = (counts - s * prob).sum() / np.sqrt((s * prob * (1 - prob)).sum())
            assert abs(z) < 5


def test_binomial_ci_is_scipys_wilson():
    from scipy import stats

    frac, lo, hi, n = tv_distance.binomial_ci(np.r_[np.ones(190, bool), np.zeros(10, bool)])
    ci = stats.binomtest(190, 200).proportion_ci(method="wilson")
    assert (frac, n) == (0.95, 200) and (lo, hi) == pytest.approx((ci.low, ci.high))
    _, lo, hi, _ = tv_distance.binomial_ci(np.ones(400, bool))
    assert hi == pytest.approx(1.0) and 0.98 < lo < 1.0  # no zero-width interval when every repetition covers
    with pytest.raises(ValueError, match="hits"):
        tv_distance.binomial_ci(np.ones(0, bool))


def test_k_sweep_claims_decide_the_exponent():
    # queries ~ K^a or (K - 1)^a, exponents spread over the seeds: a = 1 passes, 0.7 and 1.3 fail (synthetic)
    import dataclasses

    from jaxwb.sims.tv_distance.claims import ksweep_claims

    cfg = dataclasses.replace(tv_distance.PRESETS["full"], k_seeds=8)
    K = np.asarray(cfg.k_grid, float)
    spread = np.linspace(-0.05, 0.05, cfg.k_seeds)[:, None]  # per-seed exponents symmetric around a
    for which, x in enumerate((K, K - 1)):  # the paper's K (claim 0), the sample model's K - 1 (claim 1)
        for a, ok in ((1.0, True), (0.7, False), (1.3, False)):
            q = 1e5 * x ** (a + spread)
            c = ksweep_claims({"ksweep": {"sample_plugin": {"queries": q}}}, cfg)[which]
            assert c.passed == ok and c.n_seeds == cfg.k_seeds and 0 < c.ci < 0.15, (which, a, c)
    assert ksweep_claims({}, dataclasses.replace(cfg, k_grid=())) == []  # no sweep, no claims


def test_pad_vocab_keeps_the_law():
    # a K = 3 pair padded to 7 tokens: exact TV and KL (enumeration over 7^3 sequences, the padded tokens
    # included) equal the unpadded ones; decoded tokens stay below K and carry the unpadded log-probs
    import jax
    import jax.numpy as jnp

    from jaxwb.sims.tv_distance.pieces import pad_vocab
    from jaxwb.theory import tv_distance as tv

    p, q = tv_distance.markov_pair(jax.random.key(5), 3, 1.0, 0.6)
    pp, qp = pad_vocab(p, 7), pad_vocab(q, 7)
    assert pp.params.shape == (8, 7) and pad_vocab(p, 3).params.shape == (4, 3)
    assert float(tv.exact_tv(pp, qp, 3)) == pytest.approx(float(tv.exact_tv(p, q, 3)), abs=1e-6)
    assert float(tv.exact_kl(pp, qp, 3)) == pytest.approx(float(tv.exact_kl(p, q, 3)), abs=1e-5)
    d = tv.decode(pp, qp, jnp.zeros((256,), bool), key=jax.random.key(1), n=4, m=256)
    tok, prev = np.asarray(d.tokens), np.concatenate([np.full((256, 1), 3), np.asarray(d.tokens)[:, :-1]], 1)
    assert tok.max() < 3
    np.testing.assert_allclose(np.asarray(d.lp), np.asarray(p.params)[prev, tok], atol=1e-6)
    for bad in (2, 3.5):
        with pytest.raises(ValueError, match="K_pad"):
            pad_vocab(p, bad)
