"""A run's output folder: the results pytree as ``data.npz`` (flattened, with a layout to rebuild it), the
``claims.json`` and ``manifest.json`` beside the figures, written **atomically**, and read back.

Everything goes to a temporary folder ``.<name>.tmp-<pid>-*`` beside the target, is flushed, and replaces the
target in one rename (``renameat2(RENAME_EXCHANGE)`` on Linux, two renames elsewhere), so an interrupt at any
moment leaves the previous output byte-identical; a temporary folder left by a killed process (dead pid) is
removed by the next write. ``manifest.json`` records the config, seed, git revision, JAX version and devices,
the results layout and the SHA-256 of every other file, which :func:`verify_outputs` checks.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import json
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import numpy as np

from jaxwb.sims.core.claims import Claim, decide_family, evaluate, kind_counts
from jaxwb.sims.core.errors import OutputError, WorkbenchError
from jaxwb.sims.core.paths import FIGURES_DIR, HASHED_FILES, REPO_ROOT, replaceable_problem, sha256_file
from jaxwb.sims.core.progress import Phases


def _git_revision() -> str:
    """``HEAD``'s short hash, ``-dirty`` when tracked code differs from it. Changes under ``figures/`` do not count:
    they are the outputs (``workbench all`` rewrites them one result after another), not the code that made them."""
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=5
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)figures"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
        return (rev + ("-dirty" if dirty else "")) or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _path_entry(p) -> tuple[str, Any]:
    if hasattr(p, "key"):
        k = p.key
        return (
            "int" if isinstance(k, (int, np.integer)) and not isinstance(k, bool) else "key",
            int(k) if isinstance(k, (int, np.integer)) else str(k),
        )
    if hasattr(p, "idx"):
        return "idx", int(p.idx)
    return "key", str(getattr(p, "name", p))


def flatten_results(results: Any) -> dict[str, np.ndarray]:
    """Flatten a results pytree to {"a/b/c": array} for ``np.savez`` (keys from the tree paths)."""
    flat = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(results)[0]:
        key = "/".join(str(v) for _, v in map(_path_entry, path))
        flat[key or "value"] = np.asarray(leaf)
    return flat


def run_result(module: ModuleType, cfg: Any, *, key: Any) -> Any:
    """``module.run(cfg, key=key)`` computed to the end, its results as ``data.npz`` keeps them: every leaf a NumPy
    array (``np.asarray``) and every dict in key order. The claims and figures of a fresh run and those made again
    from its written data (``workbench claims --rejudge``) then see the same arrays in the same order, so they agree
    bit for bit (a claim's reduction over a JAX array and over the NumPy array it was written as can differ in the
    last float32 bit)."""
    return jax.tree_util.tree_map(np.asarray, jax.block_until_ready(module.run(cfg, key=key)))


def results_layout(results: Any) -> dict[str, list]:
    """How to rebuild the pytree from the flat keys: {"a/b/0": [["key", "a"], ["key", "b"], ["idx", 0]]}.

    Recorded in the manifest (``results_layout``) so :func:`unflatten_results` restores int dict keys and lists.
    """
    out = {}
    for path, _ in jax.tree_util.tree_flatten_with_path(results)[0]:
        entries = [list(_path_entry(p)) for p in path]
        out["/".join(str(v) for _, v in entries) or "value"] = entries
    return out


class _DigitKeys(dict):
    """A dict whose all-digit string keys also answer to the int (outputs without a recorded layout)."""

    def __missing__(self, key):
        if isinstance(key, (int, np.integer)) and str(key) in self:
            return self[str(key)]
        raise KeyError(key)


def unflatten_results(flat: dict[str, np.ndarray], layout: dict[str, list] | None = None) -> Any:
    """Inverse of :func:`flatten_results`: nested dicts (and lists for sequence nodes) of numpy arrays.

    With ``layout`` (the manifest's ``results_layout``) every node gets its recorded kind; without it (outputs
    written before layouts were recorded) a level whose keys are exactly ``0..n-1`` becomes a list and other
    all-digit keys answer to both ``results["rht"]["1024"]`` and ``[1024]``. The order of ``flat`` is kept.
    """
    if list(flat) == ["value"] and (layout is None or layout.get("value") == []):
        return flat["value"]
    paths = []
    for key in flat:
        if layout is not None and key in layout:
            paths.append([tuple(e) for e in layout[key]])
        else:
            paths.append([("key", part) for part in key.split("/")])
    root: dict = {}
    for path, key in zip(paths, flat, strict=True):
        node = root
        for kind, k in path[:-1]:
            node = node.setdefault((kind, k), {})
        node[tuple(path[-1])] = flat[key]

    def build(node, guess: bool):
        if not isinstance(node, dict):
            return node
        kinds = {kind for kind, _ in node}
        keys = [k for _, k in node]
        if kinds == {"idx"}:
            return [build(node[e], guess) for e in sorted(node, key=lambda e: e[1])]
        if guess and all(isinstance(k, str) and k.isdigit() for k in keys):
            ints = [int(k) for k in keys]
            if sorted(ints) == list(range(len(ints))):
                return [build(node[e], guess) for e in sorted(node, key=lambda e: int(e[1]))]
            return _DigitKeys({k: build(node[(kd, k)], guess) for kd, k in node})
        return {k: build(node[(kd, k)], guess) for kd, k in node}

    return build(root, layout is None)


def _config_json(cfg) -> dict[str, Any]:
    def conv(x):
        if isinstance(x, (tuple, list)):
            return [conv(e) for e in x]
        if isinstance(x, (np.generic,)):
            return x.item()
        return x

    return {k: conv(v) for k, v in dataclasses.asdict(cfg).items()}


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a flushed temporary file and one ``os.replace``."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two existing paths (Linux ``renameat2(RENAME_EXCHANGE)``); False when unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return rc == 0


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def publish_dir(tmp: Path, out: Path, result: str | None = None) -> None:
    """Replace ``out`` by the complete folder ``tmp`` in one rename; ``tmp`` is gone afterwards.

    An existing ``out`` is replaced only when :func:`jaxwb.sims.core.paths.replaceable_problem` allows it (empty, or a
    previous output holding nothing else), checked again here since the run began; otherwise
    :class:`WorkbenchError` is raised and ``out`` is untouched. ``out`` keeps its permissions (a new folder gets
    the umask's).
    """
    if out.exists():
        problem = replaceable_problem(out, result) if out.is_dir() else "it is not a folder"
        if problem is not None:
            raise WorkbenchError(f"--out {str(out)!r} will not be replaced: {problem} (it changed during the run)")
        os.chmod(tmp, stat.S_IMODE(out.stat().st_mode))
    else:
        os.chmod(tmp, 0o777 & ~_umask())
    for f in tmp.iterdir():
        with contextlib.suppress(OSError):
            fd = os.open(f, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
    _fsync_dir(tmp)
    if not out.exists():
        os.rename(tmp, out)
    elif _exchange(tmp, out):
        shutil.rmtree(tmp, ignore_errors=True)  # tmp now holds the previous output
    else:  # no atomic exchange on this platform: move the old one aside first (two renames)
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        os.rename(out, old)
        os.rename(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    _fsync_dir(out.parent)


HASHED = HASHED_FILES


def verify_outputs(folder: str | Path) -> list[str]:
    """Problems with a result folder: a missing or damaged manifest, missing files, or files whose SHA-256 differs
    from the manifest's. Each problem names the file."""
    folder = Path(folder)
    mpath = folder / "manifest.json"
    if not mpath.exists():
        return [f"{mpath} is missing"]
    try:
        manifest = load_manifest(folder)
    except OutputError as err:
        return [str(err)]
    hashes = manifest.get("content_sha256")
    if not isinstance(hashes, dict) or not hashes:
        return [f"{mpath} has no content hashes (a table of file -> SHA-256); the manifest is damaged"]
    problems = []
    for fname, digest in sorted(hashes.items()):
        f = folder / fname
        if not isinstance(digest, str) or "/" in fname or fname.startswith("."):
            problems.append(f"{mpath}: the hash entry for {fname!r} is damaged")
        elif not f.is_file():
            problems.append(f"{f} is missing" if not f.exists() else f"{f} is not a file")
        elif sha256_file(f) != digest:
            problems.append(f"{f} does not match the manifest's SHA-256 (stale or partly written)")
    return problems


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temp(out: Path) -> list[Path]:
    """Remove temporary folders ``.<name>.tmp-<pid>-<8 characters>`` beside ``out`` left by a killed run (dead
    pid): exactly the names :func:`write_outputs` makes (``tempfile.mkdtemp``), holding only files."""
    removed: list[Path] = []
    if not out.parent.is_dir():
        return removed
    pattern = re.compile(re.escape(f".{out.name}.tmp-") + r"(\d+)-[a-z0-9_]{8}")
    for d in out.parent.glob(f".{out.name}.tmp-*"):
        m = pattern.fullmatch(d.name)
        if m is None or d.is_symlink() or not d.is_dir():
            continue
        if not _pid_alive(int(m.group(1))) and all(f.is_file() and not f.is_symlink() for f in d.iterdir()):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed


def write_outputs(
    module: ModuleType,
    out: Path,
    *,
    results: Any,
    cfg,
    claims: Sequence[Claim],
    preset: str,
    seed: int,
    wall: float,
    phases: Phases | None = None,
    extra: dict | None = None,
) -> None:
    """Write figures, ``data.npz``, ``claims.json`` and ``manifest.json`` to a temporary folder beside ``out``,
    flush them, and swap it in with :func:`publish_dir`. The previous ``out`` stays byte-identical until then.

    An OS error while writing (a full disk, a file too large, no permission) raises :class:`OutputError` naming
    the path; the temporary folder is removed either way. ``extra`` (the device, CPU time and profile of the run,
    from the harness) is merged into the manifest."""
    flat = flatten_results(results)
    nonfinite = [k for k, a in flat.items() if a.dtype.kind in "fc" and not np.all(np.isfinite(a))]
    tmp = None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temp(out)
        tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.tmp-{os.getpid()}-"))
        _write_into(
            module,
            tmp,
            out,
            results=results,
            flat=flat,
            nonfinite=nonfinite,
            cfg=cfg,
            claims=claims,
            preset=preset,
            seed=seed,
            wall=wall,
            phases=phases,
            extra=extra or {},
        )
    except OSError as err:
        where = err.filename if err.filename is not None else (tmp or out)
        raise OutputError(
            f"cannot write the output {str(out)!r}: {err.strerror or err} ({where}); the previous "
            "output, if any, is unchanged"
        ) from None
    finally:
        if tmp is not None and tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    if nonfinite:
        print(f"  warning: non-finite values in {nonfinite}", file=sys.stderr)


def _write_into(
    module: ModuleType,
    tmp: Path,
    out: Path,
    *,
    results,
    flat,
    nonfinite,
    cfg,
    claims,
    preset,
    seed,
    wall,
    phases,
    extra,
) -> None:
    """Write every file of the output into ``tmp`` and publish it as ``out``."""
    import matplotlib.pyplot as plt

    from jaxwb.sims.core import style

    if phases:
        phases.start("plot")
    with style.context():
        figs = module.plot(results, cfg)
        for fname, fig in figs.items():
            fig.savefig(tmp / f"{fname}.png")
            plt.close(fig)
    if phases:
        phases.done()
        phases.start("write")
    np.savez_compressed(tmp / "data.npz", **flat)
    (tmp / "claims.json").write_text(json.dumps([c.to_json() for c in claims], indent=2) + "\n")
    hashed = sorted([*HASHED, *(f"{k}.png" for k in figs)])
    # what this output computes; it comes last, over ``extra`` (a re-judgement passes the old manifest there), and
    # a key already placed keeps its place ("title" stays second)
    computed = {
        "title": module.TITLE,
        "figures": sorted(f"{k}.png" for k in figs),
        "nonfinite_arrays": nonfinite,
        "claims_passed": sum(c.passed for c in claims),
        "claims_as_expected": all(c.as_expected for c in claims),
        "claims_total": len(claims),
        "claims_by_kind": kind_counts(claims),
        "results_layout": results_layout(results),
        "content_sha256": {f: sha256_file(tmp / f) for f in hashed},
    }
    manifest = {
        "result": module.NAME,
        "title": computed["title"],
        "preset": preset,
        "seed": seed,
        "config": _config_json(cfg),
        "git_revision": _git_revision(),
        "jax_version": jax.__version__,
        "python": platform.python_version(),
        "backend": extra.get("device", {}).get("platform", jax.default_backend()),
        "process_count": jax.process_count(),
        "device_count": jax.device_count(),
        "devices": sorted({d.device_kind for d in jax.devices()}),
        "wall_time_s": round(wall, 3),
        **extra,
        **computed,
    }
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    publish_dir(tmp, out, module.NAME)
    if phases:
        phases.done()


def read_json(path: str | Path) -> Any:
    """The JSON in ``path``; :class:`OutputError` naming the file when it cannot be read or parsed."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except IsADirectoryError:
        raise OutputError(f"{path} is a folder, not a file") from None
    except UnicodeDecodeError:
        raise OutputError(f"{path} is not text (UTF-8): the file is damaged") from None
    except ValueError as err:
        raise OutputError(f"{path} is not valid JSON ({err}): the file is damaged or truncated") from None
    except OSError as err:
        raise OutputError(f"cannot read {path} ({err.strerror or err})") from None


def load_claims(name: str, figures_dir: str | Path | None = None) -> list[Claim] | None:
    """Claims committed in ``figures/<name>/claims.json`` (None when that result has none yet), decided by the
    project's rule for a family (:func:`jaxwb.sims.core.claims.decide_family`) as a fresh run's are. A damaged
    file (unreadable, not JSON, not a list of claims) raises :class:`OutputError` naming it and what is wrong."""
    path = Path(figures_dir or FIGURES_DIR) / name / "claims.json"
    if not path.exists() and not path.is_symlink():
        return None
    data = read_json(path)
    if not isinstance(data, list):
        raise OutputError(f"{path} holds a JSON {type(data).__name__}, not a list of claims: the file is damaged")
    claims = []
    for i, d in enumerate(data):
        if not isinstance(d, dict):
            raise OutputError(f"{path}: entry {i} is a JSON {type(d).__name__}, not a claim: the file is damaged")
        try:
            claims.append(Claim.from_json(d))
        except (TypeError, ValueError) as err:
            raise OutputError(f"{path}: entry {i} is not a valid claim ({' '.join(str(err).split())})") from None
    return decide_family(claims)


def load_manifest(folder: str | Path) -> dict[str, Any]:
    path = Path(folder) / "manifest.json"
    if not path.exists():
        raise WorkbenchError(f"{path} does not exist (run `workbench run {Path(folder).name}`)")
    manifest = read_json(path)
    if not isinstance(manifest, dict):
        raise OutputError(f"{path} holds a JSON {type(manifest).__name__}, not a manifest: the file is damaged")
    return manifest


def config_from_manifest(module: ModuleType, manifest: dict[str, Any]):
    """The Config a result folder was made with (JSON lists back to tuples; unknown fields dropped)."""
    base = module.PRESETS.get(manifest.get("preset"), module.PRESETS["full"])
    names = {f.name for f in dataclasses.fields(base)}

    def tup(x):
        return tuple(tup(e) for e in x) if isinstance(x, list) else x

    values = {k: tup(v) for k, v in manifest.get("config", {}).items() if k in names}
    return dataclasses.replace(base, **values)


def load_results(module: ModuleType, folder: str | Path | None = None):
    """``(results, cfg, manifest)`` from a result folder (default ``figures/<name>``): the ``data.npz`` arrays
    unflattened into the results pytree, ready for ``module.plot(results, cfg)`` and ``module.claims``."""
    folder = Path(folder) if folder is not None else FIGURES_DIR / module.NAME
    manifest = load_manifest(folder)
    with np.load(folder / "data.npz", allow_pickle=False) as data:
        flat = {k: data[k] for k in data.files}
    results = unflatten_results(flat, manifest.get("results_layout"))
    return results, config_from_manifest(module, manifest), manifest


def rejudge_outputs(module: ModuleType, folder: str | Path | None = None) -> list[Claim]:
    """Decide a result's claims again on its committed data (``figures/<name>/data.npz``, no simulation) and
    rewrite the output: ``claims.json``, the figures and the manifest's claim counts and hashes. For a change of
    ``claims.py`` (or ``figures.py``) only: the data and the manifest's record of the run (preset, seed, config,
    ``git_revision`` of the run, times, device) are kept, and ``claims_git_revision`` records the code that decided
    the claims. A folder whose files do not match their manifest is refused (:class:`OutputError`)."""
    folder = Path(folder) if folder is not None else FIGURES_DIR / module.NAME
    problems = verify_outputs(folder)
    if problems:
        raise OutputError(f"{folder}: {problems[0]}; rerun `workbench run {module.NAME}` instead")
    results, cfg, manifest = load_results(module, folder)
    claims = evaluate(module, results, cfg)
    write_outputs(
        module,
        folder,
        results=results,
        cfg=cfg,
        claims=claims,
        preset=manifest["preset"],
        seed=manifest["seed"],
        wall=float(manifest.get("wall_time_s", 0.0)),
        extra={**manifest, "claims_git_revision": _git_revision()},  # what write_outputs computes replaces the old
    )
    return claims
