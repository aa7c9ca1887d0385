#!/usr/bin/env bash
# Device runs for flash_attn_fwd (from the repository root on the GPU machine). Results go
# under $OUT; a short table is printed last.
#   bash device_run.sh all        doctor -> quick check (cold) + quick bench x2 -> gpu tests
#                                 -> SDPA layout check -> full bench twice (noise)
#   bash device_run.sh baselines  quick bench twice with fresh baseline timings (noise on the
#                                 quick subset) -> SDPA layout check
#   bash device_run.sh full       full bench twice (noise on all 182)
#   bash device_run.sh kernels    quick subset: seed (baselines alongside, cached, alongside
#                                 again) and best/kernel.cu — loop noise
#   bash device_run.sh verify     gpu tests -> cuDNN time in 3 fresh processes (noise cause)
#                                 -> kernels -> full bench of best/kernel.cu, baselines timed
#   bash device_run.sh candidates NAME=FILE ...   baseline-cache gpu test -> the candidates on
#                                 the quick, short and d64 subsets -> full bench of the seed ->
#                                 full bench of the candidate fastest on the first subset (its
#                                 speedup against the first file's), or of the first file
#                                 (KS_SUBSETS=quick,d256 picks the subsets, KS_SKIP_SEED=1 and
#                                 KS_SKIP_CACHE_TEST=1 skip those steps)
#   bash device_run.sh groups "SUBSETS NAME=FILE ..." ...   one compare.py run per group (each its
#                                 own interleaved A/B, KS_ROUNDS rounds), then, with KS_BEST=FILE,
#                                 a full bench of that file; KS_BEST=auto benches the last group's
#                                 file fastest on its first subset if its speedup beats the
#                                 group's first file's by KS_MIN_GAIN (default 1.01)
# Results are packed into $OUT/results.tgz (the device returns only a few files); a second
# invocation in the same call packs into results-2.tgz, and so on. Do not tar $OUT over them.
set -uo pipefail
MODE=${1:-all}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
source lab/flash_attn_fwd/device/with_fa3.sh
export OUT=${OUT:-/tmp/ks-device-out}
mkdir -p "$OUT"
# Everything must be done this many seconds after the start (the command limit is 600 s): compare.py
# starts a run only if it can end by then (KS_RUN_SECONDS: the expected seconds of a group's first run).
export KS_DEADLINE=${KS_DEADLINE:-$(( $(date +%s) + ${KS_CALL_SECONDS:-570} ))}
S=lab/flash_attn_fwd/scripts

# The run JSONs under $OUT/work into an archive, then work/ goes. A second invocation in the same
# device call (two commands chained) must not overwrite the first's archive: it writes results-2.tgz,
# then results-3.tgz (session 24 lost a call's run files to a tar that reused the name).
pack() {
    local name=results.tgz n=1
    while [[ -e "$OUT/$name" ]]; do n=$((n + 1)); name=results-$n.tgz; done
    tar czf "$OUT/$name" -C "$OUT" work log.txt summary.json 2>/dev/null
    rm -rf "$OUT/work"
    echo "run files: $OUT/$name"
}

layout() {
    timeout 90 python3 -m lab.flash_attn_fwd.scripts.sdpa_layout > "$OUT/sdpa_layout.txt" 2>&1
    cut -c1-220 "$OUT/sdpa_layout.txt"
}

case $MODE in
all)
    { nvidia-smi; nvcc --version | tail -2; python3 -m ks_tui doctor; } > "$OUT/doctor.txt" 2>&1
    tail -12 "$OUT/doctor.txt"
    python3 -m lab.flash_attn_fwd.scripts.device_run quick || { echo "quick phase failed: see log.txt"; exit 1; }
    timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/flash tests/harness lab/flash_attn_fwd/tests \
        > "$OUT/pytest_gpu.txt" 2>&1
    echo "gpu tests: $(tail -1 "$OUT/pytest_gpu.txt")"
    layout
    python3 -m lab.flash_attn_fwd.scripts.device_run full ;;
baselines)
    python3 -m lab.flash_attn_fwd.scripts.device_run quick_noise
    layout ;;
full)
    python3 -m lab.flash_attn_fwd.scripts.device_run full ;;
kernels)
    python3 -m lab.flash_attn_fwd.scripts.device_run kernels_quick ;;
candidates)
    shift
    if [[ -z "${KS_SKIP_CACHE_TEST:-}" ]]; then
        timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/flash/test_gpu_harness.py \
            -k alongside > "$OUT/pytest_cache.txt" 2>&1
        echo "cache test: $(tail -1 "$OUT/pytest_cache.txt")"
    fi
    python3 -m lab.flash_attn_fwd.scripts.compare "${KS_SUBSETS:-quick,short,d64}" "$@" 2>&1 | tee "$OUT/compare.txt"
    [[ -z "${KS_SKIP_SEED:-}" ]] && python3 -m lab.flash_attn_fwd.scripts.device_run full_seed
    # the fastest candidate, or the first file when none is faster than it
    win=$(KS_MIN_GAIN=${KS_MIN_GAIN:-1.0} python3 -m lab.flash_attn_fwd.scripts.compare --pick "" "${KS_SUBSETS:-quick,short,d64}" "$@")
    win=${win:-${1#*=}}
    echo "full bench of the winner: $win"
    [[ -n "$win" ]] && KS_BEST=$win python3 -m lab.flash_attn_fwd.scripts.device_run full_best
    pack ;;
groups)
    shift
    i=0
    for g in "$@"; do
        i=$((i + 1))
        # shellcheck disable=SC2086  # a group is "SUBSETS NAME=FILE ...": split on purpose
        KS_TAG="g$i-" python3 -m lab.flash_attn_fwd.scripts.compare $g 2>&1 | tee -a "$OUT/compare.txt"
    done
    if [[ "${KS_BEST:-}" == auto ]]; then
        # The last group's best file on its first subset, if it beats that group's first file
        # (the reference) by KS_MIN_GAIN; nothing otherwise.
        # shellcheck disable=SC2086  # the group is "SUBSETS NAME=FILE ...": split on purpose
        KS_BEST=$(python3 -m lab.flash_attn_fwd.scripts.compare --pick "g$i-" ${@: -1})
        echo "full bench of the winner: ${KS_BEST:-none}"
    fi
    [[ -n "${KS_BEST:-}" ]] && KS_BEST=$KS_BEST python3 -m lab.flash_attn_fwd.scripts.device_run full_best
    pack ;;
verify)
    t0=$(date +%s)
    timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/flash tests/harness lab/flash_attn_fwd/tests \
        > "$OUT/pytest_gpu.txt" 2>&1
    echo "gpu tests ($(( $(date +%s) - t0 ))s): $(tail -1 "$OUT/pytest_gpu.txt")"
    timeout 150 python3 -m lab.flash_attn_fwd.scripts.cudnn_noise 3 sdpa_cudnn d96-h16-16-s4096 d128-h32-1-s2048 \
        d128-h16-16-s1024-fp16 d256-h16-4-s1024 2>&1 | tail -20
    python3 -m lab.flash_attn_fwd.scripts.device_run kernels_quick
    python3 -m lab.flash_attn_fwd.scripts.device_run full_best ;;
*)
    echo "unknown mode $MODE (all | baselines | full | kernels)"; exit 2 ;;
esac
