"""The shipped trained models (jaxwb.sims.core.weights): complete, intact, copied into an empty model cache only,
and reproduced bit for bit by training them again."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys

import pytest

from jaxwb.models import train as tr
from jaxwb.sims.core import weights as w
from jaxwb.sims.core.paths import sha256_file


@pytest.mark.parametrize("result", w.RESULTS)
@pytest.mark.parametrize("preset", w.PRESET_NAMES)
def test_every_model_a_preset_loads_is_shipped_with_its_configuration(result, preset):
    rec = w.read_record()
    for m in w.models(result, preset):
        r = rec[m.path.name]
        assert result in r["results"] and preset in r["presets"]
        assert r["model"] == dataclasses.asdict(m.model) and r["train"] == dataclasses.asdict(m.train)
        assert sha256_file(w.WEIGHTS_DIR / m.path.name) == r["sha256"]


def test_nothing_unrecorded_is_shipped():
    assert {p.name for p in w.WEIGHTS_DIR.glob("*.eqx")} == set(w.read_record())


def test_seed_copies_into_an_empty_cache_once(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path))
    names = {m.path.name for p in w.PRESET_NAMES for m in w.models("zoe_grad", p)}
    assert set(w.seed_model_cache("zoe_grad")) == names
    for m in w.models("zoe_grad", "quick") + w.models("zoe_grad", "full"):
        assert tr.is_cached(m.model, m.train)
        assert m.path.read_bytes() == (w.WEIGHTS_DIR / m.path.name).read_bytes()
    assert w.seed_model_cache("zoe_grad") == []  # present: not copied again
    m = w.models("zoe_grad", "quick")[0]
    m.path.write_bytes(b"trained elsewhere")  # same name, other bytes: replaced by the shipped file
    assert w.seed_model_cache("zoe_grad") == [m.path.name]
    assert m.path.read_bytes() == (w.WEIGHTS_DIR / m.path.name).read_bytes()
    assert w.seed_model_cache("river_valley") == []  # a result that loads no trained model
    assert [p.name for p in tmp_path.rglob("*.tmp")] == []


def _copy_shipped(tmp_path, monkeypatch, edit):
    d = tmp_path / "shipped"
    shutil.copytree(w.WEIGHTS_DIR, d)
    rec = json.loads((d / "weights.json").read_text())
    edit(d, rec)
    (d / "weights.json").write_text(json.dumps(rec))
    monkeypatch.setattr(w, "WEIGHTS_DIR", d)
    monkeypatch.setattr(w, "RECORD", d / "weights.json")
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))


def test_a_damaged_shipped_file_is_a_value_error_not_a_copy(tmp_path, monkeypatch):
    name = w.models("zoe_grad", "quick")[0].path.name

    def damage(d, rec):
        b = bytearray((d / name).read_bytes())
        b[-1] ^= 1
        (d / name).write_bytes(bytes(b))

    _copy_shipped(tmp_path, monkeypatch, damage)
    with pytest.raises(ValueError, match="sha256"):
        w.seed_model_cache("zoe_grad")
    assert not (tr.weights_dir() / name).exists()


def test_weights_of_another_jax_version_are_not_copied(tmp_path, monkeypatch):
    def other_jax(d, rec):
        for r in rec.values():
            r["jax_version"] = "0.0.1"

    _copy_shipped(tmp_path, monkeypatch, other_jax)
    assert w.seed_model_cache("tiny_lm") == []


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: w.seed_model_cache(3), "result"),
        (lambda: w.models("tiny_lm", "medium"), "preset"),
        (lambda: w.retrain("nope.eqx"), "name"),
    ],
)
def test_bad_calls_name_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.slow  # trains two small tiny LMs (~15 s)
def test_retraining_reproduces_the_shipped_weights_bit_for_bit(run_compile_env):
    """Retrain zoe_grad's pretrained models from scratch, as a run does (without the suite's fast-compile XLA
    flags, which change the trained weights' last bits), and compare the files byte for byte."""
    for p in w.PRESET_NAMES:
        name = w.models("zoe_grad", p)[0].path.name
        r = subprocess.run(
            [sys.executable, "-m", "jaxwb.sims.core.weights", "--retrain", name],
            env=run_compile_env,
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0 and "identical" in r.stdout, r.stdout + r.stderr
