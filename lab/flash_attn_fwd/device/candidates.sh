#!/usr/bin/env bash
# One device call that settles lab/flash_attn_fwd/candidates/*.patch (applied to best) against best/kernel.cu and FA3:
#   1. every file built in parallel (the harness's build cache), then each candidate `ks check`ed on every scenario
#      its dispatch changes plus the quick subset (the checks run side by side: correctness only, no timing);
#   2. per candidate, `ks lab compare` of best and the candidate on a subset of its changed scenarios plus an
#      unchanged control, order alternating by round, FA3 timed beside every run (a copy of the task whose only
#      baseline is FA3, cuDNN too when FA3 is missing); a candidate whose check failed is not timed;
#   3. the table (scenario family x candidate: best/cand kernel time, each vs FA3), printed last.
# Run from the repository root on the GPU machine, the FA3 wheel carried in .whl/ (carry: [".whl"]):
#   bash lab/flash_attn_fwd/device/candidates.sh
# env: KS_CANDIDATES    which, in this order (default "d256n64 pre192 gqasec c128": the likeliest gains first)
#      KS_ROUNDS        compare rounds of the long-scenario candidates (default 3: long-S A/B wants three)
#      KS_SHORT_ROUNDS  rounds of pre192 and gqasec, whose scenarios are short (default 2)
#      KS_CALL_SECONDS  wall budget of the whole script (default 345); a compare cut by it keeps its complete rounds
#      KS_DRY_RUN=1     no GPU: check the plan (ids, changed or control) and summarise what $OUT/work holds
#      KS_DRY_RUN=2     no GPU: the whole script, with no build and a stand-in for `ks check` / `ks lab compare` that
#                       prints a committed H100 grid's readings (candidates_summary.py fake): tests its own logic
# $OUT gets: summary.txt, summary.json, clock.txt, runs.tgz (every check and compare JSON, their stderr).
set -uo pipefail
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/ks-out}
export PYTHONPATH=$PWD
WORK=$OUT/work
mkdir -p "$WORK"
T0=$(date +%s)
END=$(( T0 + ${KS_CALL_SECONDS:-345} ))
left() { echo $(( END - $(date +%s) )); }
CANDS=${KS_CANDIDATES:-"d256n64 pre192 gqasec c128"}
ROUNDS=${KS_ROUNDS:-3}
SHORT_ROUNDS=${KS_SHORT_ROUNDS:-2}
BEST=kernels/flash_attn_fwd/best/kernel.cu
# Each candidate is a patch of best (lab/flash_attn_fwd/candidates/NAME.patch), written out whole here.
CDIR=$WORK/candidates
SUM="python3 lab/flash_attn_fwd/device/candidates_summary.py"

# The timed subset of each candidate's changed scenarios (dispatch_model.py lists them all) and one control.
declare -A IDS EST
IDS[c128]="d128-h16-16-s4096-causal d128-h16-16-s4079-causal d128-h64-8-s4096-causal d128-h16-16-s8192-causal
  d128-h32-1-s8192-causal d128-h16-16-s16384-causal d128-h16-16-q8192-k32768-causal d128-h16-16-s8192"
IDS[d256n64]="d256-h8-8-s2048 d256-h16-4-s2048 d256-h8-8-s4096 d256-h16-4-s4096 d256-h8-8-s4079
  d256-h8-8-s8192-causal d256-h16-4-s8192-causal d256-h8-8-s16384-causal d256-h8-8-s1024"
IDS[pre192]="d128-h16-16-q2048-k8192 d128-h16-16-q4096-k16384 d128-h16-16-q8192-k32768 d128-h16-16-q1024-k4096"
IDS[gqasec]="d128-h32-8-s512-causal d128-h32-8-s1024-causal d128-h32-8-s2048-causal d128-h64-8-s512-causal
  d128-h64-8-s1024-causal d128-h64-8-s2048-causal d128-h32-1-s512-causal d128-h32-1-s1024-causal
  d128-h32-1-s2048-causal d128-h16-16-s1024-causal"
# Seconds one harness run of a compare is expected to take (start-up + its scenarios): what a later candidate's two
# rounds need is held back from an earlier one's timeout.
EST[c128]=13; EST[d256n64]=14; EST[pre192]=8; EST[gqasec]=10
rounds_of() { case $1 in pre192|gqasec) echo "$SHORT_ROUNDS" ;; *) echo "$ROUNDS" ;; esac; }
ids_of() { echo ${IDS[$1]}; }

# ---- the plan, checked on the CPU (ids exist; which are changed, which control) --------------------------------------
for c in $CANDS; do
  if [[ -z ${IDS[$c]+x} || ! -f lab/flash_attn_fwd/candidates/$c.patch ]] \
     || ! python3 -m lab.flash_attn_fwd.candidates "$CDIR" "$c" > /dev/null; then
    echo "candidates.sh: no candidate $c (known: ${!IDS[*]})" >&2; exit 2
  fi
  $SUM plan "$c" $(ids_of "$c") > "$WORK/plan-$c.txt" || exit 2
done
echo "plan: $(for c in $CANDS; do echo -n "$c $(grep -c changed "$WORK/plan-$c.txt")+$(grep -c control "$WORK/plan-$c.txt") x $(rounds_of "$c") rounds; "; done)"
DRY=${KS_DRY_RUN:-0}
KS="python3 -m ks_tui"
[[ $DRY == 2 ]] && KS="$SUM fake"
if [[ $DRY == 1 ]]; then
  cat "$WORK"/plan-*.txt
  $SUM summary "$WORK" --json "$OUT/summary.json" | tee "$OUT/summary.txt"
  exit 0
fi

clock() {  # clock LABEL: the SM clock, its maximum, power and temperature, to clock.txt and the log
  local line q=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu
  # the clock-event reasons where this driver knows the field (older ones call it clocks_throttle_reasons)
  line=$(nvidia-smi --query-gpu=$q,clocks_event_reasons.active --format=csv,noheader 2>/dev/null | head -1) ||
    line=$(nvidia-smi --query-gpu=$q --format=csv,noheader 2>&1 | head -1)
  [[ -n $line ]] || line=$(nvidia-smi --query-gpu=$q --format=csv,noheader 2>&1 | head -1)
  printf '%-22s +%4ds  %s\n' "$1" $(( $(date +%s) - T0 )) "$line" | tee -a "$OUT/clock.txt"
}
clock start

source lab/flash_attn_fwd/device/with_fa3.sh
# A copy of the task whose only baseline is FA3 (timed beside every run, so each row is a same-clock ratio);
# cuDNN stays in when FA3 does not import, so the compare still has a baseline.
TASK=/tmp/ks-task-candidates/flash_attn_fwd  # a task folder's name is its task's name
rm -rf "$TASK" && mkdir -p "${TASK%/*}" && cp -r kernels/flash_attn_fwd "$TASK"
if python3 -c "from ks_tui.tasklib.attention.baselines import fa3_module; print(fa3_module()[0])" > "$WORK/fa3.txt" 2>&1; then
  BASES="[fa3]"
else
  BASES="[fa3, sdpa_cudnn]"; echo "FA3 does not import ($(tail -1 "$WORK/fa3.txt")): cuDNN timed too"
fi
sed -i "s/^baselines:.*/baselines: $BASES/" "$TASK/task.yaml"
grep -qxF "baselines: $BASES" "$TASK/task.yaml" || { echo "candidates.sh: could not set the task copy's baselines" >&2; exit 1; }

# ---- 1. build everything in parallel, then the checks side by side ---------------------------------------------------
FILES="$BEST"; for c in $CANDS; do FILES="$FILES $CDIR/$c/kernel.cu"; done
t=$(date +%s)
if [[ $DRY == 2 ]]; then echo "build: skipped (dry run)" | tee "$WORK/prebuild.txt"
else timeout $(( $(left) < 170 ? $(left) : 170 )) python3 -m lab.flash_attn_fwd.scripts.prebuild $FILES 2>&1 | tee "$WORK/prebuild.txt"
fi
echo "build: $(( $(date +%s) - t )) s"
QUICK=$(python3 -c "import yaml; print(' '.join(yaml.safe_load(open('kernels/flash_attn_fwd/task.yaml'))['quick']))")
t=$(date +%s)
declare -A CHECK_PID
for c in $CANDS; do
  changed=$(python3 -m lab.flash_attn_fwd.candidates.dispatch_model --ids "$c")
  timeout -k 10 $(( $(left) < 110 ? $(left) : 110 )) $KS check "$TASK" --source "$CDIR/$c/kernel.cu" \
    --scenarios $changed $QUICK --json > "$WORK/check-$c.json" 2> "$WORK/check-$c.err" &
  CHECK_PID[$c]=$!
done
GOOD=""
for c in $CANDS; do
  wait "${CHECK_PID[$c]}"; rc=$?
  status=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('status'))" "$WORK/check-$c.json" 2>/dev/null)
  echo "check $c: rc $rc, ${status:-no result} ($(tail -1 "$WORK/check-$c.err" 2>/dev/null | cut -c1-120))"
  # A check cut off by its timeout (no result) still lets the compare run: its bench runs check their scenarios too.
  if [[ $status == correct || ( -z $status && ( $rc == 124 || $rc == 137 ) ) ]]; then GOOD="$GOOD $c"
  else echo "  $c is not timed"; fi
done
echo "checks: $(( $(date +%s) - t )) s"
clock after-checks

# ---- 2. one compare per candidate: best first, the order reversed every round ------------------------------------------
reserve_after() {  # seconds the candidates after $1 need for two rounds each
  local seen=0 need=0 c
  for c in $GOOD; do
    if (( seen )); then need=$(( need + 4 * ${EST[$c]} )); fi
    [[ $c == "$1" ]] && seen=1
  done
  echo $need
}
for c in $GOOD; do
  budget=$(( $(left) - 25 - $(reserve_after "$c") ))
  r=$(rounds_of "$c")
  if (( budget < 4 * ${EST[$c]} / 2 )); then echo "compare $c: skipped, $budget s left for it"; continue; fi
  t=$(date +%s)
  timeout -k 20 "$budget" $KS lab compare "$TASK" "best=$BEST" "$c=$CDIR/$c/kernel.cu" \
    --scenarios $(ids_of "$c") --rounds "$r" --times --json > "$WORK/cmp-$c.json" 2> "$WORK/cmp-$c.err"
  echo "compare $c: rc $?, $(( $(date +%s) - t )) s of a $budget s budget, $r rounds asked"
  clock "after-$c"
done

# ---- 3. the table ----------------------------------------------------------------------------------------------------
clock end
tar czf "$OUT/runs.tgz" -C "$OUT" work
$SUM summary "$WORK" --json "$OUT/summary.json" > "$OUT/summary.txt" 2>&1
rm -rf "$WORK"
echo "total: $(( $(date +%s) - T0 )) s; files: summary.txt summary.json clock.txt runs.tgz"
cat "$OUT/clock.txt"
cat "$OUT/summary.txt"
