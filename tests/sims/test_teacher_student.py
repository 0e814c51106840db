"""Teacher-student result end to end on the quick preset, the NumPy reference used by the benchmark, the bench."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sims import teacher_student as sim
from sims.core import harness
from theory import teacher_student as ts


def test_quick_preset_end_to_end(tmp_path):
    outcome = harness.execute(sim, preset="quick", seed=0, out_dir=tmp_path, verbose=False)
    # Every claim passes except, possibly, the paper's "small gap" claim for the Adam student, which our small-d
    # students do not reproduce (gap ~2-5x; reported as failing in figures/teacher_student/claims.json). For it we
    # check only that the measurement is sane: finite and not below the Bayes error.
    gap = [c for c in outcome.claims if c.statement.startswith(sim.SMALL_GAP)]
    assert len(gap) == 1 and np.isfinite(gap[0].measured) and gap[0].measured >= 1.0
    failed = [c.statement for c in outcome.claims if not c.passed and c not in gap]
    assert not failed, failed
    assert all(c.source in ("reconstruction", "theory") for c in outcome.claims if c not in gap)
    for fname in ("data.npz", "claims.json", "manifest.json", "staircase.png", "scaling.png",
                  "effective_width.png", "student.png"):
        assert (tmp_path / fname).stat().st_size > 0, fname
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["preset"] == "quick"
    assert manifest["claims_passed"] == manifest["claims_total"] - (0 if gap[0].passed else 1)
    assert manifest["nonfinite_arrays"] == []
    # the staircase is a staircase: each shown feature switches on once, later features later
    st = outcome.results["staircase"]
    m = np.asarray(st["m"])
    on = np.argmax(m > 0.5, axis=0)
    assert np.all(m[-1] > 0.5) and np.all(np.diff(on) > 0)
    # students learn something: at the largest n the narrow student beats the zero predictor
    assert np.median(np.asarray(outcome.results["student"]["best"])[-1, 0]) < 1.0


def test_bench_and_its_numpy_reference():
    rows = sim.bench(quick=True)
    assert rows and all(np.isfinite(r.speedup) and r.speedup > 0 for r in rows)
    # the NumPy baseline is a faithful copy of the solver (same shapes as the bench: no new compilation)
    a2 = ts.amplitudes(400, 1.0)
    alphas = np.array([2.0, 50.0, 3e3, 1e7] + [1.0] * 12)
    sol = ts.solve_grid(alphas, a2, 1.0)
    for j in range(4):
        m_np, eps_np = sim.numpy_solve(alphas[j], np.asarray(a2), 1.0)
        np.testing.assert_allclose(float(sol.eps_bo[j]), eps_np, rtol=1e-4)
        np.testing.assert_allclose(np.asarray(sol.m[j]), m_np, atol=1e-4)  # float32, tol 1e-5, near a jump


@pytest.mark.slow
def test_full_preset_claims():
    outcome = harness.execute(sim, preset="full", seed=0, write=False, verbose=False)
    # all but the paper's small-gap student claim, which the full preset does not reproduce (measured ~3x)
    failed = [c for c in outcome.claims if not c.passed and not c.statement.startswith(sim.SMALL_GAP)]
    assert not failed, harness.format_claims(sim.NAME, outcome.claims)
