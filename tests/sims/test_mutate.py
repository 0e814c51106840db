"""Mechanical mutants (``jaxwb.sims.core.mutate``): the operators change exactly one node, the mutated function is
recompiled in its module's namespace, and the executed functions are found by ``sys.monitoring``.
``pytest -m mutation`` draws 3 mutants per result and requires every non-equivalent one to be caught."""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import jax.numpy as jnp
import pytest

from jaxwb.sims.core import mutate, registry

TOY = textwrap.dedent(
    '''
    import functools

    import jax

    SCALE = 3


    def helper(a, b):
        """Docstring constants (1.5) are not mutated."""
        return a - b


    @functools.partial(jax.jit, static_argnums=(0, 1))
    def f(x, y):
        if x < y and y > 0:
            return helper(x, y) * 2.0 + -x
        return x + 1
    '''
)


@pytest.fixture
def toy(tmp_path, monkeypatch):
    path = tmp_path / "mutate_toy.py"
    path.write_text(TOY)
    spec = importlib.util.spec_from_file_location("mutate_toy", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "mutate_toy", module)
    spec.loader.exec_module(module)
    return module


def test_sites_cover_every_operator_and_skip_docstrings_and_decorators(toy):
    sites = mutate.sites_of("mutate_toy", "f", mutate.mutable(toy.f))
    ops = {s.op for s in sites}
    assert ops == {"arith", "compare", "boolop", "constant", "drop_term", "swap_args", "unary"}, ops
    assert not mutate.sites_of("mutate_toy", "helper", mutate.mutable(toy.helper))[0].detail.startswith("1.5")


def test_each_mutant_changes_the_function_and_the_original_stays(toy):
    clean = float(toy.f(1.0, 2.0))
    assert clean == (1 - 2) * 2.0 - 1
    outputs = {}
    for site in mutate.sites_of("mutate_toy", "f", mutate.mutable(toy.f)):
        mutated = mutate.mutated_function(site, toy.f)
        outputs[site.name] = float(mutated(1.0, 2.0))
    assert outputs[next(k for k in outputs if ":swap_args:" in k)] == (2 - 1) * 2.0 - 1
    assert outputs[next(k for k in outputs if ":unary:" in k)] == (1 - 2) * 2.0 + 1
    assert outputs[next(k for k in outputs if "2.0->x1.1" in k)] == pytest.approx((1 - 2) * 2.2 - 1)
    assert float(toy.f(1.0, 2.0)) == clean


def test_executed_functions_are_found_by_monitoring():
    from jaxwb.theory import river_valley as rv

    found = mutate.executed_functions(lambda: rv.gd_threshold(4.0))
    names = {(m, q) for m, q, _ in found}
    assert ("jaxwb.theory.river_valley", "gd_threshold") in names
    assert not any(m.startswith(mutate.SKIPPED_MODULES) for m, _ in names)


@pytest.mark.mutation
@pytest.mark.parametrize("name", registry.result_names())
def test_a_sample_of_mechanical_mutants_is_caught(name):
    summary = mutate.random_audit(registry.get(name), 3, seed=1, verbose=False)
    assert not summary.get("refused"), mutate.format_random_audit(summary)
    assert summary["caught"] == summary["non_equivalent"], mutate.format_random_audit(summary)


def test_random_audit_table_in_the_readme(tmp_path):
    import json

    from jaxwb.sims.core import readme

    folder = tmp_path / "figures" / "audit" / "random"
    folder.mkdir(parents=True)
    summary = {
        "result": "demo",
        "seed": 0,
        "caught": 27,
        "non_equivalent": 29,
        "equivalent": 1,
        "caught_by_error": 3,
        "sites": 120,
        "functions": 9,
        "wilson_95": [0.78, 0.98],
        "mutants": [],
    }
    (folder / "demo.json").write_text(json.dumps(summary))
    (folder / "other.json").write_text(json.dumps({"result": "other", "seed": 0, "refused": ["x"], "mutants": []}))
    partial = {
        **summary,
        "result": "partial",
        "complete": False,
        "n": 30,
        "mutants": [{"mutant": "m", "verdict": "caught"}] * 12,
    }
    (folder / "partial.json").write_text(json.dumps(partial))
    md = tmp_path / "README.md"
    md.write_text("a\n<!-- random-audit -->\nold\n<!-- /random-audit -->\nb\n")
    assert readme.update_random_audit_table(md, tmp_path / "figures")
    text = md.read_text()
    assert "| demo | 27/29 | 78-98% | 1 | 3 | 120 sites, 9 functions |" in text and "old" not in text
    assert "| partial | 27/29 (incomplete: 12 of 30 judged) |" in text
    assert "| other | not judged" in text and text.endswith("<!-- /random-audit -->\nb\n")


def _toy_result():
    """A result module in miniature: its run calls one theory function, its one claim checks it against 2/lam."""
    import dataclasses
    import types

    import jax.numpy as jnp

    from jaxwb.sims.core.claims import Claim
    from jaxwb.theory import river_valley as rv

    @dataclasses.dataclass(frozen=True)
    class Config:
        lam: float = 4.0

    def run(cfg, *, key):
        return {"threshold": jnp.asarray(rv.gd_threshold(jnp.asarray([cfg.lam, 2 * cfg.lam])))}

    def claims(results, cfg):
        measured = float(results["threshold"][0])
        return [Claim("GD's stable lr is 2/lam", 2 / cfg.lam, measured, 1e-6, kind="check")]

    return types.SimpleNamespace(NAME="toy", PRESETS={"quick": Config()}, run=run, claims=claims)


def test_an_interrupted_random_audit_resumes_where_it_stopped():
    toy = _toy_result()
    seen = []
    full = mutate.random_audit(toy, 3, seed=0, verbose=False, on_progress=lambda s: seen.append(len(s["mutants"])))
    assert full["complete"] and full["n"] == len(full["mutants"]) and seen == list(range(1, full["n"] + 1))
    assert full["caught"] + full["equivalent"] + sum(m["verdict"] == "missed" for m in full["mutants"]) == full["n"]
    first = dict(full["mutants"][0], verdict="caught", marker="reused")  # a record the resumed audit must keep
    resumed = mutate.random_audit(toy, 3, seed=0, verbose=False, resume=[first])
    verdicts = [(m["mutant"], m["verdict"]) for m in full["mutants"]]
    assert resumed["mutants"][0]["marker"] == "reused"
    assert [(m["mutant"], m["verdict"]) for m in resumed["mutants"][1:]] == verdicts[1:]
    again = mutate.random_audit(toy, 3, seed=0, verbose=False, only={full["mutants"][1]["mutant"]})
    assert {m["mutant"] for m in again["mutants"]} == {full["mutants"][1]["mutant"]} and not again["not_found"]


def test_a_catch_is_found_by_position_when_the_statement_quotes_a_changed_number():
    from jaxwb.sims.core.audit import newly_failed
    from jaxwb.sims.core.claims import Claim

    clean = [Claim("3 transitions are seen", 3, 3, 0, "abs", kind="check"), Claim("b", 1, 1, 0, "abs", kind="check")]
    mutant = [Claim("0 transitions are seen", 3, 0, 0, "abs", kind="check"), clean[1]]
    assert newly_failed(mutant, clean) == ["0 transitions are seen"]
    assert newly_failed(mutant[:1], clean) == []  # another number of claims: matched by statement


def test_a_mutant_the_patch_cannot_reach_is_not_applied_rather_than_equivalent():
    toy = _toy_result()
    table = {"threshold": toy_threshold_reference()}  # bound at "import": patching the module attribute misses it
    toy.run = lambda cfg, *, key: {"threshold": table["threshold"](jnp.asarray([cfg.lam, 2 * cfg.lam]))}
    summary = mutate.random_audit(toy, 2, seed=0, verbose=False)
    assert {m["verdict"] for m in summary["mutants"]} == {"not_applied"}, summary["mutants"]
    assert summary["not_applied"] == 2 and summary["equivalent"] == 0 and summary["non_equivalent"] == 0


def toy_threshold_reference():
    from jaxwb.theory import river_valley as rv

    return rv.gd_threshold


def test_a_runaway_mutant_is_stopped_by_its_cpu_time_limit():
    import time

    expired = []
    with pytest.raises(mutate.MutantTimeout), mutate.cpu_time_limit(0.2, expired):
        t0 = time.process_time()
        while time.process_time() - t0 < 30:
            pass
    assert expired == [True]
    with mutate.cpu_time_limit(5.0, expired):  # a block that ends in time leaves no timer behind
        pass
    time.sleep(0.01)


def test_a_committed_audit_is_current_until_its_draw_changes():
    toy = _toy_result()
    committed = mutate.random_audit(toy, 3, seed=0, verbose=False)
    assert mutate.stale_mutants(toy, committed) == []
    moved = dict(committed, mutants=[dict(committed["mutants"][0], mutant="x:f:1:arith:Add->Sub")])
    moved["mutants"] += committed["mutants"][1:]
    assert [line.split(":")[0] for line in mutate.stale_mutants(toy, moved)] == ["#0"]
    swapped = dict(committed, mutants=committed["mutants"][::-1])  # the same sites in another order: another draw
    assert len(mutate.stale_mutants(toy, swapped)) >= 2
    grown = dict(committed, sites=committed["sites"] + 1)
    assert mutate.stale_mutants(toy, grown)[0].startswith("sites:")
    assert mutate.stale_mutants(toy, dict(committed, mutants=[], refused=["a claim"])) == []
