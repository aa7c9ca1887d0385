#!/usr/bin/env bash
# Nsight Compute profile of kernel files on one scenario (from the repository root, GPU machine).
#   bash profile.sh SCENARIO NAME=FILE [NAME=FILE ...]
# For each file: `ncu` wraps `ks bench --scenarios SCENARIO` (following the harness's child
# process), profiles one launch of our kernel after KS_PROFILE_SKIP (default 2) launches, and
# writes $OUT/prof-NAME.ncu-rep and its details page as text; the headline metrics of every file
# go to $OUT/profile.txt. Under ncu each launch is replayed and takes ~0.1 s, so the harness's
# timing budget makes only a few launches: a skip of 20 profiled nothing (session 6, call 3).
# Each file gets KS_PROFILE_SECONDS (default 150). Clocks are left alone (--clock-control none),
# as METHOD.md asks. Per the device notes ncu reads counters on the Firecracker machines only.
set -uo pipefail
[[ $# -ge 2 ]] || { echo "usage: profile.sh SCENARIO NAME=FILE [NAME=FILE ...]"; exit 2; }
scenario=$1; shift
export PYTHONPATH=$PWD
source lab/flash_attn_fwd/device/with_fa3.sh
OUT=${OUT:-/tmp/ks-device-out}; mkdir -p "$OUT"
command -v ncu > /dev/null || { echo "ncu is not on PATH: nothing profiled" | tee -a "$OUT/profile.txt"; exit 0; }
for spec in "$@"; do
    name=${spec%%=*}; file=${spec#*=}
    timeout "${KS_PROFILE_SECONDS:-150}" ncu --clock-control none --target-processes all \
        -k regex:attn_fwd_sm90 --launch-skip "${KS_PROFILE_SKIP:-2}" --launch-count 1 \
        --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
        --section ComputeWorkloadAnalysis -f -o "$OUT/prof-$name" \
        python3 -m ks_tui bench flash_attn_fwd --source "$file" --scenarios "$scenario" --timeout 400 \
        > "$OUT/prof-$name.log" 2>&1
    rc=$?
    echo "== $name ($file, $scenario): ncu rc=$rc" | tee -a "$OUT/profile.txt"
    if [[ -f "$OUT/prof-$name.ncu-rep" ]]; then
        ncu --import "$OUT/prof-$name.ncu-rep" --page details > "$OUT/prof-$name-details.txt" 2>&1
        grep -E "Duration|Throughput|Issue Slot|Issued Warp|Eligible|Warp Cycles Per|Active Warps" \
            "$OUT/prof-$name-details.txt" | tee -a "$OUT/profile.txt"
        # Where warps wait (no instruction = i-cache, barrier, scoreboard) and how busy the tensor pipe is.
        ncu --import "$OUT/prof-$name.ncu-rep" --page raw 2>&1 |
            grep -E "issue_stalled_(no_instruction|barrier|long_scoreboard|short_scoreboard|wait|math_pipe_throttle|membar|branch_resolving|dispatch_stall)|pipe_tensor" |
            tee -a "$OUT/profile.txt"
    else
        tail -5 "$OUT/prof-$name.log" | tee -a "$OUT/profile.txt"
    fi
done
