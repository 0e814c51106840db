"""Quantization result end to end on the quick preset, and the Hadamard benchmark in quick mode."""

from __future__ import annotations

import json

import numpy as np

from sims import quantization as sim
from sims.core import harness


def test_quick_preset_end_to_end(tmp_path):
    outcome = harness.execute(sim, preset="quick", seed=0, out_dir=tmp_path, verbose=False)
    failed = [(c.statement, c.predicted, c.measured) for c in outcome.claims if not c.passed]
    assert not failed, failed
    for fname in (
        "data.npz",
        "claims.json",
        "manifest.json",
        "mse_vs_bits.png",
        "format_comparison.png",
        "error_histograms.png",
        "inquant.png",
    ):
        assert (tmp_path / fname).stat().st_size > 0, fname
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["claims_passed"] == manifest["claims_total"] and manifest["nonfinite_arrays"] == []
    r = outcome.results
    # the measured MSE really falls ~4x per bit at high b (not only the claims' ratios)
    m = np.asarray(r["rht"]["64"]["mse"]).max(0)
    assert 3.0 < m[-2] / m[-1] < 5.0
    iq = {k: float(v) for k, v in r["inquant"]["mse"].items()}
    assert iq["8-bit"] < iq["InQuant (4.0x)"] < iq["plain 4-bit"]


def test_bench_quick_runs():
    from sims.bench.hadamard import bench

    rows = bench(quick=True)
    assert {r.op.split()[0] for r in rows} >= {"fwht", "rht_quantize"}
    assert all(r.ours_s > 0 and r.baseline_s > 0 for r in rows)
