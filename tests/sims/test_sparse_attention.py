"""The sparse_attention quick preset end to end: every claim passes and the figures are written."""

from __future__ import annotations

import numpy as np

from sims import sparse_attention
from sims.core.harness import execute


def test_quick_preset(tmp_path):
    out = execute(sparse_attention, preset="quick", out_dir=tmp_path, verbose=False)
    failed = [c.statement for c in out.claims if not c.passed]
    assert not failed, failed
    assert all(c.kind in ("check", "bound", "paper") for c in out.claims)
    for name in ("policy_budget", "refresh_period", "louver", "speed"):
        assert (tmp_path / f"{name}.png").exists()
    for name in ("data.npz", "claims.json", "manifest.json"):
        assert (tmp_path / name).exists()
    # identity (was a claim): the head-adaptive policy spends the same block budget as the uniform one
    cfg = sparse_attention.PRESETS["quick"]
    pol = out.results["policy"]
    ib = list(cfg.budgets).index(cfg.main_budget)
    ip, ifirst = list(cfg.periods).index(cfg.main_period), len(cfg.periods) - 1
    dens_c = float(np.mean(np.asarray(pol["concentration"]["density"])[:, ip, ib]))
    dens_u = float(np.mean(np.asarray(pol["uniform"]["density"])[:, ifirst, ib]))
    assert dens_c <= dens_u + 0.01
