"""The notebooks: each executes headless (``WORKBENCH_QUICK=1``), goes through ``jaxwb.sims.core.notebook`` (loads the
committed data, plots through ``sim.plot``/``sim.claims``), and survives a JupyterLab save without a diff."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from jaxwb.sims.core.claims import Claim
from jaxwb.sims.core.paths import FIGURES_DIR, REPO_ROOT

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path: Path, monkeypatch):
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("WORKBENCH_QUICK", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # the kernel inherits the suite's fast-compile XLA_FLAGS (tests/conftest.py): a headless notebook is compile-bound
    nb = jupytext.read(path)
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "notebooks")}}
    )
    client.execute()
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"
    ]
    assert not errors, errors


def test_every_result_has_a_notebook():
    from jaxwb.sims.core import registry

    missing = [n for n in registry.result_names() if not (ROOT / "notebooks" / f"{n}.py").exists()]
    assert not missing, f"results without notebooks/<name>.py: {missing}"


def test_results_and_notebooks_correspond_one_to_one():
    """The contract check reads the registry (one source of truth): the machinery packages sims/core and
    sims/bench are not results, so they need no notebook, and every notebook belongs to a result."""
    from jaxwb.sims.core import registry

    names = set(registry.result_names())
    assert not names & registry.INFRASTRUCTURE and {"core", "bench"} <= registry.INFRASTRUCTURE
    assert (ROOT / "sims" / "core" / "__init__.py").is_file() and (ROOT / "sims" / "bench" / "__init__.py").is_file()
    assert {p.stem for p in NOTEBOOKS} == names


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
    # JupyterLab writes the kernelspec of the kernel it ran (ipykernel's python3: "Python 3 (ipykernel)")
    spec = _installed_python3_kernelspec()
    nb.metadata["kernelspec"] = {"display_name": spec.display_name, "language": spec.language, "name": "python3"}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    nb.metadata["language_info"] = {"name": "python", "version": "3.12.0"}
    for cell in nb.cells:
        cell.metadata.update({"tags": [], "scrolled": True, "execution": {"iopub.status.idle": "2026-01-01"}})
        if cell.cell_type == "code":
            cell.outputs = [{"output_type": "stream", "name": "stdout", "text": "x\n"}]
    saved = jupytext.writes(nb, fmt="py:percent", config=config)
    assert saved == path.read_text()


def _installed_python3_kernelspec():
    kernelspec = pytest.importorskip("jupyter_client.kernelspec")
    try:
        return kernelspec.get_kernel_spec("python3")
    except kernelspec.NoSuchKernel:
        pytest.skip("no python3 kernel installed")


def _shipped_overrides() -> dict:
    import json

    from jaxwb.sims.core import notebook

    return json.loads((notebook.LAB_CONFIG_DIR / "labconfig" / "default_setting_overrides.json").read_text())


def test_jupyterlab_opens_py_files_as_notebooks_without_the_news_popup():
    overrides = _shipped_overrides()
    assert overrides["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]["python"] == "Jupytext Notebook"
    # JupyterLab 4 asks "fetch official Jupyter news?" on first start unless fetchNews is "true" or "false"
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
    # the factory name must be the one the installed jupytext JupyterLab extension registers
    import sysconfig

    ext = Path(sysconfig.get_path("data")) / "share" / "jupyter" / "labextensions" / "jupyterlab-jupytext"
    if ext.is_dir():
        assert any('"Jupytext Notebook"' in f.read_text(errors="replace") for f in ext.glob("static/*.js"))


def test_shipped_defaults_layer_under_the_users_settings(tmp_path):
    """The repository's settings are *defaults* (jupyterlab_server's ``labconfig/default_setting_overrides.json``
    on ``JUPYTER_CONFIG_PATH``): the user's settings folder is not redirected, an existing JUPYTER_CONFIG_PATH
    and PYTHONPATH are kept behind ours, and jupyterlab_server (when installed) reads the overrides."""
    from jaxwb.sims.core import notebook

    env = notebook.lab_env(
        {"JUPYTER_CONFIG_PATH": f"/etc/mine{os.pathsep}{notebook.LAB_CONFIG_DIR}", "PYTHONPATH": "/x"}
    )
    assert "JUPYTERLAB_SETTINGS_DIR" not in env and "JUPYTER_CONFIG_DIR" not in env
    assert env["JUPYTER_CONFIG_PATH"].split(os.pathsep) == [str(notebook.LAB_CONFIG_DIR), "/etc/mine"]
    assert env["PYTHONPATH"].split(os.pathsep) == [str(REPO_ROOT), "/x"]
    assert notebook.lab_env({})["JUPYTER_CONFIG_PATH"] == str(notebook.LAB_CONFIG_DIR)
    settings_utils = pytest.importorskip("jupyterlab_server.settings_utils")
    with pytest.MonkeyPatch.context() as mp:
        for k, v in notebook.lab_env().items():
            mp.setenv(k, v)
        mp.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "user-config"))  # a user without any config of their own
        overrides, error = settings_utils._get_overrides(str(tmp_path / "no-app-settings"))
    assert not error and overrides == _shipped_overrides()


def test_workbench_notebook_roots_jupyterlab_at_the_repository():
    """Rooted at notebooks/, JupyterLab's Jupytext would not find jupytext.toml (it looks no higher than the root)
    and the file browser would not reach figures/ or docs/: the command roots it at the repository and opens at
    the target; arguments after `--` reach `jupyter lab`."""
    from jaxwb.sims.core import notebook

    cmd = notebook.lab_command("notebooks/river_valley.py", "--no-browser", as_root=False)
    assert cmd[:2] == ["jupyter", "lab"] and f"--ServerApp.root_dir={REPO_ROOT}" in cmd
    assert "--LabApp.default_url=/lab/tree/notebooks/river_valley.py" in cmd and cmd[-1] == "--no-browser"
    assert "--allow-root" not in cmd
    assert (REPO_ROOT / "jupytext.toml").is_file()
    seen = _run_notebook_command(["notebook", "river_valley", "--", "--port", "8899", "--no-browser"], root=False)
    assert seen["file"] == "jupyter" and seen["args"][-3:] == ["--port", "8899", "--no-browser"]
    assert seen["env"]["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0] == str(notebook.LAB_CONFIG_DIR)
    assert "--allow-root" not in seen["args"] and "--allow-root" not in seen["stdout"]
    from jaxwb.sims.core import cli

    assert cli.main(["notebook", "--no-browser"]) == 2  # without `--`: a one-line usage error


def test_workbench_notebook_as_root_adds_allow_root_once():
    """Jupyter refuses to run as root without --allow-root: the command adds it and says so in one line; a user
    who passed it already gets it once and no note."""
    from jaxwb.sims.core import notebook

    assert notebook.lab_command("notebooks", as_root=True).count("--allow-root") == 1
    assert notebook.lab_command("notebooks", "--allow-root", as_root=True).count("--allow-root") == 1
    seen = _run_notebook_command(["notebook"], root=True)
    assert seen["args"].count("--allow-root") == 1 and seen["args"][-1] == "--allow-root"
    note = [line for line in seen["stdout"].splitlines() if "root" in line and not line.startswith("jupyter")]
    assert len(note) == 1 and "--allow-root" in note[0]
    seen = _run_notebook_command(["notebook", "--", "--allow-root", "--no-browser"], root=True)
    assert seen["args"].count("--allow-root") == 1 and seen["args"][-2:] == ["--allow-root", "--no-browser"]
    assert "added --allow-root" not in seen["stdout"]


def _run_notebook_command(argv: list[str], *, root: bool) -> dict:
    """``cli.main(argv)`` with ``os.execvpe`` and ``os.geteuid`` faked: what would be executed, and what was printed."""
    import contextlib
    import io

    from jaxwb.sims.core import cli

    seen: dict = {}

    def fake_exec(file, args, env):
        seen.update(file=file, args=args, env=env)
        raise SystemExit(0)

    orig, out = os.getcwd(), io.StringIO()
    try:
        with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
            mp.setattr(os, "execvpe", fake_exec)
            mp.setattr(os, "geteuid", lambda: 0 if root else 1000)
            with pytest.raises(SystemExit):
                cli.main(argv)
    finally:
        os.chdir(orig)
    seen["stdout"] = out.getvalue()
    return seen


def test_widgets_are_displayed_once(monkeypatch):
    """A cell ending in `notebook.interact(...)` or `nb.controls()` must not return the widget: the cell would
    display it a second time (seen in JupyterLab)."""
    pytest.importorskip("ipywidgets")
    from jaxwb.sims import river_valley
    from jaxwb.sims.core import notebook

    shown = []
    monkeypatch.setattr(notebook, "_display", shown.append)
    monkeypatch.setattr(notebook, "_in_kernel", lambda: True)
    monkeypatch.delenv("WORKBENCH_QUICK", raising=False)
    assert notebook.interact(lambda a=1.0: None, a=(0.0, 2.0, 0.5)) is None
    assert notebook.interact(lambda a=1.0: None, live=False, a=(0.0, 2.0, 0.5)) is None
    assert len(shown) == 2
    nb = notebook.open_result(river_valley)
    assert nb.controls() is None and len(shown) == 3 and shown[-1] is nb.controls_box


def test_claims_table_keeps_every_row_aligned():
    """The claims render as an HTML table: the statement wraps in its own column, numbers never wrap."""
    from jaxwb.sims.core import notebook

    claims = [
        Claim("a long statement " * 12, 1.0, 1.01, 0.1, kind="check"),
        Claim("b", 2.0, 1.0, 0, "le", kind="bound"),
    ]
    text = notebook.claims_html("demo", claims)
    assert text.count("<tr>") == 3 and "white-space: normal" in text and "white-space: pre" in text
    summary = f"{sum(c.passed for c in claims)}/2 claims pass"
    assert ("a long statement " * 12).strip() in text and summary in text


def test_opening_shows_the_committed_pngs_only_while_they_belong_to_the_data(tmp_path, monkeypatch):
    """Opening displays the committed figures (hashed in the manifest beside the data) instead of drawing them
    again; a figure that does not match the manifest, a recomputation, ``redraw=True`` or a headless run draw
    through ``sim.plot``."""
    import shutil

    pytest.importorskip("IPython")
    from jaxwb.sims import river_valley
    from jaxwb.sims.core import notebook

    folder = tmp_path / "river_valley"
    shutil.copytree(FIGURES_DIR / "river_valley", folder)
    shown = []
    monkeypatch.setattr(notebook, "_display", shown.append)
    monkeypatch.delenv("WORKBENCH_QUICK", raising=False)
    nb = notebook.open_result(river_valley, folder)
    pngs = nb.committed_pngs()
    assert pngs is not None and sorted(f"{k}.png" for k in pngs) == sorted(nb.manifest["figures"])
    nb.show()
    assert len(shown) == len(pngs) and all(type(x).__name__ == "Image" for x in shown)
    assert shown[0].data == pngs[next(iter(pngs))].read_bytes() and nb._figures is None  # nothing drawn
    first = next(iter(pngs))
    shown.clear()
    nb.show(first, redraw=True)
    assert len(shown) == 1 and type(shown[0]).__name__ == "Figure"
    monkeypatch.setenv("WORKBENCH_QUICK", "1")
    assert nb.committed_pngs() is None
    monkeypatch.delenv("WORKBENCH_QUICK")
    nb._recomputed = True  # what recompute() sets: the committed PNGs no longer show this data
    assert nb.committed_pngs() is None
    with open(folder / f"{first}.png", "ab") as f:
        f.write(b"\0")
    assert notebook.open_result(river_valley, folder).committed_pngs() is None
