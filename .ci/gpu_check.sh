#!/usr/bin/env bash
# The prepared GPU check as one device job, split in three steps with their own time limits, so that a hang or
# a crash in one kernel family cannot cost the others' numbers (every step writes under $OUT as it goes):
#   1. main:   every op but the Mosaic GPU kernels (Pallas Triton, XLA, cuDNN, peers), json only;
#   2. mosaic: the Mosaic GPU flash / block-sparse kernels and JAX's FA3 (attention sections only);
#   3. tests:  tests/kernels with implementation="interpret" forced to the compiled kernels (`pytest -v`, a log
#              that survives a timeout).
# Then, here: python -m benchmarks.gpu_check --merge OUT/main/kernels_gpu.json OUT/mosaic/kernels_gpu.json \
#             --tests-log OUT/tests.log   (writes figures/kernels_gpu/{kernels_gpu.json,png} and prints the table)
# Run from the repository root on the GPU machine: OUT=/some/dir bash .ci/gpu_check.sh  (~7 min at most);
# on CPU, DRY=--dry-run runs the same steps in interpret mode at tiny sizes. A follow-up run can narrow step 1
# (MAIN_ARGS="--sections inquant,matmul,fwht --matmul-m 1,16 --fwht-d 4096") and skip step 2 (T_MOSAIC=0).
set -u
OUT=${OUT:-/tmp/gpu_check_out}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv
  $PY -c "import jax, jaxlib; print('jax', jax.__version__, 'jaxlib', jaxlib.__version__, jax.devices())"
} > "$OUT/device.txt" 2>&1
step() {  # name, time limit (s), command...
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  echo "[gpu_check.sh] $name: rc=$? in $((SECONDS - t0))s (limit ${limit}s)" | tee -a "$OUT/device.txt"
}
step main "${T_MAIN:-200}" $PY -m benchmarks.gpu_check ${DRY:-} --skip-tests --no-plot \
  --skip-impls mosaic_gpu,jax_fa3_mgpu --budget-s "${B_MAIN:-140}" --out "$OUT/main" ${MAIN_ARGS:-}
[ "${T_MOSAIC:-80}" = 0 ] || step mosaic "${T_MOSAIC:-80}" $PY -m benchmarks.gpu_check ${DRY:-} --skip-tests --no-plot \
  --sections attention,block_sparse --skip-impls pallas_triton,xla,cudnn --budget-s "${B_MOSAIC:-50}" --out "$OUT/mosaic"
PALLAS_KERNELS_FORCE_IMPLEMENTATION=pallas XLA_PYTHON_CLIENT_MEM_FRACTION=.1 step tests "${T_TESTS:-130}" \
  $PY -m pytest -p benchmarks.gpu_check -p no:cacheprovider -v -n "${WORKERS:-8}" tests/kernels \
  --ignore=tests/kernels/test_gpu_check.py
cat "$OUT/device.txt"
grep -v "^\[gpu_check\]" "$OUT/main.log" | tail -n 45
[ -f "$OUT/mosaic.log" ] && grep -v "^\[gpu_check\]" "$OUT/mosaic.log" | tail -n 16
tail -n 4 "$OUT/tests.log"
