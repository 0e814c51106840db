"""End-to-end: the quick preset of sims/tv_distance/ runs, writes its files, and every claim passes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jaxwb.sims import tv_distance
from jaxwb.sims.core.harness import execute
from jaxwb.sims.tv_distance import reference


def test_quick_preset_end_to_end(tmp_path):
    outcome = execute(tv_distance, preset="quick", out_dir=tmp_path, verbose=False)
    failed = [c.statement for c in outcome.claims if not c.passed]
    assert not failed, failed
    for name in ("errors_vs_queries", "queries_vs_n", "coverage", "tv_vs_kl", "engines"):
        assert (tmp_path / f"{name}.png").exists(), name
    manifest = json.loads((tmp_path / "manifest.json").read_text())
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
    cfg = tv_distance.PRESETS["quick"]
    for field, bad in (
        ("K", 0),
        ("eps", 1.5),
        ("sigma", float("nan")),
        ("noisy_r", (3,)),
        ("slope_n", (8,)),
        ("tf_exact_n", 7),
    ):
        with pytest.raises(ValueError, match=field):
            type(cfg)(**{**cfg.__dict__, field: bad})


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
