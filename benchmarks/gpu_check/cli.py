"""The command line: ``python -m benchmarks.gpu_check [--dry-run] [--out DIR] ...`` (see the package doc)."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.gpu_check.autotune import Recorder, Settings, error_line
from benchmarks.gpu_check.bench_attention import bench_attention, bench_block_sparse
from benchmarks.gpu_check.bench_quant import bench_fwht, bench_inquant, bench_matmul, bench_quant
from benchmarks.gpu_check.peaks import measure_ceilings, peaks_for
from benchmarks.gpu_check.plugin import REPO_ROOT, run_tests
from benchmarks.gpu_check.report import goals, plot, table

# Share of the benchmark budget each section may spend autotuning (the first config always runs).
SECTION_SHARES = dict(attention=0.25, block_sparse=0.25, quant=0.2, fwht=0.1, inquant=0.05, matmul=0.15)


def _description() -> str:
    """The first line of the package's docstring."""
    return (importlib.import_module(__package__).__doc__ or "").split("\n")[0]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check", description=_description())
    ap.add_argument("--dry-run", action="store_true", help="CPU: interpret mode, tiny sizes, temp output dir")
    ap.add_argument("--out", type=Path, default=None, help="output dir (default figures/kernels_gpu, dry: temp)")
    ap.add_argument("--skip-tests", action="store_true", help="do not run the pytest step")
    ap.add_argument("--budget-s", type=float, default=None, help="benchmark wall budget (default 270 s GPU)")
    ap.add_argument("--test-timeout-s", type=float, default=None, help="pytest step timeout (default 180 s GPU)")
    ap.add_argument("--sections", default="attention,block_sparse,quant,fwht,inquant,matmul")
    ap.add_argument("--skip-impls", default="", help="implementations not measured, e.g. mosaic_gpu,jax_fa3_mgpu")
    ap.add_argument("--fwht-d", default=None, help="FWHT lengths, e.g. 4096 (default 256,1024,4096,16384)")
    ap.add_argument("--matmul-m", default=None, help="fp4_matmul rows M, e.g. 1,16 (default 1,16,4096)")
    ap.add_argument("--no-plot", action="store_true", help="write the json only (plot later with --merge)")
    ap.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        default=None,
        metavar="JSON",
        help="combine the json of several runs (and --tests-log) into --out's json/png and print the table",
    )
    ap.add_argument("--tests-log", type=Path, default=None, help="with --merge: a `pytest -v` log of the test step")
    ap.add_argument("--ceilings-only", action="store_true", help="measure the ceilings, write OUT/ceilings.json, stop")
    ap.add_argument("--ceilings-json", type=Path, default=None, help="use these measured ceilings (--ceilings-only)")
    ap.add_argument("pytest_args", nargs="*", help="after --: pytest arguments replacing the default selection")
    a = ap.parse_args(argv)
    if a.merge:
        return merge(a.merge, a.tests_log, a.out or REPO_ROOT / "figures/kernels_gpu")

    import jax

    dev = jax.devices()[0]
    on_gpu = dev.platform == "gpu" and not a.dry_run
    if dev.platform != "gpu" and not a.dry_run:
        ap.error(f"no GPU (platform {dev.platform!r}): run with --dry-run on CPU")
    out = a.out or (Path(tempfile.mkdtemp(prefix="kernels_gpu_")) if a.dry_run else REPO_ROOT / "figures/kernels_gpu")
    s = Settings(
        dry_run=a.dry_run,
        out=Path(out),
        budget_s=a.budget_s or (60.0 if a.dry_run else 270.0),
        skip_tests=a.skip_tests,
        pytest_args=tuple(a.pytest_args),
        reps=1 if a.dry_run else 10,
        trials=1 if a.dry_run else 3,
        skip_impls=frozenset(filter(None, a.skip_impls.split(","))),
        fwht_ds=_ints(a.fwht_d),
        matmul_ms=_ints(a.matmul_m),
    )
    table_name, peaks = peaks_for(dev.device_kind)
    ceilings = _ceilings(a, Path(out))
    if a.ceilings_only:
        return dict(measured_ceilings=ceilings)
    rec = Recorder(s, peaks, ceilings)
    sections = set(a.sections.split(","))
    t_start = time.perf_counter()
    dense = {}
    import jaxlib

    def make_result(tests, bench_s, partial):
        return dict(
            device=dict(kind=dev.device_kind, platform=dev.platform, name=str(dev), peak_table=table_name),
            jax_version=jax.__version__,
            jaxlib_version=jaxlib.__version__,
            dry_run=s.dry_run,
            partial=partial,
            peaks=peaks,
            measured_ceilings=ceilings,
            records=rec.records,
            tuned=rec.tuned,
            goals=goals(rec.records, peaks, s.dry_run),
            tests=tests,
            bench_wall_s=bench_s,
            wall_s=time.perf_counter() - t_start,
            command=" ".join(["python -m benchmarks.gpu_check", *(argv if argv is not None else sys.argv[1:])]),
        )

    s.out.mkdir(parents=True, exist_ok=True)
    save = lambda r: _write_json(s.out, r)
    # every record is saved as it is measured: a step killed by its time limit keeps all it measured
    rec.on_add = lambda: save(make_result(None, time.perf_counter() - t_start, partial=True))
    for name, fn in (
        ("attention", lambda: bench_attention(rec, s, on_gpu)),
        ("block_sparse", lambda: bench_block_sparse(rec, s, on_gpu, dense)),
        ("quant", lambda: bench_quant(rec, s)),
        ("inquant", lambda: bench_inquant(rec, s)),
        ("matmul", lambda: bench_matmul(rec, s)),
        ("fwht", lambda: bench_fwht(rec, s)),  # last: the largest compiles (dense rotations)
    ):
        if name not in sections:
            continue
        t, c = time.perf_counter(), time.process_time()
        s.start_section(SECTION_SHARES[name])
        try:
            res = fn()
            if name == "attention":
                dense.update(res)
        except Exception as e:
            rec.add(name, name, "-", "-", error=error_line(e))
        print(
            f"[gpu_check] {name}: {time.perf_counter() - t:.1f}s ({time.process_time() - c:.1f}s CPU)", file=sys.stderr
        )
        save(make_result(None, time.perf_counter() - t_start, partial=True))  # a crash later keeps what was measured
    bench_s = time.perf_counter() - t_start
    tests = run_tests(s, a.test_timeout_s or (120.0 if a.dry_run else 180.0))
    result = make_result(tests, bench_s, partial=False)
    save(result)
    if not a.no_plot:
        plot(result, s.out / "kernels_gpu.png")
    print(table(result))
    print(f"[gpu_check] wrote {s.out}/kernels_gpu.{{json,png}} in {result['wall_s']:.1f}s", file=sys.stderr)
    return result


def _ceilings(a, out: Path) -> dict:
    """Measured ceilings: read from ``--ceilings-json`` (a step of its own ran them first), else measured now;
    ``--ceilings-only`` writes them to OUT/ceilings.json."""
    if a.ceilings_json is not None and a.ceilings_json.exists():
        ceilings = json.loads(a.ceilings_json.read_text())
    else:
        try:
            ceilings = measure_ceilings(a.dry_run)
        except Exception as e:
            ceilings = dict(error=error_line(e))
    print(f"[gpu_check] measured ceilings: {ceilings}", file=sys.stderr)
    if a.ceilings_only:
        out.mkdir(parents=True, exist_ok=True)
        (out / "ceilings.json").write_text(json.dumps(ceilings, indent=1))
    return ceilings


def _ints(text: str | None) -> tuple[int, ...] | None:
    return None if text is None else tuple(int(v) for v in text.split(","))


def _write_json(out: Path, result: dict) -> None:
    (out / "kernels_gpu.json").write_text(json.dumps(result, indent=1, default=str))


def parse_pytest_log(path: Path) -> dict:
    """The test step from a ``pytest -v`` log (which survives a timeout, unlike a summary): counts of PASSED,
    FAILED, SKIPPED, ERROR lines, the failed test ids and the final summary line if pytest got to write it."""
    text = path.read_text(errors="replace")
    counts = {k: 0 for k in ("PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL")}
    failed = []
    for line in text.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):  # the short summary repeats the failures
            continue
        for k in counts:
            if f" {k}" in line and "::" in line:
                counts[k] += 1
                if k in ("FAILED", "ERROR"):
                    failed.append(next(w for w in line.split() if "::" in w))
                break
    summary = [ln for ln in text.splitlines() if ln.startswith("=") and (" passed" in ln or " failed" in ln)]
    return dict(
        log=str(path.name),
        forced="triton",
        counts=counts,
        failed=sorted(set(failed)),
        summary=summary[-1].strip("= ") if summary else f"no summary (timed out?): {counts}",
        tail=text[-1500:],
    )


def merge(paths: list[Path], tests_log: Path | None, out: Path) -> dict:
    """One result from several runs of the check (split so that a hang in one kernel family cannot cost the
    others, or re-run in part): records and tuned configs joined, a later part's record replacing an earlier
    one of the same section, op, implementation and shape (each record keeps its ``part`` index); device,
    versions and ceilings from the first, goals recomputed; then the json, the png and the table as a single
    run writes them."""
    parts = [json.loads(Path(p).read_text()) for p in paths]
    first = parts[0]
    result = {k: v for k, v in first.items() if k not in ("records", "tuned", "goals", "tests")}
    latest = {}  # a later part's record replaces an earlier one of the same (section, op, impl, shape)
    for i, p in enumerate(parts):
        for r in p["records"]:
            latest[(r.get("section"), r.get("op"), r.get("impl"), r.get("shape"))] = dict(r, part=i)
    result["records"] = list(latest.values())
    result["tuned"] = {k: v for p in parts for k, v in p["tuned"].items()}
    result["runs"] = [dict(command=p["command"], wall_s=p["wall_s"], partial=p["partial"]) for p in parts]
    result["partial"] = any(p["partial"] for p in parts)
    result["goals"] = goals(result["records"], result["peaks"], result["dry_run"])
    result["tests"] = (
        parse_pytest_log(tests_log) if tests_log else next((p["tests"] for p in parts if p["tests"]), None)
    )
    out.mkdir(parents=True, exist_ok=True)
    _write_json(out, result)
    plot(result, out / "kernels_gpu.png")
    print(table(result))
    return result
