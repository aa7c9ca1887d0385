#!/usr/bin/env bash
# The inner loop's speed on one GPU, best kernel, FA3 timed beside it (well under 4 minutes):
#   cold quick bench (fresh cache), warm quick bench, warm quick check, then two quick benches through the
#   engine's pre-started harness child (loop_speed.py, one Python process). A table of wall time and where it
#   went is printed last; every result JSON lands in $OUT.
# Run from the repository root on the GPU machine, with .whl carried (the fa3-fwd wheel):
#   bash lab/flash_attn_fwd/device/loop_speed.sh
set -uo pipefail
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/ks-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD
source lab/flash_attn_fwd/device/with_fa3.sh
BEST=kernels/flash_attn_fwd/best/kernel.cu
export KS_CACHE_DIR=/tmp/ks-cache-loop-$$
END=$(( $(date +%s) + ${KS_CALL_SECONDS:-230} ))
left() { echo $(( END - $(date +%s) )); }
timed() {  # timed NAME CMD...: wall seconds to $OUT/loop-times.txt
    local name=$1; shift
    local t0; t0=$(date +%s%N)
    timeout "$(left)" "$@"; local rc=$?
    printf '%-24s rc %-3s %6d ms\n' "$name" "$rc" "$(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$OUT/loop-times.txt" >&2
}
timed bench-quick-cold python3 -m ks_tui bench flash_attn_fwd --source $BEST --quick --json > "$OUT/loop-1-bench-quick-cold.json"
timed bench-quick-warm python3 -m ks_tui bench flash_attn_fwd --source $BEST --quick --json > "$OUT/loop-2-bench-quick-warm.json"
timed check-quick-warm python3 -m ks_tui check flash_attn_fwd --source $BEST --quick --json > "$OUT/loop-3-check-quick-warm.json"
timed pool-2x-bench-quick python3 lab/flash_attn_fwd/device/loop_speed.py flash_attn_fwd --source $BEST --quick \
    --mode bench --runs 2 --gap 5 --out "$OUT/loop-4-pool"
rm -rf "$KS_CACHE_DIR"
python3 - "$OUT" <<'PY'
import glob, json, os, sys
keys = ["wall_s", "startup_s", "setup_s", "compile_s", "import_s", "check_s", "bench_s", "sharing_s", "sass_s",
        "sass_wait_s", "ref_prefetch_s", "ref_prefetch_wait_s", "other_s"]
files = sorted(glob.glob(os.path.join(sys.argv[1], "loop-*.json"))) + sorted(glob.glob(os.path.join(sys.argv[1], "loop-4-pool", "*.json")))
label = {"sass_wait_s": "sass_wait", "ref_prefetch_s": "refs_thr", "ref_prefetch_wait_s": "refs_wait"}
print(f"{'run':26} {'status':9} {'gm':>6} warm refs  " + " ".join(f"{label.get(k, k[:-2])[:9]:>9}" for k in keys))
for f in files:
    try:
        r = json.load(open(f))
    except Exception as e:
        print(os.path.basename(f), "unreadable", e); continue
    t = r.get("timings") or {}
    refs = f"{t.get('ref_prefetch_used', '-')}/{t.get('ref_prefetched', '-')}"
    name = os.path.relpath(f, sys.argv[1])[:26]
    print(f"{name:26} {str(r.get('status'))[:9]:9} {r.get('geomean_speedup') or 0:6.3f} {'yes ' if t.get('warm_start') else 'no  '} "
          f"{refs:5} " + " ".join(f"{t[k]:9.2f}" if isinstance(t.get(k), (int, float)) else f"{'-':>9}" for k in keys))
PY
cat "$OUT/loop-times.txt"
