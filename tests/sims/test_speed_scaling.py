"""End-to-end run of the speed-scaling result on its quick preset."""

from __future__ import annotations

import json

import numpy as np

from sims import harness
from sims import speed_scaling as sim


def test_quick_preset_end_to_end(tmp_path):
    outcome = harness.execute(sim, preset="quick", out_dir=tmp_path, verbose=False)
    assert outcome.claims, "no claims"
    failed = [c.statement for c in outcome.claims if not c.passed]
    assert not failed, failed
    for name in ("ratio_vs_error", "profiles", "robustness", "las_experiment", "avr_lower_bound"):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["claims_passed"] == manifest["claims_total"] and manifest["nonfinite_arrays"] == []
    data = np.load(tmp_path / "data.npz")
    assert data["main/oa"].shape == (sim.PRESETS["quick"].n_seeds,)
    # the quick preset is not LAS's experiment: no published-number claims are made on it
    assert not sim.paper_setup(sim.PRESETS["quick"]) and sim.paper_setup(sim.PRESETS["full"])

