#!/usr/bin/env bash
# The command-line tool against what schedulers, users and file systems do to a run (issue 13
# items 1, 6, 11 and 13), one regression per finding: SIGTERM and SIGHUP stop `generate` and
# `train` cleanly (exit 128 + the signal, no temporary left), the temporaries of a SIGKILLed run
# are swept by the next run, a FIFO in place of an input is refused at once, a dataset changed
# under `train` stops it with the file's name, SIGBUS is reported instead of killing the tool
# with 135, and a full disk (a small tmpfs, where one can be mounted) fails `generate` with a
# message, from the command line and from Python.
# usage: cli_signals.sh CLI [LIBRARY SOURCE_DIR]
set -u
cli=$1
lib=${2:-}
src=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# Start "$@" in the background (stdout to $tmp/out, stderr to $tmp/err); its pid in $pid.
start() { rm -f "$tmp/out" "$tmp/err"; "$@" >"$tmp/out" 2>"$tmp/err" & pid=$!; }
# Wait until file $1 holds a line matching $2 (at most 60 s), or fail.
wait_for() {
    for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    cat "$tmp/out" "$tmp/err"; fail "no '$2' in $1"
}
finish() { wait $pid; rc=$?; }
no_temporaries() { # dir name what
    if ls "$1" | grep -q "^$2\.\(tmp\|old\)\."; then ls -la "$1"; fail "$3 left a temporary"; fi
}
# A pid no process has: a child that has ended.
dead_pid() { sh -c 'exit 0' & local p=$!; wait $p; echo $p; }

"$cli" generate --preset tiny --nodes 3000 --out "$tmp/ds" 2>/dev/null || fail "generate"

# Regression, "SIGTERM / SIGHUP / SIGKILL leave temporary files forever" (item 6).
for sig in TERM HUP; do
    start "$cli" generate --preset tiny --nodes 3000000 --out "$tmp/big"
    wait_for "$tmp/err" "generate: edges"
    kill -$sig $pid
    finish
    want=$((128 + $(kill -l $sig)))
    [ $rc -eq $want ] || { cat "$tmp/err"; fail "generate after SIG$sig exited $rc, not $want"; }
    grep -q "interrupted" "$tmp/err" || { cat "$tmp/err"; fail "SIG$sig: no message"; }
    [ ! -e "$tmp/big" ] || fail "generate after SIG$sig left $tmp/big"
    no_temporaries "$tmp" big "generate after SIG$sig"
done
start "$cli" generate --preset tiny --nodes 3000000 --out "$tmp/big"
wait_for "$tmp/err" "generate: edges"
kill -KILL $pid
finish
[ -d "$tmp/big.tmp.$pid" ] || fail "SIGKILL left no $tmp/big.tmp.$pid (the test needs one)"
"$cli" generate --preset tiny --nodes 2000 --out "$tmp/big" >/dev/null 2>"$tmp/err" \
    || { cat "$tmp/err"; fail "generate after a SIGKILLed one"; }
grep -q "removed '$tmp/big.tmp.$pid', left by process $pid" "$tmp/err" \
    || { cat "$tmp/err"; fail "the sweep said nothing"; }
no_temporaries "$tmp" big "generate after a SIGKILLed one"
# Opening the dataset sweeps as well.
mkdir "$tmp/big.tmp.$(dead_pid)"
"$cli" info "$tmp/big" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "info"; }
no_temporaries "$tmp" big "info"

# stripe: SIGTERM stops it with the dataset as it was and nothing left in the target
# directories; the temporaries of a SIGKILLed one are swept by the next, which succeeds.
"$cli" generate --preset tiny --nodes 2000000 --out "$tmp/wide" 2>/dev/null || fail "generate wide"
mkdir -p "$tmp/disk0" "$tmp/disk1"
stripe=("$cli" stripe "$tmp/wide" --to "$tmp/disk0,$tmp/disk1" --unit 64K)
start "${stripe[@]}"
wait_for "$tmp/err" "stripe: "
kill -TERM $pid
finish
[ $rc -eq 143 ] || { cat "$tmp/err"; fail "stripe after SIGTERM exited $rc, not 143"; }
grep -q "as it was" "$tmp/err" || { cat "$tmp/err"; fail "stripe after SIGTERM: no message"; }
[ -z "$(ls -A "$tmp/disk0")$(ls -A "$tmp/disk1")" ] || { ls -la "$tmp"/disk*; fail "SIGTERM: files left"; }
[ -f "$tmp/wide/features.npy" ] || fail "stripe after SIGTERM: features.npy is gone"
start "${stripe[@]}"
wait_for "$tmp/err" "stripe: "
kill -KILL $pid
finish
ls "$tmp/disk0" | grep -q "\.tmp\.$pid\$" || { ls -la "$tmp/disk0"; fail "SIGKILL left no stripe temporary (the test needs one)"; }
"$cli" info "$tmp/wide" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "info after a SIGKILLed stripe"; }
"${stripe[@]}" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "stripe after a SIGKILLed one"; }
if ls "$tmp/disk0" "$tmp/disk1" | grep -q "\.tmp\."; then ls -la "$tmp"/disk*; fail "stripe left a temporary"; fi
"$cli" info "$tmp/wide" 2>&1 | grep -q "features striped over 2 files" || fail "info: not striped"
rm -rf "$tmp/wide" "$tmp/disk0" "$tmp/disk1"

# train: SIGTERM stops it after the minibatch in flight; a checkpoint save killed mid-write
# leaves "<name>.gdc.tmp.<pid>", which the resumed run removes.
start "$cli" train "$tmp/ds" --mode cpu --epochs 1000 --checkpoint "$tmp/ck"
wait_for "$tmp/out" "^epoch   2"
kill -TERM $pid
finish
[ $rc -eq 143 ] || { cat "$tmp/out" "$tmp/err"; fail "train after SIGTERM exited $rc"; }
grep -q "interrupted" "$tmp/err" || { cat "$tmp/err"; fail "train SIGTERM: no message"; }
no_temporaries "$tmp/ck" checkpoint.gdc "train after SIGTERM"
no_temporaries "$tmp/ck" best.gdc "train after SIGTERM"
stale=$tmp/ck/checkpoint.gdc.tmp.$(dead_pid)
echo partial >"$stale"
"$cli" train "$tmp/ds" --mode cpu --epochs 3 --checkpoint "$tmp/ck" --resume >/dev/null \
    2>"$tmp/err" || { cat "$tmp/err"; fail "train --resume"; }
[ ! -e "$stale" ] || fail "train --resume left $stale"

# Regression, "a FIFO in place of meta.json, a .npy, a --model file or an edge list hangs
# forever" (item 11): refused at once, naming the file.
cp -r "$tmp/ds" "$tmp/fifo"
for f in meta.json features.npy; do
    rm "$tmp/fifo/$f" && mkfifo "$tmp/fifo/$f"
    timeout 60 "$cli" info "$tmp/fifo" >/dev/null 2>"$tmp/err"
    rc=$?
    [ $rc -eq 1 ] || fail "info with a FIFO for $f exited $rc"
    grep -q "$f' is not a regular file (it is a FIFO" "$tmp/err" || { cat "$tmp/err"; fail "$f"; }
    rm "$tmp/fifo/$f" && cp "$tmp/ds/$f" "$tmp/fifo/$f"
done
mkfifo "$tmp/edges.txt" "$tmp/model.gdc"
timeout 60 "$cli" convert "$tmp/edges.txt" --out "$tmp/conv" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "FIFO" "$tmp/err" || { cat "$tmp/err"; fail "convert of a FIFO"; }
timeout 60 "$cli" eval --model "$tmp/model.gdc" "$tmp/ds" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "FIFO" "$tmp/err" || { cat "$tmp/err"; fail "eval --model FIFO"; }
# --metrics may be a FIFO that a process reads (a live consumer); one without a reader is
# refused at once instead of blocking the run forever.
mkfifo "$tmp/metrics.fifo"
timeout 60 "$cli" train "$tmp/ds" --mode cpu --epochs 1 --metrics "$tmp/metrics.fifo" \
    >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "FIFO that no process reads" "$tmp/err" || { cat "$tmp/err"; fail "--metrics FIFO"; }

# Regression, "changing dataset files in place while train runs gives SIGBUS / SIGSEGV"
# (item 13): the change is caught at the next epoch boundary, naming the file; SIGBUS (what
# a truncation mid-epoch raises) is reported with the dataset's name, exit 1.
cp -r "$tmp/ds" "$tmp/moving"
start "$cli" train "$tmp/moving" --mode cpu --epochs 1000
wait_for "$tmp/out" "^epoch   1"
printf 'x' >>"$tmp/moving/features.npy"
finish
[ $rc -eq 1 ] || { cat "$tmp/out" "$tmp/err"; fail "train on a changed dataset exited $rc"; }
grep -q "features.npy' was changed in place" "$tmp/err" || { cat "$tmp/err"; fail "changed msg"; }
start "$cli" train "$tmp/ds" --mode cpu --epochs 1000
wait_for "$tmp/out" "^epoch   1"
kill -BUS $pid
finish
[ $rc -eq 1 ] || { cat "$tmp/err"; fail "train after SIGBUS exited $rc, expected 1"; }
grep -q "SIGBUS.*dataset '$tmp/ds' may have been truncated" "$tmp/err" \
    || { cat "$tmp/err"; fail "SIGBUS message"; }

# Regression, "SIGBUS when generate --out runs out of disk space" (item 1): on a small tmpfs
# (a private mount namespace: root, or a user namespace) at several free-space levels.
if unshare -m true 2>/dev/null; then ns="unshare -m"; elif unshare -Urm true 2>/dev/null; then
    ns="unshare -Urm"; else ns=""; fi
if [ -z "$ns" ]; then
    echo "no mount namespace here: the disk-full part is left to test_io_hazards (RLIMIT_FSIZE)"
    exit 0
fi
mkdir "$tmp/small"
for kb in 256 640 1024; do
    $ns sh -c 'mount -t tmpfs -o size='$kb'k none "$1" && exec "$2" generate --preset tiny \
        --nodes 6000 --out "$1/x"' sh "$tmp/small" "$cli" >/dev/null 2>"$tmp/err"
    rc=$?
    [ $rc -eq 1 ] || { cat "$tmp/err"; fail "generate on a ${kb}k tmpfs exited $rc"; }
    grep -q "cannot reserve [0-9]* bytes for '$tmp/small/x.tmp.[0-9]*/.*': No space left" \
        "$tmp/err" || { cat "$tmp/err"; fail "${kb}k tmpfs message"; }
done
# From Python, the same failure is an exception, not a dead interpreter.
if [ -n "$lib" ] && [ -n "$src" ] && command -v python3 >/dev/null; then
    GRAPHDIRECT_LIB=$lib PYTHONPATH=$src/python $ns sh -c 'mount -t tmpfs -o size=512k none "$1" \
        && exec python3 -c "
import sys, graphdirect
try:
    graphdirect.generate(\"tiny\", nodes=6000, out=sys.argv[1] + \"/x\")
except graphdirect.GraphdirectError as e:
    print(\"raised:\", e)
    sys.exit(0)
sys.exit(3)" "$1"' sh "$tmp/small" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 0 ] && grep -q "No space left" "$tmp/out" \
        || { cat "$tmp/out" "$tmp/err"; fail "python generate on a full tmpfs exited $rc"; }
fi
echo "cli_signals: ok"
