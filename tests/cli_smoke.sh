#!/usr/bin/env bash
# The command-line tool end to end: help everywhere, generate -> info, determinism of the files,
# refusal to clobber, convert of the real Cora graph, one epoch of cpu training, clean failures
# on corrupt input (exit 1 with a message naming the file, never a crash), and Ctrl-C leaving no
# partial output.
set -u
cli=$1
shared=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect_rc() { # expected-rc command...
    local want=$1; shift
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    [ $rc -eq "$want" ] || { cat "$tmp/out" "$tmp/err"; fail "'$*' exited $rc, expected $want"; }
}

expect_rc 0 "$cli" --help
grep -q "usage: graphdirect" "$tmp/out" || fail "top-level help"
for c in generate convert stripe info train; do
    expect_rc 0 "$cli" $c --help
    grep -q "usage: graphdirect $c" "$tmp/out" || fail "$c --help"
done
expect_rc 2 "$cli" frobnicate
expect_rc 2 "$cli" generate --nodes -5
grep -q "nodes" "$tmp/err" || fail "bad --nodes message"
expect_rc 2 "$cli" convert
expect_rc 2 "$cli" stripe "$tmp"
grep -q -- "--to" "$tmp/err" || fail "stripe without --to: no message"
expect_rc 2 "$cli" stripe "$tmp" --to "$tmp" --unit -4K
expect_rc 1 "$cli" stripe "$tmp/none" --to "$tmp"
grep -q "none" "$tmp/err" || fail "stripe of a missing dataset: no message naming it"
# Several GPUs' options: named choices, and locality-aware sampling only where rows are cached.
expect_rc 2 "$cli" train --placement everywhere
grep -q "replicate, partition" "$tmp/err" || fail "bad --placement message"
expect_rc 2 "$cli" train --host-gather dma
grep -q "zero-copy, cpu, split" "$tmp/err" || fail "bad --host-gather message"
expect_rc 2 "$cli" train --host-gather split=-1
grep -q "split=-1" "$tmp/err" || fail "bad --host-gather split= not named"
expect_rc 2 "$cli" train --locality 1
grep -q "factor from 2" "$tmp/err" || fail "bad --locality message"
expect_rc 1 "$cli" train --preset tiny --mode cpu --epochs 1 --locality 4
grep -q "zero-copy" "$tmp/err" || fail "--locality in cpu mode: no message naming zero-copy"
expect_rc 0 "$cli" info --params
grep -q GD_LOG_LEVEL "$tmp/out" || fail "info --params"
# Regression, "write errors on stdout are ignored (info > /dev/full exits 0)": a failed write of
# the output fails the command, with a message on stderr.
if [ -w /dev/full ]; then
    if "$cli" info --params >/dev/full 2>"$tmp/err"; then fail "info > /dev/full exited 0"; fi
    grep -q "writing the output failed" "$tmp/err" || { cat "$tmp/err"; fail "/dev/full message"; }
fi

# generate -> info; the progress goes to stderr as plain lines when it is not a terminal
expect_rc 0 "$cli" generate --preset tiny --seed 7 --out "$tmp/a"
grep -q "generate" "$tmp/err" || fail "no progress lines on stderr"
grep -q "%" "$tmp/err" || fail "progress lines carry no percentage"
for f in meta.json indptr.npy indices.npy features.npy labels.npy train_idx.npy valid_idx.npy test_idx.npy; do
    [ -f "$tmp/a/$f" ] || fail "generate wrote no $f"
done
expect_rc 0 "$cli" info "$tmp/a" --validate
grep -q "^nodes" "$tmp/out" && grep -q "in-degree" "$tmp/out" && grep -q "placement plan" "$tmp/out" \
    && grep -q "^  indices " "$tmp/out" && grep -q "auto picked" "$tmp/out" \
    || { cat "$tmp/out"; fail "info output"; }
# the plan of an asked mode: cpu anywhere; a bad mode is a usage error
expect_rc 0 "$cli" info "$tmp/a" --mode cpu
grep -q "mode cpu (as asked)" "$tmp/out" || { cat "$tmp/out"; fail "info --mode cpu"; }
expect_rc 2 "$cli" info "$tmp/a" --mode warp-drive

# same seed, same bytes; existing output is not clobbered without --overwrite
expect_rc 0 "$cli" generate --preset tiny --seed 7 --out "$tmp/b" --threads 1
for f in indptr.npy indices.npy features.npy labels.npy train_idx.npy; do
    cmp -s "$tmp/a/$f" "$tmp/b/$f" || fail "$f differs between two runs with the same seed"
done
before=$(md5sum "$tmp/a/indices.npy")
expect_rc 1 "$cli" generate --preset tiny --seed 8 --out "$tmp/a"
grep -q "exists" "$tmp/err" && grep -q -- "--overwrite" "$tmp/err" && ! grep -q -- "--force" "$tmp/err" \
    || { cat "$tmp/err"; fail "clobber message (it names --overwrite, not --force)"; }
[ "$(md5sum "$tmp/a/indices.npy")" = "$before" ] || fail "existing dataset was modified"
expect_rc 0 "$cli" generate --preset tiny --seed 8 --out "$tmp/a" --overwrite
[ "$(md5sum "$tmp/a/indices.npy")" != "$before" ] || fail "--overwrite did not replace"
ls "$tmp" | grep -q "tmp\." && fail "temporary directory left behind"

# corrupt input: truncated features, garbage meta.json, missing directory
cp -r "$tmp/b" "$tmp/c"
size=$(stat -c %s "$tmp/c/features.npy")
truncate -s $((size / 2)) "$tmp/c/features.npy"
expect_rc 1 "$cli" info "$tmp/c"
grep -q "features.npy" "$tmp/err" || { cat "$tmp/err"; fail "truncated file not named"; }
echo '{"format": "graphdirect-dataset", "version": 1, "num_nodes": ' >"$tmp/c/meta.json"
expect_rc 1 "$cli" info "$tmp/c"
grep -q "meta.json" "$tmp/err" || { cat "$tmp/err"; fail "bad meta.json not named"; }
expect_rc 1 "$cli" info "$tmp/nonexistent"

# the real Cora graph in the OGB raw layout
if [ -n "$shared" ] && [ -d "$shared/cora/raw" ]; then
    expect_rc 0 "$cli" convert "$shared/cora" --symmetrize --out "$tmp/cora"
    expect_rc 0 "$cli" info "$tmp/cora" --validate
    grep -q "^nodes *2708" "$tmp/out" || { cat "$tmp/out"; fail "cora nodes"; }
    grep -q "train 1624 / valid 542 / test 542" "$tmp/out" || { cat "$tmp/out"; fail "cora split"; }
    expect_rc 1 "$cli" convert "$shared/cora" --symmetrize --out "$tmp/cora"
else
    echo "note: shared data not found, Cora conversion not checked"
fi

# train, cpu mode, one epoch on tiny generated in memory (then the MLP baseline and both test
# accuracies side by side), and on the directory made above; modes, checkpoints, resume, eval
expect_rc 0 "$cli" train --preset tiny --mode cpu --epochs 1 --batch 512 --hidden 32 --seed 3
grep -q "^epoch *1 .*loss .*valid acc" "$tmp/out" && grep -q "test acc 0\.[0-9]* (.*exact" "$tmp/out" \
    || { cat "$tmp/out" "$tmp/err"; fail "train output"; }
grep -q "^test accuracy: GraphSAGE 0\.[0-9]* vs MLP (graph removed) 0\.[0-9]*" "$tmp/out" \
    || { cat "$tmp/out"; fail "train baseline line"; }
expect_rc 0 "$cli" train --preset tiny --epochs 1 --batch 512 --hidden 32 --no-baseline
grep -q "MLP" "$tmp/out" && { cat "$tmp/out"; fail "train --no-baseline trained the MLP"; }
grep -q "^mode: .*auto picked" "$tmp/out" || { cat "$tmp/out"; fail "train auto says nothing"; }
expect_rc 0 "$cli" train "$tmp/a" --epochs 1 --mlp --layers 1
grep -q "MLP" "$tmp/out" && grep -q "test acc 0\.[0-9]" "$tmp/out" || { cat "$tmp/out"; fail "train --mlp"; }
# Regression, "--mlp ignores --checkpoint and --resume without a word": an --mlp run keeps
# its checkpoints and resumes from them like any other.
expect_rc 0 "$cli" train "$tmp/a" --epochs 1 --mlp --layers 1 --checkpoint "$tmp/mlp-ckpt"
[ -f "$tmp/mlp-ckpt/checkpoint.gdc" ] || { ls -la "$tmp/mlp-ckpt"; fail "train --mlp --checkpoint saved nothing"; }
expect_rc 0 "$cli" train "$tmp/a" --epochs 2 --mlp --layers 1 --checkpoint "$tmp/mlp-ckpt" --resume
grep -q "resumed from .* after epoch 1" "$tmp/out" || { cat "$tmp/out"; fail "train --mlp --resume"; }
expect_rc 2 "$cli" train --mode zerocopy --epochs 1
grep -q "unknown training mode 'zerocopy'" "$tmp/err" || { cat "$tmp/err"; fail "train bad mode message"; }
expect_rc 2 "$cli" train --resume --epochs 1
grep -q "needs --checkpoint" "$tmp/err" || { cat "$tmp/err"; fail "train --resume alone"; }
if ! "$cli" info --params 2>/dev/null | grep -q "built with CUDA" || \
   "$cli" info --params 2>/dev/null | grep -q "GPUs: none visible"; then
    expect_rc 1 "$cli" train --preset tiny --mode zero-copy --epochs 1
    grep -q "needs a GPU.*--mode cpu\|without CUDA.*--mode cpu" "$tmp/err" \
        || { cat "$tmp/err"; fail "train GPU mode without a GPU"; }
fi
# checkpoints: 2 epochs, then resume to 3, with metrics; eval of the best model
expect_rc 0 "$cli" train --preset tiny --epochs 2 --hidden 32 --no-baseline --checkpoint "$tmp/ck" \
    --metrics "$tmp/m.jsonl"
[ -f "$tmp/ck/checkpoint.gdc" ] && [ -f "$tmp/ck/best.gdc" ] || fail "no checkpoint files"
grep -q '"type":"epoch"' "$tmp/m.jsonl" && grep -q '"type":"test"' "$tmp/m.jsonl" \
    || { cat "$tmp/m.jsonl"; fail "metrics records"; }
expect_rc 0 "$cli" train --preset tiny --epochs 3 --hidden 32 --no-baseline --checkpoint "$tmp/ck" \
    --resume
grep -q "resumed from .* after epoch 2" "$tmp/out" && grep -q "^epoch *3 " "$tmp/out" \
    && ! grep -q "^epoch *1 " "$tmp/out" || { cat "$tmp/out"; fail "train --resume"; }
expect_rc 1 "$cli" train --preset tiny --epochs 3 --hidden 64 --no-baseline --checkpoint "$tmp/ck" \
    --resume
grep -q "hidden" "$tmp/err" || { cat "$tmp/err"; fail "resume with other settings"; }
expect_rc 0 "$cli" eval --preset tiny --model "$tmp/ck/best.gdc" --mode cpu
grep -q "^test acc 0\.[0-9]* (" "$tmp/out" || { cat "$tmp/out"; fail "eval output"; }
# GAT: the fit's exact test and eval of its best model (heads from the file) agree.
expect_rc 0 "$cli" train --preset tiny --model gat --heads 3 --hidden 8 --attn-dropout 0.2 \
    --epochs 2 --no-baseline --mode cpu --checkpoint "$tmp/ck-gat"
fit_exact=$(grep -o "[0-9.]* exact (all neighbours" "$tmp/out" | cut -d' ' -f1)
[ -n "$fit_exact" ] || { cat "$tmp/out"; fail "train --model gat: no exact test"; }
expect_rc 0 "$cli" eval --preset tiny --model "$tmp/ck-gat/best.gdc" --mode cpu
grep -q "^test acc $fit_exact (" "$tmp/out" \
    || { cat "$tmp/out"; fail "eval of a GAT model: test acc is not the fit's exact $fit_exact"; }
# The relational models: the fit's exact test and eval of the best model agree (a
# heterogeneous dataset has no single feature width for eval to compare), and a model is refused
# on a dataset of other classes.
for m in rsage rgcn "rgat --heads 2"; do
    # shellcheck disable=SC2086
    expect_rc 0 "$cli" train --preset mag-tiny --model $m --hidden 16 --epochs 1 --no-baseline \
        --mode cpu --checkpoint "$tmp/ck-${m%% *}"
    fit_exact=$(grep -o "[0-9.]* exact (all neighbours" "$tmp/out" | cut -d' ' -f1)
    [ -n "$fit_exact" ] || { cat "$tmp/out"; fail "train --model $m: no exact test"; }
    expect_rc 0 "$cli" eval --preset mag-tiny --model "$tmp/ck-${m%% *}/best.gdc" --mode cpu
    grep -q "^test acc $fit_exact (" "$tmp/out" ||
        { cat "$tmp/out"; fail "eval of $m: test acc is not the fit's exact $fit_exact"; }
done
expect_rc 1 "$cli" eval --preset igbh-tiny --model "$tmp/ck-rsage/best.gdc" --mode cpu
grep -q "use the dataset it was trained on" "$tmp/err" || { cat "$tmp/err"; fail "eval refusal"; }
# Regression, "train --checkpoint DIR without --resume silently replaces an earlier run": a
# new run is refused naming the run found (epochs, best accuracy) and the two ways out, and DIR
# is left as it was; --overwrite starts again.
before=$(md5sum "$tmp/ck/checkpoint.gdc" "$tmp/ck/best.gdc")
expect_rc 1 "$cli" train --preset tiny --epochs 1 --hidden 32 --lr 0.1 --no-baseline \
    --checkpoint "$tmp/ck"
grep -q "already holds a run (checkpoint.gdc: 3 epochs done, best valid accuracy 0\.[0-9]* at epoch [1-3])" \
    "$tmp/err" && grep -q -- "--resume" "$tmp/err" && grep -q -- "--overwrite" "$tmp/err" \
    || { cat "$tmp/err"; fail "train on a DIR holding a run: message"; }
[ "$(md5sum "$tmp/ck/checkpoint.gdc" "$tmp/ck/best.gdc")" = "$before" ] \
    || fail "a refused run changed the checkpoint files"
expect_rc 2 "$cli" train --preset tiny --epochs 1 --checkpoint "$tmp/ck" --resume --overwrite
expect_rc 2 "$cli" train --preset tiny --epochs 1 --overwrite
cp -r "$tmp/ck" "$tmp/ck-again"
expect_rc 0 "$cli" train --preset tiny --epochs 1 --hidden 32 --no-baseline --checkpoint "$tmp/ck-again" \
    --overwrite
"$cli" eval --preset tiny --model "$tmp/ck-again/checkpoint.gdc" --mode cpu >/dev/null 2>&1 \
    || fail "train --overwrite left no usable checkpoint"
# Two runs on one DIR at once: the second fails at once naming the first's process; once the
# first is killed, its lock is gone with it.
"$cli" train --preset tiny --mode cpu --epochs 100000 --hidden 32 --no-baseline \
    --checkpoint "$tmp/busy" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 300); do
    [ -s "$tmp/busy/train.lock" ] && break
    sleep 0.1
done
[ -s "$tmp/busy/train.lock" ] || { kill -9 $pid; fail "the first run took no lock"; }
expect_rc 1 "$cli" train --preset tiny --mode cpu --epochs 1 --hidden 32 --no-baseline \
    --checkpoint "$tmp/busy" --overwrite
grep -q "checkpoint directory '$tmp/busy' is in use by process $pid" "$tmp/err" \
    || { cat "$tmp/err"; kill -9 $pid; fail "a second run on a busy DIR: message"; }
kill -9 $pid
wait $pid 2>/dev/null
expect_rc 0 "$cli" train --preset tiny --mode cpu --epochs 1 --hidden 32 --no-baseline \
    --checkpoint "$tmp/busy" --overwrite
# Regression, "no host-memory check before work": a dataset generated in memory and a model
# that exceed the host memory budget are refused up front, naming the bytes and the fixes.
expect_rc 1 env GD_HOST_MEM_MB=1 "$cli" train --preset tiny --epochs 1
grep -q "generate: the dataset in memory needs [0-9]* bytes .* of host memory, more than the 1048576 bytes" \
    "$tmp/err" && grep -q -- "--out DIR" "$tmp/err" || { cat "$tmp/err"; fail "generate over the host budget"; }
expect_rc 1 "$cli" train "$tmp/a" --mode cpu --epochs 1 --layers 3 --hidden 4096 --host-mem-budget 256M
grep -q "the model and the minibatch buffers need .* of host memory, more than the .* of the host memory budget asked: lower --hidden" \
    "$tmp/err" || { cat "$tmp/err"; fail "a model over the host budget"; }
grep -q "^epoch" "$tmp/out" && fail "a model over the host budget trained"
expect_rc 0 "$cli" info "$tmp/a" --mode cpu --host-mem-budget 1K
grep -q "unavailable: .*host memory, more than the .* (1000 bytes)" "$tmp/out" \
    || { cat "$tmp/out"; fail "info --host-mem-budget"; }
expect_rc 0 "$cli" info "$tmp/a" --mode cpu
grep -q "^  model and minibatch buffers *host " "$tmp/out" || { cat "$tmp/out"; fail "info: no host row"; }
expect_rc 2 "$cli" train --host-mem-budget lots
printf 'not a checkpoint' >"$tmp/bad.gdc"
expect_rc 1 "$cli" eval --preset tiny --model "$tmp/bad.gdc"
expect_rc 2 "$cli" eval --preset tiny
expect_rc 2 "$cli" train --fanouts 10,x

# Ctrl-C during generation: either it finished (complete output) or it stopped (no output)
"$cli" generate --preset small --seed 1 --out "$tmp/int" >/dev/null 2>"$tmp/err" &
pid=$!
sleep 0.5
kill -INT $pid 2>/dev/null
wait $pid
rc=$?
if [ $rc -eq 130 ]; then
    [ ! -e "$tmp/int" ] || fail "interrupted generate left $tmp/int"
elif [ $rc -eq 0 ]; then
    [ -f "$tmp/int/meta.json" ] || fail "generate finished without meta.json"
else
    cat "$tmp/err"; fail "interrupted generate exited $rc"
fi
ls "$tmp" | grep -q "tmp\." && fail "temporary directory left after Ctrl-C"
echo "cli smoke: ok"
