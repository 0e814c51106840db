"""One-off: the fwht section of the 2026-12-04 H200 run was cut by the main step's time limit (the XLA compile of
the d=16384 dense rotation hung in GEMM autotuning) before its records were saved; its measured lines are in
main.log. Rebuild those records (same arithmetic as bench_fwht) into a json the merge reads.

Run from the repository root: ``python -m benchmarks.gpu_check.recover_fwht figures/kernels_gpu/run_2026-12-04``
(it wrote ``fwht_from_log.json`` there; moved out of the run folder so that figures/ holds data only)."""

import json
import math
import re
import sys
from pathlib import Path

from benchmarks.gpu_check.autotune import Recorder, Settings

run = Path(sys.argv[1])
main = json.loads((run / "main.json").read_text())
rec = Recorder(Settings(dry_run=False, out=run, budget_s=0.0), main["peaks"], main["measured_ceilings"])
pat = re.compile(r"^\[gpu_check\]   fwht (\w+) (\d+)x(\d+) f32: ([\d.]+)us (.*)$")
for line in (run / "main.log").read_text().splitlines():
    m = pat.match(line.strip("\n"))
    if not m:
        continue
    impl, n, d, us, cfg = m.group(1), int(m.group(2)), int(m.group(3)), float(m.group(4)), m.group(5).strip()
    nbytes = 2 * n * d * 4
    extra = dict(d=d, goal_speedup=d / (4 * math.log2(d)))
    kw = (
        dict(flops=2 * n * d * d, bytes_moved=nbytes + d * d * 4)
        if impl == "dense_rotation"
        else dict(bytes_moved=nbytes)
    )
    rec.add(
        "fwht",
        "fwht",
        impl,
        f"{n}x{d} f32",
        config=None if cfg == "None" else cfg,
        time_s=us * 1e-6,
        note="recovered from main.log (section cut by the step's time limit; no error check recorded)",
        **kw,
        **extra,
    )
out = {
    **{k: v for k, v in main.items() if k not in ("records", "tuned", "goals", "tests")},
    "records": rec.records,
    "tuned": {},
    "goals": [],
    "tests": None,
    "command": "recovered from main.log by notes/recover_fwht.py",
    "wall_s": 0.0,
    "partial": True,
}
(run / "fwht_from_log.json").write_text(json.dumps(out, indent=1))
