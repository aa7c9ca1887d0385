#!/usr/bin/env bash
# One device call of checks (from the repository root, .whl carried): ks doctor, nvcc split or not on the best
# kernel, the inner loop's speed (inner_loop.sh quick pool), then the GPU tests. Everything lands in $OUT/checks.tgz
# (the device returns few files); short tables are printed as it goes.
#   bash lab/flash_attn_fwd/device/checks.sh ["doctor compile loop tests full noise"]
set -uo pipefail
export PYTHONUNBUFFERED=1
FINAL_OUT=${OUT:-/tmp/ks-out}
export OUT=$FINAL_OUT/work
mkdir -p "$OUT"
export PYTHONPATH=$PWD
source lab/flash_attn_fwd/device/with_fa3.sh
STEPS=${1:-"doctor tests full loop"}
# Every step's limit is cut to what is left of KS_CALL_SECONDS, so the tar at the end always runs.
END=$(( $(date +%s) + ${KS_CALL_SECONDS:-570} ))
cap() { local left=$(( END - $(date +%s) - 15 )); (( left < 1 )) && left=1; (( $1 < left )) && echo "$1" || echo "$left"; }
for step in $STEPS; do
  case $step in
  doctor)
    { nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv; python3 -m ks_tui doctor; } > "$OUT/doctor.txt" 2>&1
    grep -iE "H100|H200|fa3|sandbox|nvml|ncu|sanitizer" "$OUT/doctor.txt" | cut -c1-200 ;;
  compile)
    bash lab/flash_attn_fwd/device/fa3_bench.sh compile 2>&1 | tail -3 ;;
  loop)
    OUT=$OUT/loop KS_QUICK_PAIRS=1 KS_CALL_SECONDS=$(cap ${KS_LOOP_SECONDS:-200}) \
      bash lab/flash_attn_fwd/device/inner_loop.sh "quick pool" 2>&1 | tail -16 ;;
  full)  # the best kernel's full grid with FA3 beside it; its speed-of-light table (benchmarks/sol_table.py)
    t0=$(date +%s)
    timeout $(cap ${KS_FULL_SECONDS:-260}) python3 -m ks_tui bench flash_attn_fwd --source kernels/flash_attn_fwd/best/kernel.cu \
      --json > "$OUT/best-full.json" 2> "$OUT/best-full.err"
    echo "full bench: rc $? in $(( $(date +%s) - t0 )) s"
    python3 benchmarks/sol_table.py --from-json "$OUT/best-full.json" --out "$OUT/sol_flash_attn_fwd" 2>&1 | tail -34
    python3 lab/flash_attn_fwd/device/families.py "$OUT/best-full.json" 2>&1 | head -3 ;;
  noise)  # two full benches of the best kernel back to back: the full loop's time and its noise (noise.py)
    for i in 1 2; do
      t0=$(date +%s)
      timeout $(cap ${KS_FULL_SECONDS:-260}) python3 -m ks_tui bench flash_attn_fwd --source kernels/flash_attn_fwd/best/kernel.cu \
        --json > "$OUT/best-full-$i.json" 2> "$OUT/best-full-$i.err"
      echo "full bench $i: rc $? in $(( $(date +%s) - t0 )) s"
    done
    python3 lab/flash_attn_fwd/device/noise.py "$OUT/best-full-1.json" "$OUT/best-full-2.json" --json "$OUT/noise.json"
    python3 -c "import json,sys; from ks_tui.harness.report import phase_line, summary_line; r=json.load(open(sys.argv[1])); print(phase_line(r)); print(summary_line(r))" "$OUT/best-full-1.json"
    python3 lab/flash_attn_fwd/device/families.py "$OUT/best-full-1.json" 2>&1 | head -3 ;;
  tests)
    timeout $(cap ${KS_TEST_SECONDS:-260}) python3 -m pytest -m gpu -q -rs -p no:cacheprovider ${KS_GPU_TESTS:-tests/harness tests/flash} \
      > "$OUT/pytest-gpu.txt" 2>&1
    grep -E "passed|failed|FAILED|ERROR|SKIPPED" "$OUT/pytest-gpu.txt" | cut -c1-220 | tail -25 ;;
  esac
done
tar czf "$FINAL_OUT/checks.tgz" -C "$FINAL_OUT" work && rm -rf "$OUT"
echo "files: $FINAL_OUT/checks.tgz"
