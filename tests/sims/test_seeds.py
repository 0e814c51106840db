"""The seed sweep (``workbench audit NAME --seeds A:B``): tabulation, flips, the committed file and its check."""

from __future__ import annotations

import dataclasses
import json
import types

import jax
import jax.numpy as jnp
import pytest

from jaxwb.sims.core import cli, paths, seeds
from jaxwb.sims.core.claims import Claim
from jaxwb.sims.core.errors import OutputError, WorkbenchError


def _noisy_result():
    """A toy result whose run draws 5 normal samples per seed: one claim always holds (a bound far away), one holds
    at some seeds only (an ordering whose effect, 1.2, is too small for 5 samples: underpowered by construction)."""

    @dataclasses.dataclass(frozen=True)
    class Config:
        n: int = 5

    def run(cfg, *, key):
        return {"x": 1.2 + jax.random.normal(key, (cfg.n,))}

    def claims(results, cfg):
        x = results["x"]
        return [
            Claim("|x| < 100", 100.0, float(jnp.max(jnp.abs(x))), 0.0, "le", kind="bound"),
            Claim.ordering("mean x > 0 (it is 1.2)", x, jnp.zeros_like(x)),
        ]

    return types.SimpleNamespace(NAME="noisy", PRESETS={"quick": Config(), "full": Config(50)}, run=run, claims=claims)


def test_a_sweep_tabulates_each_claim_per_seed_and_finds_the_flips():
    s = seeds.sweep(_noisy_result(), range(12))
    assert s["seeds"] == list(range(12)) and len(s["claims"]) == 2
    bound, ordering = s["claims"]
    assert bound["decided"] and bound["pass_rate"] == 1.0 and all(r["status"] == "PASS" for r in bound["at"])
    assert not ordering["decided"] and 0 < ordering["pass_rate"] < 1  # the effect needs more than 5 samples
    assert s["flipping"] == [ordering["statement"]]
    assert s["met_every_expectation"] == [r["status"] == "PASS" for r in ordering["at"]]
    assert "1 of 2 claims decided the same at every seed, 1 flip" in seeds.summary_line(s)
    assert "mean x > 0" in seeds.format_flips(s) and "|x| < 100" not in seeds.format_flips(s)


def test_claims_are_matched_by_position_unless_their_number_changes():
    c = lambda st, ok: Claim(st, 1.0, 1.0 if ok else 2.0, 0.1, kind="check")
    by_position = seeds.tabulate("t", "quick", [0, 1], [[c("3 seen", True)], [c("4 seen", True)]], [0.0, 0.0])
    assert [t["statement"] for t in by_position["claims"]] == ["3 seen"] and by_position["claims"][0]["decided"]
    by_statement = seeds.tabulate("t", "quick", [0, 1], [[c("a", True), c("b", True)], [c("b", False)]], [0, 0])
    a, b = by_statement["claims"]
    assert a["at"][1] is None and b["at"][1]["status"] == "FAIL" and not b["decided"]


@pytest.mark.parametrize("text", ["5", "3:3", "4:2", "-1:3", "a:b", "1:2:3", ""])
def test_bad_seed_ranges_are_refused_by_name(text):
    with pytest.raises(WorkbenchError, match="--seeds"):
        seeds.parse_seeds(text)


def test_the_committed_file_is_checked_and_a_stale_sweep_is_named(tmp_path):
    s = seeds.sweep(_noisy_result(), range(3))
    path = tmp_path / "noisy.json"
    path.write_text(json.dumps({"quick": s}))
    assert seeds.load(path)["quick"]["seeds"] == [0, 1, 2]
    for damaged, fragment in [
        ("[]", "not a seed sweep"),
        (json.dumps({"slow": s}), "not a seed sweep"),
        (json.dumps({"quick": {**s, "seeds": "0:3"}}), "'seeds' is not a list of integers"),
        (json.dumps({"quick": {**s, "preset": "full"}}), "says preset 'full'"),
        (json.dumps({"quick": {k: v for k, v in s.items() if k != "claims"}}), "'claims' is missing"),
    ]:
        path.write_text(damaged)
        with pytest.raises(OutputError, match=fragment):
            seeds.load(path)
    from jaxwb.sims.core.audit import claims_of_run

    noisy = _noisy_result()
    fresh = claims_of_run(noisy, noisy.PRESETS["quick"], seed=0)
    assert seeds.stale({"quick": s}, fresh, None) == []
    assert "differ" in seeds.stale({"quick": s}, fresh[:1], None)[0]
    assert seeds.stale({"quick": s}, fresh[::-1], None) == []  # the order claims are listed in is not an outcome
    assert "different number of times" in seeds.stale({"quick": s}, fresh + fresh[:1], None)[0]


def test_the_cli_sweeps_and_writes_figures_audit_seeds(tmp_path, monkeypatch, capsys):
    from jaxwb.sims.core import registry

    noisy = _noisy_result()
    monkeypatch.setattr(paths, "FIGURES_DIR", tmp_path)
    monkeypatch.setattr(registry, "get", lambda name: noisy)
    assert cli.main(["audit", "noisy", "--seeds", "0:3", "--full"]) in (0, 1)
    out = capsys.readouterr().out
    assert "noisy: full preset at seeds 0:3 (3 runs)" in out and "seed    2" in out
    written = seeds.load(tmp_path / "audit" / "seeds" / "noisy.json")
    assert set(written) == {"full"} and written["full"]["seeds"] == [0, 1, 2]
    cli.main(["audit", "noisy", "--seeds", "0:2"])  # the quick sweep is kept beside the full one
    assert set(seeds.load(tmp_path / "audit" / "seeds" / "noisy.json")) == {"quick", "full"}
    assert cli.main(["audit", "--seeds", "0:2", "--random", "3"]) == 2
    assert cli.main(["audit", "noisy", "--full"]) == 2
