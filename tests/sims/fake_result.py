"""A fake result (one sweep, two figures, one claim) for the harness and CLI tests, in this process
(:func:`fake_module`) or behind the real CLI in a subprocess (:func:`fake_cli`), with an optional slow write phase
that a test can interrupt."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from jaxwb.sims.core.paths import REPO_ROOT as ROOT

FAKE_RUN = textwrap.dedent(
    """
    import dataclasses, faulthandler, os, signal, sys, time, types
    faulthandler.register(signal.SIGUSR1)  # the test dumps our stacks with SIGUSR1 if we hang
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if whatever started pytest ignored SIGINT
    from pathlib import Path
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import jax.numpy as jnp
    from jaxwb.sims.core import cli, harness, registry
    from jaxwb.sims.core.claims import Claim

    @dataclasses.dataclass(frozen=True)
    class Config:
        value: float = 1.0  # what the fake result measures

    mod = types.ModuleType("jaxwb.sims._atomic_fake")
    mod.NAME, mod.TITLE, mod.Config = "atomic_fake", "a fake result", Config
    mod.PRESETS = {"quick": Config(), "full": Config()}
    from jaxwb.sims.core.sweep import sweep

    def _row(r):
        return {"y": r["a"] * 1.0, "z": jnp.sin(r["a"])}

    def run(cfg, *, key):
        rows = sweep(_row, {"a": cfg.value + jnp.arange(7.0)})  # sharded over every process's devices
        return {"x": rows["y"], "nested": {"z": rows["z"]}}

    mod.run = run
    mod.claims = lambda r, cfg: [Claim("x = value", cfg.value, float(r["x"][0]), 1e-9, kind="check")]

    def plot(results, cfg):
        first, second = plt.figure(), plt.figure()
        first.gca().plot(results["x"])
        save = second.savefig

        def slow_save(*args, **kwargs):  # the write phase: one PNG is already in the temporary folder
            Path(os.environ["WRITING_MARKER"]).write_text("writing")
            for _ in range(1200):  # short sleeps: a SIGINT that the kernel hands to one of XLA's threads
                time.sleep(0.1)  # only wakes the main thread's handler when it next runs bytecode
            return save(*args, **kwargs)

        if os.environ.get("WRITING_MARKER"):
            second.savefig = slow_save
        return {"a_first": first, "b_second": second}

    mod.plot = plot
    sys.modules[mod.__name__] = mod
    """
)
FAKE_CLI = FAKE_RUN + "registry.get = lambda name: mod\nsys.exit(cli.main(sys.argv[1:]))\n"


def fake_module():
    ns: dict = {}
    exec(FAKE_RUN, ns)
    sys.modules.pop("jaxwb.sims._atomic_fake", None)
    return ns["mod"]


def fake_cli(args, env_extra=None, wait_marker=None, sig=None, preexec_fn=None):
    """Run the CLI on the fake result in a subprocess; with ``sig``, send it once ``wait_marker`` exists (the write
    phase began). Returns ``(returncode, stdout, stderr)``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu", **(env_extra or {})}

    proc = subprocess.Popen(
        [sys.executable, "-c", FAKE_CLI, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=preexec_fn,
    )
    if sig is not None:
        deadline = time.monotonic() + 120
        while not os.path.exists(wait_marker):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the fake run never reached its write phase"
            time.sleep(0.05)
        proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)  # faulthandler: every thread's stack to stderr
        time.sleep(2)
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the fake run did not exit within 120 s of {sig!r}; its stacks:\n{err[-6000:]}") from None
    return proc.returncode, out, err
