"""The prepared accelerator script (``.ci/workbench_all_gpu.sh`` -> ``python -m benchmarks.workbench_all``): its
dry run on the CPU, and the comparison of claim outcomes with the committed CPU run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from benchmarks.workbench_all.driver import compare_claims
from jaxwb.sims.core.paths import REPO_ROOT


def _claim(statement, status, measured=1.0):
    return {"statement": statement, "status": status, "measured": measured, "ci": 0.0, "predicted": 1.0}


def test_compare_claims_reports_each_changed_status_with_both_measurements():
    old = [_claim("a", "PASS"), _claim("b", "XFAIL")]
    assert compare_claims(old, old) == {"identical": True, "differences": []}
    new = [_claim("a", "FAIL", 2.0), _claim("b", "XFAIL")]
    diff = compare_claims(new, old)["differences"]
    assert diff == [
        {
            "index": 0,
            "statement": "a",
            "status": ["FAIL", "PASS"],
            "measured": [2.0, 1.0],
            "ci": [0.0, 0.0],
            "predicted": 1.0,
        }
    ]
    assert not compare_claims(new[:1], old)["identical"]  # a missing claim is a difference


@pytest.mark.slow  # a subprocess repeating river_valley's quick run (its end-to-end test): 77 s of a 2-core run
def test_dry_run_writes_a_record_on_the_cpu(tmp_path):
    record = tmp_path / "gpu.json"
    proc = subprocess.run(
        ["bash", ".ci/workbench_all_gpu.sh", "--dry-run", "--record", str(record)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu", "PYTHON": sys.executable},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(record.read_text())
    assert data["device"]["platform"] == "cpu" and data["preset"] == "quick"
    ((name, r),) = data["results"].items()
    assert r["status"] == "ok" and r["claims"] and r["run_wall_s"] > 0, r
