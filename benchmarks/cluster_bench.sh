#!/usr/bin/env bash
# On a box of GPUs: the full flash_attn_fwd check+bench on one GPU, then over a local Dask
# cluster of 1 and 2 workers and one per GPU, each worker pinned to its own GPU.
# Writes benchmarks/results/cluster_gpu.json (one row per run: wall, cluster start, compile,
# bytes shipped, the slowest worker's phases, each worker's wall and device).
#
#   bash benchmarks/cluster_bench.sh [TASK] [WORKER COUNTS]     # defaults: flash_attn_fwd 1,2,gpus
#
# Needs dask and distributed (docs/cluster.md, "What travels to a GPU box").
set -euo pipefail
cd "$(dirname "$0")/.."
task="${1:-flash_attn_fwd}"
counts="${2:-1,2,gpus}"
python3 -c "import dask, distributed" 2>/dev/null || {
  echo "cluster_bench: install dask and distributed first (docs/cluster.md)" >&2; exit 2; }
nvidia-smi -L >&2 || true
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python3 benchmarks/cluster_bench.py --task "$task" --workers "$counts" --mode bench \
  --out "benchmarks/results/cluster_gpu.json"
