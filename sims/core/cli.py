"""``workbench``: list, run and check the results; benchmark the kernels and sweeps.

    workbench list
    workbench run NAME [--quick] [--seed N] [--out DIR] [--set FIELD=VALUE ...] [--distributed ...]
    workbench run NAME --help          # the Config fields: types, defaults, one-line docs
    workbench all [--quick] [--seed N] [--out DIR] [--jobs N]
    workbench claims [NAME ...]
    workbench audit [NAME ...]
    workbench bench NAME [--quick]
    workbench notebook [NAME] [-- JUPYTER-LAB-ARGS]   # JupyterLab with the notebooks opening as notebooks
    workbench new NAME                 # a new result on the template: sims/NAME/, its test and its notebook
    workbench --version

User errors (unknown names, bad parameters, an unusable ``--out``) print one line ``workbench: error: ...`` and
exit with status 2, before anything runs. An existing ``--out`` folder is replaced only when it is empty or a
previous output of the workbench (nothing else in it); anything else is refused before the run. A damaged
committed output (``workbench claims``) or an OS error while writing (full disk, file too large) is one line
naming the file and exit 1, the previous output intact. Ctrl-C exits with 130 and SIGTERM with 143, both removing
the temporary folder. Integers (``--seed``, ``--num-processes``) are plain decimal digits. An error inside a simulation
is a bug, not a user error: it keeps its traceback.
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping

from jaxwb.sims.core.errors import OutputError, Terminated, WorkbenchError
from jaxwb.sims.core.progress import ResultsBar

DEVICES = ("cpu", "gpu", "tpu")  # = devices.PLATFORMS (not imported here: it imports jax, slow for --help)

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
RANDOM_AUDIT_GOAL = 0.9  # share of non-equivalent mechanical mutants each result's claims must catch
SEED_MAX = 2**32


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("jax-theory-workbench")
    except Exception:
        import re
        from pathlib import Path

        text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
        m = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
        return m.group(1) if m else "unknown"


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one line (``workbench: error: ...``) and exit 2, without the usage block."""

    def error(self, message):
        hint = f" (see `{self.prog} --help`)"
        raise _UsageError(" ".join(message.split()) + hint)


def _decimal(text: str, what: str) -> int:
    """Plain decimal digits only (no sign, underscore, space or other base): ``5``, ``1000``, not ``+5``, ``1_000``."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"{what}, written in decimal digits only, got {text!r}")
    return int(text)


def _seed(text: str) -> int:
    value = _decimal(text, "seed must be an integer in [0, 2**32)")
    if not 0 <= value < SEED_MAX:
        raise argparse.ArgumentTypeError(f"seed must be an integer in [0, 2**32), got {text!r}")
    return value


def _positive_int(text: str) -> int:
    value = _decimal(text, "expected a positive integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _nonneg_int(text: str) -> int:
    return _decimal(text, "expected a non-negative integer")


def _add_distributed_args(r: argparse.ArgumentParser) -> None:
    """``workbench run``'s options for several processes."""
    d = r.add_argument_group("several processes (jax.distributed)")
    d.add_argument(
        "--distributed",
        action="store_true",
        help="call jax.distributed.initialize() first; sweeps shard over every process's devices and "
        "only process 0 writes outputs",
    )
    d.add_argument(
        "--coordinator",
        default=None,
        metavar="HOST:PORT",
        help="coordinator address (default $JAX_COORDINATOR_ADDRESS, or auto-detected on a cluster)",
    )
    d.add_argument(
        "--num-processes",
        type=_positive_int,
        default=None,
        metavar="N",
        help="number of processes (default $JAX_NUM_PROCESSES, or auto-detected)",
    )
    d.add_argument(
        "--process-id",
        type=_nonneg_int,
        default=None,
        metavar="I",
        help="this process's id (default $JAX_PROCESS_ID, or auto-detected)",
    )


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="workbench", description="JAX theory-and-simulation workbench.")
    p.add_argument("--version", action="version", version=f"workbench {_version()}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("list", help="list the results and their titles")
    r = sub.add_parser(
        "run", add_help=False, help="run one result and write figures/<name>/ (quick runs: a git-ignored cache)"
    )
    r.set_defaults(run_parser=r)  # for `workbench run --help`, which prints this parser's help
    r.add_argument("name", nargs="?")
    r.add_argument("-h", "--help", action="store_true", help="show this help (with NAME: its Config fields)")
    r.add_argument("--quick", action="store_true", help="the CI-sized preset (seconds)")
    r.add_argument(
        "--profile", action="store_true", help="per phase: tracing, lowering, compiling and the rest; programs compiled"
    )
    r.add_argument("--seed", type=_seed, default=0, help="PRNG seed, an integer in [0, 2**32) (default 0)")
    r.add_argument("--device", choices=DEVICES, default=None, help="where to run (default: the best JAX sees)")
    r.add_argument(
        "--out", default=None, help="output folder (default figures/<name> for the full preset, the cache for --quick)"
    )
    r.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a Config field of the preset, e.g. --set lam=50 --set lr_range=1e-3,0.1",
    )
    _add_distributed_args(r)
    a = sub.add_parser("all", help="run every result")
    a.add_argument("--quick", action="store_true")
    a.add_argument("--profile", action="store_true", help="profile every result (see `workbench run --help`)")
    a.add_argument("--seed", type=_seed, default=0)
    a.add_argument("--device", choices=DEVICES, default=None, help="where to run (default: the best JAX sees)")
    a.add_argument("--out", default=None, help="parent folder: each result goes to OUT/<name>")
    a.add_argument(
        "--jobs",
        type=_positive_int,
        default=1,
        help="run N results at once, each in its own process, the longest first (default 1: one after another); "
        "each result's claims table is printed when it ends",
    )
    c = sub.add_parser("claims", help="print the claims tables from the committed figures")
    c.add_argument("names", nargs="*")
    c.add_argument(
        "--readme",
        action="store_true",
        help="also rewrite the claims column of README.md's results table from the committed claims",
    )
    c.add_argument(
        "--rejudge",
        action="store_true",
        help="first decide the claims again on the committed data (no simulation; after a change of claims.py "
        "or figures.py only) and rewrite figures/<name>/'s claims, figures and manifest",
    )
    au = sub.add_parser("audit", help="run each result's mutants: every mutant must make a claim fail")
    au.add_argument("names", nargs="*")
    au.add_argument("--no-write", action="store_true", help="print only; do not update figures/audit/")
    au.add_argument(
        "--random",
        type=_positive_int,
        default=None,
        metavar="N",
        help="draw N mechanical mutants from the functions the quick run executes (sims.core.mutate); "
        "writes figures/audit/random/<name>.json",
    )
    au.add_argument("--seed", type=_seed, default=None, help="seed of the draw and of the runs (with --random; 0)")
    au.add_argument(
        "--missed",
        action="store_true",
        help="with --random: re-judge only the mutants that figures/audit/random/<name>.json records as missed "
        "(after a claim changed); prints, writes nothing",
    )
    au.add_argument(
        "--resume",
        action="store_true",
        help="with --random: continue an interrupted audit (the json is written after each mutant) instead of "
        "judging its mutants again",
    )
    au.add_argument(
        "--check",
        action="store_true",
        help="run no mutant: recompute each committed figures/audit/random/<name>.json's draw on the current code "
        "(one clean quick run each) and list the mutants that no longer match it, and check that each committed "
        "figures/audit/seeds/<name>.json gives the same claims at its first seed; exit 1 if any is stale or missing",
    )
    au.add_argument(
        "--seeds",
        default=None,
        metavar="A:B",
        help="the seed sweep: run the quick preset (--full: the full one) at seeds A..B-1 and tabulate each claim's "
        "outcome per seed; writes figures/audit/seeds/<name>.json; exit 1 unless every seed meets every expectation",
    )
    au.add_argument("--full", action="store_true", help="with --seeds: sweep the full preset")
    au.add_argument(
        "--collect",
        action="store_true",
        help="run nothing: rebuild figures/audit.json from figures/audit/*.json and print the table",
    )
    b = sub.add_parser("bench", help="time an op or sweep against its baseline")
    b.add_argument("names", nargs="*", default=[], help="benchmark names, e.g. `quant attention` (omit to list them)")
    b.add_argument("--quick", action="store_true", help="small sizes")
    nb = sub.add_parser(
        "notebook",
        help="open JupyterLab on notebooks/ (the .py files open as notebooks)",
        usage="workbench notebook [-h] [name] [-- JUPYTER-LAB-ARGS ...]",
        epilog="Arguments after `--` go to `jupyter lab`, e.g. "
        "`workbench notebook river_valley -- --no-browser --port 8890`.",
    )
    nb.add_argument("name", nargs="?", default=None, help="a result whose notebook to open")
    new = sub.add_parser(
        "new", help="write a new result on the template (sims/NAME/, tests/sims/test_NAME.py, notebooks/NAME.py)"
    )
    new.add_argument("name", help="the result's name: a lowercase Python identifier")
    return p


def _cmd_list() -> int:
    from jaxwb.sims.core import registry

    for name in registry.result_names():
        module = registry.get(name)
        print(f"{name:<22} {module.TITLE}")
    return 0


def _prepare(names, quick, out, overrides, *, per_result_out: bool):
    """Validate everything the user gave (names, --set, --out) before anything runs."""
    from jaxwb.sims.core import config, paths, registry

    preset = "quick" if quick else "full"
    jobs = []
    for name in names:
        module = registry.get(name)
        cfg = config.apply_overrides(module, preset, overrides)
        if out is None:
            target = paths.default_out_dir(module.NAME, preset)
        else:
            target = os.path.join(out, module.NAME) if per_result_out else out
        jobs.append((module, cfg, paths.check_out_dir(target, module.NAME)))
    return preset, jobs


def _cmd_run(
    names, quick, seed, out, overrides=(), *, per_result_out=False, write=True, profile=False, device=None, parallel=1
) -> int:
    from jaxwb.sims.core import devices, harness

    devices.select_device(device)  # an unavailable device: the one-line error before anything runs
    preset, jobs = _prepare(names, quick, out, overrides, per_result_out=per_result_out)
    t0 = time.perf_counter()
    if parallel > 1 and len(jobs) > 1:
        outcomes = _run_parallel(jobs, preset, seed, parallel, profile=profile, device=device)
    else:
        bar = ResultsBar(last_wall_times([module.NAME for module, _, _ in jobs], preset) if len(jobs) > 1 else {})
        execute = functools.partial(
            harness.execute, preset=preset, seed=seed, write=write, profile=profile, device=device
        )
        outcomes = []
        try:
            for module, cfg, target in jobs:
                outcomes.append(execute(module, out_dir=target, cfg=cfg))
                bar.done(module.NAME)
        finally:
            bar.close()
    if len(jobs) > 1:
        print(f"\n({time.perf_counter() - t0:.0f}s) " + expectation_report(outcomes))
    return 0 if all(o.as_expected for o in outcomes) else 1


def last_wall_times(names, preset: str) -> dict[str, float]:
    """The wall time (s) of each result's last ``preset`` run: the committed ``figures/<name>`` for the full preset,
    the quick output in the cache for the quick one; ``inf`` for a result never run."""
    from jaxwb.sims.core import paths
    from jaxwb.sims.core.outputs import load_manifest

    def wall(name: str) -> float:
        try:
            return float(load_manifest(paths.default_out_dir(name, preset)).get("wall_time_s", float("inf")))
        except (OSError, ValueError, TypeError, WorkbenchError):
            return float("inf")

    return {name: wall(name) for name in names}


def longest_first(walls: Mapping[str, float]) -> list[str]:
    """The results of ``walls`` (:func:`last_wall_times`) longest first; results never run go first, in the given
    order. The order in which ``workbench all --jobs N`` starts them, so the long ones do not end last."""
    return sorted(walls, key=lambda n: -walls[n])


def run_one(name: str, preset: str, seed: int, target: str, profile: bool, device: str | None):
    """One result of ``workbench all --jobs N``, in a worker process: returns its claims table and profile as text
    (printed by the parent when it ends, so two results' tables do not interleave) and its outcome without the
    arrays (written to ``target``)."""
    import contextlib
    import io
    import types

    from jaxwb.sims.core import harness, paths, registry

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)  # the parent's SIGTERM or Ctrl-C: the temporary folder removed
    paths.enable_compilation_cache()
    os.environ["WORKBENCH_PROGRESS"] = "0"  # the parent shows one bar over the results
    module = registry.get(name)
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        o = harness.execute(module, preset=preset, seed=seed, out_dir=target, profile=profile, device=device)
    return text.getvalue(), types.SimpleNamespace(name=o.name, claims=o.claims, as_expected=o.as_expected)


def worker_pool(n: int):
    """The pool of ``workbench all --jobs n``: fresh processes (spawned: JAX does not survive a fork)."""
    import concurrent.futures
    import multiprocessing

    return concurrent.futures.ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn"))


def _run_parallel(jobs, preset: str, seed: int, n: int, *, profile: bool, device: str | None) -> list:
    """Run ``jobs`` (module, cfg, target) ``n`` at a time in :func:`worker_pool`; the outcomes in ``jobs`` order."""
    import concurrent.futures
    import multiprocessing

    targets = {module.NAME: str(target) for module, _, target in jobs}
    walls = last_wall_times(list(targets), preset)
    order = longest_first(walls)
    done = {}
    bar = ResultsBar(walls, jobs=n)
    pool = worker_pool(n)
    try:
        futures = {pool.submit(run_one, name, preset, seed, targets[name], profile, device): name for name in order}
        for future in concurrent.futures.as_completed(futures):
            text, outcome = future.result()  # a simulation's error: its traceback, the other results abandoned
            done[futures[future]] = outcome
            print(text, end="", flush=True)
            bar.done(futures[future])
    except BaseException:  # an error, Ctrl-C or SIGTERM: stop the workers (each removes its temporary folder)
        pool.shutdown(wait=False, cancel_futures=True)
        for child in multiprocessing.active_children():
            child.terminate()
        raise
    finally:
        pool.shutdown(wait=True)
        bar.close()
    return [done[module.NAME] for module, _, _ in jobs]


def expectation_report(outcomes) -> str:
    """One paragraph: how many results meet every expectation, the expected failures, and every claim whose
    outcome differs from its expectation (a regression or an unexpected pass)."""
    lines = [f"{sum(o.as_expected for o in outcomes)}/{len(outcomes)} results: every claim as expected"]
    for o in outcomes:
        for c in o.claims:
            if c.status == "XFAIL":
                lines.append(f"  expected failure  {o.name}: {c.statement} ({c.reason})")
    for o in outcomes:
        for c in o.claims:
            if not c.as_expected:
                what = "FAILS (expected to pass)" if c.status == "FAIL" else "PASSES (expected to fail)"
                lines.append(f"  {what:<25} {o.name}: {c.statement}")
    return "\n".join(lines)


def _cmd_claims(names) -> int:
    from jaxwb.sims.core import claims as core_claims
    from jaxwb.sims.core import outputs, paths, registry

    names = names or registry.result_names()
    for name in names:
        registry.get(name)  # unknown names: the one-line error before any output
    bad = 0
    every = []
    for name in names:
        try:
            claims = outputs.load_claims(name)
        except OutputError as err:
            print(f"workbench: error: {' '.join(str(err).split())}; rerun `workbench run {name}`", file=sys.stderr)
            bad += 1
            continue
        if claims is None:
            print(f"{name}: no committed figures/{name}/claims.json (run `workbench run {name}`)")
            bad += 1
            continue
        print(core_claims.format_claims(name, claims))
        every += claims
        problems = outputs.verify_outputs(paths.FIGURES_DIR / name)
        for problem in problems:
            print(f"workbench: error: {problem}; rerun `workbench run {name}`", file=sys.stderr)
        bad += bool(problems) or not all(c.as_expected for c in claims)
    if len(names) > 1:
        from jaxwb.sims.core.claims import chance_failures

        print(f"\nall results: {sum(c.passed for c in every)}/{len(every)} claims pass; {chance_failures(every)}")
    off = [c for c in every if not c.as_expected]
    if bad:
        why = f"{len(off)} claim(s) not as expected" + (" (listed above as FAIL / XPASS)" if off else "")
        print(f"\nexit 1: {why}; {bad} of {len(names)} result(s) need attention")
    return 1 if bad else 0


AUDIT_MODES = {  # mode flag -> the other flags that apply to it ("names": result names)
    "--collect": (),
    "--check": ("names",),
    "--random": ("names", "--seed", "--missed", "--resume", "--no-write"),
    "--seeds": ("names", "--full", "--no-write"),
    "": ("names", "--no-write"),  # the declared mutants
}


def _check_audit_flags(args) -> None:
    """Refuse (exit 2) a flag that does not apply to the audit mode asked for, instead of ignoring it."""
    given = {
        "names": bool(args.names),
        "--collect": args.collect,
        "--check": args.check,
        "--random": args.random is not None,
        "--seeds": args.seeds is not None,
        "--full": args.full,
        "--seed": args.seed is not None,
        "--missed": args.missed,
        "--resume": args.resume,
        "--no-write": args.no_write,
    }
    modes = [m for m in AUDIT_MODES if m and given[m]]
    if len(modes) > 1:
        raise WorkbenchError(f"audit: {modes[0]} and {modes[1]} are different modes; give one")
    mode = modes[0] if modes else ""
    for flag, on in given.items():
        if on and flag != mode and flag not in AUDIT_MODES[mode]:
            what = "result names" if flag == "names" else flag
            if mode == "" and flag in AUDIT_MODES["--random"]:
                raise WorkbenchError(f"audit: {what} applies to --random N (the mechanical mutants) only")
            if flag == "--full":
                raise WorkbenchError(f"audit {mode or '(declared mutants)'}: --full applies to --seeds A:B only")
            raise WorkbenchError(f"audit {mode}: {what} does not apply to this mode")
    if args.missed and args.resume:
        raise WorkbenchError("audit --random: --missed (re-judge, write nothing) and --resume exclude each other")


def _cmd_audit(names, write=True) -> int:
    from jaxwb.sims.core import audit, paths, registry

    names = names or registry.result_names()
    modules = [registry.get(n) for n in names]
    summaries = []
    for module in modules:
        print(f"{module.NAME}: clean quick run + {len(getattr(module, 'MUTANTS', ()))} mutant(s)", flush=True)
        summaries.append(audit.audit_result(module))
    print()
    print(audit.format_audit_table(summaries))
    if write:
        audit.write_audit(summaries, paths.FIGURES_DIR)
        print(f"\nwrote {paths.FIGURES_DIR / 'audit'}/<result>.json and {paths.FIGURES_DIR / 'audit.json'}")
    missed = [(s["result"], m["mutant"]) for s in summaries for m in s["mutants"] if not m["caught"]]
    few = [s["result"] for s in summaries if len(s["mutants"]) < 3]
    if missed:
        print(f"MISSED mutants: {missed}")
    if few:
        print(f"results with fewer than 3 mutants: {few}")
    refused = [s["result"] for s in summaries if s.get("refused")]
    if refused:
        print(f"not judged (the clean run fails claims not expected to fail): {refused}")
    return 1 if missed or few or refused else 0


def _random_audit_path(name: str):
    """The committed random audit of result ``name``: figures/audit/random/<name>.json."""
    from jaxwb.sims.core import paths

    return paths.FIGURES_DIR / "audit" / "random" / f"{name}.json"


def _cmd_check_audits(names) -> int:
    from jaxwb.sims.core import audit, outputs, presets, registry, seeds

    modules = [registry.get(name) for name in names or registry.result_names()]  # unknown names: before any run
    # every committed file is read (a damaged one is one line, exit 1) before any run
    randoms = [_load_random_audit(_random_audit_path(m.NAME)) for m in modules]
    sweeps = [seeds.load(p) if (p := _seeds_path(m.NAME)).exists() else None for m in modules]
    stale_any = False
    for module, summary, sweep in zip(modules, randoms, sweeps, strict=True):
        name = module.NAME
        lines: list[str] = []
        quick_claims: dict[int, list] = {}
        if summary is None:
            lines.append(f"no committed random audit ({_random_audit_path(name)})")
        else:
            from jaxwb.sims.core import mutate

            def remember(claims: list, seed: int = summary.get("seed", 0), found=quick_claims) -> None:
                found.setdefault(seed, claims)  # the quick run's claims, for the seed sweep's check below

            lines += mutate.stale_mutants(module, summary, on_claims=remember)
        if sweep is None:
            lines.append(f"no committed seed sweep ({_seeds_path(name)})")
        else:
            quick = sweep.get("quick")
            fresh = None
            if quick and quick["seeds"]:
                first = quick["seeds"][0]
                if first not in quick_claims:
                    cfg = presets.get_config(module, "quick")
                    quick_claims[first] = audit.claims_of_run(module, cfg, seed=first)
                fresh = quick_claims[first]
            lines += seeds.stale(sweep, fresh, outputs.load_claims(name))
        print(f"{name}: {'STALE' if lines else 'current'}", flush=True)
        for line in lines:
            print(f"  {line}", flush=True)
        stale_any = stale_any or bool(lines)
    return 1 if stale_any else 0


def _load_random_audit(path):
    """The committed random audit at ``path`` (checked), or None when there is none."""
    from jaxwb.sims.core import mutate

    return mutate.load_random_audit(path) if path.exists() else None


def _seeds_path(name: str):
    """The committed seed sweep of result ``name``: figures/audit/seeds/<name>.json."""
    from jaxwb.sims.core import paths

    return paths.FIGURES_DIR / "audit" / "seeds" / f"{name}.json"


def _cmd_seed_sweep(names, seeds_text: str, preset: str, write: bool = True) -> int:
    import json

    from jaxwb.sims.core import outputs, registry, seeds

    seed_list = seeds.parse_seeds(seeds_text)
    modules = [registry.get(name) for name in names or registry.result_names()]
    committed = {m.NAME: seeds.load(p) if (p := _seeds_path(m.NAME)).exists() else {} for m in modules}
    ok = True
    for module in modules:
        print(f"{module.NAME}: {preset} preset at seeds {seeds_text} ({len(seed_list)} runs)", flush=True)

        def on_seed(seed, claims, wall):
            off = [c for c in claims if not c.as_expected]
            what = "every expectation met" if not off else "; ".join(f"{c.status} {c.statement}" for c in off)
            print(f"  seed {seed:>4} ({wall:6.1f} s): {what}", flush=True)

        s = seeds.sweep(module, seed_list, preset=preset, on_seed=on_seed)
        print(seeds.summary_line(s), flush=True)
        flips = seeds.format_flips(s)
        if flips:
            print(flips, flush=True)
        ok = ok and all(s["met_every_expectation"])
        if write:
            path = _seeds_path(module.NAME)
            path.parent.mkdir(parents=True, exist_ok=True)
            outputs.atomic_write_text(path, json.dumps({**committed[module.NAME], preset: s}, indent=1) + "\n")
    return 0 if ok else 1


def _cmd_random_audit(names, n, seed, write=True, missed=False, resume=False) -> int:
    import json

    from jaxwb.sims.core import mutate, outputs, registry

    modules = [registry.get(name) for name in names or registry.result_names()]
    worst = 1.0
    for module in modules:
        only = None
        if missed:
            committed = _random_audit_path(module.NAME)
            if not committed.exists():
                raise WorkbenchError(
                    f"--missed: {committed} does not exist; run `workbench audit {module.NAME} --random N` first"
                )
            only = {
                f"{m['mutant']}#{m['index']}" if "index" in m else m["mutant"]
                for m in mutate.load_random_audit(committed)["mutants"]
                if m["verdict"] == "missed"
            }
            write = False
            if not only:
                print(f"{module.NAME}: {committed.name} records no missed mutant; nothing to re-judge", flush=True)
                continue
            print(f"{module.NAME}: re-judging the {len(only)} missed mutant(s) of {committed.name}", flush=True)
        else:
            print(f"{module.NAME}: {n} mechanical mutant(s), seed {seed}", flush=True)
        path = _random_audit_path(module.NAME)
        previous = mutate.load_random_audit(path) if resume and path.exists() else {}
        reuse = previous["mutants"] if previous.get("complete") is False and previous.get("seed") == seed else None
        if resume and reuse is None:
            print(f"  nothing to resume in {path.name} (absent, complete, or another seed): judging all", flush=True)

        def save(summary, path=path):
            path.parent.mkdir(parents=True, exist_ok=True)
            outputs.atomic_write_text(path, json.dumps(summary, indent=2) + "\n")

        summary = mutate.random_audit(
            module, n, seed=seed, only=only, resume=reuse, on_progress=save if write and only is None else None
        )
        if summary.get("not_found"):
            print(f"  sites no longer found (source moved): {summary['not_found']}", flush=True)
        print(mutate.format_random_audit(summary), flush=True)
        if summary.get("refused"):
            worst = 0.0
        elif summary["non_equivalent"]:
            worst = min(worst, summary["caught"] / summary["non_equivalent"])
        if write:
            save(summary)
    return 0 if worst >= RANDOM_AUDIT_GOAL else 1


def _cmd_bench(names, quick) -> int:
    from jaxwb.sims.core import registry, timing

    if not names:
        print("\n".join(registry.bench_names()))
        return 0
    benches = [(name, registry.get_bench(name)) for name in names]  # unknown names: one line, before any timing
    for name, bench in benches:
        if len(benches) > 1:
            print(f"== {name}")
        print(timing.format_bench(bench(quick=quick)))
    return 0


def _cmd_notebook(name, lab_args: list[str]) -> int:
    import shlex

    from jaxwb.sims.core import notebook, paths, registry

    target = "notebooks"
    if name is not None:
        registry.get(name)
        target = f"notebooks/{name}.py"
    cmd = notebook.lab_command(target, *lab_args)
    if "--allow-root" in cmd and "--allow-root" not in lab_args:
        print("workbench: running as root: added --allow-root (Jupyter refuses root without it)", flush=True)
    print(shlex.join(cmd), flush=True)
    env = {**os.environ, **notebook.lab_env()}
    os.chdir(paths.REPO_ROOT)
    try:
        os.execvpe(cmd[0], cmd, env)
    except FileNotFoundError:
        raise WorkbenchError("JupyterLab is not installed: pip install -e '.[notebook]'") from None
    return 0


def _cmd_new(name: str) -> int:
    from jaxwb.sims.core import paths, scaffold

    try:
        written = scaffold.write_result(name, paths.REPO_ROOT)
    except (ValueError, FileExistsError) as err:
        raise WorkbenchError(str(err)) from None
    print(scaffold.next_steps(name, written, paths.REPO_ROOT))
    return 0


def _run_help(run_parser: argparse.ArgumentParser, name) -> int:
    print(run_parser.format_help())
    if name is None:
        print("`workbench run NAME --help` lists NAME's Config fields (types, defaults, docs).")
        return 0
    from jaxwb.sims.core import config, registry

    print(config.describe_config(registry.get(name)))
    return 0


def _init_distributed(args) -> None:
    from jaxwb.sims.core import distributed

    distributed.initialize(coordinator=args.coordinator, num_processes=args.num_processes, process_id=args.process_id)
    from jaxwb.sims.core import devices

    devices.check_platforms()


def _on_sigterm(signum, frame):
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)

    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    lab_args: list[str] = []
    if argv[:1] == ["notebook"] and "--" in argv:  # workbench notebook [NAME] -- ARGS: ARGS go to `jupyter lab`
        cut = argv.index("--")
        argv, lab_args = argv[:cut], argv[cut + 1 :]
    try:
        try:
            args = parser.parse_args(argv)
        except _UsageError as err:
            print(f"workbench: error: {err}", file=sys.stderr)
            return EXIT_USAGE
        if args.command == "list":
            return _cmd_list()
        if args.command == "new":
            return _cmd_new(args.name)
        if args.command == "audit":
            _check_audit_flags(args)  # before JAX starts: a flag that does not apply is a usage error
        if args.command in ("run", "all", "audit", "bench") and not getattr(args, "collect", False):
            from jaxwb.sims.core import devices, paths

            if not getattr(args, "distributed", False):  # jax.distributed must start before any backend
                devices.check_platforms()
            paths.enable_compilation_cache()
        if args.command == "audit" and not args.collect:
            # the shipped trained models, before any audited run: a run loads them instead of training, and the
            # copying stays outside the runs whose executed code the random audit draws its mutants from
            from jaxwb.sims.core import registry
            from jaxwb.sims.core.weights import seed_model_cache

            for name in args.names or registry.result_names():
                seed_model_cache(name)
        if args.command == "run":
            if args.help:
                return _run_help(args.run_parser, args.name)
            if args.name is None:
                raise WorkbenchError("run needs a result NAME (see `workbench list`)")
            if args.distributed:
                _init_distributed(args)
            elif args.coordinator or args.num_processes or args.process_id is not None:
                raise WorkbenchError("--coordinator/--num-processes/--process-id need --distributed")
            from jaxwb.sims.core import distributed

            return _cmd_run(
                [args.name],
                args.quick,
                args.seed,
                args.out,
                args.overrides,
                write=distributed.is_writer(),
                profile=args.profile,
                device=args.device,
            )
        if args.command == "all":
            from jaxwb.sims.core import registry

            return _cmd_run(
                registry.result_names(),
                args.quick,
                args.seed,
                args.out,
                per_result_out=True,
                profile=args.profile,
                device=args.device,
                parallel=args.jobs,
            )
        if args.command == "claims":
            if args.rejudge:
                from jaxwb.sims.core import outputs, registry

                for name in args.names or registry.result_names():
                    outputs.rejudge_outputs(registry.get(name))
                    print(f"{name}: claims decided again on the committed data, figures/{name}/ rewritten")
            if args.readme:
                from jaxwb.sims.core import readme

                print(f"README results table updated: {', '.join(readme.update_results_table())}")
                if readme.update_random_audit_table():
                    print("README mechanical-mutant table updated from figures/audit/random/")
            return _cmd_claims(args.names)
        if args.command == "audit":
            if args.collect:
                from jaxwb.sims.core import audit, paths

                merged = audit.collect(paths.FIGURES_DIR)
                print(audit.format_audit_table(merged))
                return 0
            if args.check:
                return _cmd_check_audits(args.names)
            if args.seeds is not None:
                return _cmd_seed_sweep(args.names, args.seeds, "full" if args.full else "quick", not args.no_write)
            if args.random is not None:
                seed = 0 if args.seed is None else args.seed
                return _cmd_random_audit(
                    args.names, args.random, seed, write=not args.no_write, missed=args.missed, resume=args.resume
                )
            return _cmd_audit(args.names, write=not args.no_write)
        if args.command == "bench":
            return _cmd_bench(args.names, args.quick)
        if args.command == "notebook":
            return _cmd_notebook(args.name, lab_args)
    except WorkbenchError as err:  # user errors and output errors only: anything else keeps its traceback
        print(f"workbench: error: {' '.join(str(err).split())}", file=sys.stderr)
        return err.exit_status
    except KeyboardInterrupt:
        print("workbench: interrupted (the previous output, if any, is unchanged)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print("workbench: terminated (the previous output, if any, is unchanged)", file=sys.stderr)
        return EXIT_TERMINATED
    return EXIT_USAGE


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())
