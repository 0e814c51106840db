"""The harness, registry, sweep helper and CLI."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sims.core import cli, harness, registry
from sims.core.sweep import grid, sweep

ROOT = harness.REPO_ROOT


@pytest.mark.parametrize(
    ("comparison", "predicted", "measured", "tol", "ok"),
    [("rel", 10.0, 10.5, 0.05, True), ("rel", 10.0, 10.6, 0.05, False), ("abs", 1.0, 1.2, 0.25, True),
     ("le", 1.0, 1.05, 0.1, True), ("le", 1.0, 1.2, 0.1, False), ("ge", 1.0, 0.95, 0.1, True),
     ("ge", 1.0, 0.8, 0.1, False), ("rel", 1.0, float("nan"), 1.0, False), ("abs", 0.0, float("inf"), 1e9, False)],
)
def test_claim_comparisons(comparison, predicted, measured, tol, ok):
    c = harness.Claim("s", predicted, measured, tol, comparison)
    assert c.passed is ok
    back = harness.Claim.from_json(json.loads(json.dumps(c.to_json())))
    assert (back.statement, back.comparison, back.passed) == (c.statement, c.comparison, c.passed)


def test_claim_rejects_unknown_comparison():
    with pytest.raises(ValueError, match="comparison"):
        harness.Claim("s", 1, 1, 0, "approximately")


def test_flatten_results_paths():
    flat = harness.flatten_results({"a": {"b": jnp.ones(2)}, "c": [jnp.zeros(1), jnp.zeros(3)]})
    assert set(flat) == {"a/b", "c/0", "c/1"}


def _square_plus(row):
    return {"y": row["a"] ** 2 + row["b"]}


def test_sweep_equals_python_loop_and_chunks():
    g = grid(a=jnp.arange(5.0), b=jnp.arange(3.0))
    out = sweep(_square_plus, g)["y"]
    expected = np.array([a**2 + b for a in range(5) for b in range(3)], dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(out), expected)
    np.testing.assert_array_equal(np.asarray(sweep(_square_plus, g, chunk_size=4, progress=False)["y"]), expected)


def test_sweep_rejects_ragged_batch():
    with pytest.raises(ValueError, match="leading axis"):
        sweep(_square_plus, {"a": jnp.ones(3), "b": jnp.ones(4)})


MULTI_DEVICE = textwrap.dedent(
    """
    import os
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    import jax, jax.numpy as jnp, numpy as np
    from functools import partial
    assert jax.device_count() == 8, jax.devices()
    from sims.core.sweep import sweep
    from sims import river_valley as sim
    from theory import river_valley as rv
    valley = rv.straight_valley(0.01, 100.0)
    fn = partial(sim._phase_point, valley=valley, theta0=jnp.array([1.0, 0.1]), steps=200)
    g = {"lr": jnp.geomspace(1e-3, 1e-1, 21), "beta": jnp.linspace(0, 0.95, 21)}   # 21: padding exercised
    sharded = sweep(fn, g)
    single = sweep(fn, g, devices=jax.devices()[:1])
    assert len(sharded["progress"].sharding.device_set) == 8, sharded["progress"].sharding
    np.testing.assert_array_equal(np.asarray(sharded["progress"]), np.asarray(single["progress"]))
    np.testing.assert_array_equal(np.asarray(sharded["diverged"]), np.asarray(single["diverged"]))
    print("OK", jax.device_count())
    """
)


def test_sharded_sweep_over_8_fake_devices_equals_single_device():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", MULTI_DEVICE], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OK 8" in proc.stdout


def test_registry_finds_river_valley_and_rejects_unknown():
    assert "river_valley" in registry.result_names()
    with pytest.raises(harness.WorkbenchError, match="did you mean 'river_valley'"):
        registry.get("river_vally")
    assert "river_valley" in registry.bench_names()


def test_parse_overrides():
    assert harness.parse_overrides(["lam=50", "speed_betas=[0.5, 0.9]", "name=abc"]) == {
        "lam": 50, "speed_betas": (0.5, 0.9), "name": "abc"}
    with pytest.raises(harness.WorkbenchError, match="FIELD=VALUE"):
        harness.parse_overrides(["lam"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["run", "no_such_result"], "unknown result 'no_such_result'"),
     (["run", "river_valley", "--set", "traj_beta=1.0"], "traj_beta must be in [0.0, 1.0)"),
     (["run", "river_valley", "--set", "lam=-1"], "lam must be > 0"),
     (["run", "river_valley", "--set", "lr_range=(-0.1, 0.1)"], "lr_range must be > 0"),
     (["run", "river_valley", "--set", "nope=1"], "unknown config field"),
     (["bench", "no_such_bench"], "unknown benchmark"),
     (["claims", "no_such_result"], "unknown result")],
)
def test_cli_bad_input_is_one_line(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("workbench: error:") and message in err and "\n" not in err


def test_cli_negative_seed_is_rejected(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "river_valley", "--seed", "-1"])
    assert exc.value.code == 2
    assert "non-negative integer" in capsys.readouterr().err


def test_cli_list_and_committed_claims(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "river_valley" in out
    rc = cli.main(["claims", "river_valley"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "river_valley:" in out and "FAIL" not in out


def test_console_script_lists_and_reports_claims():
    exe = os.path.join(os.path.dirname(sys.executable), "workbench")
    cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", "sims.core.cli"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([*cmd, "list"], capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "river_valley" in proc.stdout
    proc = subprocess.run([*cmd, "run", "no_such_result"], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env=env)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0, proc.stderr


def test_every_result_follows_the_contract():
    for name in registry.result_names():
        module = registry.get(name)
        assert module.NAME == name
        assert set(module.PRESETS) >= set(harness.PRESET_NAMES), name
        assert jax.tree.leaves(module.PRESETS["quick"]) is not None


# ---- claim kinds, intervals, slack (claims that can fail) ----


def test_claim_with_interval_must_hold_over_the_whole_interval():
    assert harness.Claim("s", 1.0, 1.04, 0.05, "rel", kind="check", ci=0.005, n_seeds=5).passed
    assert not harness.Claim("s", 1.0, 1.04, 0.05, "rel", kind="check", ci=0.02, n_seeds=5).passed
    assert not harness.Claim("s", 1.0, 0.95, 0.0, "le", kind="bound", ci=0.1, n_seeds=5).passed
    assert harness.Claim("s", 1.0, 0.85, 0.0, "le", kind="bound", ci=0.1, n_seeds=5).passed


def test_ci_comparison_fails_on_bias_and_on_imprecision():
    ok = harness.Claim("mc", 0.5, 0.51, 0.05, "ci", kind="check", ci=0.02, n_seeds=100)
    biased = harness.Claim("mc", 0.5, 0.55, 0.05, "ci", kind="check", ci=0.02, n_seeds=100)
    vague = harness.Claim("mc", 0.5, 0.55, 0.05, "ci", kind="check", ci=0.2, n_seeds=100)
    assert ok.passed and not biased.passed and not vague.passed
    with pytest.raises(ValueError, match="n_seeds"):
        harness.Claim("mc", 0.5, 0.5, 0.1, "ci", kind="check", ci=0.1)


def test_from_samples_uses_student_t_interval():
    from scipy import stats

    x = np.array([1.0, 1.2, 0.9, 1.1, 1.0])
    c = harness.Claim.from_samples("s", 1.0, x, 0.5, "rel", kind="check")
    half = stats.t.ppf(0.975, 4) * x.std(ddof=1) / np.sqrt(5)
    assert c.n_seeds == 5 and np.isclose(c.ci, half) and np.isclose(c.measured, x.mean())
    assert not harness.Claim.from_samples("s", 1.0, [1.0, np.nan, 1.0], 0.5, kind="check").passed


def test_identity_is_not_a_claim_and_kinds_are_checked():
    with pytest.raises(ValueError, match="unit test"):
        harness.Claim("TV(P,P)=0", 0, 0, 0, "abs", kind="identity")
    with pytest.raises(ValueError, match="kind"):
        harness.Claim("s", 0, 0, 0, "abs", kind="theorem")
    with pytest.raises(ValueError, match="bound"):
        harness.Claim("s", 0, 0, 0, "abs", kind="bound")


def test_bound_slack_and_loose_flag():
    tight = harness.Claim("u", 2.0, 1.0, 0.0, "le", kind="bound")
    loose = harness.Claim("u", 6.9e6, 30.0, 0.0, "le", kind="bound")
    lower = harness.Claim("l", 0.9, 1.0, 0.0, "ge", kind="bound")
    assert tight.slack == 2.0 and not tight.loose
    assert loose.loose and loose.slack > 1e5
    assert np.isclose(lower.slack, 1 / 0.9)
    assert harness.Claim("c", 1, 1, 0.1, kind="check").slack is None
    table = harness.format_claims("x", [tight, loose, lower])
    assert "LOOSE" in table and "3 bound (1 loose)" in table
    back = harness.Claim.from_json(json.loads(json.dumps(loose.to_json())))
    assert back.loose and back.kind == "bound"


# ---- mutation audit machinery ----


def test_mutant_patches_every_alias_and_restores(tmp_path):
    import types

    import theory.river_valley as rv
    from sims.core.audit import Mutant, applied

    name = next(n for n in dir(rv) if callable(getattr(rv, n)) and not n.startswith("_")
                and getattr(getattr(rv, n), "__module__", "") == "theory.river_valley")
    original = getattr(rv, name)
    alias = types.ModuleType("sims._alias_for_test")
    alias.fn = original
    sys.modules["sims._alias_for_test"] = alias
    try:
        m = Mutant("m", f"theory.river_valley:{name}", lambda f: "patched", "test")
        with applied(m):
            assert getattr(rv, name) == "patched" and alias.fn == "patched"
        assert getattr(rv, name) is original and alias.fn is original
    finally:
        del sys.modules["sims._alias_for_test"]


def test_audit_catches_a_mutant_and_reports_a_missed_one():
    import types

    from sims.core import audit

    mod = types.ModuleType("sims._fake_result")
    mod.NAME = "fake"
    mod.SCALE = 2.0

    @dataclasses.dataclass(frozen=True)
    class Config:
        n: int = 3

    mod.PRESETS = {"quick": Config(), "full": Config()}
    mod.run = lambda cfg, *, key: {"y": jnp.arange(cfg.n) * sys.modules["sims._fake_result"].SCALE}
    mod.claims = lambda r, cfg: [harness.Claim("sum is 6", 6.0, float(r["y"].sum()), 1e-6, kind="check")]
    mod.MUTANTS = [audit.Mutant("scale", "sims._fake_result:SCALE", lambda v: v * 1.1, "scale off by 10%"),
                   audit.Mutant("noop", "sims._fake_result:SCALE", lambda v: v, "does nothing")]
    sys.modules["sims._fake_result"] = mod
    try:
        summary = audit.audit_result(mod, verbose=False)
    finally:
        del sys.modules["sims._fake_result"]
    caught = {m["mutant"]: m["caught"] for m in summary["mutants"]}
    assert caught == {"scale": True, "noop": False}
    assert "**MISSED**" in audit.format_audit_table([summary])


# ---- atomic outputs ----


def test_publish_replaces_folder_atomically(tmp_path):
    out = tmp_path / "res"
    out.mkdir()
    (out / "old.txt").write_text("old")
    new = tmp_path / ".res.tmp"
    new.mkdir()
    (new / "new.txt").write_text("new")
    harness.publish_dir(new, out)
    assert sorted(p.name for p in out.iterdir()) == ["new.txt"] and not new.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["res"]


def test_verify_outputs_detects_stale_files(tmp_path):
    (tmp_path / "claims.json").write_text("[]")
    (tmp_path / "data.npz").write_bytes(b"x")
    digest = {f: harness.sha256_file(tmp_path / f) for f in ("claims.json", "data.npz")}
    (tmp_path / "manifest.json").write_text(json.dumps({"content_sha256": digest}))
    assert harness.verify_outputs(tmp_path) == []
    (tmp_path / "claims.json").write_text("[1]")
    assert any("claims.json" in p for p in harness.verify_outputs(tmp_path))


def test_quick_runs_default_outside_figures(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path))
    assert harness.default_out_dir("x", "quick") == tmp_path / "quick" / "x"
    assert harness.default_out_dir("x", "full") == harness.FIGURES_DIR / "x"


def test_out_dir_that_is_a_file_is_rejected_before_the_run(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(harness.WorkbenchError, match="not a folder"):
        harness.check_out_dir(f)
