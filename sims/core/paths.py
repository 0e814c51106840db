"""Where things live: the repository, ``figures/``, the git-ignored cache, JAX's persistent compilation cache,
and the output folder of a run (chosen and checked before the run starts)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import jax

from sims.core.errors import WorkbenchError

REPO_ROOT = Path(__file__).resolve().parents[2]
FIGURES_DIR = REPO_ROOT / "figures"


def cache_dir() -> Path:
    """Where quick runs go without ``--out``: ``$WORKBENCH_CACHE``, else ``<repo>/.cache/workbench`` in a
    checkout (git-ignored), else ``~/.cache/workbench``."""
    env = os.environ.get("WORKBENCH_CACHE")
    if env:
        return Path(env).expanduser()
    if (REPO_ROOT / ".git").exists():
        return REPO_ROOT / ".cache" / "workbench"
    return Path.home() / ".cache" / "workbench"


def enable_compilation_cache(path: str | Path | None = None, *, min_compile_time_s: float = 0.1) -> Path | None:
    """Keep XLA's compiled executables on disk (JAX's persistent compilation cache), so that a second run of a
    result, an audit's mutant runs and the test suite's repeated quick runs skip most of their compile time.

    The folder is ``path``, else the one already configured in JAX (``$JAX_COMPILATION_CACHE_DIR`` or
    ``jax.config``), else ``cache_dir()/jax`` (git-ignored). ``WORKBENCH_JAX_CACHE=0`` turns it off. Compilations
    that take longer than ``min_compile_time_s`` are written (notebooks pass 0: their many small eager
    compilations are most of an opening). Entries are keyed by the HLO, the jax/jaxlib versions,
    the backend and the compile options, so a changed function (a mutant included) never reuses a stale entry.
    Returns the folder in use, or None when off.
    """
    if os.environ.get("WORKBENCH_JAX_CACHE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    configured = os.environ.get("JAX_COMPILATION_CACHE_DIR") or jax.config.jax_compilation_cache_dir
    folder = Path(path or configured or cache_dir() / "jax").expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # a read-only checkout: run without the cache rather than fail
    jax.config.update("jax_compilation_cache_dir", str(folder))
    # by default every compilation over a tenth of a second: most of a quick run's compile time
    jax.config.update("jax_persistent_cache_min_compile_time_secs", min_compile_time_s)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    # a size cap turns on JAX's eviction, which also takes a file lock around every read and write: several
    # processes (pytest-xdist workers, notebook kernels, CLI runs) can then share one folder safely
    jax.config.update("jax_compilation_cache_max_size", 4 << 30)
    return folder


def default_out_dir(name: str, preset: str) -> Path:
    """``figures/<name>`` for the full preset; ``cache_dir()/<preset>/<name>`` for any other."""
    return FIGURES_DIR / name if preset == "full" else cache_dir() / preset / name


def check_out_dir(out: str | Path) -> Path:
    """Validate an output folder before a run: it may exist (as a folder) or be creatable, and be writable."""
    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise WorkbenchError(f"--out {str(out)!r} exists and is not a folder")
    parent = out
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise WorkbenchError(f"--out {str(out)!r}: {str(parent)!r} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise WorkbenchError(f"--out {str(out)!r}: {str(parent)!r} is not writable")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=out.parent, prefix=f".{out.name}.probe-", delete=True)
        probe.close()
    except OSError as err:
        reason = err.strerror or str(err)
        raise WorkbenchError(f"--out {str(out)!r}: cannot write in {str(out.parent)!r} ({reason})") from None
    return out
