"""The notebooks: each executes headless (``WORKBENCH_QUICK=1``), goes through ``sims.core.notebook`` (loads the
committed data, plots through ``sim.plot``/``sim.claims``), and survives a JupyterLab save without a diff."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path: Path, monkeypatch):
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("WORKBENCH_QUICK", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    nb = jupytext.read(path)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT / "notebooks")}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors


def test_every_result_has_a_notebook():
    from sims.core import registry

    missing = [n for n in registry.result_names() if not (ROOT / "notebooks" / f"{n}.py").exists()]
    assert not missing, f"results without notebooks/<name>.py: {missing}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_uses_the_shared_helper(path: Path):
    """One execution recipe: open the committed run, plot/claims through the result, recompute controls."""
    text = path.read_text()
    assert "notebook.open_result(sim)" in text
    assert "nb.controls()" in text and "nb.show_claims()" in text
    assert not re.search(r"harness\.execute|\bexecute\(|np\.load\(|data\.npz\"\]", text), "bypasses sims.core.notebook"
    assert "widgets.interact(" not in text and "interact(" not in text.replace("notebook.interact(", "")
    assert 'if "google.colab" in sys.modules' in text.split("# %%")[2], "the first code cell installs on Colab"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_saving_from_jupyterlab_leaves_the_file_unchanged(path: Path):
    """What JupyterLab's Jupytext contents manager does on save (repository jupytext.toml, outputs, widget state,
    cell metadata added by the front end): the .py must come back byte-identical."""
    jupytext = pytest.importorskip("jupytext")
    from jupytext.config import find_jupytext_configuration_file, load_jupytext_configuration_file

    config = load_jupytext_configuration_file(find_jupytext_configuration_file(str(path.parent)))
    nb = jupytext.read(path)
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    nb.metadata["language_info"] = {"name": "python", "version": "3.12.0"}
    for cell in nb.cells:
        cell.metadata.update({"tags": [], "scrolled": True, "execution": {"iopub.status.idle": "2026-01-01"}})
        if cell.cell_type == "code":
            cell.outputs = [{"output_type": "stream", "name": "stdout", "text": "x\n"}]
    saved = jupytext.writes(nb, fmt="py:percent", config=config)
    assert saved == path.read_text()


def test_jupyterlab_opens_py_files_as_notebooks():
    import json

    from sims.core import notebook

    settings = Path(notebook.lab_env()["JUPYTERLAB_SETTINGS_DIR"])
    text = (settings / "@jupyterlab" / "docmanager-extension" / "plugin.jupyterlab-settings").read_text()
    body = json.loads("\n".join(line for line in text.splitlines() if not line.strip().startswith("//")))
    assert body["defaultViewers"]["python"] == "Jupytext Notebook"
