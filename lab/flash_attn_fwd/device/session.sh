#!/usr/bin/env bash
# One device call of a KernelSeek session, run the way a user runs one on a GPU box (issue 60): a workspace made
# here (`ks init`) and a new session (`ks session new`), or the session an earlier call exported (KS_SESSION_FILE,
# `ks session import`: the export is whole, so it carries the history a fresh workspace lacks); then each kernel of
# KS_ATTEMPTS written into the session's worktree and tried with `ks try` (the whole grid: every scenario checked and
# timed, FA3 beside cuDNN), each try a commit of the session; then `ks log`, the decision points that fire
# (`ks lab next`) and `ks session export --whole` into $OUT, for the next call or for the lab's results.
# Run from the repository root on the GPU machine, the wheels carried in .whl/ (carry: [".whl"]: fa3-fwd for the
# anchor, gitpython + gitdb + smmap for the session's git, nvidia-ml-py for the clock record):
#   KS_ATTEMPTS="best narrow2" bash lab/flash_attn_fwd/device/session.sh
# env: KS_ATTEMPTS      names, in order: `best` is KS_BASE_KERNEL as it is; any other NAME is
#                       KS_PATCH_DIR/NAME.patch applied to it (`git apply`); the patch's own lines before the diff
#                       give the try's summary ("Summary: ...") and the bank question it answers ("Question: QID")
#      KS_SESSION_FILE  session.tgz of an earlier call, to go on with that session (default: a new session)
#      KS_CALL_SECONDS  wall budget of the call (default 540); a try starts only while KS_TRY_SECONDS (default 135)
#                       are left, so the call ends with its export
#      KS_TRY_TIMEOUT   the most seconds one try may take (default: what the call has left), so a kernel that hangs
#                       costs one try, not the call
#      KS_WORKSPACE     where the workspace is made (default /tmp/ks-ws; removed first)
#      KS_EDGE_ATTEMPTS names whose kernels then run tests/flash/test_gpu_best_edges.py (beside best), time left
#      KS_PROFILE       scenario ids: `ks profile` of the first try's attempt on each (Nsight Compute), time left
#      KS_TASK, KS_BASE_KERNEL, KS_PATCH_DIR, KS_TRY_ARGS (e.g. --quick): another task or scope (the lab test
#                       runs this on the CPU task)
# $OUT gets: log.txt (`ks log`), session.tgz (`ks session export --whole`'s file: the attempts, results and trace,
# which `ks session import` takes into any repository, the next call's included) and run.tgz (run/: try-N-NAME.json,
# each try's attempt and result, and its stderr; profile-N-ID.json; clock.txt, prebuild.txt, next.txt,
# pytest-edges.txt).
set -uo pipefail
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/ks-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
# a bare machine has no git identity; the session's commits need one
export GIT_AUTHOR_NAME=${GIT_AUTHOR_NAME:-kernelseek} GIT_AUTHOR_EMAIL=${GIT_AUTHOR_EMAIL:-kernelseek@localhost}
export GIT_COMMITTER_NAME=${GIT_COMMITTER_NAME:-kernelseek} GIT_COMMITTER_EMAIL=${GIT_COMMITTER_EMAIL:-kernelseek@localhost}
RUN=$OUT/run  # everything but the session and the log, tarred at the end: a call returns only a few files
mkdir -p "$RUN"
REPO=$PWD
T0=$(date +%s)
END=$(( T0 + ${KS_CALL_SECONDS:-540} ))
left() { echo $(( END - $(date +%s) )); }
TASK=${KS_TASK:-flash_attn_fwd}
abs() { [[ $1 == /* ]] && echo "$1" || echo "$REPO/$1"; }  # a path from the repository root, or absolute
BASE=$(abs "${KS_BASE_KERNEL:-kernels/flash_attn_fwd/best/kernel.cu}")
PATCHES=$(abs "${KS_PATCH_DIR:-lab/flash_attn_fwd/attempts}")
ATTEMPTS=${KS_ATTEMPTS:-best}
KS="python3 -m ks_tui"
fail() { echo "session.sh: $*" >&2; exit 2; }

# ---- the plan, checked before anything runs: every patch exists and applies ---------------------------------------
PLAN=$RUN/plan
mkdir -p "$PLAN"
for a in $ATTEMPTS; do
  mkdir -p "$PLAN/$a"
  cp "$BASE" "$PLAN/$a/$(basename "$BASE")"
  if [[ $a != best ]]; then
    [[ -f $PATCHES/$a.patch ]] || fail "no attempt $a ($PATCHES/$a.patch)"
    (cd "$PLAN/$a" && git apply "$PATCHES/$a.patch") || fail "$a.patch does not apply to $BASE"
  fi
done

clock() {  # clock LABEL: the SM clock, power and temperature, to clock.txt
  local line
  line=$(nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader 2>/dev/null | head -1)
  printf '%-24s +%4ds  %s\n' "$1" $(( $(date +%s) - T0 )) "${line:-no nvidia-smi}" >> "$RUN/clock.txt"
}
clock start
[[ -f lab/flash_attn_fwd/device/with_fa3.sh ]] && source lab/flash_attn_fwd/device/with_fa3.sh

# every kernel built at once into the harness's build cache, where each try then finds it (flash_attn_fwd's builds take
# ~11 s apiece, one core each)
if [[ $TASK == flash_attn_fwd ]]; then
  python3 -m lab.flash_attn_fwd.scripts.prebuild "$PLAN"/*/kernel.cu 2>&1 | tee "$RUN/prebuild.txt"
  clock built
fi

# ---- the workspace and the session ------------------------------------------------------------------------------
WS=${KS_WORKSPACE:-/tmp/ks-ws}
rm -rf "$WS"
$KS init "$WS" > /dev/null || fail "ks init failed"
cd "$WS" || exit 2
if [[ -n ${KS_SESSION_FILE:-} ]]; then  # an earlier call's session, exported whole: it imports into this workspace
  $KS session import "$(abs "$KS_SESSION_FILE")" > "$RUN/import.txt" || fail "ks session import $KS_SESSION_FILE failed"
  SID=$(sed -n 's/^session \([^ ]*\) .*/\1/p' "$RUN/import.txt" | head -1)
  [[ -n $SID ]] || fail "no session in $KS_SESSION_FILE"
else
  SID=$($KS session new "$TASK") || fail "ks session new $TASK failed"
fi
WT=$WS/sessions/$SID/worktree
echo "session $SID ($TASK), worktree $WT"

# ---- the tries --------------------------------------------------------------------------------------------------
n=0
for a in $ATTEMPTS; do
  if (( $(left) < ${KS_TRY_SECONDS:-135} )); then
    echo "session.sh: $(left) s left: $a and the rest not tried" | tee -a "$RUN/skipped.txt"
    continue
  fi
  n=$((n + 1))
  cp "$PLAN/$a/$(basename "$BASE")" "$WT/kernels/$TASK/$(basename "$BASE")"
  summary=$a; question=()
  if [[ $a == best ]]; then
    summary="${KS_BASE_KERNEL:-kernels/flash_attn_fwd/best/kernel.cu} as it is"
  else
    s=$(sed -n 's/^Summary: //p' "$PATCHES/$a.patch" | head -1); [[ -n $s ]] && summary="$a: $s"
    q=$(sed -n 's/^Question: //p' "$PATCHES/$a.patch" | head -1); [[ -n $q ]] && question=(--question "$q")
  fi
  clock "try $n $a"
  t=$(date +%s)
  limit=$(( $(left) - 15 )); (( ${KS_TRY_TIMEOUT:-0} > 0 && KS_TRY_TIMEOUT < limit )) && limit=$KS_TRY_TIMEOUT
  $KS try -s "$SID" --summary "$summary" "${question[@]}" ${KS_TRY_ARGS:-} --timeout "$limit" --json \
    > "$RUN/try-$n-$a.json" 2> "$RUN/try-$n-$a.err"
  echo "try $n $a: rc $? in $(( $(date +%s) - t )) s"
  clock "done $n $a"
done
$KS standby stop > /dev/null 2>&1

# ---- Nsight Compute on the first try's attempt, one scenario of KS_PROFILE at a time (`ks profile N`) -------------
first=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["attempt"]["number"])' "$RUN"/try-1-*.json \
  2> /dev/null)
for id in ${KS_PROFILE:-}; do
  [[ -n $first ]] && (( $(left) > 60 )) || { echo "session.sh: no profile of $id (no first attempt, or no time)"; continue; }
  timeout $(( $(left) - 40 )) $KS profile "$first" -s "$SID" --scenario "$id" --json > "$RUN/profile-$first-$id.json" \
    2> "$RUN/profile-$first-$id.err"
  echo "profile of attempt $first on $id: rc $?"
done

# ---- what the session says now, and the session itself -----------------------------------------------------------
$KS log -s "$SID" | tee "$OUT/log.txt"
$KS lab next -s "$SID" > "$RUN/next.txt" 2>&1
$KS session export --whole "$SID" "$OUT/session.tgz" || fail "ks session export failed"
echo "exported: $OUT/session.tgz ($(( $(date +%s) - T0 )) s)"

# ---- the edge shapes the grid never makes, on the kernels named (the pytest wheels carried too) ---------------------
cd "$REPO" || exit 2
if [[ -n ${KS_EDGE_ATTEMPTS:-} ]] && (( $(left) > 40 )); then
  srcs=$(for a in $KS_EDGE_ATTEMPTS; do echo -n "$PLAN/$a/$(basename "$BASE"):"; done)
  KS_EDGE_SOURCES=${srcs%:} timeout $(left) python3 -m pytest -m gpu -q -rs -p no:cacheprovider -n 0 \
    tests/flash/test_gpu_best_edges.py > "$RUN/pytest-edges.txt" 2>&1
  echo "edges ($KS_EDGE_ATTEMPTS): rc $?; $(tail -1 "$RUN/pytest-edges.txt")"
fi
rm -rf "$PLAN"
tar czf "$OUT/run.tgz" -C "$OUT" run && rm -rf "$RUN"
