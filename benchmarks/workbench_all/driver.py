"""Run every full preset in its own process on one device, save a record after each, compare claim outcomes.

The record (``gpu.json``) holds: the device and JAX version; per result the subprocess's wall time, the run
phase's wall time from the manifest, the exit status (``ok``, ``timeout``, ``error``), every claim's status, and
its comparison with the committed CPU run: ``identical`` or the list of claims whose status differs, each with
both measurements, so every difference can be explained.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jaxwb.sims.core import registry
from jaxwb.sims.core.outputs import load_claims
from jaxwb.sims.core.paths import FIGURES_DIR, REPO_ROOT

DEFAULT_RECORD = FIGURES_DIR / "workbench_all" / "gpu.json"


def committed_wall(name: str) -> float:
    """The committed full preset's run time (manifest ``wall_time_s``), +inf when there is none."""
    try:
        return float(json.loads((FIGURES_DIR / name / "manifest.json").read_text())["wall_time_s"])
    except (OSError, KeyError, ValueError):
        return float("inf")


def compare_claims(new: list[dict], old: list[dict]) -> dict:
    """Each claim's status in ``new`` against ``old`` (``claims.json`` entries), matched by position and statement.

    Returns ``{"identical": bool, "differences": [...]}``; a difference names the statement, both statuses and both
    measurements; claims present on one side only are differences too."""
    diffs = []
    for i in range(max(len(new), len(old))):
        a = new[i] if i < len(new) else None
        b = old[i] if i < len(old) else None
        if a is None or b is None or a["statement"] != b["statement"]:
            diffs.append(
                {
                    "index": i,
                    "new": a and a["statement"],
                    "committed": b and b["statement"],
                    "why": "claim lists differ",
                }
            )
            continue
        if a["status"] != b["status"]:
            diffs.append(
                {
                    "index": i,
                    "statement": a["statement"],
                    "status": [a["status"], b["status"]],
                    "measured": [a["measured"], b["measured"]],
                    "ci": [a["ci"], b["ci"]],
                    "predicted": a["predicted"],
                }
            )
    return {"identical": not diffs, "differences": diffs}


def run_one(name: str, *, device: str, quick: bool, out: Path, timeout_s: float) -> dict:
    """One result in its own process (``workbench run``); its record, with the claims compared when it finished."""
    cmd = [sys.executable, "-m", "jaxwb.sims.core.cli", "run", name, "--device", device, "--out", str(out), "--profile"]
    if quick:
        cmd.append("--quick")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "wall_s": round(time.perf_counter() - t0, 1), "timeout_s": timeout_s}
    record: dict = {"wall_s": round(time.perf_counter() - t0, 1), "exit": proc.returncode}
    if not (out / "manifest.json").exists():
        return {**record, "status": "error", "stderr_tail": proc.stderr[-2000:]}
    manifest = json.loads((out / "manifest.json").read_text())
    claims = json.loads((out / "claims.json").read_text())
    committed = [c.to_json() for c in load_claims(name) or []]
    return {
        **record,
        "status": "ok",
        "run_wall_s": manifest["wall_time_s"],
        "device": manifest.get("device"),
        "profile_run": manifest.get("profile_run"),
        "claims": [{"statement": c["statement"], "status": c["status"]} for c in claims],
        "vs_committed_cpu": compare_claims(claims, committed) if not quick else None,
    }


def device_info(device: str) -> dict:
    code = (
        "import jax, json; from jaxwb.sims.core.devices import select_device, describe; "
        f"d = select_device({device!r}); print(json.dumps({{**describe(d), 'jax': jax.__version__}}))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    if proc.returncode:
        raise SystemExit(f"workbench_all: no {device} device: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def save(record: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    os.replace(tmp, path)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.workbench_all", description=__doc__)
    p.add_argument("--device", default="gpu", choices=("cpu", "gpu", "tpu"))
    p.add_argument("--quick", action="store_true", help="the quick presets (the claims are then not compared)")
    p.add_argument("--results", default=None, help="comma-separated names (default: every result, fastest first)")
    p.add_argument("--record", type=Path, default=DEFAULT_RECORD, help=f"JSON record (default {DEFAULT_RECORD})")
    p.add_argument("--budget-s", type=float, default=480.0, help="total time; results that do not fit are skipped")
    p.add_argument("--per-result-s", type=float, default=300.0, help="time limit of one result")
    p.add_argument("--dry-run", action="store_true", help="the smallest result, quick, on the CPU, into a temp dir")
    args = p.parse_args(argv)
    if args.dry_run:
        args.device, args.quick = "cpu", True
        args.results = args.results or min(registry.result_names(), key=committed_wall)
        if args.record == DEFAULT_RECORD:
            args.record = Path(tempfile.mkdtemp(prefix="workbench_all-")) / "gpu.json"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    names = args.results.split(",") if args.results else sorted(registry.result_names(), key=committed_wall)
    record = {"device": device_info(args.device), "preset": "quick" if args.quick else "full", "results": {}}
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="workbench_all-") as tmp:
        for name in names:
            left = args.budget_s - (time.perf_counter() - t_start)
            if left < 10:
                record["results"][name] = {"status": "skipped", "why": "total budget spent"}
            else:
                limit = min(args.per_result_s, left)
                print(f"{name}: running (limit {limit:.0f} s)", flush=True)
                record["results"][name] = run_one(
                    name, device=args.device, quick=args.quick, out=Path(tmp) / name, timeout_s=limit
                )
                r = record["results"][name]
                print(f"{name}: {r['status']} in {r['wall_s']} s", flush=True)
            record["total_wall_s"] = round(time.perf_counter() - t_start, 1)
            save(record, args.record)
    print(f"wrote {args.record}")
    ok = all(r["status"] == "ok" for r in record["results"].values())
    return 0 if ok else 1
