#!/usr/bin/env bash
# One device call: quick bench of two candidates, then the full 182-scenario check of the
# faster correct one (run from the repo root). Results under $OUT.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
source lab/flash_attn_fwd/device/with_fa3.sh
S=lab/flash_attn_fwd/scripts; B=kernels/flash_attn_fwd/best
bash $S/best_bench.sh quick "$1=$B/$1.cu" "$2=$B/$2.cu" | tee $OUT/quick_table.txt
win=$(python3 - "$OUT/$1.json" "$OUT/$2.json" <<'PY'
import json, sys
best = None
for p in sys.argv[1:]:
    try: r = json.load(open(p))
    except Exception: continue
    if r.get("status") == "correct" and (best is None or r["geomean_speedup"] > best[0]):
        best = (r["geomean_speedup"], p.rsplit("/", 1)[-1][:-5])
print(best[1] if best else "")
PY
)
[[ -z "$win" ]] && { echo "no correct candidate"; exit 1; }
t0=$(date +%s)
timeout ${FULL_CHECK_S:-170} python3 -m ks_tui check flash_attn_fwd --source $B/$win.cu --json > $OUT/${win}_check_full.json 2> $OUT/${win}_check_full.err
echo "full check of $win: exit $? in $(( $(date +%s) - t0 ))s"
python3 -c "
import json; r=json.load(open('$OUT/${win}_check_full.json')); print(r['status'], r['correct'], r.get('message','')[:200], r.get('timings'))
[print('FAIL', s['id'], s.get('error')) for s in r['scenarios'] if not s['ok']][:12]"
