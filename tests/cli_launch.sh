#!/usr/bin/env bash
# `graphdirect train --gpus N` without a GPU (issue 14, items 1 and 7): its refusals, and the
# launcher's handling of its worker processes through the self-test hook (GD_LAUNCH_SELFTEST,
# tools/rank.c), with which a worker skips training once the communicator id has gone round. A
# normal run exits 0; a rank that fails or is killed stops the whole run within the grace period,
# and the launcher names it; SIGINT and SIGTERM to the launcher stop every worker; a worker that
# ignores them is killed after GD_LAUNCH_GRACE_S; no worker outlives the launcher, even a launcher
# killed with SIGKILL. Under mpirun (when the build has MPI and mpirun is installed) the same.
# usage: cli_launch.sh CLI NCCL(ON|OFF) MPI(ON|OFF)
set -u
cli=$1
nccl=${2:-OFF}
mpi=${3:-OFF}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
show() { echo "--- stdout"; cat "$tmp/out"; echo "--- stderr"; cat "$tmp/err"; }
# The self-test's workers never touch a GPU: four visible ones let --gpus name up to GPU 3 on
# any machine. The launcher prints the workers' pids at GD_LOG_LEVEL=info.
export CUDA_VISIBLE_DEVICES=0,1,2,3 GD_LOG_LEVEL=info
unset GD_RANK GD_WORLD_SIZE GD_LOCAL_RANK GD_DEVICE GD_COMM_ID_IN_FD GD_COMM_ID_OUT_FD \
      OMPI_COMM_WORLD_SIZE OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_LOCAL_RANK GD_LAUNCH_GRACE_S

# run WANT_RC PATTERN ARGS...: run the tool, check its exit code and that stderr matches.
run() {
    local want=$1 pattern=$2
    shift 2
    "$cli" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    [ $rc -eq "$want" ] || { show; fail "'$*' exited $rc, not $want"; }
    grep -q -- "$pattern" "$tmp/err" || { show; fail "'$*': no '$pattern' on stderr"; }
}
# Start "$@" in the background (stdout, stderr to $tmp/out, $tmp/err); its pid in $pid.
start() {
    rm -f "$tmp/out" "$tmp/err"
    "$@" >"$tmp/out" 2>"$tmp/err" &
    pid=$!
    t0=$SECONDS
}
finish() { wait $pid 2>/dev/null; rc=$?; }
# Wait until $tmp/err holds a line matching $1 (at most 30 s), or fail.
wait_for() {
    for _ in $(seq 300); do grep -q -- "$1" "$tmp/err" 2>/dev/null && return 0; sleep 0.1; done
    show
    fail "no '$1' on stderr"
}
# The worker pids the launcher printed.
pids() { sed -n 's/^graphdirect: rank [0-9]*: pid \([0-9]*\), GPU [0-9]*$/\1/p' "$tmp/err"; }
# A process that exists and is not a zombie (an orphan's zombie may wait for a slow reaper).
alive() {
    local state
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
    [ -n "$state" ] && [ "$state" != Z ]
}
# Every worker printed is gone (within $1 seconds), and there were $2 of them.
no_survivors() {
    local n
    n=$(pids | wc -l)
    [ "$n" -eq "$2" ] || { show; fail "$2 workers expected, the launcher printed $n"; }
    for p in $(pids); do
        for _ in $(seq $((10 * $1))); do alive "$p" || break; sleep 0.1; done
        alive "$p" && { show; fail "worker $p outlived the launcher"; }
    done
    return 0
}

# Refusals, before any worker starts.
run 2 "--gpus trains on GPUs; --mode cpu runs on the CPU" train --gpus 2 --mode cpu
for bad in 0 -1 x 2x 1,x 1, 65; do
    run 2 "--gpus" train --gpus "$bad"
done
run 2 "names GPU 1 twice" train --gpus 0,1,1
run 2 "--device names one GPU, --gpus several" train --gpus 2 --device 1
# Without NCCL in the build the run is refused for that; with it, for the GPUs, since
# CUDA_VISIBLE_DEVICES shows none.
CUDA_VISIBLE_DEVICES= run 1 "graphdirect train: --gpus" train --gpus 2
if [ "$nccl" = OFF ]; then
    grep -q "this build has no NCCL: install libnccl-dev" "$tmp/err" || { show; fail "no NCCL"; }
else
    grep -q "this build has no NCCL\|shows 0 GPUs" "$tmp/err" || { show; fail "no GPU"; }
fi
export GD_LAUNCH_SELFTEST=sleep
CUDA_VISIBLE_DEVICES=0 run 1 \
    "asks for GPU 1, but this machine shows 1 GPU (CUDA_VISIBLE_DEVICES=0)" train --gpus 2
run 1 "asks for GPU 5, but this machine shows 4 GPUs" train --gpus 0,5
GD_LAUNCH_GRACE_S=soon run 1 "GD_LAUNCH_GRACE_S='soon' is not a number" train --gpus 2
# Under mpirun, mpirun starts the ranks.
OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 run 2 "--gpus under mpirun" train --gpus 2
if [ "$mpi" = OFF ]; then
    OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 run 1 "this build has no MPI" train
fi
# A process that looks like a worker but was not started by the launcher.
GD_RANK=1 GD_WORLD_SIZE=2 run 1 "rank 1: graphdirect train: GD_RANK is set but GD_COMM_ID_IN_FD" \
    train
GD_RANK=2 GD_WORLD_SIZE=2 run 1 "GD_RANK=2 is not below GD_WORLD_SIZE=2" train

# A normal run: every worker exits 0, so does the launcher. The workers' command line has no
# --gpus (a worker refuses one), whichever way it was written.
for form in "--gpus 3" "--gpus=3" "--gpus 5 --gpus=0,2,3"; do
    # shellcheck disable=SC2086
    run 0 "rank 2: pid" train $form --epochs 1
    no_survivors 5 3
done
grep -q "GPU 3" "$tmp/err" || { show; fail "--gpus 0,2,3: rank 2 is not on GPU 3"; }
# Workers that end at once: rank 0 may be gone before the launcher read its id.
for _ in 1 2 3 4 5; do
    GD_LAUNCH_SELFTEST=sleep:0 run 0 "rank 1: pid" train --gpus 2
done

# A rank that fails, or is killed, stops the others (which would sleep 60 s) at once.
for how in "fail:1 exit status 1" "crash:2 killed by signal SIGKILL"; do
    set -- $how
    rank=${1#*:}
    start env GD_LAUNCH_SELFTEST="$1" "$cli" train --gpus 3
    finish
    [ $rc -eq 1 ] || { show; fail "$1: the launcher exited $rc, not 1"; }
    [ $((SECONDS - t0)) -lt 20 ] || { show; fail "$1: the run took $((SECONDS - t0)) s"; }
    grep -q "^graphdirect: rank $rank failed (${how#* }); stopping the other ranks$" "$tmp/err" \
        || { show; fail "$1: the failure is not reported"; }
    no_survivors 5 3
done
start env GD_LAUNCH_SELFTEST=fail:1 "$cli" train --gpus 2
finish
grep -q "^rank 1: graphdirect: self-test failure (GD_LAUNCH_SELFTEST=fail:1)$" "$tmp/err" \
    || { show; fail "the failing worker's message has no 'rank 1: ' prefix"; }

# SIGINT (Ctrl-C) and SIGTERM to the launcher stop every worker; the launcher exits 128 + it.
for sig in INT TERM; do
    start env GD_LAUNCH_SELFTEST=sleep:60 "$cli" train --gpus 2
    wait_for "rank 1: pid"
    sleep 0.5
    kill -$sig $pid
    finish
    want=$((128 + $(kill -l $sig)))
    [ $rc -eq $want ] || { show; fail "SIG$sig: the launcher exited $rc, not $want"; }
    [ $((SECONDS - t0)) -lt 20 ] || { show; fail "SIG$sig: the run took $((SECONDS - t0)) s"; }
    no_survivors 5 2
done

# A worker that ignores the signal is killed once the grace period is over.
start env GD_LAUNCH_SELFTEST=stubborn GD_LAUNCH_GRACE_S=1 "$cli" train --gpus 2
# Both workers ignore the signals before it comes (under load a worker can take seconds to
# start, and the default action of SIGTERM would kill it before it ignores anything).
wait_for "rank 1: self-test: ignoring"
wait_for "rank 0: self-test: ignoring"
kill -TERM $pid
finish
[ $rc -eq 143 ] || { show; fail "stubborn workers: the launcher exited $rc, not 143"; }
grep -q "did not stop within 1 s of being asked; killing it" "$tmp/err" \
    || { show; fail "stubborn workers: no message"; }
[ $((SECONDS - t0)) -lt 20 ] || { show; fail "stubborn workers: the run took $((SECONDS - t0)) s"; }
no_survivors 5 2

# A launcher killed with SIGKILL takes its workers with it (the parent-death signal).
start env GD_LAUNCH_SELFTEST=sleep:60 "$cli" train --gpus 2
wait_for "rank 1: pid"
sleep 0.5
kill -KILL $pid
finish
no_survivors 10 2

# mpirun takes the same path: the id is broadcast, a failing rank ends the job.
if [ "$mpi" = ON ] && command -v mpirun >/dev/null; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,tcp
    timeout 60 mpirun -np 2 --oversubscribe -x GD_LAUNCH_SELFTEST=sleep "$cli" train \
        >"$tmp/out" 2>"$tmp/err" || { show; fail "mpirun -np 2: a normal run failed"; }
    timeout 60 mpirun -np 2 --oversubscribe -x GD_LAUNCH_SELFTEST=fail:1 "$cli" train \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || { show; fail "mpirun with a failing rank exited $rc"; }
    grep -q "^rank 1: graphdirect: self-test failure" "$tmp/err" \
        || { show; fail "mpirun: no message"; }
    OMPI_COMM_WORLD_SIZE=2 run 2 "--gpus under mpirun" train --gpus 2
else
    echo "mpirun or MPI in the build missing: the mpirun cases are skipped"
fi
echo "cli_launch: all passed"
