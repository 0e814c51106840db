#!/usr/bin/env bash
# Every full preset on one GPU (issue: paper-scale runs on an accelerator). One command, about 8 minutes at
# most: each result runs in its own process with its own time limit and the record is saved after each one, so
# a run cut short keeps what it measured. Writes figures/workbench_all/gpu.json: the device, the JAX version,
# wall time per result and each claim's outcome compared with the committed CPU run.
# Usage on the device machine, from the repository root, after `pip install -e '.[dev]'` and a CUDA jax:
#   bash .ci/workbench_all_gpu.sh            # the real run
#   bash .ci/workbench_all_gpu.sh --dry-run  # the smallest quick preset on the CPU (`python -m pytest -m slow` runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
exec timeout 540 "${PYTHON:-python}" -m benchmarks.workbench_all --budget-s 480 --per-result-s 300 "$@"
