"""Every ``workbench audit`` mode on damaged files, flags that do not apply, and a bad ``JAX_PLATFORMS``.

A damaged ``figures/audit/random/<name>.json`` (truncated, empty, binary, a folder, wrong types) read by
``--check``, ``--random N --missed`` or ``--random N --resume`` is one line ``workbench: error: <file>: ...`` and
exit 1, before any run; a flag that does not apply to the mode asked for is refused with exit 2 (never silently
ignored); an unknown or uninstalled platform in ``JAX_PLATFORMS`` is one line, exit 2.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from jaxwb.sims.core import cli, mutate, paths
from jaxwb.sims.core.paths import FIGURES_DIR, REPO_ROOT

NAME = "river_valley"


@pytest.fixture
def figures(tmp_path, monkeypatch):
    """A copy of the committed random audit under a temporary figures/, and no mutant or clean run allowed."""
    folder = tmp_path / "audit" / "random"
    folder.mkdir(parents=True)
    shutil.copy(FIGURES_DIR / "audit" / "random" / f"{NAME}.json", folder)
    monkeypatch.setattr(paths, "FIGURES_DIR", tmp_path)

    def boom(*args, **kwargs):
        raise AssertionError("a run started although the input was refused")

    monkeypatch.setattr(mutate, "random_audit", boom)
    monkeypatch.setattr(mutate, "stale_mutants", boom)
    return folder / f"{NAME}.json"


def _with(field, value):
    def damage(path):
        summary = json.loads(path.read_text())
        summary[field] = value
        path.write_text(json.dumps(summary))

    return damage


def _first_mutant(field, value):
    def damage(path):
        summary = json.loads(path.read_text())
        summary["mutants"][0][field] = value
        path.write_text(json.dumps(summary))

    return damage


DAMAGE = {
    # case: (damage the json, fragment of the message)
    "truncated": (lambda p: p.write_text(p.read_text()[:80]), "not valid JSON"),
    "empty": (lambda p: p.write_text(""), "not valid JSON"),
    "binary": (lambda p: p.write_bytes(b"\xff\xfe\x00\x81" * 30), "not text"),
    "a folder": (lambda p: (p.unlink(), p.mkdir()), "is a folder"),
    "a JSON list": (lambda p: p.write_text("[1, 2]"), "holds a JSON list, not an audit object"),
    "seed as text": (_with("seed", "zero"), "'seed' must be an integer >= 0, got 'zero'"),
    "seed negative": (_with("seed", -1), "'seed' must be an integer >= 0"),
    "seed a bool": (_with("seed", True), "'seed' must be an integer >= 0"),
    "mutants not a list": (_with("mutants", {"a": 1}), "'mutants' is not a list"),
    "result missing": (_with("result", None), "'result' is not a result name"),
    "caught as text": (_with("caught", "23"), "'caught' must be an integer >= 0"),
    "a verdict unknown": (_first_mutant("verdict", "maybe"), "mutants[0] has verdict 'maybe'"),
    "a mutant name missing": (_first_mutant("mutant", 3), "mutants[0] is not a mutant record"),
    "an index as text": (_first_mutant("index", "4"), "mutants[0] has index '4'"),
}
MODES = {
    "--check": ["audit", "--check", NAME],
    "--missed": ["audit", NAME, "--random", "30", "--missed"],
    "--resume": ["audit", NAME, "--random", "30", "--resume", "--no-write"],
}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_damaged_random_audit_is_one_line_exit_1_in_every_mode(figures, capsys, case, mode):
    damage, fragment = DAMAGE[case]
    damage(figures)
    assert cli.main(MODES[mode]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("workbench: error: "), err
    assert str(figures) in err and fragment in err, err


def test_the_committed_random_audits_load():
    for path in sorted((FIGURES_DIR / "audit" / "random").glob("*.json")):
        assert mutate.random_audit_problem(json.loads(path.read_text())) is None, path


MISUSE = [
    # (argv, fragment of the one-line refusal, exit 2)
    (["audit", "--check", "--random", "3"], "--check and --random are different modes"),
    (["audit", "--collect", "--check"], "--collect and --check are different modes"),
    (["audit", "--collect", "--random", "3"], "--collect and --random are different modes"),
    (["audit", "--collect", "--seed", "5"], "audit --collect: --seed does not apply"),
    (["audit", "--collect", NAME], "audit --collect: result names does not apply"),
    (["audit", "--collect", "--no-write"], "audit --collect: --no-write does not apply"),
    (["audit", "--check", "--seed", "5"], "audit --check: --seed does not apply"),
    (["audit", "--check", "--no-write"], "audit --check: --no-write does not apply"),
    (["audit", "--check", "--missed"], "audit --check: --missed does not apply"),
    (["audit", NAME, "--missed"], "--missed applies to --random N"),
    (["audit", NAME, "--resume"], "--resume applies to --random N"),
    (["audit", NAME, "--seed", "3"], "--seed applies to --random N"),
    (["audit", NAME, "--random", "3", "--missed", "--resume"], "exclude each other"),
    (["audit", NAME, "--random", "0"], "--random"),
    (["audit", NAME, "--random", "3", "--seed", "-1"], "--seed"),
    (["audit", "no_such_result", "--check"], "unknown result 'no_such_result'"),
]


@pytest.mark.parametrize(("argv", "fragment"), MISUSE, ids=[" ".join(a) for a, _ in MISUSE])
def test_a_flag_that_does_not_apply_to_the_mode_is_refused(figures, capsys, argv, fragment):
    before = figures.read_bytes()
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("workbench: error: ") and fragment in err, err
    assert figures.read_bytes() == before


def test_missed_with_nothing_missed_rejudges_nothing(figures, capsys):
    summary = json.loads(figures.read_text())
    for m in summary["mutants"]:
        m["verdict"] = "caught" if m["verdict"] == "missed" else m["verdict"]
    figures.write_text(json.dumps(summary))
    assert cli.main(["audit", NAME, "--random", "30", "--missed"]) == 0
    assert "records no missed mutant; nothing to re-judge" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("value", "argv"),
    [
        ("bogus", ["run", NAME, "--quick", "--out", "{tmp}/o"]),
        ("cpu,bogus", ["audit", "--check", NAME]),
        ("cuda", ["run", NAME, "--quick", "--out", "{tmp}/o"]),
    ],
)
def test_an_invalid_jax_platforms_is_one_line(tmp_path, value, argv):
    env = {**os.environ, "JAX_PLATFORMS": value, "WORKBENCH_JAX_CACHE": "0"}
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code = "import sys; from jaxwb.sims.core import cli; sys.exit(cli.main(sys.argv[1:]))"
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv], env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    err = "\n".join(line for line in proc.stderr.splitlines() if not line.startswith(("WARNING", "E0000", "W0000")))
    assert proc.returncode == 2, proc.stderr
    assert err.count("\n") == 0 and err.startswith(f"workbench: error: JAX_PLATFORMS={value!r}"), proc.stderr
    assert not (tmp_path / "o").exists()
