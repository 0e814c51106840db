"""The sparse_attention quick preset end to end: every claim passes and the figures are written."""

from __future__ import annotations

from sims import sparse_attention
from sims.core.harness import execute


def test_quick_preset(tmp_path):
    out = execute(sparse_attention, preset="quick", out_dir=tmp_path, verbose=False)
    failed = [c.statement for c in out.claims if not c.passed]
    assert not failed, failed
    for name in ("policy_budget", "refresh_period", "louver", "speed"):
        assert (tmp_path / f"{name}.png").exists()
    for name in ("data.npz", "claims.json", "manifest.json"):
        assert (tmp_path / name).exists()
