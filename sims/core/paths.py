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
    # No size cap in JAX: with one, JAX's LRU eviction globs the whole folder, stats every entry and reads its
    # access-time file on EVERY write, under a folder-wide file lock (0.27 CPU-s per write at 1900 entries: a
    # quadratic cost that took hundreds of CPU-seconds from a cold test suite and serialised its workers). The
    # folder is bounded here instead, by one scan when a process turns the cache on. Without JAX's lock, processes
    # sharing the folder stay safe: an entry is keyed by its full HLO and options (two writers write the same
    # bytes), and an entry read while another process writes it fails to decompress, which JAX reports as a warning
    # and answers by compiling.
    prune_compilation_cache(folder)
    return folder


def prune_compilation_cache(folder: str | Path, *, max_bytes: int = 4 << 30) -> int:
    """Delete the least recently written entries of JAX's compilation cache in ``folder`` until it holds at most
    3/4 of ``max_bytes``, if it holds more than ``max_bytes``. One scan; returns the number of files deleted."""
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be > 0, got {max_bytes}")
    entries = []
    total = 0
    with os.scandir(folder) as it:
        for e in it:
            try:
                st = e.stat()
            except OSError:  # deleted by another process meanwhile
                continue
            if e.is_file():
                entries.append((st.st_mtime, st.st_size, e.path))
                total += st.st_size
    if total <= max_bytes:
        return 0
    deleted = 0
    for _, size, path in sorted(entries):
        if total <= 3 * max_bytes // 4:
            break
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size
        deleted += 1
    return deleted


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
