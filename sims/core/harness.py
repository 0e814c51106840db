"""The harness every result runs through: Claim records, preset lookup, execution, and the output writer.

A result module ``sims/<name>.py`` provides (see ``shared/DESIGN.md``, "A result"):

    NAME: str                       # the result's name, equal to the module name
    TITLE: str                      # one line for ``workbench list`` and the README
    Config                          # a frozen dataclass
    PRESETS: {"quick": Config, "full": Config}
    run(cfg, *, key) -> results     # a pytree (dict) of arrays
    plot(results, cfg) -> {name: matplotlib Figure}
    claims(results, cfg) -> [Claim]
    MUTANTS: [Mutant]                  # plausible bugs each caught by a claim (``sims.core.audit``)
    bench(quick: bool) -> [BenchRow]   # optional: ``workbench bench <name>``

``execute(module, preset=..., seed=..., out_dir=...)`` runs it and writes ``<fig>.png`` per figure, ``data.npz``
(the flattened results), ``claims.json`` and ``manifest.json`` (with a content hash of the others) into
``default_out_dir(name, preset)``: ``figures/<name>/`` for the full preset, a git-ignored cache for the quick one.
The folder is written **atomically**: everything goes to a temporary folder beside the target, which then
replaces the target in one rename (``renameat2(RENAME_EXCHANGE)`` on Linux), so an interrupt at any moment leaves
the previous output byte-identical.
"""

from __future__ import annotations

import ctypes
import dataclasses
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import numpy as np

from sims.core.claims import Claim, format_claims, format_counts, kind_counts, mean_ci  # noqa: F401

REPO_ROOT = Path(__file__).resolve().parents[2]
FIGURES_DIR = REPO_ROOT / "figures"
PRESET_NAMES = ("quick", "full")


class WorkbenchError(ValueError):
    """A user-facing error: the CLI prints its message on one line and exits non-zero."""




# ---------------------------------------------------------------------------------------------------------
# Benchmarks
# ---------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class BenchRow:
    """One timing comparison: ``ours`` vs ``baseline`` seconds in the same run (ratio = baseline / ours)."""

    op: str
    ours: str
    baseline: str
    ours_s: float
    baseline_s: float
    note: str = ""

    @property
    def speedup(self) -> float:
        return self.baseline_s / self.ours_s if self.ours_s > 0 else float("inf")


def format_bench(rows: Sequence[BenchRow]) -> str:
    lines = [f"{'op':<28} {'ours':<26} {'baseline':<26} {'ours s':>10} {'base s':>10} {'speedup':>9}"]
    for r in rows:
        lines.append(f"{r.op:<28} {r.ours:<26} {r.baseline:<26} {r.ours_s:>10.4g} {r.baseline_s:>10.4g} "
                     f"{r.speedup:>8.1f}x" + (f"  {r.note}" if r.note else ""))
    return "\n".join(lines)


def time_call(fn, *args, repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn(*args)`` in seconds, blocking on JAX outputs; ``warmup`` calls first."""
    for _ in range(warmup):
        jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


# ---------------------------------------------------------------------------------------------------------
# Presets and execution
# ---------------------------------------------------------------------------------------------------------


def quick_from_env() -> bool:
    """True when ``WORKBENCH_QUICK`` is set to a non-empty, non-"0" value (CI, notebook tests)."""
    return os.environ.get("WORKBENCH_QUICK", "") not in ("", "0")


def get_config(module: ModuleType, preset: str, **overrides):
    """The module's preset ``Config`` with ``overrides`` applied (``dataclasses.replace``, so the Config's own
    ``__post_init__`` validation runs and raises ``ValueError`` naming a bad field)."""
    if preset not in module.PRESETS:
        raise WorkbenchError(f"unknown preset {preset!r} for {module.NAME}; choose from {sorted(module.PRESETS)}")
    cfg = module.PRESETS[preset]
    if not overrides:
        return cfg
    fields = {f.name for f in dataclasses.fields(cfg)}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise WorkbenchError(f"unknown config field(s) {unknown} for {module.NAME}; fields: {sorted(fields)}")
    return dataclasses.replace(cfg, **overrides)


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """Parse ``["lam=50", "speed_betas=(0.5, 0.9)"]`` into ``{"lam": 50, "speed_betas": (0.5, 0.9)}``.

    Values are Python literals (numbers, tuples, strings, True/False); anything else is kept as a string.
    """
    import ast

    out = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise WorkbenchError(f"--set expects FIELD=VALUE, got {item!r}")
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            value = text.strip()
        out[name.strip()] = tuple(value) if isinstance(value, list) else value
    return out


def _git_revision() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                             text=True, timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return (rev + ("-dirty" if dirty else "")) or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def flatten_results(results: Any) -> dict[str, np.ndarray]:
    """Flatten a results pytree to {"a/b/c": array} for ``np.savez`` (keys from the tree paths)."""
    flat = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(results)[0]:
        key = "/".join(str(getattr(p, "key", getattr(p, "idx", getattr(p, "name", p)))) for p in path)
        flat[key or "value"] = np.asarray(leaf)
    return flat


def _config_json(cfg) -> dict[str, Any]:
    def conv(x):
        if isinstance(x, (tuple, list)):
            return [conv(e) for e in x]
        if isinstance(x, (np.generic,)):
            return x.item()
        return x

    return {k: conv(v) for k, v in dataclasses.asdict(cfg).items()}


def cache_dir() -> Path:
    """Where quick runs go without ``--out``: ``$WORKBENCH_CACHE``, else ``<repo>/.cache/workbench`` in a
    checkout (git-ignored), else ``~/.cache/workbench``."""
    env = os.environ.get("WORKBENCH_CACHE")
    if env:
        return Path(env).expanduser()
    if (REPO_ROOT / ".git").exists():
        return REPO_ROOT / ".cache" / "workbench"
    return Path.home() / ".cache" / "workbench"


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
        raise WorkbenchError(f"--out {str(out)!r} cannot be written: {err.strerror or err}") from None
    return out


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


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
        with _suppress_oserror():
            os.unlink(tmp)
        raise


class _suppress_oserror:
    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        return et is not None and issubclass(et, OSError)


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
    with _suppress_oserror():
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def publish_dir(tmp: Path, out: Path) -> None:
    """Replace ``out`` by the complete folder ``tmp`` in one rename; ``tmp`` is gone afterwards."""
    for f in tmp.iterdir():
        with _suppress_oserror():
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


HASHED = ("data.npz", "claims.json")


def verify_outputs(folder: str | Path) -> list[str]:
    """Problems with a result folder: missing files, or files whose hash differs from the manifest's."""
    folder = Path(folder)
    mpath = folder / "manifest.json"
    if not mpath.exists():
        return ["no manifest.json"]
    try:
        manifest = json.loads(mpath.read_text())
    except ValueError as err:
        return [f"manifest.json is not valid JSON ({err})"]
    hashes = manifest.get("content_sha256")
    if not isinstance(hashes, dict):
        return ["manifest.json has no content hash (written before hashes were recorded)"]
    problems = []
    for fname, digest in sorted(hashes.items()):
        f = folder / fname
        if not f.exists():
            problems.append(f"{fname} is missing")
        elif sha256_file(f) != digest:
            problems.append(f"{fname} does not match the manifest (stale or partly written)")
    return problems


@dataclasses.dataclass
class Outcome:
    name: str
    preset: str
    results: Any
    claims: list[Claim]
    out_dir: Path | None
    wall_s: float

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.claims)


def execute(module: ModuleType, *, preset: str = "full", seed: int = 0, out_dir: str | Path | None = None,
            write: bool = True, verbose: bool = True, cfg=None) -> Outcome:
    """Run one result: ``run`` -> ``claims`` -> ``plot`` -> write ``out_dir`` atomically.

    ``out_dir`` defaults to :func:`default_out_dir` (``figures/<name>`` only for the full preset). ``cfg`` (a
    Config) replaces the preset's; ``preset`` is then only recorded in the manifest.
    """
    import matplotlib.pyplot as plt

    from sims.core import style

    if cfg is None:
        cfg = get_config(module, preset)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**32:
        raise WorkbenchError(f"seed must be an integer in [0, 2**32), got {seed!r}")
    out = None
    if write:
        out = check_out_dir(out_dir if out_dir is not None else default_out_dir(module.NAME, preset))
    key = jax.random.key(seed)
    t0 = time.perf_counter()
    results = jax.block_until_ready(module.run(cfg, key=key))
    wall = time.perf_counter() - t0
    flat = flatten_results(results)
    nonfinite = [k for k, a in flat.items() if a.dtype.kind in "fc" and not np.all(np.isfinite(a))]
    claims = list(module.claims(results, cfg))
    if write:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.tmp-"))
        try:
            with style.context():
                figs = module.plot(results, cfg)
                for fname, fig in figs.items():
                    fig.savefig(tmp / f"{fname}.png")
                    plt.close(fig)
            np.savez_compressed(tmp / "data.npz", **flat)
            (tmp / "claims.json").write_text(json.dumps([c.to_json() for c in claims], indent=2) + "\n")
            hashed = sorted([*HASHED, *(f"{k}.png" for k in figs)])
            manifest = {
                "result": module.NAME,
                "title": module.TITLE,
                "preset": preset,
                "seed": seed,
                "config": _config_json(cfg),
                "git_revision": _git_revision(),
                "jax_version": jax.__version__,
                "python": platform.python_version(),
                "backend": jax.default_backend(),
                "device_count": jax.device_count(),
                "devices": sorted({d.device_kind for d in jax.devices()}),
                "wall_time_s": round(wall, 3),
                "figures": sorted(f"{k}.png" for k in figs),
                "nonfinite_arrays": nonfinite,
                "claims_passed": sum(c.passed for c in claims),
                "claims_total": len(claims),
                "claims_by_kind": kind_counts(claims),
                "content_sha256": {f: sha256_file(tmp / f) for f in hashed},
            }
            (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
            publish_dir(tmp, out)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    if verbose:
        print(format_claims(f"{module.NAME} [{preset}, seed {seed}, {wall:.1f}s]", claims))
        if nonfinite:
            print(f"  warning: non-finite values in {nonfinite}", file=sys.stderr)
        if out is not None:
            print(f"  wrote {out}")
    return Outcome(module.NAME, preset, results, claims, out, wall)


def load_claims(name: str, figures_dir: str | Path | None = None) -> list[Claim] | None:
    """Claims committed in ``figures/<name>/claims.json`` (None when that result has none yet)."""
    path = Path(figures_dir or FIGURES_DIR) / name / "claims.json"
    if not path.exists():
        return None
    return [Claim.from_json(d) for d in json.loads(path.read_text())]
