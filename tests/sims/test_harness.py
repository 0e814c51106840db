"""The harness, registry, sweep helper and CLI."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxwb.sims.core import cli, harness, registry
from jaxwb.sims.core.claims import Claim, format_claims, kind_counts
from jaxwb.sims.core.errors import WorkbenchError
from jaxwb.sims.core.outputs import (
    flatten_results,
    load_claims,
    publish_dir,
    results_layout,
    sha256_file,
    unflatten_results,
    verify_outputs,
)
from jaxwb.sims.core.paths import FIGURES_DIR, REPO_ROOT, check_out_dir, default_out_dir
from jaxwb.sims.core.presets import PRESET_NAMES, parse_overrides
from jaxwb.sims.core.progress import Phases
from jaxwb.sims.core.sweep import grid, sweep
from tests.sims.fake_result import FAKE_CLI
from tests.sims.fake_result import fake_cli as _fake_cli
from tests.sims.fake_result import fake_module as _fake_module

ROOT = REPO_ROOT


@pytest.mark.parametrize(
    ("comparison", "predicted", "measured", "tol", "ok"),
    [
        ("rel", 10.0, 10.5, 0.05, True),
        ("rel", 10.0, 10.6, 0.05, False),
        ("abs", 1.0, 1.2, 0.25, True),
        ("le", 1.0, 1.05, 0.1, True),
        ("le", 1.0, 1.2, 0.1, False),
        ("ge", 1.0, 0.95, 0.1, True),
        ("ge", 1.0, 0.8, 0.1, False),
        ("rel", 1.0, float("nan"), 1.0, False),
        ("abs", 0.0, float("inf"), 1e9, False),
    ],
)
def test_claim_comparisons(comparison, predicted, measured, tol, ok):
    c = Claim("s", predicted, measured, tol, comparison)
    assert c.passed is ok
    back = Claim.from_json(json.loads(json.dumps(c.to_json())))
    assert (back.statement, back.comparison, back.passed) == (c.statement, c.comparison, c.passed)


def test_claim_rejects_unknown_comparison():
    with pytest.raises(ValueError, match="comparison"):
        Claim("s", 1, 1, 0, "approximately")


def test_flatten_results_paths():
    flat = flatten_results({"a": {"b": jnp.ones(2)}, "c": [jnp.zeros(1), jnp.zeros(3)]})
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
    from jaxwb.sims.core.sweep import sweep
    from jaxwb.sims.river_valley.run import phase_point
    from jaxwb.theory import river_valley as rv
    valley = rv.straight_valley(0.01, 100.0)
    fn = partial(phase_point, valley=valley, theta0=jnp.array([1.0, 0.1]), steps=200)
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
    proc = subprocess.run(
        [sys.executable, "-c", MULTI_DEVICE], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OK 8" in proc.stdout


def test_registry_finds_river_valley_and_rejects_unknown():
    assert "river_valley" in registry.result_names()
    with pytest.raises(WorkbenchError, match="did you mean 'river_valley'"):
        registry.get("river_vally")
    assert "river_valley" in registry.bench_names()


def test_parse_overrides():
    assert parse_overrides(["lam=50", "speed_betas=[0.5, 0.9]", "name=abc"]) == {
        "lam": 50,
        "speed_betas": (0.5, 0.9),
        "name": "abc",
    }
    with pytest.raises(WorkbenchError, match="FIELD=VALUE"):
        parse_overrides(["lam"])


# ---- the command line: every bad input is one line and exit 2, before anything runs ----

BAD_INPUTS = [
    ([], "the following arguments are required: command"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["run"], "run needs a result NAME"),
    (["run", "no_such_result"], "unknown result 'no_such_result'"),
    (["run", "river_vally"], "did you mean 'river_valley'"),
    (["run", "river_valley", "--seed", "-1"], "seed must be an integer in [0, 2**32)"),
    (["run", "river_valley", "--seed", "abc"], "seed must be an integer in [0, 2**32)"),
    (["run", "river_valley", "--seed", "18446744073709551616"], "seed must be an integer in [0, 2**32)"),
    (["run", "river_valley", "--seed", "1.5"], "seed must be an integer in [0, 2**32)"),
    (["run", "river_valley", "--set", "lam=abc"], "lam expects float"),
    (["run", "river_valley", "--set", "lam=nan"], "lam must be a finite float"),
    (["run", "river_valley", "--set", "lam=-inf"], "lam must be a finite float"),
    (["run", "river_valley", "--set", "lam=1e999"], "lam must be a finite float"),
    (["run", "river_valley", "--set", "lam=-1"], "lam must be > 0"),
    (["run", "river_valley", "--set", "lam=True"], "lam expects float"),
    (["run", "river_valley", "--set", "lr_range=0.1"], "lr_range expects tuple[float, float] (2 values"),
    (["run", "river_valley", "--set", "lr_range=(0.1,0.2,0.3)"], "lr_range expects tuple[float, float]"),
    (["run", "river_valley", "--set", "lr_range=(-0.1, 0.1)"], "lr_range must be > 0"),
    (["run", "river_valley", "--set", "speed_betas=(0.5,abc)"], "speed_betas expects tuple[float, ...]"),
    (["run", "river_valley", "--set", "n_lr=2.5"], "n_lr expects int"),
    (["run", "river_valley", "--set", "n_lr=many"], "n_lr expects int"),
    (["run", "river_valley", "--set", "traj_beta=1.0"], "traj_beta must be in [0.0, 1.0)"),
    (["run", "river_valley", "--set", "nope=1"], "unknown config field 'nope'"),
    (["run", "river_valley", "--set", "lamm=1"], "did you mean 'lam'"),
    (["run", "river_valley", "--set", "lam"], "--set expects FIELD=VALUE"),
    (["run", "river_valley", "--set", "=5"], "--set expects FIELD=VALUE"),
    (["run", "river_valley", "--set", "lam="], "--set lam=: no value given"),
    (["run", "river_valley", "--set"], "argument --set: expected one argument"),
    (["run", "river_valley", "--bogus"], "unrecognized arguments: --bogus"),
    (["run", "river_valley", "--out", "{file}"], "exists and is not a folder"),
    (["run", "river_valley", "--out", "{file}/sub"], "is not a folder"),
    (["run", "river_valley", "--out", "/proc/x"], "cannot write in '/proc'"),
    (["run", "river_valley", "--out", "/dev/null/x"], "is not a folder"),
    (["run", "river_valley", "--process-id", "0"], "need --distributed"),
    (["run", "river_valley", "--distributed", "--num-processes", "0"], "expected a positive integer"),
    (["run", "river_valley", "--distributed", "--coordinator", "nohost"], "must be HOST:PORT"),
    (
        [
            "run",
            "river_valley",
            "--distributed",
            "--coordinator",
            "127.0.0.1:1",
            "--num-processes",
            "2",
            "--process-id",
            "5",
        ],
        "process id must be in [0, 2)",
    ),
    (["run", "tiny_lm", "--set", "corpus_bytes=lots"], "corpus_bytes expects int | None"),
    (["run", "sparse_attention", "--set", "block=7"], "block=7 must divide the sequence length"),
    (
        ["run", "aldrift", "--set", "settings=(1,2)"],
        "settings expects tuple[tuple[float, float, float, float, float], ...]",
    ),
    (["all", "--seed", "x"], "seed must be an integer"),
    (["all", "--out", "{file}"], "is not a folder"),
    (["all", "--jobs", "0"], "expected a positive integer"),
    (["all", "--jobs", "two"], "expected a positive integer"),
    (["run", "river_valley", "--seed", "+5"], "decimal digits only"),
    (["run", "river_valley", "--seed", "1_000"], "decimal digits only"),
    (["run", "river_valley", "--seed", " 5"], "decimal digits only"),
    (["run", "river_valley", "--out", ""], "--out is empty"),
    (["run", "river_valley", "--out", "."], "will not be replaced: it is the current directory"),
    (["run", "river_valley", "--out", "x" * 300], "File name too long"),
    (["claims", "no_such_result"], "unknown result 'no_such_result'"),
    (["audit", "no_such_result"], "unknown result 'no_such_result'"),
    (["bench", "no_such_bench"], "unknown benchmark 'no_such_bench'"),
    (["notebook", "no_such_result"], "unknown result 'no_such_result'"),
]


@pytest.mark.parametrize(("argv", "message"), BAD_INPUTS, ids=[" ".join(a) or "(nothing)" for a, _ in BAD_INPUTS])
def test_cli_bad_input_is_one_line(argv, message, capsys, tmp_path, monkeypatch):
    def no_run(*a, **k):
        raise AssertionError("a bad input reached the simulation")

    monkeypatch.setattr(harness, "execute", no_run)
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    argv = [a.replace("{file}", str(a_file)) for a in argv]
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith("workbench: error:") and message in err and "\n" not in err, err
    assert "Traceback" not in captured.out + captured.err


def test_an_error_inside_a_simulation_keeps_its_traceback(monkeypatch, tmp_path):
    """Only user errors become one line: a ValueError raised by the simulation itself is a bug and propagates."""
    mod = _fake_module()

    def broken(cfg, *, key):
        raise ValueError("internal: shapes do not match")

    monkeypatch.setattr(mod, "run", broken)
    monkeypatch.setattr(registry, "get", lambda name: mod)
    with pytest.raises(ValueError, match="internal"):
        cli.main(["run", "atomic_fake", "--out", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()


def test_cli_version_and_run_help_lists_the_config(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("workbench ")
    assert cli.main(["run", "river_valley", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--set FIELD=VALUE" in out and "Config fields of river_valley" in out
    assert re.search(r"lam\s+float\s+= 100.0\s+valley curvature", out), out
    assert re.search(r"lr_range\s+tuple\[float, float\]\s+= \(0.001, 0.1\)", out), out
    assert re.search(r"n_lr\s+int\s+= 60 \(quick: \d+\)\s+\(phase diagram\)", out), out
    assert cli.main(["run", "--help"]) == 0
    assert "NAME's Config fields" in capsys.readouterr().out


def test_typed_overrides_follow_the_declared_types():
    from jaxwb.sims import river_valley, tiny_lm
    from jaxwb.sims.core import config

    cfg = config.apply_overrides(
        river_valley, "quick", ["lam=50", "lr_range=1e-3,0.2", "speed_betas=0.5", "boundary_betas=[0, 0.5]", "n_lr=1e1"]
    )
    assert (cfg.lam, cfg.lr_range, cfg.speed_betas, cfg.boundary_betas, cfg.n_lr) == (
        50.0,
        (1e-3, 0.2),
        (0.5,),
        (0.0, 0.5),
        10,
    )
    assert isinstance(cfg.lam, float) and isinstance(cfg.n_lr, int)
    assert config.apply_overrides(tiny_lm, "quick", ["corpus_bytes=None"]).corpus_bytes is None
    assert config.apply_overrides(tiny_lm, "quick", ["corpus_bytes=5000"]).corpus_bytes == 5000
    assert config.parse_value("flag", "yes", bool) is True and config.parse_value("flag", "0", bool) is False
    assert config.parse_value("name", "'abc'", str) == "abc"
    assert config.parse_value("x", "inf", float, default=float("inf")) == float("inf")  # inf where inf is default
    with pytest.raises(WorkbenchError, match="x must be a finite float"):
        config.parse_value("x", "nan", float, default=float("inf"))
    with pytest.raises(WorkbenchError, match="flag expects bool"):
        config.parse_value("flag", "maybe", bool)


def test_every_config_field_has_a_readable_type():
    from jaxwb.sims.core import config

    for name in registry.result_names():
        module = registry.get(name)
        text = config.describe_config(module)
        for f in dataclasses.fields(module.PRESETS["full"]):
            assert f"  {f.name} " in text, (name, f.name)
        assert "<class" not in text and "typing." not in text, text


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
    cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", "jaxwb.sims.core.cli"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([*cmd, "list"], capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "river_valley" in proc.stdout
    proc = subprocess.run(
        [*cmd, "run", "no_such_result"], capture_output=True, text=True, cwd=ROOT, timeout=300, env=env
    )
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0, proc.stderr


def test_every_result_follows_the_contract():
    for name in registry.result_names():
        module = registry.get(name)
        assert module.NAME == name
        assert set(module.PRESETS) >= set(PRESET_NAMES), name
        assert jax.tree.leaves(module.PRESETS["quick"]) is not None


# ---- claim kinds, intervals, slack (claims that can fail) ----


def test_claim_with_interval_must_hold_over_the_whole_interval():
    assert Claim("s", 1.0, 1.04, 0.05, "rel", kind="check", ci=0.005, n_seeds=5).passed
    assert not Claim("s", 1.0, 1.04, 0.05, "rel", kind="check", ci=0.02, n_seeds=5).passed
    assert not Claim("s", 1.0, 0.95, 0.0, "le", kind="bound", ci=0.1, n_seeds=5).passed
    assert Claim("s", 1.0, 0.85, 0.0, "le", kind="bound", ci=0.1, n_seeds=5).passed


def test_ci_comparison_fails_on_bias_and_on_imprecision():
    ok = Claim("mc", 0.5, 0.51, 0.05, "ci", kind="check", ci=0.02, n_seeds=100)
    biased = Claim("mc", 0.5, 0.55, 0.05, "ci", kind="check", ci=0.02, n_seeds=100)
    vague = Claim("mc", 0.5, 0.55, 0.05, "ci", kind="check", ci=0.2, n_seeds=100)
    assert ok.passed and not biased.passed and not vague.passed
    with pytest.raises(ValueError, match="n_seeds"):
        Claim("mc", 0.5, 0.5, 0.1, "ci", kind="check", ci=0.1)


def test_from_samples_uses_student_t_interval():
    from scipy import stats

    x = np.array([1.0, 1.2, 0.9, 1.1, 1.0])
    c = Claim.from_samples("s", 1.0, x, 0.5, "rel", kind="check")
    half = stats.t.ppf(0.975, 4) * x.std(ddof=1) / np.sqrt(5)
    assert c.n_seeds == 5 and np.isclose(c.ci, half) and np.isclose(c.measured, x.mean())
    assert not Claim.from_samples("s", 1.0, [1.0, np.nan, 1.0], 0.5, kind="check").passed


def test_identity_is_not_a_claim_and_kinds_are_checked():
    with pytest.raises(ValueError, match="unit test"):
        Claim("TV(P,P)=0", 0, 0, 0, "abs", kind="identity")
    with pytest.raises(ValueError, match="kind"):
        Claim("s", 0, 0, 0, "abs", kind="theorem")
    with pytest.raises(ValueError, match="bound"):
        Claim("s", 0, 0, 0, "abs", kind="bound")


def test_bound_slack_and_loose_flag():
    tight = Claim("u", 2.0, 1.0, 0.0, "le", kind="bound")
    loose = Claim("u", 6.9e6, 30.0, 0.0, "le", kind="bound")
    lower = Claim("l", 0.9, 1.0, 0.0, "ge", kind="bound")
    assert tight.slack == 2.0 and not tight.loose
    assert loose.loose and loose.slack > 1e5
    assert np.isclose(lower.slack, 1 / 0.9)
    assert Claim("c", 1, 1, 0.1, kind="check").slack is None
    table = format_claims("x", [tight, loose, lower])
    assert "LOOSE" in table and "3 bound (1 loose)" in table
    back = Claim.from_json(json.loads(json.dumps(loose.to_json())))
    assert back.loose and back.kind == "bound"


# ---- mutation audit machinery ----


def test_mutant_patches_every_alias_and_restores(tmp_path):
    import types

    import jaxwb.theory.river_valley as rv
    from jaxwb.sims.core.audit import Mutant, applied

    name = next(
        n
        for n in dir(rv)
        if callable(getattr(rv, n))
        and not n.startswith("_")
        and getattr(getattr(rv, n), "__module__", "") == "jaxwb.theory.river_valley"
    )
    original = getattr(rv, name)
    alias = types.ModuleType("jaxwb.sims._alias_for_test")
    alias.fn = original
    sys.modules["jaxwb.sims._alias_for_test"] = alias
    try:
        m = Mutant("m", f"jaxwb.theory.river_valley:{name}", lambda f: "patched", "test")
        with applied(m):
            assert getattr(rv, name) == "patched" and alias.fn == "patched"
        assert getattr(rv, name) is original and alias.fn is original
    finally:
        del sys.modules["jaxwb.sims._alias_for_test"]


def test_audit_catches_a_mutant_and_reports_a_missed_one():
    import types

    from jaxwb.sims.core import audit

    mod = types.ModuleType("jaxwb.sims._fake_result")
    mod.NAME = "fake"
    mod.SCALE = 2.0

    @dataclasses.dataclass(frozen=True)
    class Config:
        n: int = 3

    mod.PRESETS = {"quick": Config(), "full": Config()}
    mod.run = lambda cfg, *, key: {"y": jnp.arange(cfg.n) * sys.modules["jaxwb.sims._fake_result"].SCALE}
    mod.claims = lambda r, cfg: [Claim("sum is 6", 6.0, float(r["y"].sum()), 1e-6, kind="check")]
    mod.MUTANTS = [
        audit.Mutant("scale", "jaxwb.sims._fake_result:SCALE", lambda v: v * 1.1, "scale off by 10%"),
        audit.Mutant("noop", "jaxwb.sims._fake_result:SCALE", lambda v: v, "does nothing"),
    ]
    sys.modules["jaxwb.sims._fake_result"] = mod
    try:
        summary = audit.audit_result(mod, verbose=False)
    finally:
        del sys.modules["jaxwb.sims._fake_result"]
    caught = {m["mutant"]: m["caught"] for m in summary["mutants"]}
    assert caught == {"scale": True, "noop": False}
    assert "**MISSED**" in audit.format_audit_table([summary])


# ---- atomic outputs ----


def test_publish_replaces_folder_atomically(tmp_path):
    out = tmp_path / "res"
    out.mkdir()
    for name, text in (("old.png", "old"), ("data.npz", "d"), ("claims.json", "[]")):
        (out / name).write_text(text)
    hashes = {f: sha256_file(out / f) for f in ("old.png", "data.npz", "claims.json")}
    (out / "manifest.json").write_text(json.dumps({"result": "res", "figures": ["old.png"], "content_sha256": hashes}))
    new = tmp_path / ".res.tmp"
    new.mkdir()
    (new / "new.txt").write_text("new")
    publish_dir(new, out, "res")  # a previous output of the result being written
    assert sorted(p.name for p in out.iterdir()) == ["new.txt"] and not new.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["res"]


def test_verify_outputs_detects_stale_files(tmp_path):
    (tmp_path / "claims.json").write_text("[]")
    (tmp_path / "data.npz").write_bytes(b"x")
    digest = {f: sha256_file(tmp_path / f) for f in ("claims.json", "data.npz")}
    (tmp_path / "manifest.json").write_text(json.dumps({"content_sha256": digest}))
    assert verify_outputs(tmp_path) == []
    (tmp_path / "claims.json").write_text("[1]")
    assert any("claims.json" in p for p in verify_outputs(tmp_path))


def test_quick_runs_default_outside_figures(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path))
    assert default_out_dir("x", "quick") == tmp_path / "quick" / "x"
    assert default_out_dir("x", "full") == FIGURES_DIR / "x"


def test_out_dir_that_is_a_file_is_rejected_before_the_run(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(WorkbenchError, match="not a folder"):
        check_out_dir(f)


# ---- atomic outputs under a real interrupt: SIGINT and SIGKILL during the write phase ----


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_interrupted_write_leaves_the_previous_output_byte_identical(tmp_path):
    out = tmp_path / "result"
    mod = _fake_module()
    harness.execute(mod, out_dir=out, cfg=mod.Config(1.0), verbose=False)
    before = _snapshot(out)
    assert {"a_first.png", "b_second.png", "data.npz", "claims.json", "manifest.json"} <= set(before)
    assert verify_outputs(out) == []

    marker = tmp_path / "writing"
    rc, _, err = _fake_cli(
        ["run", "atomic_fake", "--out", str(out), "--set", "value=2", "--seed", "7"],
        {"WRITING_MARKER": str(marker)},
        marker,
        signal.SIGINT,
    )
    assert rc == 130, err
    assert err.strip().count("\n") == 0 and "interrupted" in err and "Traceback" not in err, err
    assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result", "writing"], "temp folder left after Ctrl-C"

    marker.unlink()
    rc, _, err = _fake_cli(
        ["run", "atomic_fake", "--out", str(out), "--set", "value=3"],
        {"WRITING_MARKER": str(marker)},
        marker,
        signal.SIGKILL,
    )
    assert rc == -signal.SIGKILL
    assert _snapshot(out) == before and verify_outputs(out) == []
    left = [p.name for p in tmp_path.iterdir() if p.name.startswith(".result.tmp-")]
    assert len(left) == 1, "SIGKILL cannot clean up; the next run does"

    harness.execute(mod, out_dir=out, cfg=mod.Config(4.0), seed=3, verbose=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result", "writing"], "stale temp folder not removed"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == 3 and manifest["config"]["value"] == 4.0
    assert json.loads((out / "claims.json").read_text())[0]["measured"] == 4.0
    assert verify_outputs(out) == []


def test_results_round_trip_through_data_npz(tmp_path):
    results = {
        "a": {64: jnp.zeros(1), 1024: jnp.ones(1)},
        "b": {"d": jnp.ones(2)},
        "c": [jnp.zeros(1), jnp.arange(3)],
        "s": np.array(["x", "yy"]),
        "scalar": jnp.float32(2.5),
    }
    flat = flatten_results(results)
    np.savez(tmp_path / "data.npz", **flat)
    with np.load(tmp_path / "data.npz") as d:
        loaded = {k: d[k] for k in d.files}
    back = unflatten_results(loaded, json.loads(json.dumps(results_layout(results))))
    assert jax.tree.structure(back) == jax.tree.structure(jax.tree.map(np.asarray, results))
    np.testing.assert_array_equal(back["c"][1], np.arange(3))
    assert back["a"][1024].shape == (1,) and float(back["scalar"]) == 2.5
    guessed = unflatten_results(loaded)  # no layout (older outputs): lists and digit keys guessed
    assert isinstance(guessed["c"], list) and guessed["a"][64].shape == (1,) and guessed["a"]["1024"].shape == (1,)


def test_committed_data_replots_and_reclaims_through_the_result(tmp_path):
    """What a notebook does on opening: data.npz -> results pytree -> sim.plot / sim.claims."""
    import matplotlib.pyplot as plt

    from jaxwb.sims import river_valley_lm
    from jaxwb.sims.core import notebook

    nb = notebook.open_result(river_valley_lm)
    figs = nb.figures()
    assert {f"{k}.png" for k in figs} == set(nb.manifest["figures"])
    committed = load_claims("river_valley_lm")
    assert [c.statement for c in nb.claims] == [c.statement for c in committed]
    np.testing.assert_allclose([c.measured for c in nb.claims], [c.measured for c in committed], rtol=1e-6)
    plt.close("all")


def test_all_writes_each_result_under_out(monkeypatch, tmp_path, capsys):
    seen = []

    def fake_execute(module, **kw):
        seen.append((module.NAME, kw["out_dir"], kw["preset"]))
        return harness.Outcome(module.NAME, kw["preset"], {}, [], kw["out_dir"], 0.0)

    monkeypatch.setattr(harness, "execute", fake_execute)
    assert cli.main(["all", "--quick", "--out", str(tmp_path / "all")]) == 0
    assert [n for n, _, _ in seen] == registry.result_names()
    assert all(out == tmp_path / "all" / n and preset == "quick" for n, out, preset in seen)


def test_all_with_jobs_runs_each_result_once_longest_first(monkeypatch, tmp_path, capsys):
    """``workbench all --jobs N``: every result once, in worker processes (a thread here, so the fake execute
    applies), started longest first by the wall time of its last run, each claims table printed when it ends."""
    import concurrent.futures

    started = []

    def fake_execute(module, **kw):
        started.append(module.NAME)
        print(f"table of {module.NAME}")
        return harness.Outcome(module.NAME, kw["preset"], {}, [], kw["out_dir"], 0.0)

    monkeypatch.setattr(harness, "execute", fake_execute)
    monkeypatch.setattr(cli, "worker_pool", lambda n: concurrent.futures.ThreadPoolExecutor(max_workers=1))
    names = registry.result_names()
    walls = {name: float(i) for i, name in enumerate(names)}  # the last result took longest
    monkeypatch.setattr(cli, "last_wall_times", lambda ns, preset: {n: walls[n] for n in ns})
    assert cli.main(["all", "--quick", "--jobs", "2", "--out", str(tmp_path / "all")]) == 0
    assert started == names[::-1]
    out = capsys.readouterr().out
    assert all(f"table of {n}" in out for n in names) and f"{len(names)}/{len(names)} results" in out


def test_longest_first_reads_the_last_runs_wall_time(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path))
    for name, wall in (("aldrift", 5.0), ("river_valley", 50.0)):
        folder = default_out_dir(name, "quick")
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text(json.dumps({"wall_time_s": wall}))
    assert cli.longest_first(cli.last_wall_times(["aldrift", "river_valley", "quantization"], "quick")) == [
        "quantization",  # never run: first
        "river_valley",
        "aldrift",
    ]


def test_quick_outputs_are_git_ignored(monkeypatch):
    monkeypatch.delenv("WORKBENCH_CACHE", raising=False)
    target = default_out_dir("river_valley", "quick")
    assert FIGURES_DIR not in target.parents
    if (ROOT / ".git").exists():
        proc = subprocess.run(["git", "check-ignore", "-q", str(target / "claims.json")], cwd=ROOT)
        assert proc.returncode == 0, f"{target} is not git-ignored"


def test_phase_progress_only_on_a_terminal(monkeypatch):
    monkeypatch.delenv("WORKBENCH_PROGRESS", raising=False)
    assert not Phases("x", ["run"]).enabled  # pytest captures stderr: not a TTY
    monkeypatch.setenv("WORKBENCH_PROGRESS", "1")
    phases = Phases("x", ["run", "claims"])
    phases.start("run")
    phases.done()
    phases.close()
    assert phases.enabled


def test_results_bar_weighs_each_result_by_its_last_wall_time(monkeypatch):
    """The ``workbench all`` bar: a result advances it by its last run's wall time (the others' mean when it never
    ran), so the time left is in the machine's own speed; one result or no terminal: no bar."""
    import doctest
    import io

    from jaxwb.sims.core import progress

    assert doctest.testmod(progress).failed == 0
    monkeypatch.delenv("WORKBENCH_PROGRESS", raising=False)
    assert not progress.ResultsBar({"a": 1.0, "b": 2.0}).enabled  # pytest captures stderr: not a TTY
    assert not progress.ResultsBar({"a": 1.0}, enabled=True).enabled  # one result: its phases bar is enough
    out = io.StringIO()
    bar = progress.ResultsBar({"a": 10.0, "b": float("inf"), "c": 30.0}, jobs=2, enabled=True, file=out)
    assert bar.bar is not None and bar.bar.total == 60.0
    bar.done("c")
    bar.done("b")
    assert bar.bar.n == 50.0
    bar.close()
    assert "workbench all (2 at once): 2/3 results" in out.getvalue()


def test_last_wall_times_of_results_never_run_are_infinite(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path))
    folder = default_out_dir("aldrift", "quick")
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"wall_time_s": 5.0}))
    assert cli.last_wall_times(["aldrift", "river_valley"], "quick") == {"aldrift": 5.0, "river_valley": float("inf")}


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_distributed_run_over_two_cpu_processes_equals_single_process(tmp_path):
    """`workbench run NAME --distributed` on 2 local CPU processes (gloo): same data, only process 0 writes."""
    single, multi = tmp_path / "single", tmp_path / "multi"
    mod = _fake_module()
    harness.execute(mod, out_dir=single, cfg=mod.Config(2.0), verbose=False)
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    args = ["run", "atomic_fake", "--out", str(multi), "--set", "value=2", "--distributed"]
    p0 = subprocess.Popen(
        [
            sys.executable,
            "-c",
            FAKE_CLI,
            *args,
            "--coordinator",
            f"127.0.0.1:{port}",
            "--num-processes",
            "2",
            "--process-id",
            "0",
        ],
        cwd=ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    env1 = {**env, "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}", "JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": "1"}
    p1 = subprocess.Popen(
        [sys.executable, "-c", FAKE_CLI, *args],
        cwd=ROOT,
        env=env1,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    (out0, err0), (out1, err1) = p0.communicate(timeout=240), p1.communicate(timeout=240)
    assert p0.returncode == 0 and p1.returncode == 0, (err0[-2000:], err1[-2000:])
    assert "wrote" in out0 and "wrote" not in out1, (out0, out1)
    manifest = json.loads((multi / "manifest.json").read_text())
    assert manifest["process_count"] == 2 and manifest["device_count"] == 2
    with np.load(single / "data.npz") as a, np.load(multi / "data.npz") as b:
        assert a.files == b.files
        for k in a.files:
            np.testing.assert_array_equal(a[k], b[k])
    assert (single / "claims.json").read_text() == (multi / "claims.json").read_text()


def test_notebook_helper_opens_committed_data_and_recomputes(tmp_path, monkeypatch):
    from jaxwb.sims.core import notebook

    mod = _fake_module()
    harness.execute(mod, out_dir=tmp_path / "r", cfg=mod.Config(1.5), seed=2, verbose=False)
    nb = notebook.open_result(mod, tmp_path / "r")
    assert nb.cfg == mod.Config(1.5) and nb.seed == 2 and "committed" in nb.source and nb.problems == []
    np.testing.assert_array_equal(nb.results["x"], 1.5 + np.arange(7.0))
    assert [c.measured for c in nb.claims] == [1.5] and set(nb.figures()) == {"a_first", "b_second"}
    nb.recompute(cfg=mod.Config(3.0))
    assert [c.measured for c in nb.claims] == [3.0] and nb.source.startswith("recomputed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # recomputing writes nothing
    assert "white-space: pre" in notebook.claims_html("t", nb.claims)

    monkeypatch.setenv("WORKBENCH_QUICK", "1")
    seen = []
    notebook.interact(lambda a=1.0, b="x": seen.append((a, b)), a=(0.0, 2.0, 0.5), b=["x", "y"])
    assert seen == [(1.0, "x")]


def test_readme_claims_column_is_generated(tmp_path):
    from jaxwb.sims.core import readme

    fig = tmp_path / "figures" / "demo"
    fig.mkdir(parents=True)
    claims = [
        Claim("a", 1, 1, 0.1, kind="check"),
        Claim("b", 2, 1, 0, "le", kind="bound"),
        Claim("c", 1, 3, 0.1, kind="paper"),
    ]
    (fig / "claims.json").write_text(json.dumps([c.to_json() for c in claims]))
    md = tmp_path / "README.md"
    md.write_text(
        "x\n<!-- results-table -->\n| result | claims |\n| --- | --- |\n| [demo](sims/demo.py) | 9/9 |\n\nend\n"
    )
    assert readme.update_results_table(md, tmp_path / "figures") == ["demo"]
    assert "| [demo](sims/demo.py) | 2/3 (1 check, 1 bound, 1 paper; 1 wide) |" in md.read_text()


def test_expected_failures_are_strict_and_need_a_reason():
    with pytest.raises(ValueError, match="needs its reason"):
        Claim("x", 1, 2, 0.1, kind="check", expected="fail")
    with pytest.raises(ValueError, match="expected must be"):
        Claim("x", 1, 2, 0.1, kind="check", expected="maybe")
    xfail = Claim("x", 1, 2, 0.1, kind="check", expected="fail", reason="the paper's constant is off")
    xpass = Claim("y", 1, 1.01, 0.1, kind="check", expected="fail", reason="known")
    regression = Claim("z", 1, 2, 0.1, kind="check")
    assert (xfail.status, xfail.as_expected) == ("XFAIL", True)
    assert (xpass.status, xpass.as_expected) == ("XPASS", False)
    assert (regression.status, regression.as_expected) == ("FAIL", False)
    table = format_claims("demo", [xfail, xpass, regression])
    assert "[XFAIL]" in table and "expected to fail: the paper's constant is off" in table
    assert "NOT AS EXPECTED: 1 regression(s), 1 unexpected pass(es)" in table
    back = Claim.from_json(json.loads(json.dumps(xfail.to_json())))
    assert back == xfail and back.to_json()["status"] == "XFAIL"


def test_wide_tolerances_and_one_sided_slack_are_flagged():
    # an interval claim: allowed deviation 0.1 * 10 = 1 against a half-width 0.1 (10x): wide; 0.5 (2x): not
    assert Claim("w", 10.0, 10.0, 0.1, kind="check", ci=0.1, n_seeds=5).wide
    assert not Claim("n", 10.0, 10.0, 0.1, kind="check", ci=0.5, n_seeds=5).wide
    # deterministic: allowed deviation vs the observed error (100x)
    assert Claim("d", 1.0, 1.0001, 0.05, kind="check").wide
    assert not Claim("e", 1.0, 1.01, 0.05, kind="check").wide
    justified = Claim("j", 1.0, 1.0, 0.05, kind="check", wide_reason="discretisation error of the grid")
    assert "WIDE (discretisation error of the grid)" in format_claims("demo", [justified])
    assert kind_counts([justified])["wide_justified"] == 1
    assert not Claim("f", 1.0, 2.0, 0.05, kind="check").wide  # failing claims are not "wide"
    # a one-sided comparison reports its slack whatever its kind
    one_sided = Claim("o", 100.0, 1.0, 0.0, "le", kind="check")
    assert one_sided.slack == 100.0 and one_sided.loose


def test_run_and_all_exit_on_expectations_not_on_failures(monkeypatch, capsys, tmp_path):
    def fake_execute(module, **kw):
        claims = [Claim("known gap", 1, 2, 0.1, kind="check", expected="fail", reason="documented")]
        if module.NAME == "river_valley":
            claims.append(Claim("ok", 1, 1, 0, kind="check"))
        return harness.Outcome(module.NAME, kw["preset"], {}, claims, kw["out_dir"], 0.0)

    monkeypatch.setattr(harness, "execute", fake_execute)
    assert cli.main(["all", "--quick", "--out", str(tmp_path / "all")]) == 0
    out = capsys.readouterr().out
    assert "every claim as expected" in out and "expected failure  river_valley: known gap (documented)" in out

    def regressed(module, **kw):
        return harness.Outcome(
            module.NAME, kw["preset"], {}, [Claim("gap", 1, 2, 0.1, kind="check")], kw["out_dir"], 0.0
        )

    monkeypatch.setattr(harness, "execute", regressed)
    assert cli.main(["all", "--quick", "--out", str(tmp_path / "all2")]) == 1
    assert "FAILS (expected to pass)" in capsys.readouterr().out


def test_chance_failures_counts_exact_expectation_claims_and_their_binomial_tail():
    from math import comb

    from jaxwb.sims.core.claims import chance_failures

    ok = Claim("in", 1.0, 1.01, 0.1, "ci", kind="check", ci=0.02, n_seeds=5)
    miss = Claim("out", 1.0, 1.05, 0.1, "ci", kind="check", ci=0.02, n_seeds=5)
    other = Claim("rel", 1.0, 3.0, 0.1, kind="check", ci=0.02, n_seeds=5)  # not a 'ci' comparison
    got = chance_failures([ok] * 18 + [miss] * 2 + [other])
    assert (got.n, got.failed) == (20, 2) and abs(got.expected - 1.0) < 1e-12
    tail = 1 - sum(comb(20, k) * 0.05**k * 0.95 ** (20 - k) for k in range(2))
    assert abs(got.p_value - tail) < 1e-12
    assert chance_failures([ok, other]).p_value == 1.0 and chance_failures([other]).n == 0
    assert "2 of 20" in str(got)
    known = Claim("known", 1.0, 1.5, 0.1, "ci", kind="check", ci=0.02, n_seeds=5, expected="fail", reason="why")
    with_known = chance_failures([ok] * 18 + [miss] * 2 + [known] * 3)  # known disagreements are not chance
    assert (with_known.n, with_known.failed, with_known.known) == (20, 2, 3) and with_known.p_value == got.p_value
    assert "3 expected to fail, not counted" in str(with_known)
    none_missed = chance_failures([ok] * 200)  # 0 of 200: P(<= 0) = 0.95^200, fewer misses than chance
    assert abs(none_missed.p_low - 0.95**200) < 1e-12 and "fewer misses than chance" in str(none_missed)
    assert "fewer" not in str(got)


def test_compilation_cache_is_pruned_oldest_first_and_has_no_per_write_eviction(tmp_path):
    from jaxwb.sims.core.paths import prune_compilation_cache

    for i in range(8):  # 8 entries of 100 bytes, entry 0 the oldest
        f = tmp_path / f"k{i}-cache"
        f.write_bytes(b"x" * 100)
        os.utime(f, (1_000 + i, 1_000 + i))
    assert prune_compilation_cache(tmp_path, max_bytes=800) == 0  # at the cap: nothing deleted
    assert prune_compilation_cache(tmp_path, max_bytes=400) == 5  # over it: down to 3/4 of the cap, oldest first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k5-cache", "k6-cache", "k7-cache"]
    with pytest.raises(ValueError, match="max_bytes must be > 0"):
        prune_compilation_cache(tmp_path, max_bytes=0)
    # JAX's own size cap stays off: it rescans the whole folder on every write (quadratic in a cold suite)
    assert jax.config.jax_compilation_cache_max_size <= 0


def test_profile_splits_each_phase_and_counts_programs(tmp_path):
    from jaxwb.sims.core.profiling import format_profile

    mod = _fake_module()
    out = harness.execute(mod, out_dir=tmp_path / "out", cfg=mod.Config(7.25), profile=True, verbose=False)
    prof = out.profile
    assert list(prof.phases) == ["run", "claims", "plot", "write"]
    run = prof.phases["run"]
    assert run.compiled + run.cache_hits >= 1 and run.wall_s >= run.trace_s + run.lower_s + run.compile_s - 1e-6
    total = prof.total()
    assert total.compiled == sum(p.compiled for p in prof.phases.values())
    table = format_profile("fake", prof)
    assert "compile s" in table and table.count("\n") == 6


def test_an_ordering_is_decided_on_the_paired_differences_and_reports_its_margin():
    c = Claim.ordering("a > b", [3.0, 3.1, 2.9, 3.0, 3.05], [1.0, 1.1, 0.9, 1.0, 1.0])
    assert c.passed and c.is_ordering and c.slack is None and not c.loose and c.margin > 10
    assert "margin" in format_claims("x", [c])
    assert Claim.from_json(c.to_json()) == c
    tied = Claim.ordering("b > a", [1.0, 1.1, 0.9, 1.0, 1.2], [1.0, 1.0, 1.0, 1.0, 1.0])
    assert not tied.passed and tied.margin < 1
    with pytest.raises(ValueError, match="paired"):
        Claim.ordering("x", [1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="ordering"):
        Claim("x", 0.0, 1.0, 0.0, "ge", kind="bound", is_ordering=True)


def test_a_zero_width_interval_decides_nothing():
    """Identical samples equal to the prediction (0 = 0 when both sides of a check are broken alike) fail."""
    assert not Claim.from_samples("E[x] = 0", 0.0, [0.0] * 6, 0.1, "ci", kind="check").passed
    assert Claim.from_samples("E[x] = 0", 0.0, [0.01, -0.01, 0.02, -0.02, 0.0, 0.0], 0.1, "ci", kind="check").passed


def test_rejudge_decides_the_claims_again_on_the_committed_data(tmp_path):
    """``outputs.rejudge_outputs`` (``workbench claims --rejudge``): a claims-only change is decided on the stored
    data; the data, figures and the manifest's record of the run are kept, a changed claim is rewritten; a folder
    whose files do not match their manifest is refused."""
    import json

    from jaxwb.sims.core.errors import OutputError
    from jaxwb.sims.core.outputs import load_claims, rejudge_outputs

    out = tmp_path / "atomic_fake"
    mod = _fake_module()
    harness.execute(mod, out_dir=out, cfg=mod.Config(1.0), verbose=False)
    before = _snapshot(out)
    rejudge_outputs(mod, out)
    after = _snapshot(out)
    assert {k: v for k, v in after.items() if k != "manifest.json"} == {
        k: v for k, v in before.items() if k != "manifest.json"
    }
    old, new = json.loads(before["manifest.json"]), json.loads(after["manifest.json"])
    assert {k for k in old.keys() | new.keys() if old.get(k) != new.get(k)} == {"claims_git_revision"}

    mod.claims = lambda r, cfg: [Claim("x = 2 value", 2 * cfg.value, float(r["x"][0]), 1e-9, kind="check")]
    rejudge_outputs(mod, out)
    claims = load_claims(out.name, tmp_path)
    assert [c.statement for c in claims] == ["x = 2 value"] and not claims[0].passed
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["claims_passed"] == 0 and manifest["wall_time_s"] == old["wall_time_s"]
    assert verify_outputs(out) == []

    (out / "a_first.png").write_bytes(b"edited")
    with pytest.raises(OutputError, match="a_first.png"):
        rejudge_outputs(mod, out)


def test_run_result_orders_every_dict_as_data_npz_keeps_it():
    """A run's claims and the claims re-judged on its written data see the same arrays in the same order."""
    import types

    from jaxwb.sims.core.outputs import flatten_results, run_result, unflatten_results

    mod = types.SimpleNamespace(
        NAME="fake", run=lambda cfg, *, key: {"nvfp4": {"z": jnp.ones(2), "b": 1.0}, "mxfp4": jnp.zeros(1)}
    )
    r = run_result(mod, None, key=jax.random.key(0))
    again = unflatten_results(flatten_results(r))
    assert list(r) == list(again) == ["mxfp4", "nvfp4"]
    assert list(r["nvfp4"]) == list(again["nvfp4"]) == ["b", "z"]
    assert all(type(x) is np.ndarray for x in (r["mxfp4"], r["nvfp4"]["z"], r["nvfp4"]["b"]))
