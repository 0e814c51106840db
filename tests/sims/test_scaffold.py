"""``workbench new NAME`` (``jaxwb.sims.core.scaffold``): the generated result, written into a temporary tree and
loaded from there (``registry.loaded_result``), follows the contract, passes its claim on the quick preset, its
mutant is caught, and ruff accepts its files; bad names and existing files are refused. The repository's
``sims/`` is never touched."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys

import pytest

from jaxwb.sims.core import audit, cli, contract, coverage, harness, paths, registry, scaffold
from jaxwb.sims.core.errors import WorkbenchError

NAME = "scaffold_demo"
LONGEST = "z" * scaffold.MAX_NAME_LENGTH
EXPECTED = [
    *(f"sims/{NAME}/{part}.py" for part in ("__init__", "config", "run", "claims", "figures", "mutants")),
    f"sims/{NAME}/presets.toml",
    f"tests/sims/test_{NAME}.py",
    f"notebooks/{NAME}.py",
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A root with the project's pyproject.toml (ruff's settings) and the results ``NAME``, ``abc`` (its modules
    sort before ``jaxwb.sims.core``) and the longest name allowed."""
    root = tmp_path_factory.mktemp("scaffold")
    shutil.copy(paths.REPO_ROOT / "pyproject.toml", root)
    written = {n: scaffold.write_result(n, root) for n in (NAME, "abc", LONGEST)}
    return root, written


def test_writes_the_template_files_outside_the_repository(tree):
    root, written = tree
    assert [str(p.relative_to(root)) for p in written[NAME]] == EXPECTED
    assert all(p.stat().st_size > 0 for p in written[NAME])
    for part in contract.TEMPLATE:
        assert (root / "sims" / NAME / f"{part}.py").is_file()
    assert not (paths.REPO_ROOT / "sims" / NAME).exists() and NAME not in registry.result_names()
    for path in (p for p in written[NAME] if p.suffix == ".py"):  # no private name imported (test_template.py)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert not [a.name for a in node.names if a.name.startswith("_")], path


def test_generated_result_passes_its_claim_and_catches_its_mutant(tree, tmp_path):
    root, _ = tree
    with registry.loaded_result(NAME, root) as sim:
        assert contract.contract_problems(sim) == [] and sim.NAME == NAME
        assert sim.__file__ == str(root / "sims" / NAME / "__init__.py")
        outcome = harness.execute(sim, preset="quick", out_dir=tmp_path / "out", verbose=False)
        assert coverage.unclaimed(sim, outcome.results, sim.PRESETS["quick"]) == []  # DISPLAY_ONLY is complete
        summary = audit.audit_result(sim, verbose=False)
    assert outcome.claims and all(c.passed for c in outcome.claims), [c.statement for c in outcome.claims]
    assert {c.kind for c in outcome.claims} == {"check"} and outcome.claims[0].n_seeds >= 5
    assert (tmp_path / "out" / "sample_means.png").stat().st_size > 0
    assert summary["clean_passed"] == summary["clean_total"] == 1 and "refused" not in summary
    assert [(m["mutant"], m["caught"], m["error"]) for m in summary["mutants"]] == [("mean_over_n_minus_1", True, None)]
    # nothing of it is left behind in this process or in the repository
    assert not [m for m in sys.modules if NAME in m] and not hasattr(sys.modules["jaxwb.sims"], NAME)
    assert NAME not in registry.result_names()


def test_loaded_result_refuses_a_name_of_the_repository(tree):
    root, _ = tree
    with pytest.raises(WorkbenchError, match="river_valley"), registry.loaded_result("river_valley", root):
        pass
    with pytest.raises(WorkbenchError, match="no result package"), registry.loaded_result("absent_demo", root):
        pass


def test_ruff_accepts_the_generated_files(tree):
    root, written = tree
    files = [str(p) for paths_ in written.values() for p in paths_]
    for args in (["check"], ["format", "--check"]):
        proc = subprocess.run(
            [sys.executable, "-m", "ruff", *args, *files], cwd=root, capture_output=True, text=True, check=False
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_generated_notebook_round_trips_through_jupytext(tree):
    """What tests/notebooks checks of every notebook: JupyterLab's save gives back the same .py."""
    jupytext = pytest.importorskip("jupytext")
    from jupytext.config import find_jupytext_configuration_file, load_jupytext_configuration_file

    root, _ = tree
    path = root / "notebooks" / f"{NAME}.py"
    config = load_jupytext_configuration_file(find_jupytext_configuration_file(str(paths.REPO_ROOT / "notebooks")))
    text = path.read_text()
    assert jupytext.writes(jupytext.read(path), fmt="py:percent", config=config) == text
    assert "notebook.open_result(sim)" in text and "nb.controls()" in text and "nb.show_claims()" in text
    assert 'if "google.colab" in sys.modules' in text.split("# %%")[2]


@pytest.mark.parametrize("path", sorted((paths.REPO_ROOT / "notebooks").glob("*.py")), ids=lambda p: p.stem)
def test_committed_notebooks_open_as_the_generated_one(path):
    """Every notebook opens with ``notebook.notebook_opening``, the opening ``workbench new`` writes: the jupytext
    header, its title cell and the Colab cell, verbatim (they spell it out: the Colab cell runs before ``jaxwb``
    can be imported)."""
    from jaxwb.sims.core.notebook import JUPYTEXT_HEADER, notebook_opening

    text = path.read_text()
    assert text.startswith(JUPYTEXT_HEADER + "\n# %% [markdown]\n"), "the jupytext header, then the title cell"
    intro = text[len(JUPYTEXT_HEADER) + len("\n# %% [markdown]\n") :].split("\n\n# %%", 1)[0]
    assert text.startswith(notebook_opening(intro)), "the Colab cell follows the title cell, verbatim"


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", "identifier"),
        ("Demo", "identifier"),
        ("2demo", "identifier"),
        ("my-demo", "identifier"),
        ("_demo", "identifier"),
        ("class", "identifier"),
        ("z" * (scaffold.MAX_NAME_LENGTH + 1), "longer"),
        ("core", "reserved"),
        ("bench", "reserved"),
        ("river_valley", "taken"),
    ],
)
def test_bad_names_are_refused(name, why, tmp_path):
    with pytest.raises(ValueError, match=f"{name!r}.*{why}"):
        scaffold.write_result(name, tmp_path)
    assert not any(tmp_path.iterdir())


def test_existing_files_are_never_overwritten(tmp_path):
    mine = tmp_path / "tests" / "sims" / "test_fresh_demo.py"
    mine.parent.mkdir(parents=True)
    mine.write_text("# mine\n")
    with pytest.raises(FileExistsError, match="tests/sims/test_fresh_demo.py"):
        scaffold.write_result("fresh_demo", tmp_path)
    assert mine.read_text() == "# mine\n" and not (tmp_path / "sims").exists()
    mine.unlink()
    scaffold.write_result("fresh_demo", tmp_path)
    with pytest.raises(ValueError, match="'fresh_demo'.*taken"):  # its package is there now
        scaffold.write_result("fresh_demo", tmp_path)


def test_cli_new_writes_into_the_repository_root_and_prints_the_next_steps(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(paths, "REPO_ROOT", tmp_path)
    assert cli.main(["new", "cli_demo"]) == 0
    out = capsys.readouterr().out
    for rel in ("sims/cli_demo/run.py", "tests/sims/test_cli_demo.py", "notebooks/cli_demo.py"):
        assert rel in out and (tmp_path / rel).is_file()
    assert "workbench run cli_demo --quick" in out and "workbench audit cli_demo" in out
    assert "tests/sims/test_cli_demo.py" in out.split("next steps")[1]
    for argv in (["new", "Bad-Name"], ["new", "cli_demo"], ["new", "core"], ["new"]):
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("workbench: error: ") and err.count("\n") == 1, err
