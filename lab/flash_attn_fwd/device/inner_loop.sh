#!/usr/bin/env bash
# Issue 63's measurements in one device call (repository root, .whl carried), each step capped by what is left of
# KS_CALL_SECONDS (default 560):
#   refs   lab/flash_attn_fwd/device/reference_probe.py: what each reference costs, and a fused low-precision one
#   quick  a cold quick bench (fresh cache), then warm quick benches with the libraries' warm-up off and on in
#          alternating order (KS_QUICK_PAIRS pairs, default 2), then a warm quick check
#   pool   two quick benches through the engine's pre-started child (loop_speed.py), KS_POOL_GAP s apart
#          (default 20: the model's turn, in which the child imports torch and warms the libraries up)
#   standby one-shot quick benches with the standby server on (harness/standby.py): the first starts it, then
#          runs KS_STANDBY_GAP s apart (default 25: the waiting child imports torch and warms the libraries up),
#          and one right after another (the child still starting)
#   nvcc   the harness's nvcc command on the best kernel, cold, with nvcc --time: where the compile goes
#   noiseprobe lab/flash_attn_fwd/device/noise_probe.py: which bench design holds each scenario's speedup steadiest
#   gputest the GPU tests of the warm-up, the references and the timing's hidden-work checks (tests/harness/test_gpu_*.py)
#   full   KS_FULLS full benches (default 1; 2 gives the noise, lab/flash_attn_fwd/device/noise.py)
#   bash lab/flash_attn_fwd/device/inner_loop.sh ["refs quick pool gputest full"]
# Every result JSON lands in $OUT; a table of wall times and where they went is printed last.
set -uo pipefail
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/ks-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD
source lab/flash_attn_fwd/device/with_fa3.sh
BEST=kernels/flash_attn_fwd/best/kernel.cu
export KS_CACHE_DIR=/tmp/ks-cache-inner-$$
export KS_STANDBY=0 KS_STANDBY_DIR=/tmp/ks-standby-inner-$$  # one-shot runs stay one-shot; `standby` turns it on
END=$(( $(date +%s) + ${KS_CALL_SECONDS:-560} ))
cap() { local left=$(( END - $(date +%s) - 10 )); (( left < 1 )) && left=1; (( $1 < left )) && echo "$1" || echo "$left"; }
timed() {  # timed NAME LIMIT CMD...: wall seconds to $OUT/times.txt
  local name=$1 limit=$2; shift 2
  local t0; t0=$(date +%s%N)
  timeout "$(cap "$limit")" "$@"; local rc=$?
  printf '%-22s rc %-3s %7.1f s\n' "$name" "$rc" "$(( ($(date +%s%N) - t0) / 1000000 ))e-3" | tee -a "$OUT/times.txt" >&2
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
for step in ${1:-refs quick pool gputest full}; do
  case $step in
  refs) timed refs 120 python3 lab/flash_attn_fwd/device/reference_probe.py > "$OUT/refs.jsonl"
    python3 -c "
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for r in rows[:-1]:
    print(f\"{r['id']:34} ref {r['ref_ms']:7.1f} lowp was {r['lowp_ms']:7.1f} now {r['now_ms']:7.1f} ms  error ratio now/was {r['ratio']}\")
print(rows[-1])" "$OUT/refs.jsonl" ;;
  pool) timed pool 150 python3 lab/flash_attn_fwd/device/loop_speed.py flash_attn_fwd --source $BEST --quick --mode bench \
      --runs 2 --gap "${KS_POOL_GAP:-20}" --out "$OUT/pool" ;;
  quick)
    timed quick-cold 120 python3 -m ks_tui bench flash_attn_fwd --source $BEST --quick --json > "$OUT/q-cold.json"
    for i in $(seq 1 "${KS_QUICK_PAIRS:-2}"); do
      KS_BASELINE_WARMUP=0 timed "quick-warm-off-$i" 60 python3 -m ks_tui bench flash_attn_fwd --source $BEST --quick \
        --json > "$OUT/q-off-$i.json"
      timed "quick-warm-on-$i" 60 python3 -m ks_tui bench flash_attn_fwd --source $BEST --quick --json > "$OUT/q-on-$i.json"
    done
    timed check-quick-warm 60 python3 -m ks_tui check flash_attn_fwd --source $BEST --quick --json > "$OUT/q-check.json" ;;
  gputest) timed gputest 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/harness/test_gpu_fa3.py tests/harness/test_gpu_reference.py \
    tests/harness/test_gpu_sol.py -k "not profile and not sanitize" \
    > "$OUT/gputest.txt" 2>&1; tail -2 "$OUT/gputest.txt" ;;
  standby)
    sb() { KS_STANDBY=1 timed "standby-$1" 90 python3 -m ks_tui bench flash_attn_fwd --source $BEST --quick --json \
      > "$OUT/s-$1.json" 2> "$OUT/s-$1.err"; }
    sb first; sleep "${KS_STANDBY_GAP:-25}"; sb warm-1; sb at-once; sleep "${KS_STANDBY_GAP:-25}"; sb warm-2
    KS_STANDBY=1 python3 -m ks_tui standby; KS_STANDBY=1 python3 -m ks_tui standby stop ;;
  nvcc)
    rm -rf /tmp/ks-nvcc && mkdir -p /tmp/ks-nvcc && cp $BEST /tmp/ks-nvcc/kernel.cu
    cmd=$(python3 -c "
import sys; from ks_tui.harness.build import compile_command; from ks_tui.task import load_task
t = load_task('kernels/flash_attn_fwd', '.')
print(' '.join(compile_command(t.language, t.build.compiler, t.build.flags, t.build.arch, 'kernel.cu', 'kernel.so')))")
    echo "$cmd --time nvcc-time.csv" | tee "$OUT/nvcc-cmd.txt"
    (cd /tmp/ks-nvcc && timed nvcc-cold 90 $cmd --time nvcc-time.csv > /dev/null 2>&1) ; cp /tmp/ks-nvcc/nvcc-time.csv "$OUT/"
    cat "$OUT/nvcc-time.csv" ;;
  noiseprobe) timed noiseprobe "${KS_PROBE_SECONDS:-220}" python3 lab/flash_attn_fwd/device/noise_probe.py \
      --seconds "$(( $(cap "${KS_PROBE_SECONDS:-220}") - 15 ))" --out "$OUT/noise_probe.json" > "$OUT/noise_probe.log" 2>&1
    tail -30 "$OUT/noise_probe.log" ;;
  full)
    for i in $(seq 1 "${KS_FULLS:-1}"); do
      timed "full-$i" "${KS_FULL_SECONDS:-300}" python3 -m ks_tui bench flash_attn_fwd --source $BEST --json \
        > "$OUT/full-$i.json" 2> "$OUT/full-$i.err"
    done
    [[ ${KS_FULLS:-1} -ge 2 ]] && python3 lab/flash_attn_fwd/device/noise.py "$OUT/full-1.json" "$OUT/full-2.json" \
      --json "$OUT/noise.json" ;;
  esac
done
rm -rf "$KS_CACHE_DIR"
python3 - "$OUT" <<'PY'
import glob, json, os, sys
from ks_tui.harness.report import phase_line
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json")) + glob.glob(os.path.join(sys.argv[1], "pool", "*.json"))):
    try:
        r = json.load(open(f))
    except Exception as e:
        print(os.path.basename(f), "unreadable", e); continue
    if "timings" not in r:
        continue
    t = r["timings"]
    g = r.get("geomean_by_baseline") or {}
    print(f"{os.path.basename(f)}: {r.get('status')} gm {r.get('geomean_speedup') or 0:.3f} (fa3 {g.get('fa3') or 0:.3f}) "
          f"total {t.get('total_s', 0):.1f}s compile {t.get('compile_s', 0):.1f} import {t.get('import_s', 0):.1f} "
          f"check {t.get('check_s', 0):.1f} bench {t.get('bench_s', 0):.1f} warmup {t.get('warmup_calls', '-')} calls "
          f"{t.get('warmup_s', 0):.1f}s waited {t.get('warmup_wait_s', 0):.1f}s ({t.get('warmup_stop', '-')})"
          + (f" pre-warmed {t.get('warm_prewarm_calls')} ({t.get('warm_prewarm_stop')}) wall {t.get('wall_s', 0):.1f}s"
             if t.get('warm_start') else ""))
    print("   ", phase_line(r))
PY
cat "$OUT/times.txt"
# the device returns few files: everything in one archive
tar czf /tmp/inner-loop.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/inner-loop.tgz "$OUT/"
