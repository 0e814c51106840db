"""``--device``: the run happens on the device asked for (default: the best JAX sees), an unavailable one is a
one-line error before anything runs, and the manifest records the device and the run's CPU time."""

from __future__ import annotations

import json

import jax
import pytest

from jaxwb.sims.core import cli, devices, harness
from jaxwb.sims.core.errors import WorkbenchError
from tests.sims.fake_result import fake_module


def test_default_is_jax_default_backend_and_cli_choices_match():
    assert devices.select_device(None).platform == jax.default_backend()
    assert devices.select_device("cpu").platform == "cpu"
    assert cli.DEVICES == devices.PLATFORMS


@pytest.mark.parametrize("name", ["gpu", "tpu", "cuda"])
def test_an_unavailable_or_unknown_device_names_the_parameter(name):
    if name in {d.platform for d in jax.devices()}:
        pytest.skip(f"this machine has a {name}")
    with pytest.raises(WorkbenchError, match="device"):
        devices.select_device(name)


def test_the_manifest_records_the_device_cpu_time_and_profile(tmp_path):
    outcome = harness.execute(fake_module(), preset="quick", out_dir=tmp_path / "o", verbose=False, profile=True)
    manifest = json.loads((outcome.out_dir / "manifest.json").read_text())
    assert manifest["device"]["platform"] == manifest["backend"] == jax.default_backend()
    assert manifest["cpu_time_s"] >= 0
    assert manifest["profile_run"]["compiled"] >= 1


def test_cli_refuses_a_missing_gpu_before_running(tmp_path, capsys):
    if "gpu" in {d.platform for d in jax.devices()}:
        pytest.skip("this machine has a GPU")
    assert cli.main(["run", "river_valley", "--quick", "--device", "gpu", "--out", str(tmp_path / "x")]) == 2
    assert "JAX sees no GPU" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_run_times_table_has_a_row_per_manifest_and_a_total():
    from jaxwb.sims.core.profiling import run_times_table

    rows = [
        {"result": "tv_distance", "wall_time_s": 300.0, "cpu_time_s": 500.0, "backend": "cpu", "git_revision": "abc"},
        {"result": "x", "wall_time_s": 1.0, "profile_run": {"compile_s": 0.5, "compiled": 3}},
    ]
    table = run_times_table(rows).splitlines()
    assert table[2].startswith("| tv_distance | 300 | 2204 | 500 |")
    assert table[3].startswith("| x | 1 | - | - | 0 | 3 | - |")
    assert table[-1].startswith("| **total** | **301** |")
