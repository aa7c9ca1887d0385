#!/usr/bin/env bash
# The order-free reading of the long calls (issue 60): each function runs back to back in a phase of its own
# (scripts/clock_log.py: KS_PHASE_SECONDS of one function, the SM clock and power sampled meanwhile), so no other
# function's power comes before its calls; on the long scenarios where the grid's turns read FA3 3-7% ahead while
# the harness ran the kernel always right after FA3 (results/2026-12-08-h100-session/by-duration.txt). Then Nsight
# Compute on the scenarios of KS_PROFILE (`ks profile`), and on FA3's launches of them (scripts/profile_baseline.py).
# Run from the repository root on the GPU machine, the wheels carried in .whl/ (carry: [".whl"]; fa3-fwd for the FA3
# phases and profiles):
#   bash lab/flash_attn_fwd/device/order_check.sh
# env: KS_CLOCK_SCENARIOS  scenario ids (default: d128-h64-8-s32768 d128-h16-16-s32768)
#      KS_PHASES           clock_log's phases (default: kernel,fa3,sdpa_flash,kernel,fa3; `kernel` is KS_KERNEL)
#      KS_PHASE_SECONDS    seconds a phase (default 5)
#      KS_PROFILE          scenario ids for `ks profile` (default: the prefill q8192-k32768 launches and the square
#                          d128-h16-16-s8192 ones, both masks: where the causal launches' time per key block goes
#                          beyond the work above the diagonal, L2 hits and stall reasons beside the unmasked; empty
#                          for none)
#      KS_PROFILE_BASELINE the library whose launches of the same scenarios are profiled too
#                          (scripts/profile_baseline.py; default fa3; empty for none)
#      KS_KERNEL           the kernel file (default kernels/flash_attn_fwd/best/kernel.cu)
#      KS_CALL_SECONDS     wall budget (default 300): a step starts only while 30 s are left
# $OUT gets summary.txt (each clock table, each profile's exit code) and run.tgz (clock-ID.txt / .json,
# profile-ID.json / .err): a call returns only a few files. Exit code: 0, or the last failing step's.
set -uo pipefail
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/ks-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
RUN=$OUT/run
mkdir -p "$RUN"
T0=$(date +%s)
END=$(( T0 + ${KS_CALL_SECONDS:-300} ))
left() { echo $(( END - $(date +%s) )); }
KERNEL=${KS_KERNEL:-kernels/flash_attn_fwd/best/kernel.cu}
[[ -f $KERNEL ]] || { echo "order_check.sh: no kernel file $KERNEL" >&2; exit 2; }
[[ -f lab/flash_attn_fwd/device/with_fa3.sh ]] && source lab/flash_attn_fwd/device/with_fa3.sh
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
rc=0

for s in ${KS_CLOCK_SCENARIOS:-d128-h64-8-s32768 d128-h16-16-s32768}; do
  if (( $(left) < 30 )); then echo "order_check.sh: no time left for the clock log of $s" | tee -a "$SUMMARY"; continue; fi
  timeout $(( $(left) - 10 )) python3 -m lab.flash_attn_fwd.scripts.clock_log --kernel "$KERNEL" \
    --phases "${KS_PHASES:-kernel,fa3,sdpa_flash,kernel,fa3}" --seconds "${KS_PHASE_SECONDS:-5}" \
    --json "$RUN/clock-$s.json" "$s" > "$RUN/clock-$s.txt" 2>&1
  r=$?
  (( r == 0 )) || rc=$r
  { echo "== clock_log $s: rc $r"; cat "$RUN/clock-$s.txt"; } >> "$SUMMARY"
done

for id in ${KS_PROFILE-d128-h16-16-q8192-k32768 d128-h16-16-q8192-k32768-causal d128-h16-16-s8192 d128-h16-16-s8192-causal}; do
  if (( $(left) < 30 )); then echo "order_check.sh: no time left for the profile of $id" | tee -a "$SUMMARY"; continue; fi
  timeout $(( $(left) - 10 )) python3 -m ks_tui profile flash_attn_fwd --source "$KERNEL" --scenario "$id" --json \
    > "$RUN/profile-$id.json" 2> "$RUN/profile-$id.err"
  r=$?
  (( r == 0 )) || rc=$r
  echo "== profile $id: rc $r $(tr -s '\n' ' ' < "$RUN/profile-$id.err" 2>/dev/null | cut -c1-300)" >> "$SUMMARY"
  base=${KS_PROFILE_BASELINE-fa3}
  [[ -n $base ]] || continue
  if (( $(left) < 30 )); then
    echo "order_check.sh: no time left for $base's profile of $id" | tee -a "$SUMMARY"
    continue
  fi
  timeout $(( $(left) - 10 )) python3 -m lab.flash_attn_fwd.scripts.profile_baseline "$id" --baseline "$base" \
    --timeout $(( $(left) - 15 )) > "$RUN/profile-$base-$id.txt" 2>&1
  r=$?
  (( r == 0 )) || rc=$r
  { echo "== $base profile $id: rc $r"; cat "$RUN/profile-$base-$id.txt"; } >> "$SUMMARY"
done

tar czf "$OUT/run.tgz" -C "$OUT" run && rm -rf "$RUN"
cat "$SUMMARY"
echo "order_check.sh: $(( $(date +%s) - T0 )) s"
exit $rc
