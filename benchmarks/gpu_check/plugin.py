"""The pytest step: implementation="interpret" -> the forced implementation (the compiled kernel on a GPU).

``forced_implementation(target)`` patches every public op of ``pallas_kernels`` (and every module that imported
one by name, as the mutation audit does). Loaded as a pytest plugin (``-p benchmarks.gpu_check``: the
package re-exports the hooks below) with ``PALLAS_KERNELS_FORCE_IMPLEMENTATION`` set, it forces the whole kernel
suite onto the compiled kernels; ``run_tests`` runs that pytest subprocess.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.gpu_check.autotune import Settings

FORCE_ENV = "PALLAS_KERNELS_FORCE_IMPLEMENTATION"
REPO_ROOT = Path(__file__).resolve().parents[2]
_PACKAGE = __name__.rpartition(".")[0]  # benchmarks.gpu_check: its own adapters are not public ops


def _public_ops():
    """Every (module, name, function) of ``pallas_kernels`` with an ``implementation`` parameter."""
    import importlib
    import inspect
    import pkgutil

    from jaxwb import pallas_kernels

    mods = []
    for info in pkgutil.walk_packages(pallas_kernels.__path__, pallas_kernels.__name__ + "."):
        if info.name == _PACKAGE or info.name.startswith(_PACKAGE + "."):
            continue
        mods.append(importlib.import_module(info.name))
    found = []
    for mod in mods:
        for name, obj in list(vars(mod).items()):
            if not inspect.isfunction(obj) or not obj.__module__.startswith(pallas_kernels.__name__):
                continue
            try:
                params = inspect.signature(obj).parameters
            except (TypeError, ValueError):
                continue
            if "implementation" in params:
                found.append((mod, name, obj))
    return found


def _forcing(f, target: str):
    """``f`` with ``implementation="interpret"`` replaced by ``target``."""

    @functools.wraps(f)
    def w(*args, **kwargs):
        if kwargs.get("implementation") == "interpret":
            kwargs["implementation"] = target
        return f(*args, **kwargs)

    w.__wrapped_for_gpu_check__ = True
    return w


@contextlib.contextmanager
def forced_implementation(target: str):
    """Patch every public op so that ``implementation="interpret"`` runs ``target`` instead (restored on
    exit). Every module that imported an op by name is patched too (as the mutation audit does)."""
    wrapped = {}
    patched = []
    for mod, name, fn in _public_ops():
        if fn not in wrapped:
            wrapped[fn] = _forcing(fn, target)
        patched.append((mod, name, fn))
        setattr(mod, name, wrapped[fn])
    import jax

    jax.clear_caches()  # jitted callers traced before the patch would keep the old implementation
    try:
        yield len(wrapped)
    finally:
        for mod, name, fn in patched:
            setattr(mod, name, fn)
        jax.clear_caches()


def pytest_configure(config):  # pytest plugin hook (``-p benchmarks.gpu_check``)
    target = os.environ.get(FORCE_ENV)
    if target:
        cm = forced_implementation(target)
        n = cm.__enter__()
        config._gpu_check_force = cm
        print(f"[gpu_check] implementation='interpret' -> {target!r} in {n} public ops", file=sys.stderr)


def pytest_unconfigure(config):
    cm = getattr(config, "_gpu_check_force", None)
    if cm is not None:
        cm.__exit__(None, None, None)


def run_tests(s: Settings, timeout_s: float) -> dict:
    """pytest over tests/kernels (a small selection in a dry run) with interpret -> triton forced."""
    if s.skip_tests:
        return dict(skipped=True)
    if s.pytest_args:
        args = list(s.pytest_args)
    elif s.dry_run:  # the plugin loads and patches; one cheap test (the suite itself runs in CI on CPU)
        args = ["tests/kernels/test_hadamard.py::test_kron_split"]
    else:
        args = ["tests/kernels", "--ignore=tests/kernels/test_gpu_check.py"]
    workers = (["-n", "4"] if not s.dry_run else ["-n0"]) if _has_xdist() else []
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "benchmarks.gpu_check", *workers, *args]
    env = {
        **os.environ,
        FORCE_ENV: s.kernel,
        "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
        "XLA_PYTHON_CLIENT_MEM_FRACTION": ".2",
    }
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=max(10, timeout_s))
        rc, tail, timed_out = p.returncode, (p.stdout + p.stderr)[-4000:], False
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"") + (e.stderr or b"")
        tail = out.decode(errors="replace")[-4000:] if isinstance(out, bytes) else str(out)[-4000:]
        rc, timed_out = None, True
    summary = [ln for ln in tail.splitlines() if " passed" in ln or " failed" in ln or " error" in ln][-1:]
    return dict(
        command=" ".join(cmd),
        forced=s.kernel,
        rc=rc,
        timed_out=timed_out,
        wall_s=time.perf_counter() - t,
        summary=summary[0] if summary else None,
        tail=tail[-1500:],
    )


def _has_xdist() -> bool:
    try:
        import xdist  # noqa: F401

        return True
    except ImportError:
        return False
