#!/usr/bin/env bash
# The prepared GPU check (issue 39) as one device job of at most ~8 min: every step is its own process with its
# own `timeout`, and writes under $OUT as it goes (the benchmark steps save their json after every record), so a
# hang or a crash in one step costs only that step. Steps, ceilings first:
#   1. ceilings: XLA copy, a Pallas copy with the quantizers' tile, the bf16 GEMV read rate, a bf16 matmul
#                (OUT/ceilings/ceilings.json; the later steps read it: every goal is against these);
#   2. dump:     an instruction dump of one old and one new call of W4A16 and of NVFP4 quantize, one process each
#                (XLA's dump flags are process-wide): OUT/dump/<case>/{*.ptx,summary.json};
#   3. main:     every op but the Mosaic GPU kernels, old and new variants side by side (json only);
#   4. mosaic:   the Mosaic GPU flash / block-sparse kernels and JAX's FA3 (attention sections only);
#   5. tests:    tests/kernels with implementation="interpret" forced to the compiled kernels (`pytest -v` log);
#   6. merge:    one json + png + table with the goals of issue 39 met / missed, printed at the end.
# Run from the repository root on the GPU machine: OUT=/some/dir bash .ci/gpu_check.sh. Limits (s): T_CEIL 40,
# T_DUMP 25 per case, T_MAIN 170, T_MOSAIC 55, T_TESTS 85, T_MERGE 25 (worst case 475 s; 0 skips a step).
# On CPU, DRY=--dry-run runs the same steps in interpret mode at tiny sizes (tests/kernels/test_gpu_check.py).
# A follow-up run can narrow step 3 (MAIN_ARGS="--sections matmul,fwht --matmul-m 1,16") and skip others.
set -u
OUT=${OUT:-/tmp/gpu_check_out}
PY=${PYTHON:-python3}
DRY=${DRY:-}
DUMP_CASES=${DUMP_CASES:-w4a16_old w4a16_new nvfp4_quantize_old nvfp4_quantize_new}
mkdir -p "$OUT"
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
{
  command -v nvidia-smi > /dev/null && nvidia-smi \
    --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv
  $PY -c "import jax, jaxlib; print('jax', jax.__version__, 'jaxlib', jaxlib.__version__, jax.devices())"
} > "$OUT/device.txt" 2>&1
step() {  # name, time limit (s; 0 skips), command...
  local name=$1 limit=$2
  shift 2
  if [ "$limit" = 0 ]; then echo "[gpu_check.sh] $name: skipped" | tee -a "$OUT/device.txt"; return; fi
  local t0=$SECONDS
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  echo "[gpu_check.sh] $name: rc=$? in $((SECONDS - t0))s (limit ${limit}s)" | tee -a "$OUT/device.txt"
}
step ceilings "${T_CEIL:-40}" $PY -m benchmarks.gpu_check $DRY --ceilings-only --skip-tests --out "$OUT/ceilings"
CEIL=(--ceilings-json "$OUT/ceilings/ceilings.json")
for c in $DUMP_CASES; do
  step "dump_$c" "${T_DUMP:-25}" $PY -m benchmarks.gpu_check.dump "$c" $DRY --out "$OUT/dump"
done
step main "${T_MAIN:-170}" $PY -m benchmarks.gpu_check $DRY --skip-tests --no-plot "${CEIL[@]}" \
  --skip-impls mosaic_gpu,jax_fa3_mgpu --budget-s "${B_MAIN:-125}" --out "$OUT/main" ${MAIN_ARGS:-}
step mosaic "${T_MOSAIC:-55}" $PY -m benchmarks.gpu_check $DRY --skip-tests --no-plot "${CEIL[@]}" \
  --sections attention,block_sparse --skip-impls triton,xla,cudnn --budget-s "${B_MOSAIC:-38}" --out "$OUT/mosaic"
PALLAS_KERNELS_FORCE_IMPLEMENTATION=triton XLA_PYTHON_CLIENT_MEM_FRACTION=.1 step tests "${T_TESTS:-85}" \
  $PY -m pytest -p benchmarks.gpu_check -p no:cacheprovider -v -n "${WORKERS:-8}" tests/kernels \
  --ignore=tests/kernels/test_gpu_check.py ${TEST_ARGS:-}
JSONS=()
for part in main mosaic; do [ -f "$OUT/$part/kernels_gpu.json" ] && JSONS+=("$OUT/$part/kernels_gpu.json"); done
LOG=()
[ -f "$OUT/tests.log" ] && LOG=(--tests-log "$OUT/tests.log")
if [ ${#JSONS[@]} -gt 0 ]; then
  step merge "${T_MERGE:-25}" $PY -m benchmarks.gpu_check --merge "${JSONS[@]}" "${LOG[@]}" --out "$OUT/merged"
fi
cat "$OUT/device.txt"
grep -h "^\[dump\]" "$OUT"/dump_*.log 2> /dev/null
[ -f "$OUT/merge.log" ] && grep -v "^\[gpu_check\]" "$OUT/merge.log" | tail -n 80
[ -f "$OUT/tests.log" ] && tail -n 4 "$OUT/tests.log"
exit 0
