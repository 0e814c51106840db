"""Where things live: the repository, ``figures/``, the git-ignored cache, JAX's persistent compilation cache,
and the output folder of a run (chosen and checked before the run starts)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Collection
from pathlib import Path
from typing import Any

import jax

from jaxwb.models.cache import cache_dir  # the one cache folder (quick runs without --out, trained weights)
from jaxwb.sims.core.errors import WorkbenchError

_SOURCE_ROOT = Path(__file__).resolve().parents[2]
#: The repository checkout this package runs from (an editable install); for an installed wheel, which has no
#: checkout, the current directory: full-preset runs then write ``./figures/<name>``.
REPO_ROOT = _SOURCE_ROOT if (_SOURCE_ROOT / "pyproject.toml").is_file() else Path.cwd().resolve()
FIGURES_DIR = REPO_ROOT / "figures"


def enable_compilation_cache(path: str | Path | None = None, *, min_compile_time_s: float = 0.1) -> Path | None:
    """Keep XLA's compiled executables on disk (JAX's persistent compilation cache), so that a second run of a
    result, an audit's mutant runs and the test suite's repeated quick runs skip most of their compile time.

    The folder is ``path``, else the one already configured in JAX (``$JAX_COMPILATION_CACHE_DIR`` or
    ``jax.config``), else ``cache_dir()/jax`` (git-ignored). ``WORKBENCH_JAX_CACHE=0`` turns it off, a folder
    configured through ``$JAX_COMPILATION_CACHE_DIR`` (as the test suite shares it with subprocesses) included.
    Compilations that take longer than ``min_compile_time_s`` are written (notebooks pass 0: their many small eager
    compilations are most of an opening). Entries are keyed by the HLO, the jax/jaxlib versions,
    the backend and the compile options, so a changed function (a mutant included) never reuses a stale entry.
    Returns the folder in use, or None when off.
    """
    if os.environ.get("WORKBENCH_JAX_CACHE", "1").strip().lower() in ("0", "false", "no", "off"):
        jax.config.update("jax_enable_compilation_cache", False)  # JAX would otherwise use $JAX_COMPILATION_CACHE_DIR
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


OUTPUT_FILES = ("manifest.json", "data.npz", "claims.json")  # what every output folder holds, beside its figures
HASHED_FILES = ("data.npz", "claims.json")  # hashed in the manifest's content_sha256, with every figure
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _shown(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def manifest_problem(manifest: Any, results: Collection[str]) -> str | None:
    """Why ``manifest`` (a parsed ``manifest.json``) is not one the workbench wrote for one of ``results``, or None.

    The schema every manifest has: a JSON object whose ``result`` is one of ``results`` (the registered results),
    whose ``figures`` is a list of ``*.png`` names without a folder, and whose ``content_sha256`` maps exactly
    ``data.npz``, ``claims.json`` and those figures to SHA-256 hex digests."""
    if not isinstance(manifest, dict):
        return f"it holds a JSON {type(manifest).__name__}, not an object"
    name = manifest.get("result")
    if not isinstance(name, str):
        return "it names no result"
    if name not in results:
        return f"it names {name!r}, which is not a result of the workbench"
    figures = manifest.get("figures")
    if not isinstance(figures, list) or not all(
        isinstance(f, str) and f.endswith(".png") and "/" not in f and not f.startswith(".") for f in figures
    ):
        return "its figures are not a list of .png names"
    hashes = manifest.get("content_sha256")
    if not isinstance(hashes, dict):
        return "it has no content_sha256 table"
    if set(hashes) != {*HASHED_FILES, *figures}:
        return "its content_sha256 does not list exactly data.npz, claims.json and its figures"
    bad = sorted(f for f, h in hashes.items() if not (isinstance(h, str) and _SHA256.fullmatch(h)))
    if bad:
        return f"its hash for {bad[0]} is not a SHA-256 digest"
    return None


def output_problem(folder: str | Path, results: Collection[str]) -> str | None:
    """Why the non-empty ``folder`` is not an untouched previous output of the workbench, or None when it is.

    It is one only when its ``manifest.json`` passes :func:`manifest_problem` and every other entry is a plain file
    that manifest lists with the SHA-256 it records (a file the manifest lists may be missing: removing nothing
    is no loss). The answer names the first entry, in sorted order, that does not match."""
    folder = Path(folder)
    names = sorted(e.name for e in os.scandir(folder))
    mpath = folder / "manifest.json"
    if "manifest.json" not in names:
        return f"it is not empty and holds no workbench manifest.json (it holds {_shown(names)})"
    if mpath.is_symlink() or not mpath.is_file():
        return "its manifest.json is not a file the workbench wrote"
    try:
        manifest = json.loads(mpath.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return "its manifest.json is not a workbench manifest (not readable JSON)"
    problem = manifest_problem(manifest, results)
    if problem is not None:
        return f"its manifest.json is not a workbench manifest ({problem})"
    hashes = manifest["content_sha256"]
    for name in names:
        if name == "manifest.json":
            continue
        path = folder / name
        if name not in hashes:
            return f"it holds {name}, which its manifest does not list"
        if path.is_symlink() or not path.is_file():
            return f"{name} is not a plain file"
        if sha256_file(path) != hashes[name]:
            return f"{name} differs from the SHA-256 in its manifest (changed since the workbench wrote it)"
    return None


def sha256_file(path: str | Path) -> str:
    """The SHA-256 hex digest of the file at ``path`` (read in 1 MiB chunks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def replaceable_problem(out: Path, result: str | None = None) -> str | None:
    """Why the existing folder ``out`` must not be replaced by a run's output, or None when it may.

    A folder is replaceable only when it is empty or an untouched previous output of the workbench
    (:func:`output_problem`: a manifest of a registered result, or of ``result``, the one being written, and
    every file listed there with its recorded SHA-256). Anything else (a folder of the user's files, an output
    whose figure was edited, a forged manifest, a repository, the current directory, a parent of the repository)
    is refused, so that no run ever deletes a file it did not write.
    """
    from jaxwb.sims.core import registry

    out_abs = out.resolve()
    for special, what in (
        (Path.cwd().resolve(), "the current directory"),
        (Path.home().resolve(), "your home folder"),
        (REPO_ROOT, "the workbench's repository"),
    ):
        if out_abs == special or out_abs in special.parents:
            return f"it is {what}" if out_abs == special else f"it holds {what}"
    try:
        if not any(True for _ in os.scandir(out)):
            return None
        known = {*registry.result_names(), *([result] if result else [])}
        return output_problem(out, known)
    except OSError as err:
        return f"cannot read it ({err.strerror or err})"


def check_out_dir(out: str | Path, result: str | None = None) -> Path:
    """Validate an output folder before a run, touching nothing in it: it may not exist yet (its parent must then
    be creatable and writable), or be an empty folder, or an untouched previous output of the workbench (see
    :func:`replaceable_problem`; ``result`` is the result about to be written); anything else raises
    :class:`WorkbenchError` naming the folder and why. A symbolic link to a folder stands for that folder (the
    returned path); a dangling link or a loop of links is refused."""
    if str(out).strip() == "":
        raise WorkbenchError("--out is empty: name a folder for the run's output")
    out = Path(out).expanduser().absolute()
    try:
        return _check_out_dir(out, result)
    except OSError as err:  # a name too long, a loop of links, no permission to look: one line, not a traceback
        raise WorkbenchError(f"--out {str(out)!r}: {err.strerror or err}") from None


def _check_out_dir(out: Path, result: str | None) -> Path:
    try:
        os.stat(out)  # follows links: a loop anywhere on the path raises ELOOP here, before any run
    except (FileNotFoundError, NotADirectoryError):  # not there yet (its parent is checked below)
        if os.path.islink(out):
            raise WorkbenchError(f"--out {str(out)!r} is a symbolic link to a missing target") from None
    if os.path.islink(out):
        out = out.resolve(strict=True)
    if out.exists() and not out.is_dir():
        raise WorkbenchError(f"--out {str(out)!r} exists and is not a folder")
    if out.is_dir():
        problem = replaceable_problem(out, result)
        if problem is not None:
            raise WorkbenchError(
                f"--out {str(out)!r} will not be replaced: {problem}. Choose a new or empty "
                "folder, or a previous output of the workbench"
            )
    parent = out
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise WorkbenchError(f"--out {str(out)!r}: {str(parent)!r} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise WorkbenchError(f"--out {str(out)!r}: {str(parent)!r} is not writable")
    if len(os.fsencode(out.name)) + 32 > _name_max(parent):
        raise WorkbenchError(
            f"--out {str(out)!r}: the folder name is too long for this file system "
            f"(at most {_name_max(parent) - 32} bytes, leaving room for the temporary folder)"
        )
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=out.parent, prefix=f".{out.name}.probe-", delete=True)
        probe.close()
    except OSError as err:
        reason = err.strerror or str(err)
        raise WorkbenchError(f"--out {str(out)!r}: cannot write in {str(out.parent)!r} ({reason})") from None
    return out


def _name_max(folder: Path) -> int:
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError):
        return 255
