"""The wheel installs one import namespace, ``jaxwb``, and claims no generic top-level name.

Builds the wheel from a copy of the sources (no build isolation: offline), installs it without dependencies into
a fresh virtual environment that sees this environment's dependencies, and from a folder holding its own
``theory/`` and ``models/`` packages, first on ``sys.path``: imports the kernels' layers by their documented paths,
the user's own packages beside them, and runs the CLI."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
import textwrap
import zipfile

import pytest

from jaxwb.sims.core.paths import REPO_ROOT

SOURCES = ("setup.py", "pyproject.toml", "README.md", "LICENSE", "theory", "models", "pallas_kernels", "sims")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    pytest.importorskip("setuptools")
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        (shutil.copytree if (REPO_ROOT / name).is_dir() else shutil.copy)(
            REPO_ROOT / name,
            src / name,
            **({"ignore": shutil.ignore_patterns("__pycache__")} if (REPO_ROOT / name).is_dir() else {}),
        )
    dist = tmp / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(src)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (wheel,) = dist.glob("*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    purelib = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # this environment's dependencies (jax, equinox, ...), without its editable install of the workbench: a .pth
    # line adds the folder to sys.path but does not run the .pth files inside it
    ours = sysconfig.get_paths()["purelib"]
    with open(os.path.join(purelib, "zz_deps.pth"), "w") as f:
        f.write("\n".join(dict.fromkeys([ours, *site.getsitepackages()])) + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return wheel, venv


def test_wheel_holds_one_top_level_package(installed):
    wheel, _ = installed
    tops = {n.split("/")[0] for n in zipfile.ZipFile(wheel).namelist() if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"jaxwb"}, tops
    # package data the runs need: the shipped quick-preset denoiser of sparse_attention, the shipped trained models
    # with their record, every result's presets
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "jaxwb/sims/sparse_attention/data/quick_denoiser.eqx" in names
    shipped = {f"jaxwb/{p.relative_to(REPO_ROOT).as_posix()}" for p in REPO_ROOT.glob("sims/core/shipped_models/*")}
    assert len(shipped) > 1 and shipped <= names, sorted(shipped - names)
    presets = {f"jaxwb/{p.relative_to(REPO_ROOT).as_posix()}" for p in REPO_ROOT.glob("sims/*/presets.toml")}
    assert presets and presets <= names, sorted(presets - names)


def test_installed_workbench_beside_the_users_own_theory_and_models(installed, tmp_path):
    _, venv = installed
    user = tmp_path / "project"
    for pkg in ("theory", "models"):
        (user / pkg).mkdir(parents=True)
        (user / pkg / "__init__.py").write_text(f"WHOSE = 'the user'\nNAME = {pkg!r}\n")
    script = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, ".")
        import models, theory
        from jaxwb.pallas_kernels.quant import QuantizedLinear, quantize_model
        from jaxwb.pallas_kernels.attention import make_attention_fn, swap_attention
        from jaxwb.theory import river_valley as rv
        import jaxwb.sims.core.cli
        assert theory.WHOSE == models.WHOSE == "the user", (theory.__file__, models.__file__)
        assert rv.__file__.startswith(sys.prefix), (rv.__file__, sys.prefix)  # the wheel, not the checkout
        assert QuantizedLinear.__module__.startswith("jaxwb.pallas_kernels.quant")
        assert float(rv.gd_threshold(4.0)) == 0.5
        print("ok")
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(user)
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.run(
        [venv / "bin" / "python", "-c", script], cwd=user, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stdout + proc.stderr
    cli = venv / "bin" / "workbench"
    proc = subprocess.run([cli, "list"], cwd=user, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "river_valley" in proc.stdout, proc.stdout + proc.stderr
    proc = subprocess.run(
        [cli, "run", "river_valley", "--quick", "--out", str(tmp_path / "out")],
        cwd=user,
        env={**env, "WORKBENCH_JAX_CACHE": "0"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (tmp_path / "out" / "manifest.json").is_file()
    assert sorted(os.listdir(user)) == ["models", "theory"], "the run wrote into the user's folder"
