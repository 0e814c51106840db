"""The presets as data: every result's ``presets.toml`` read by ``load_presets``, and its bad files refused."""

from __future__ import annotations

import dataclasses

import pytest

from jaxwb.sims.core import registry
from jaxwb.sims.core.paths import REPO_ROOT
from jaxwb.sims.core.presets import PRESET_NAMES, load_presets, tuples


@dataclasses.dataclass(frozen=True)
class Toy:
    n: int = 3
    widths: tuple = (1, 2)
    pairs: tuple = ((1, "a"),)

    def __post_init__(self):
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")


def test_arrays_become_tuples_at_every_depth(tmp_path):
    path = tmp_path / "presets.toml"
    path.write_text('[full]\n\n[quick]\nn = 2\nwidths = [4]\npairs = [[2, "b"], [3, "c"]]\n')
    presets = load_presets(Toy, path)
    assert list(presets) == ["full", "quick"]
    assert presets["full"] == Toy()
    assert presets["quick"] == Toy(n=2, widths=(4,), pairs=((2, "b"), (3, "c")))
    assert tuples([[1, [2]], "x"]) == ((1, (2,)), "x")


# (file text, what the ValueError says)
BAD_FILES = [
    ("[full]\n[quick]\nn = \n", "not valid TOML"),
    ("[full]\n", "no [quick] table"),
    ("[quick]\n", "no [full] table"),
    ("full = 1\n[quick]\n", "no [full] table"),
    ("[full]\n[quick]\nm = 2\n", "sets ['m'], not fields of Toy"),
    ("[full]\n[quick]\n[other]\nwidth = 1\n", "[other] sets ['width']"),
    ("scale = 2\n[full]\n[quick]\n", "sets ['scale']"),
]


@pytest.mark.parametrize(("text", "message"), BAD_FILES)
def test_a_bad_presets_file_is_refused_naming_it(tmp_path, text, message):
    path = tmp_path / "presets.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match="path: ") as info:
        load_presets(Toy, path)
    assert message in str(info.value) and str(path) in str(info.value)


def test_a_bad_value_is_refused_by_the_configs_own_validation(tmp_path):
    path = tmp_path / "presets.toml"
    path.write_text("[full]\n[quick]\nn = 0\n")
    with pytest.raises(ValueError, match="n must be >= 1"):
        load_presets(Toy, path)


@pytest.mark.parametrize("name", registry.result_names())
def test_every_result_reads_its_presets_from_its_toml(name):
    module = registry.get(name)
    path = REPO_ROOT / "sims" / name / "presets.toml"
    assert path.is_file()
    assert set(PRESET_NAMES) <= set(module.PRESETS)
    assert module.PRESETS == load_presets(module.Config, path)


def test_a_missing_presets_file_is_refused_naming_it(tmp_path):
    with pytest.raises(ValueError, match="path: .* is not a file"):
        load_presets(Toy, tmp_path / "presets.toml")
    with pytest.raises(ValueError, match="presets.toml is not a file"):  # beside this module: there is none
        load_presets(Toy)
