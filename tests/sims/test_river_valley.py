"""River-valley result end to end on the quick preset, plus its benchmark."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from sims import river_valley as sim
from sims.core import harness


def test_quick_preset_end_to_end(tmp_path):
    outcome = harness.execute(sim, preset="quick", seed=0, out_dir=tmp_path, verbose=False)
    failed = [c.statement for c in outcome.claims if not c.passed]
    assert not failed, failed
    for fname in ("data.npz", "claims.json", "manifest.json", "trajectories.png", "phase_diagram.png",
                  "river_progress.png", "stability_boundary.png"):
        assert (tmp_path / fname).stat().st_size > 0, fname
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["preset"] == "quick" and manifest["claims_passed"] == manifest["claims_total"]
    assert manifest["nonfinite_arrays"] == []
    # the phase diagram shows the mechanism: HB near beta=0.9 at lr > 2/lam stays stable, GD there diverges
    ph = outcome.results["phase"]
    lr, div = np.asarray(ph["lr"]), np.asarray(ph["diverged"])
    above_gd = lr > 2.2 / sim.PRESETS["quick"].lam
    assert div[above_gd, 0].all()
    assert (~div[above_gd & (lr < 3.0 / sim.PRESETS["quick"].lam), -2]).all()


def test_claims_are_independent_of_seed():
    cfg = sim.PRESETS["quick"]
    a = sim.claims(sim.run(cfg, key=jax.random.key(1)), cfg)
    assert all(c.passed for c in a)


def test_bench_meets_target():
    rows = sim.bench(quick=True)
    assert rows and all(np.isfinite(r.speedup) for r in rows)
    assert rows[0].speedup >= 20, harness.format_bench(rows)


@pytest.mark.slow
def test_full_preset_claims():
    outcome = harness.execute(sim, preset="full", seed=0, write=False, verbose=False)
    assert outcome.passed, harness.format_claims(sim.NAME, outcome.claims)
