#!/usr/bin/env bash
# One device call: FA3 installed from the carried wheel, then the best kernel and the seed benched
# with FA3 timed beside them, and the inner loop's times (cold and warm quick, full) recorded.
# Run from the repository root on the GPU machine, with .whl carried (the fa3-fwd wheel):
#   bash lab/flash_attn_fwd/device/fa3_bench.sh [steps]     steps: default "doctor quick full seed gputest"
# Files land in $OUT, packed into one archive at the end (fa3-bench.tgz: a device call returns at most 8 files);
# a short table is printed last.
set -uo pipefail
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/ks-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD
source lab/flash_attn_fwd/device/with_fa3.sh
STEPS=${1:-"doctor quick full seed gputest"}
BEST=kernels/flash_attn_fwd/best/kernel.cu
SEED=kernels/flash_attn_fwd/kernel.cu
END=$(( $(date +%s) + ${KS_CALL_SECONDS:-575} ))
left() { echo $(( END - $(date +%s) )); }
timed() {  # timed NAME CMD...: wall seconds to $OUT/times.txt
    local name=$1; shift
    local t0; t0=$(date +%s%N)
    timeout "$(left)" "$@"; local rc=$?
    printf '%-28s rc %-3s %6d ms\n' "$name" "$rc" "$(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$OUT/times.txt" >&2
}
for step in $STEPS; do
  case $step in
  doctor)
    { nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv; nvcc --version | tail -1;
      python3 -m ks_tui doctor; } > "$OUT/doctor.txt" 2>&1
    grep -iE "fa3|H100|H200|sandbox" "$OUT/doctor.txt" | head -5 ;;
  quick)  # the inner loop: a cold compile (fresh cache), then the same run warm
    export KS_CACHE_DIR=/tmp/ks-cache-cold-$$
    timed quick-cold-best python3 -m ks_tui bench flash_attn_fwd --source $BEST --quick --json > "$OUT/best-quick-cold.json"
    timed quick-warm-best python3 -m ks_tui bench flash_attn_fwd --source $BEST --quick --json > "$OUT/best-quick-warm.json"
    timed check-quick-warm python3 -m ks_tui check flash_attn_fwd --source $BEST --quick --json > /dev/null
    unset KS_CACHE_DIR ;;
  compile)  # nvcc alone on the best kernel, split over the CPUs or not (fresh caches; SASS compared)
    for split in 1 0; do
      KS_NVCC_SPLIT=$split KS_CACHE_DIR=/tmp/ks-cache-split$split-$$ timed compile-split$split \
        python3 -m ks_tui check flash_attn_fwd --source $BEST --scenarios d128-h16-16-s512 --json > "$OUT/compile-split$split.json"
    done ;;
  full)
    timed full-best python3 -m ks_tui bench flash_attn_fwd --source $BEST --json > "$OUT/best-full-fa3.json" ;;
  full2)
    timed full-best-2 python3 -m ks_tui bench flash_attn_fwd --source $BEST --json > "$OUT/best-full-fa3-2.json" ;;
  seed)
    timed quick-seed python3 -m ks_tui bench flash_attn_fwd --source $SEED --quick --json > "$OUT/seed-quick-fa3.json" ;;
  seedfull)
    timed full-seed python3 -m ks_tui bench flash_attn_fwd --source $SEED --json > "$OUT/seed-full-fa3.json" ;;
  gputest)
    timed gpu-tests timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider ${KS_GPU_TESTS:-tests/harness/test_gpu_fa3.py} \
      > "$OUT/pytest-gpu.txt" 2>&1; tail -3 "$OUT/pytest-gpu.txt" ;;
  esac
done
python3 - "$OUT" <<'PY'
import json, sys, glob, os
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    try:
        r = json.load(open(f))
    except Exception as e:
        print(os.path.basename(f), "unreadable", e); continue
    by = " ".join(f"{k} {v:.3f}" for k, v in (r.get("geomean_by_baseline") or {}).items() if v)
    t = r.get("timings") or {}
    print(f"{os.path.basename(f):24} {r.get('device','?')[:22]:22} {r.get('status')} {r.get('correct')} "
          f"gm {r.get('geomean_speedup') or 0:.4f} | {by} | wall {t.get('wall_s', t.get('total_s', 0)) or 0:.1f}s "
          f"compile {t.get('compile_s', 0):.1f}s | {r.get('baseline_caveat') or ''}")
PY
cat "$OUT/times.txt"
# the device returns few files: everything in one archive
tar czf /tmp/fa3-bench.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/fa3-bench.tgz "$OUT/"
