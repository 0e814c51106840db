"""The workbench's one git-ignored cache folder, shared by ``jaxwb.models`` (trained weights) and ``jaxwb.sims``
(quick runs, JAX's compilation cache): ``jaxwb.sims.core.paths.cache_dir`` is this function."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]

_SOURCE_ROOT = Path(__file__).resolve().parents[1]
# The repository checkout this package runs from (an editable install); for an installed wheel, which has no
# checkout, the current directory (as ``jaxwb.sims.core.paths.REPO_ROOT``).
_REPO_ROOT = _SOURCE_ROOT if (_SOURCE_ROOT / "pyproject.toml").is_file() else Path.cwd().resolve()


def cache_dir() -> Path:
    """The cache folder: ``$WORKBENCH_CACHE``, else ``<repo>/.cache/workbench`` in a checkout (git-ignored),
    else ``~/.cache/workbench``. Read at each call (tests point it elsewhere with the environment variable)."""
    env = os.environ.get("WORKBENCH_CACHE")
    if env:
        return Path(env).expanduser()
    if (_REPO_ROOT / ".git").exists():
        return _REPO_ROOT / ".cache" / "workbench"
    return Path.home() / ".cache" / "workbench"
