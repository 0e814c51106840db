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

import contextlib
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
    """The module's preset ``Config`` with ``overrides`` (already typed values) applied (``dataclasses.replace``,
    so the Config's own ``__post_init__`` validation runs and raises ``ValueError`` naming a bad field). The CLI
    parses ``--set`` text through :func:`sims.core.config.apply_overrides` instead."""
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
    """Parse ``["lam=50", "speed_betas=(0.5, 0.9)"]`` into ``{"lam": 50, "speed_betas": (0.5, 0.9)}`` (untyped).

    Values are Python literals (numbers, tuples, strings, True/False); anything else is kept as a string. For
    values typed from the Config's field annotations use :func:`sims.core.config.typed_overrides`.
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
    """``HEAD``'s short hash, ``-dirty`` when tracked code differs from it. Changes under ``figures/`` do not count:
    they are the outputs (``workbench all`` rewrites them one result after another), not the code that made them."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                             text=True, timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)figures"], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return (rev + ("-dirty" if dirty else "")) or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _path_entry(p) -> tuple[str, Any]:
    if hasattr(p, "key"):
        k = p.key
        return ("int" if isinstance(k, (int, np.integer)) and not isinstance(k, bool) else "key",
                int(k) if isinstance(k, (int, np.integer)) else str(k))
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


def publish_dir(tmp: Path, out: Path) -> None:
    """Replace ``out`` by the complete folder ``tmp`` in one rename; ``tmp`` is gone afterwards."""
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


def progress_enabled() -> bool:
    """Progress bars only on a terminal: ``WORKBENCH_PROGRESS=1`` forces them on, ``=0`` off."""
    env = os.environ.get("WORKBENCH_PROGRESS", "").strip()
    if env:
        return env not in ("0", "false", "no", "off")
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class Phases:
    """A one-line tqdm bar over the phases of a run (run -> claims -> plot -> write) whose elapsed time ticks
    every second, so a long ``run`` shows it is alive. Disabled when stderr is not a terminal."""

    def __init__(self, name: str, phases: Sequence[str], enabled: bool | None = None):
        self.enabled = progress_enabled() if enabled is None else enabled
        self.bar = None
        self._stop = None
        if not self.enabled:
            return
        import threading

        from tqdm.auto import tqdm

        self.bar = tqdm(total=len(phases), desc=name, unit="phase", leave=False,
                        bar_format="{desc}: {n_fmt}/{total_fmt} phases [{elapsed}]{postfix}")
        self._stop = threading.Event()

        def tick():
            while not self._stop.wait(1.0):
                self.bar.refresh()

        threading.Thread(target=tick, daemon=True).start()

    def start(self, phase: str) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(phase)

    def done(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self._stop.set()
            self.bar.close()
            self.bar = None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temp(out: Path) -> list[Path]:
    """Remove temporary folders ``.<name>.tmp-<pid>-*`` beside ``out`` left by a killed run (dead pid)."""
    removed = []
    if not out.parent.is_dir():
        return removed
    for d in out.parent.glob(f".{out.name}.tmp-*"):
        pid_text = d.name[len(f".{out.name}.tmp-"):].split("-", 1)[0]
        if pid_text.isdigit() and not _pid_alive(int(pid_text)) and d.is_dir():
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed


def write_outputs(module: ModuleType, out: Path, *, results: Any, cfg, claims: Sequence[Claim], preset: str,
                  seed: int, wall: float, phases: Phases | None = None) -> None:
    """Write figures, ``data.npz``, ``claims.json`` and ``manifest.json`` to a temporary folder beside ``out``,
    flush them, and swap it in with :func:`publish_dir`. The previous ``out`` stays byte-identical until then."""
    import matplotlib.pyplot as plt

    from sims.core import style

    flat = flatten_results(results)
    nonfinite = [k for k, a in flat.items() if a.dtype.kind in "fc" and not np.all(np.isfinite(a))]
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temp(out)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.tmp-{os.getpid()}-"))
    try:
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
            "process_count": jax.process_count(),
            "device_count": jax.device_count(),
            "devices": sorted({d.device_kind for d in jax.devices()}),
            "wall_time_s": round(wall, 3),
            "figures": sorted(f"{k}.png" for k in figs),
            "nonfinite_arrays": nonfinite,
            "claims_passed": sum(c.passed for c in claims),
            "claims_total": len(claims),
            "claims_by_kind": kind_counts(claims),
            "results_layout": results_layout(results),
            "content_sha256": {f: sha256_file(tmp / f) for f in hashed},
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        publish_dir(tmp, out)
        if phases:
            phases.done()
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    if nonfinite:
        print(f"  warning: non-finite values in {nonfinite}", file=sys.stderr)


def execute(module: ModuleType, *, preset: str = "full", seed: int = 0, out_dir: str | Path | None = None,
            write: bool = True, verbose: bool = True, cfg=None, progress: bool | None = None) -> Outcome:
    """Run one result: ``run`` -> ``claims`` -> ``plot`` -> write ``out_dir`` atomically.

    ``out_dir`` defaults to :func:`default_out_dir` (``figures/<name>`` only for the full preset); it is checked
    before the run starts. ``cfg`` (a Config) replaces the preset's; ``preset`` is then only recorded in the
    manifest. ``progress`` (default: on a terminal) shows the phases with their elapsed time.
    """
    if cfg is None:
        cfg = get_config(module, preset)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**32:
        raise WorkbenchError(f"seed must be an integer in [0, 2**32), got {seed!r}")
    out = None
    if write:
        out = check_out_dir(out_dir if out_dir is not None else default_out_dir(module.NAME, preset))
    phases = Phases(f"{module.NAME} [{preset}]", ("run", "claims", "plot", "write") if write else ("run", "claims"),
                    enabled=progress)
    try:
        key = jax.random.key(seed)
        phases.start("run")
        t0 = time.perf_counter()
        results = jax.block_until_ready(module.run(cfg, key=key))
        wall = time.perf_counter() - t0
        phases.done()
        phases.start("claims")
        claims = list(module.claims(results, cfg))
        phases.done()
        if write:
            write_outputs(module, out, results=results, cfg=cfg, claims=claims, preset=preset, seed=seed,
                          wall=wall, phases=phases)
    finally:
        phases.close()
    if verbose:
        print(format_claims(f"{module.NAME} [{preset}, seed {seed}, {wall:.1f}s]", claims))
        if out is not None:
            print(f"  wrote {out}")
    return Outcome(module.NAME, preset, results, claims, out, wall)


def load_claims(name: str, figures_dir: str | Path | None = None) -> list[Claim] | None:
    """Claims committed in ``figures/<name>/claims.json`` (None when that result has none yet)."""
    path = Path(figures_dir or FIGURES_DIR) / name / "claims.json"
    if not path.exists():
        return None
    return [Claim.from_json(d) for d in json.loads(path.read_text())]


def load_manifest(folder: str | Path) -> dict[str, Any]:
    path = Path(folder) / "manifest.json"
    if not path.exists():
        raise WorkbenchError(f"{path} does not exist (run `workbench run {Path(folder).name}`)")
    return json.loads(path.read_text())


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
