#!/usr/bin/env bash
# `graphdirect plot` end to end. The error cases run everywhere, gnuplot or not: a bad JSON line
# and a cut-short bench file named with their line, a missing file, mixed kinds, a --what that
# does not fit, no gnuplot on PATH (the install hint), and a gnuplot that fails; none of them may
# leave an output or a temporary file, and an existing output stays as it was. With gnuplot, a
# training metrics file (two runs, steps, epochs, test) is drawn as loss, accuracy and epoch
# time, several files overlaid, and the JSON of real `bench gather --quick` and `bench sample
# --quick` runs and of a bench epoch result are drawn; each output must be a PNG of some size.
# Exit 77 only when gnuplot is missing, after the error cases passed.
set -u
cli=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect_rc() { # expected-rc command...
    local want=$1; shift
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    [ $rc -eq "$want" ] || { cat "$tmp/out" "$tmp/err"; fail "'$*' exited $rc, expected $want"; }
}
err_has() { grep -qF -- "$1" "$tmp/err" || { cat "$tmp/err"; fail "stderr does not say '$1'"; }; }
is_png() { # a PNG signature and more than a few KiB of picture
    [ -f "$1" ] || fail "$1 was not written"
    [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$1 is not a PNG"
    [ "$(stat -c %s "$1")" -gt 4000 ] || fail "$1 is too small to hold a chart"
}
no_leftovers() { # no temporary output beside the outputs
    ls "$tmp/png" | grep -q "\.tmp\." && { ls "$tmp/png"; fail "temporary output left behind"; }
    return 0
}
mkdir -p "$tmp/png" "$tmp/nobin" "$tmp/fakebin"

# A training metrics file: a GraphSAGE run with steps, the MLP baseline without, test results.
cat >"$tmp/run.jsonl" <<'JSONL'
{"type":"run","time":"2026-11-22T10:00:00Z","dataset":"tiny","mode":"cpu","model":"graphsage","layers":2,"hidden":64,"fanouts":[10,5],"batch":256,"lr":0.003,"seed":0,"device":null}
{"type":"step","epoch":1,"step":10,"loss":2.05}
{"type":"step","epoch":1,"step":20,"loss":1.71}
{"type":"epoch","epoch":1,"loss":1.9,"train_acc":0.41,"valid_acc":0.62,"epoch_s":0.8,"sample_s":0.2,"gather_s":0.1,"train_s":0.45,"wait_s":0.02,"gpu_mem_bytes":0,"cpu_core_s":1.5,"minibatches":25}
{"type":"step","epoch":2,"step":10,"loss":1.2}
{"type":"step","epoch":2,"step":20,"loss":1.05}
{"type":"epoch","epoch":2,"loss":1.1,"train_acc":0.7,"valid_acc":0.81,"epoch_s":0.75,"sample_s":0.2,"gather_s":0.1,"train_s":0.42,"wait_s":null,"gpu_mem_bytes":0,"cpu_core_s":1.4,"minibatches":25}
{"type":"epoch","epoch":3,"loss":0.8,"train_acc":0.78,"valid_acc":0.86,"epoch_s":0.74,"sample_s":0.19,"gather_s":0.1,"train_s":0.42,"minibatches":25}
{"type":"test","test_acc":0.85,"method":"sampled"}
{"type":"run","dataset":"tiny","mode":"cpu","model":"mlp"}
{"type":"epoch","epoch":1,"loss":2.0,"train_acc":0.3,"valid_acc":0.45,"epoch_s":0.3}
{"type":"epoch","epoch":2,"loss":1.8,"train_acc":0.4,"valid_acc":0.52,"epoch_s":0.3}
{"type":"test","test_acc":0.55}
JSONL
# A bench epoch result as bench/bench_epoch.c writes it: the common header, "config", and a
# "results" array with the epoch time by part (a "plan" text that must not become a label).
cat >"$tmp/epoch.json" <<'JSON'
{
	"benchmark":	"epoch",
	"version":	"0.1.0",
	"commit":	"smoke",
	"date":	"2026-11-22T10:00:00Z",
	"host":	"test",
	"cpus":	2,
	"cuda_build":	false,
	"device":	null,
	"config":	{"preset": "products", "layers": 3, "fanouts": [15, 10, 5], "batch": 1024, "hidden": 256},
	"results":	[{"mode": "all-gpu", "plan": "graph and features in GPU memory", "epoch_s": 3.1, "sample_s": 0.6, "gather_s": 0.4, "train_s": 2.0, "wait_s": 0.1},
		{"mode": "zero-copy@16G", "plan": "features zero-copy from pinned host memory", "epoch_s": 3.3, "sample_s": 0.7, "gather_s": 0.6, "train_s": 2.0, "wait_s": 0.2},
		{"mode": "cpu-centric", "plan": "CPU sampler and gather, DMA", "projected": false, "epoch_s": 11.0, "sample_s": 4.1, "gather_s": 5.2, "train_s": 2.0, "wait_s": 7.5}]
}
JSON

expect_rc 0 "$cli" plot --help
grep -q "usage: graphdirect plot" "$tmp/out" || fail "plot --help"
expect_rc 0 "$cli" --help
grep -q "plot" "$tmp/out" || fail "top-level help lists no plot"
expect_rc 2 "$cli" plot "$tmp/run.jsonl"
err_has "-o"
expect_rc 2 "$cli" plot -o "$tmp/png/x.png"
expect_rc 2 "$cli" plot "$tmp/run.jsonl" -o "$tmp/png/x.png" --what everything
err_has "everything"
expect_rc 2 "$cli" plot "$tmp/run.jsonl" -o "$tmp/png/x.png" --size 5x5

# Malformed input is named with its line, before gnuplot is even looked for.
sed '3s/.*/{"type":"step","epoch":1,"step":/' "$tmp/run.jsonl" >"$tmp/bad.jsonl"
expect_rc 1 "$cli" plot "$tmp/bad.jsonl" -o "$tmp/png/bad.png"
err_has "bad.jsonl:3:"
sed '4s/"loss":1.9/"loss":"low"/' "$tmp/run.jsonl" >"$tmp/badfield.jsonl"
expect_rc 1 "$cli" plot "$tmp/badfield.jsonl" -o "$tmp/png/bad.png"
err_has "badfield.jsonl:4:"
err_has '"loss"'
head -c 300 "$tmp/epoch.json" >"$tmp/cut.json"
expect_rc 1 "$cli" plot "$tmp/cut.json" -o "$tmp/png/bad.png"
err_has "cut.json:"
err_has "cut short"
echo '{"no": "type"}' >"$tmp/neither.json"
expect_rc 1 "$cli" plot "$tmp/neither.json" -o "$tmp/png/bad.png"
err_has "neither"
: >"$tmp/empty.jsonl"
expect_rc 1 "$cli" plot "$tmp/empty.jsonl" -o "$tmp/png/bad.png"
err_has "empty"
expect_rc 1 "$cli" plot "$tmp/missing.jsonl" -o "$tmp/png/bad.png"
err_has "missing.jsonl"
expect_rc 2 "$cli" plot "$tmp/run.jsonl" "$tmp/epoch.json" -o "$tmp/png/bad.png"
err_has "separately"
expect_rc 2 "$cli" plot "$tmp/epoch.json" -o "$tmp/png/bad.png" --what loss
expect_rc 2 "$cli" plot "$tmp/run.jsonl" -o "$tmp/png/bad.png" --metric gbps
[ -e "$tmp/png/bad.png" ] && fail "an output was written for bad input"
# Regression, "plot -o X overwrites its own input X": refused by any name of the input (itself,
# a symlink, a hard link), the input left intact.
cp "$tmp/run.jsonl" "$tmp/self.jsonl"
ln -s "$tmp/self.jsonl" "$tmp/png/self-link.png"
ln "$tmp/self.jsonl" "$tmp/png/self-hard.png"
for o in "$tmp/self.jsonl" "$tmp/png/self-link.png" "$tmp/png/self-hard.png"; do
    expect_rc 2 "$cli" plot "$tmp/run.jsonl" "$tmp/self.jsonl" -o "$o"
    err_has "is the input $tmp/self.jsonl"
    cmp -s "$tmp/run.jsonl" "$tmp/self.jsonl" || fail "plot -o $o changed its input"
done
rm -f "$tmp/png/self-link.png" "$tmp/png/self-hard.png"
no_leftovers

# No gnuplot on PATH: the install hint, no output, an existing output untouched.
echo "old picture" >"$tmp/png/kept.png"
expect_rc 1 env PATH="$tmp/nobin" "$cli" plot "$tmp/run.jsonl" -o "$tmp/png/nognuplot.png"
err_has "gnuplot is not installed"
err_has "apt-get install gnuplot-nox"
[ -e "$tmp/png/nognuplot.png" ] && fail "an output was written without gnuplot"
expect_rc 1 env PATH="$tmp/nobin" "$cli" plot "$tmp/run.jsonl" -o "$tmp/png/kept.png"
[ "$(cat "$tmp/png/kept.png")" = "old picture" ] || fail "the existing output was changed"
# A gnuplot that fails, and one that exits 0 having drawn nothing.
printf '#!/bin/sh\necho "fake gnuplot: line 1: broken" >&2\nexit 1\n' >"$tmp/fakebin/gnuplot"
chmod +x "$tmp/fakebin/gnuplot"
expect_rc 1 env PATH="$tmp/fakebin" "$cli" plot "$tmp/run.jsonl" -o "$tmp/png/kept.png"
err_has "gnuplot failed"
err_has "fake gnuplot: line 1: broken"
printf '#!/bin/sh\nexit 0\n' >"$tmp/fakebin/gnuplot"
expect_rc 1 env PATH="$tmp/fakebin" "$cli" plot "$tmp/run.jsonl" -o "$tmp/png/kept.png"
err_has "no PNG"
[ "$(cat "$tmp/png/kept.png")" = "old picture" ] || fail "a failed run changed the existing output"
no_leftovers

if ! command -v gnuplot >/dev/null 2>&1; then
    echo "skip: gnuplot is not installed (apt-get install gnuplot-nox); the error cases passed"
    exit 77
fi

# Training metrics: every chart, and two files overlaid (same labels: told apart by file).
for what in auto loss acc time; do
    expect_rc 0 "$cli" plot "$tmp/run.jsonl" -o "$tmp/png/run-$what.png" --what $what
    is_png "$tmp/png/run-$what.png"
done
cp "$tmp/run.jsonl" "$tmp/run2.jsonl"
expect_rc 0 "$cli" plot "$tmp/run.jsonl" "$tmp/run2.jsonl" -o "$tmp/png/two.png" --title "two runs"
is_png "$tmp/png/two.png"
expect_rc 0 "$cli" plot "$tmp/run.jsonl" "$tmp/run2.jsonl" -o "$tmp/png/two-time.png" --what time
is_png "$tmp/png/two-time.png"
# A run killed while writing leaves half a line: drawn, with a note.
(cat "$tmp/run.jsonl"; printf '{"type":"epoch","epoch":4,"lo') >"$tmp/killed.jsonl"
expect_rc 0 "$cli" plot "$tmp/killed.jsonl" -o "$tmp/png/killed.png" --logy
err_has "incomplete last line"
is_png "$tmp/png/killed.png"
# The metrics file of a real `graphdirect train` run (GraphSAGE then the MLP baseline).
expect_rc 0 "$cli" train --preset tiny --mode cpu --epochs 2 --metrics "$tmp/train.jsonl"
for what in auto time; do
    expect_rc 0 "$cli" plot "$tmp/train.jsonl" -o "$tmp/png/train-$what.png" --what $what
    is_png "$tmp/png/train-$what.png"
done
# An existing output is replaced when the chart is drawn.
expect_rc 0 "$cli" plot "$tmp/run.jsonl" -o "$tmp/png/kept.png" --size 640x480
is_png "$tmp/png/kept.png"

# Benchmarks: the JSON that real quick runs write, and a bench epoch result.
expect_rc 0 "$cli" bench gather --quick --no-cache-sweep --no-sm-sweep --json "$tmp/gather.json"
expect_rc 0 "$cli" plot "$tmp/gather.json" -o "$tmp/png/gather.png"
is_png "$tmp/png/gather.png"
expect_rc 0 "$cli" bench sample --quick --json "$tmp/sample.json"
expect_rc 0 "$cli" plot "$tmp/sample.json" -o "$tmp/png/sample.png"
is_png "$tmp/png/sample.png"
cp "$tmp/sample.json" "$tmp/sample2.json"
expect_rc 0 "$cli" plot "$tmp/sample.json" "$tmp/sample2.json" -o "$tmp/png/sample2.png" --logy
is_png "$tmp/png/sample2.png"
expect_rc 0 "$cli" plot "$tmp/sample.json" -o "$tmp/png/sample-s.png" --metric seconds
is_png "$tmp/png/sample-s.png"
expect_rc 1 "$cli" plot "$tmp/sample.json" -o "$tmp/png/bad.png" --metric no_such_field
err_has "no_such_field"
for what in auto time; do
    expect_rc 0 "$cli" plot "$tmp/epoch.json" -o "$tmp/png/epoch-$what.png" --what $what
    is_png "$tmp/png/epoch-$what.png"
done
expect_rc 2 "$cli" plot "$tmp/gather.json" "$tmp/sample.json" -o "$tmp/png/bad.png"
[ -e "$tmp/png/bad.png" ] && fail "an output was written for bad input"
# What a killed plot left (OUT.tmp.<pid> of a process that is gone) is swept by the next plot
# of that output (issue 13 item 6).
(exit 0) & dead=$!
wait $dead
printf 'half a picture' > "$tmp/png/sample2.png.tmp.$dead"
expect_rc 0 "$cli" plot "$tmp/sample.json" -o "$tmp/png/sample2.png"
[ -e "$tmp/png/sample2.png.tmp.$dead" ] && fail "a killed plot's temporary file was not swept"
no_leftovers
echo "plot smoke test passed"
