"""The whole package type-checks clean with mypy (config: ``[tool.mypy]`` in pyproject.toml).

The folders are mapped under the ``jaxwb`` namespace by setup.py, which a type checker cannot follow through the
editable install's import hook; the test assembles the namespace from symlinks in a temporary folder and checks
``jaxwb.theory``, ``jaxwb.pallas_kernels``, ``jaxwb.models`` and ``jaxwb.sims`` there, with mypy's cache in the
repository's git-ignored cache."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from jaxwb.sims.core.paths import REPO_ROOT, cache_dir

CHECKED = ("theory", "pallas_kernels", "models", "sims")


def test_package_type_checks(tmp_path):
    if shutil.which("mypy", path=str(REPO_ROOT / ".venv" / "bin")) is None and shutil.which("mypy") is None:
        pytest.skip("mypy not installed (pip install -e '.[dev]')")
    ns = tmp_path / "jaxwb"
    ns.mkdir()
    for folder in ("theory", "models", "pallas_kernels", "sims"):
        (ns / folder).symlink_to(REPO_ROOT / folder)
    cmd = [
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        str(REPO_ROOT / "pyproject.toml"),
        "--cache-dir",
        str(cache_dir() / "mypy"),
        "--no-error-summary",
        "--hide-error-context",
        *[a for pkg in CHECKED for a in ("-p", f"jaxwb.{pkg}")],
    ]
    proc = subprocess.run(
        cmd,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={"MYPYPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
