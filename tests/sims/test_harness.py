"""The harness, registry, sweep helper and CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sims import cli, harness, registry
from sims.sweep import grid, sweep

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
    from sims.sweep import sweep
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
    cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", "sims.cli"]
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
