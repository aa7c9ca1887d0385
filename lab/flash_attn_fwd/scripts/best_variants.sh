#!/usr/bin/env bash
# Probe several kernel files on the device, one process each (a crash in one cannot poison
# the others). Usage: best_variants.sh NAME=FILE[@SED_EXPR] ...   (writes logs under $OUT)
# e.g. best_variants.sh v2=best/kernel.cu "np=best/kernel.cu@s/grid = num_tiles < num_sms() ? num_tiles : num_sms()/grid = num_tiles/"
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp}
for spec in "$@"; do
  name=${spec%%=*}; rest=${spec#*=}
  file=${rest%%@*}; expr=""
  [[ "$rest" == *@* ]] && expr=${rest#*@}
  src=/tmp/variant_$name.cu
  if [[ -n "$expr" ]]; then sed "$expr" "$file" > "$src"; cmp -s "$file" "$src" && { echo "$name: sed changed nothing"; continue; }; else cp "$file" "$src"; fi
  echo "=== $name"
  PYTHONUNBUFFERED=1 python3 "$here/best_probe.py" "$src" --out "$out" > "$out/$name.log" 2>&1
  cp "$out/probe_times.json" "$out/$name.json" 2>/dev/null; rm -f "$out/probe_times.json"
  grep -E "BAD|Error|error" "$out/$name.log" | head -5
  sed -n '/SUMMARY/,$p' "$out/$name.log"
done
