"""End-to-end: the quick preset of sims/tv_distance.py runs, writes its files, and every claim passes."""

from __future__ import annotations

import json

import numpy as np

from sims import tv_distance
from sims.core.harness import execute


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
    q = tv_distance.queries_to_eps(np.array([[0.0]]), np.array([[0.2]]), np.array([[0.0]]),
                                   np.array([[10.0]]), 0.1)
    np.testing.assert_allclose(q, [10 * 0.2 / 0.01])
    # an unresolved bias disqualifies the point
    q = tv_distance.queries_to_eps(np.array([[0.2]]), np.array([[0.2]]), np.array([[0.0]]),
                                   np.array([[10.0]]), 0.1)
    assert np.isnan(q).all()
