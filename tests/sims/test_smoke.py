"""Every result end to end at smoke size, and one of its mutants caught there (``tests/sims/smoke.py``).

The default suite's end-to-end test and default mutant for the results whose quick preset costs more than a few
seconds: the run writes its outputs and evaluates every claim to a finite measurement, and the named mutant makes
a claim that passed in the clean run fail. The quick preset's decisions are tested under ``pytest -m slow`` and
by ``workbench all --quick``; every mutant runs under ``pytest -m mutation`` (``tests/sims/test_audit.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

from jaxwb.sims.core import audit, harness, registry
from tests.sims import smoke
from tests.sims.expected import assert_outputs


@pytest.mark.parametrize("name", sorted(smoke.OVERRIDES))
def test_smoke_run_and_its_mutant(name, tmp_path):
    module = registry.get(name)
    cfg = smoke.config(name)
    outcome = harness.execute(module, preset="quick", cfg=cfg, seed=0, out_dir=tmp_path, verbose=False)
    assert_outputs(tmp_path, name, all_figures=False)
    assert outcome.claims and all(np.isfinite(c.measured) for c in outcome.claims), [
        c.statement for c in outcome.claims if not np.isfinite(c.measured)
    ]
    mutant = smoke.mutant(name)
    caught = audit.audit_mutant(module, mutant, cfg, clean=outcome.claims)
    assert caught.error is None, caught.error
    assert caught.failed_claims, f"{name}: mutant {mutant.name!r} ({mutant.description}) makes no claim fail"


def test_every_smoke_result_names_its_mutant():
    assert set(smoke.MUTANT) == set(smoke.OVERRIDES)
    for name, mutant_name in smoke.MUTANT.items():
        assert mutant_name in [m.name for m in registry.get(name).MUTANTS], name
