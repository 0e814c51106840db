"""Every result's mutants make one of its claims fail (the mutation audit, ``jaxwb.sims.core.audit``).

The first mutant of each result runs in the default suite at the quick preset (its clean quick run is the
result's own end-to-end test), except for the results tested at smoke size (:data:`SMOKE_TESTED`);
``pytest -m mutation`` runs all of them. ``workbench audit`` compares clean vs mutant
claim by claim and writes ``figures/audit.json``.
"""

from __future__ import annotations

import pytest

from jaxwb.sims.core import audit, registry
from jaxwb.sims.core.presets import get_config
from tests.sims import smoke

# Results with a smoke-sized configuration (tests/sims/smoke.py) run one mutant against it in the default suite
# (tests/sims/test_smoke.py); their mutants run here at the quick preset under ``-m mutation`` only. Each keeps
# its committed mechanical audit (figures/audit/random/<name>.json).
SMOKE_TESTED = frozenset(smoke.OVERRIDES)


def _cases():
    cases = []
    for name in registry.result_names():
        module = registry.get(name)
        for i, m in enumerate(getattr(module, "MUTANTS", ())):
            marks = () if i == 0 and name not in SMOKE_TESTED else (pytest.mark.mutation,)
            cases.append(pytest.param(name, m.name, marks=marks, id=f"{name}-{m.name}"))
    return cases


@pytest.mark.parametrize(("name", "mutant_name"), _cases())
def test_mutant_is_caught(name, mutant_name):
    module = registry.get(name)
    mutant = next(m for m in module.MUTANTS if m.name == mutant_name)
    out = audit.audit_mutant(module, mutant, get_config(module, "quick"))
    assert out.caught, f"{name}: mutant {mutant_name!r} ({mutant.description}) makes no claim fail"
