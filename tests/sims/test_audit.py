"""Every result's mutants make one of its claims fail (the mutation audit, ``jaxwb.sims.core.audit``).

The first mutant of each result runs in the default suite (its clean quick run is the result's own
end-to-end test), except where it costs the suite too much (:data:`COSTLY_QUICK`);
``pytest -m mutation`` runs all of them. ``workbench audit`` compares clean vs mutant
claim by claim and writes ``figures/audit.json``.
"""

from __future__ import annotations

import pytest

from jaxwb.sims.core import audit, registry
from jaxwb.sims.core.presets import get_config

# results whose default mutant cost more than ~14 s of a 2-core CI run: their mutants run under ``-m mutation``
# only, and their clean quick run stays in the default suite as the result's end-to-end test (tiny_lm: five
# 800-step trainings on a cold cache, 136 s, its quick end-to-end test ``slow`` too; river_valley_lm 42 s;
# aldrift 23 s, speed_scaling 20 s, sparse_attention 15 s, interpolation 14.5 s in the fresh-clone CI run of
# b44ebc2; mpq 126 s at 3474a0f, its quick preset now quantizing the tiny LM, whose five models a cold cache
# trains first; zoe_grad from 2026-12-06, its quick preset now pretraining a tiny LM and fine-tuning it with QAT, +12 to
# +17 s on a cold cache; distillation from 2026-12-06: its first mutant changes the random-feature kernels that
# nearly every program of the quick run compiles, 178 s of a 2-core run under load, 31 programs of which 18 came
# from the cache, as long as the clean quick run itself). Each keeps its committed mechanical audit
# (figures/audit/random/<name>.json).
COSTLY_QUICK = {
    "distillation",
    "tiny_lm",
    "river_valley_lm",
    "aldrift",
    "speed_scaling",
    "sparse_attention",
    "interpolation",
    "mpq",
    "zoe_grad",
}


def _cases():
    cases = []
    for name in registry.result_names():
        module = registry.get(name)
        for i, m in enumerate(getattr(module, "MUTANTS", ())):
            marks = () if i == 0 and name not in COSTLY_QUICK else (pytest.mark.mutation,)
            cases.append(pytest.param(name, m.name, marks=marks, id=f"{name}-{m.name}"))
    return cases


@pytest.mark.parametrize(("name", "mutant_name"), _cases())
def test_mutant_is_caught(name, mutant_name):
    module = registry.get(name)
    mutant = next(m for m in module.MUTANTS if m.name == mutant_name)
    out = audit.audit_mutant(module, mutant, get_config(module, "quick"))
    assert out.caught, f"{name}: mutant {mutant_name!r} ({mutant.description}) makes no claim fail"
