#!/usr/bin/env bash
# Harness runs for several kernel files in one device call (run from the repo root):
#   best_bench.sh MODE NAME=FILE[@SED_EXPR] ...   MODE: quick | full | check
# Each result JSON goes to $OUT/NAME.json; a comparison table is printed last.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
source lab/flash_attn_fwd/device/with_fa3.sh
out=${OUT:-/tmp}; mode=$1; shift
args=(--json); verb=bench
[[ $mode == quick ]] && args+=(--quick)
[[ $mode == check ]] && verb=check
names=()
for spec in "$@"; do
  name=${spec%%=*}; rest=${spec#*=}; file=${rest%%@*}
  src=/tmp/bench_$name.cu
  if [[ "$rest" == *@* ]]; then sed "${rest#*@}" "$file" > "$src"; else cp "$file" "$src"; fi
  t0=$(date +%s)
  python3 -m ks_tui $verb flash_attn_fwd --source "$src" "${args[@]}" > "$out/$name.json" 2> "$out/$name.err"
  echo "$name: exit $? in $(( $(date +%s) - t0 ))s"
  names+=("$out/$name.json")
done
python3 -m lab.flash_attn_fwd.scripts.best_summary "${names[@]}"
