#!/usr/bin/env bash
# One device call for flash_attn_fwd (run from the repository root on the GPU machine):
#   doctor -> quick check (cold) + quick bench x2 -> gpu tests -> SDPA layout check ->
#   full bench twice (noise). Results under $OUT; a short table is printed last.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export OUT=${OUT:-/tmp/ks-device-out}
mkdir -p "$OUT"
# Leave ~30 s of the 600 s command limit for the summary and the copy back.
export KS_DEADLINE=$(( $(date +%s) + ${KS_CALL_SECONDS:-570} ))
S=kernels/flash_attn_fwd/scripts

{ nvidia-smi; nvcc --version | tail -2; python3 -m ks_tui doctor; } > "$OUT/doctor.txt" 2>&1
tail -25 "$OUT/doctor.txt"

python3 $S/device_run.py quick || { echo "quick phase failed: see log.txt"; exit 1; }

timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/flash tests/harness \
    > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu tests: $(tail -1 "$OUT/pytest_gpu.txt")"

timeout 90 python3 $S/sdpa_layout.py > "$OUT/sdpa_layout.txt" 2>&1
cat "$OUT/sdpa_layout.txt" | cut -c1-200

python3 $S/device_run.py full
