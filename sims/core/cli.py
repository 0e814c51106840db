"""``workbench``: list, run and check the results; benchmark the kernels and sweeps.

    workbench list
    workbench run NAME [--quick] [--seed N] [--out DIR] [--set FIELD=VALUE ...]
    workbench all [--quick] [--seed N]
    workbench claims [NAME ...]
    workbench audit [NAME ...]
    workbench bench NAME [--quick]

User errors (unknown names, bad parameters) print one line ``workbench: error: ...`` and exit with status 2.
"""

from __future__ import annotations

import argparse
import sys
import time


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed must be a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"seed must be a non-negative integer, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="workbench", description="JAX theory-and-simulation workbench.")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the results and their titles")
    r = sub.add_parser("run", help="run one result and write figures/<name>/ (quick runs: a git-ignored cache)")
    r.add_argument("name")
    r.add_argument("--quick", action="store_true", help="the CI-sized preset (seconds)")
    r.add_argument("--seed", type=_seed, default=0)
    r.add_argument("--out", default=None,
                   help="output folder (default figures/<name> for the full preset, the cache for --quick)")
    r.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a Config field of the preset, e.g. --set lam=50 (repeatable)")
    a = sub.add_parser("all", help="run every result")
    a.add_argument("--quick", action="store_true")
    a.add_argument("--seed", type=_seed, default=0)
    c = sub.add_parser("claims", help="print the claims tables from the committed figures")
    c.add_argument("names", nargs="*")
    au = sub.add_parser("audit", help="run each result's mutants: every mutant must make a claim fail")
    au.add_argument("names", nargs="*")
    au.add_argument("--no-write", action="store_true", help="print only; do not update figures/audit/")
    au.add_argument("--collect", action="store_true",
                    help="run nothing: rebuild figures/audit.json and the README table from figures/audit/*.json")
    b = sub.add_parser("bench", help="time an op or sweep against its baseline")
    b.add_argument("name", nargs="?", default=None, help="benchmark name (omit to list them)")
    b.add_argument("--quick", action="store_true", help="small sizes")
    return p


def _cmd_list() -> int:
    from sims.core import registry

    for name in registry.result_names():
        module = registry.get(name)
        print(f"{name:<22} {module.TITLE}")
    return 0


def _cmd_run(names, quick, seed, out, overrides=()) -> int:
    from sims.core import harness, registry

    failed = []
    t0 = time.perf_counter()
    preset = "quick" if quick else "full"
    for name in names:
        module = registry.get(name)
        cfg = harness.get_config(module, preset, **harness.parse_overrides(overrides))
        outcome = harness.execute(module, preset=preset, seed=seed, out_dir=out, cfg=cfg)
        if not outcome.passed:
            failed.append(name)
    if len(names) > 1:
        print(f"\n{len(names) - len(failed)}/{len(names)} results pass all claims "
              f"({time.perf_counter() - t0:.0f}s)" + (f"; failing: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def _cmd_claims(names) -> int:
    from sims.core import harness, registry

    names = names or registry.result_names()
    bad = 0
    for name in names:
        if name not in registry.result_names():
            registry.get(name)  # raises the one-line error
        claims = harness.load_claims(name)
        if claims is None:
            print(f"{name}: no committed figures/{name}/claims.json (run `workbench run {name}`)")
            bad += 1
            continue
        print(harness.format_claims(name, claims))
        problems = harness.verify_outputs(harness.FIGURES_DIR / name)
        for problem in problems:
            print(f"  warning: figures/{name}: {problem}; rerun `workbench run {name}`", file=sys.stderr)
        stale = [p for p in problems if "no content hash" not in p]
        bad += bool(stale) or not all(c.passed for c in claims)
    return 1 if bad else 0


def _cmd_audit(names, write=True) -> int:
    from sims.core import audit, harness, registry

    names = names or registry.result_names()
    modules = [registry.get(n) for n in names]
    summaries = []
    for module in modules:
        print(f"{module.NAME}: clean quick run + {len(getattr(module, 'MUTANTS', ()))} mutant(s)", flush=True)
        summaries.append(audit.audit_result(module))
    print()
    print(audit.format_audit_table(summaries))
    if write:
        audit.write_audit(summaries, harness.FIGURES_DIR, harness.REPO_ROOT / "README.md")
        print(f"\nwrote {harness.FIGURES_DIR / 'audit'}/<result>.json and {harness.FIGURES_DIR / 'audit.json'}")
    missed = [(s["result"], m["mutant"]) for s in summaries for m in s["mutants"] if not m["caught"]]
    few = [s["result"] for s in summaries if len(s["mutants"]) < 3]
    if missed:
        print(f"MISSED mutants: {missed}")
    if few:
        print(f"results with fewer than 3 mutants: {few}")
    return 1 if missed or few else 0


def _cmd_bench(name, quick) -> int:
    from sims.core import harness, registry

    if name is None:
        print("\n".join(registry.bench_names()))
        return 0
    rows = registry.get_bench(name)(quick=quick)
    print(harness.format_bench(rows))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from sims.core.harness import WorkbenchError

    try:
        if args.command == "list":
            return _cmd_list()
        if args.command == "run":
            return _cmd_run([args.name], args.quick, args.seed, args.out, args.overrides)
        if args.command == "all":
            from sims.core import registry

            return _cmd_run(registry.result_names(), args.quick, args.seed, None)
        if args.command == "claims":
            return _cmd_claims(args.names)
        if args.command == "audit":
            if args.collect:
                from sims.core import audit, harness

                merged = audit.collect(harness.FIGURES_DIR, harness.REPO_ROOT / "README.md")
                print(audit.format_audit_table(merged))
                return 0
            return _cmd_audit(args.names, write=not args.no_write)
        if args.command == "bench":
            return _cmd_bench(args.name, args.quick)
    except (WorkbenchError, ValueError) as err:
        print(f"workbench: error: {err}", file=sys.stderr)
        return 2
    return 2


if __name__ == "__main__":
    sys.exit(main())
