"""The code base is ruff-clean (config in pyproject.toml)."""

import shutil
import subprocess
import sys

import pytest

from jaxwb.sims.core.paths import REPO_ROOT


def test_ruff_clean():
    ruff = shutil.which("ruff") or shutil.which("ruff", path=str(REPO_ROOT / ".venv" / "bin"))
    cmd = [ruff] if ruff else [sys.executable, "-m", "ruff"]
    proc = subprocess.run(
        [*cmd, "check", "--output-format", "concise", "."], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    if proc.returncode != 0 and "No module named ruff" in proc.stderr:
        pytest.skip("ruff not installed")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


FORMATTED = (".",)  # the whole repository: `ruff format` applied (config: pyproject.toml)


def test_repository_is_ruff_formatted():
    ruff = shutil.which("ruff") or shutil.which("ruff", path=str(REPO_ROOT / ".venv" / "bin"))
    cmd = [ruff] if ruff else [sys.executable, "-m", "ruff"]
    proc = subprocess.run(
        [*cmd, "format", "--check", *FORMATTED], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    if proc.returncode != 0 and "No module named ruff" in proc.stderr:
        pytest.skip("ruff not installed")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
