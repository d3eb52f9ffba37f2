#!/usr/bin/env bash
# `graphdirect bench gather --quick` end to end: help, usage errors, a full quick run (the cpu
# mode and its memcpy ceiling without a GPU; every GPU mode, the SM budget and the cache with
# one), the table on stdout, the JSON record written atomically, and a clean failure when the
# JSON cannot be written. Rates are not checked: targets are for the benchmark to report.
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

expect_rc 0 "$cli" bench --help
grep -q "gather" "$tmp/out" || fail "bench --help lists no gather"
expect_rc 0 "$cli" bench gather --help
grep -q "usage: graphdirect bench gather" "$tmp/out" || fail "bench gather --help"
expect_rc 0 "$cli" --help
grep -q "bench" "$tmp/out" || fail "top-level help lists no bench"
expect_rc 2 "$cli" bench
expect_rc 2 "$cli" bench frobnicate
expect_rc 2 "$cli" bench gather --modes zerocopy,bogus
grep -q "bogus" "$tmp/err" || fail "bad --modes message"
expect_rc 2 "$cli" bench gather --rows-bytes 256,0
expect_rc 2 "$cli" bench gather --ids 8Ki,lots
grep -q "lots" "$tmp/err" || fail "bad --ids message"
expect_rc 2 "$cli" bench gather --quick --rows-bytes 1Gi
expect_rc 2 "$cli" bench gather --quick extra

# The quick run, with the JSON record.
expect_rc 0 "$cli" bench gather --quick --json "$tmp/gather.json" --commit smoke-test
for pat in "ceiling:" "gather sweep" "cache" "done in"; do
    grep -q "$pat" "$tmp/out" || { cat "$tmp/out"; fail "no '$pat' in the output"; }
done
[ -f "$tmp/gather.json" ] || fail "no JSON written"
ls "$tmp" | grep -q "tmp\." && fail "temporary JSON left behind"
grep -q '"commit":[[:space:]]*"smoke-test"' "$tmp/gather.json" || fail "commit not recorded"
if grep -q '"cuda_build":[[:space:]]*true' "$tmp/gather.json" && \
   ! grep -q '"device":[[:space:]]*null' "$tmp/gather.json"; then
    # A GPU ran: every default GPU mode, the SM budget and the targets are reported.
    for m in zerocopy zerocopy-nosort naive-zerocopy cpu-dma gpu; do
        grep -q "\"mode\":[[:space:]]*\"$m\"" "$tmp/gather.json" || fail "no $m measurement"
    done
    grep -q '"sm_budget":[[:space:]]*"15%"' "$tmp/gather.json" || fail "no SM budget part"
    grep -q "targets met" "$tmp/out" || fail "no target summary"
    grep -qE "^  (PASS|MISS)" "$tmp/out" || fail "no PASS/MISS lines"
else
    grep -q "GPU modes need a CUDA build and a GPU" "$tmp/err" || fail "no note on GPU modes"
    grep -q '"mode":[[:space:]]*"cpu"' "$tmp/gather.json" || fail "no cpu measurement"
fi
if command -v python3 >/dev/null; then
    python3 - "$tmp/gather.json" <<'PY' || fail "JSON record"
import json, sys
d = json.load(open(sys.argv[1]))
p = d["parameters"]
assert d["benchmark"] == "gather" and d["ceiling"]["gbps"] > 0, d["ceiling"]
assert len(d["sweep"]) == len(p["rows_bytes"]) * len(p["ids"]) * len(p["modes"]), len(d["sweep"])
for m in d["sweep"]:
    assert m["gbps"] > 0 and m["seconds"] > 0 and m["calls"] >= 1, m
runs = d["cache"]["runs"]
assert runs[0]["score"] == "none" and len(runs) >= 13, runs
for r in runs:
    assert 0.0 <= r["hit_rate"] <= 1.0, r
PY
fi

# Fewer parts, chosen widths and modes; a JSON path that cannot be written fails cleanly.
expect_rc 0 "$cli" bench gather --quick --no-cache-sweep --no-sm-sweep --rows-bytes 100,4096 \
    --ids 1000 --iters 2
grep -q "gather sweep" "$tmp/out" || fail "sweep with chosen widths"
grep -q "GPU cache" "$tmp/out" && fail "--no-cache-sweep ran the cache part"
expect_rc 1 "$cli" bench gather --quick --no-cache-sweep --json "$tmp/missing/dir/g.json"
grep -q "missing/dir" "$tmp/err" || { cat "$tmp/err"; fail "unwritable JSON not named"; }
# bench epoch: usage errors, then the cpu mode on tiny (every mode where a GPU is visible).
expect_rc 2 "$cli" bench epoch --modes zero-copy:cache=lots
grep -q "cache=lots" "$tmp/err" || fail "bad bench epoch run not named"
expect_rc 2 "$cli" bench epoch --modes auto
expect_rc 2 "$cli" bench epoch --modes zero-copy@16G:host=dma
grep -q "host=dma" "$tmp/err" || fail "bad host= of a bench epoch run not named"
expect_rc 2 "$cli" bench epoch --host-gather gpu
grep -q "zero-copy, cpu, split" "$tmp/err" || fail "bad bench epoch --host-gather message"
expect_rc 2 "$cli" bench epoch --host-gather split=1.5
expect_rc 2 "$cli" bench epoch --modes zero-copy:host=cpu:split=0.5
grep -q "host=cpu:split=0.5" "$tmp/err" || fail "split= beside host=cpu not refused"
expect_rc 2 "$cli" bench epoch --modes zero-copy:split=2
grep -q "split=2" "$tmp/err" || fail "bad split= of a bench epoch run not named"
modes=cpu
if "$cli" info --params 2>/dev/null | grep -q "built with CUDA" && \
   ! "$cli" info --params 2>/dev/null | grep -q "GPUs: none visible"; then
    modes=cpu,all-gpu,zero-copy,zero-copy:cache=0:graph=0:sms=8,zero-copy:cache=25%:host=cpu,zero-copy:cache=25%:host=split:split=0.5,zero-copy:host=split,zero-copy:host=auto,cpu-centric
fi
expect_rc 0 "$cli" bench epoch --preset tiny --modes "$modes" --warmup 2 --cpu-batches 2 \
    --hidden 32 --json "$tmp/epoch.json" --commit smoke-test
grep -q "warm_loss" "$tmp/out" || { cat "$tmp/out"; fail "no epoch table"; }
if command -v python3 >/dev/null; then
    python3 - "$tmp/epoch.json" "$modes" <<'PY' || fail "bench epoch JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["benchmark"] == "epoch", d
runs = {r["mode"]: r for r in d["results"]}
assert list(runs) == sys.argv[2].split(","), list(runs)
for r in runs.values():
    assert r["epoch_s"] > 0 and r["train_s"] > 0 and r["minibatches_timed"] >= 1, r
assert runs["cpu"]["projected"] is True, runs["cpu"]
PY
fi
# bench epoch of the relational models on a heterogeneous preset (every heterogeneous mode
# where a GPU is visible); the modes must agree on the warm-up loss, which bench epoch checks.
hmodes=cpu
[ "$modes" = cpu ] || hmodes=cpu,cpu-centric,all-gpu,zero-copy
expect_rc 0 "$cli" bench epoch --preset mag-tiny --model rsage --modes "$hmodes" --warmup 2 \
    --cpu-batches 2 --max-batches 3 --fanouts 5,3 --hidden 16 --json "$tmp/hepoch.json"
grep -q "heterogeneous dataset" "$tmp/err" || { cat "$tmp/err"; fail "bench epoch --model rsage"; }
expect_rc 0 "$cli" bench epoch --preset mag-tiny --model rgat --heads 2 --modes "$hmodes" \
    --warmup 2 --cpu-batches 2 --max-batches 3 --fanouts 5,3 --hidden 8
expect_rc 0 "$cli" bench epoch --preset mag-tiny --model rgcn --modes "$hmodes" --warmup 2 \
    --cpu-batches 2 --max-batches 3 --fanouts 5,3 --hidden 16
expect_rc 2 "$cli" bench epoch --heads 0
# bench loader: the public loader iterated from C, every field exported.
expect_rc 0 "$cli" bench loader --preset tiny --mode cpu --epochs 1 --batch 512
grep -q "loader from C, mode cpu" "$tmp/out" || { cat "$tmp/out"; fail "bench loader"; }
expect_rc 2 "$cli" bench loader --epochs 0
# bench disk: usage errors, then a small generated file read at two depths on every backend
# the build has; the file is removed, the JSON holds the points and the ceiling.
expect_rc 2 "$cli" bench disk --backends io_uring,floppy
grep -q "floppy" "$tmp/err" || fail "bad --backends not named"
expect_rc 2 "$cli" bench disk --depths 0
expect_rc 2 "$cli" bench disk --rows 0
expect_rc 2 "$cli" bench disk --rows-fraction 1.5
expect_rc 0 "$cli" bench disk --quick --dir "$tmp" --size 8Mi --read-size 512,4Ki --rows 300 \
    --json "$tmp/disk.json"
grep -q "ceiling" "$tmp/out" || { cat "$tmp/out"; fail "no bench disk ceiling"; }
grep -q "covering spans" "$tmp/out" || { cat "$tmp/out"; fail "no bench disk rows section"; }
ls "$tmp" | grep -q "graphdirect-disk" && fail "bench disk left its file behind"
if command -v python3 >/dev/null; then
    python3 - "$tmp/disk.json" <<'PY' || fail "bench disk JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["benchmark"] == "disk" and d["parameters"]["generated"] is True, d
pts = d["points"]
assert {p["depth"] for p in pts} == {1, 32} and {p["read_bytes"] for p in pts} == {512, 4096}, pts
assert all(p["iops"] > 0 and p["gbps"] > 0 for p in pts), pts
assert "threads" in {p["backend"] for p in pts}, pts
assert len(d["ceiling"]) == 2, d["ceiling"]
r = d["rows"]
assert r["row_bytes"] == 300 and r["rows"] > 0 and r["spans_reads"] < r["rows"], r
PY
fi
# bench dyncache: usage errors, then a quick replay with every policy and three windows.
expect_rc 2 "$cli" bench dyncache --policies clock,lru
grep -q "lru" "$tmp/err" || fail "bad --policies not named"
expect_rc 2 "$cli" bench dyncache --cache 1.5
expect_rc 0 "$cli" bench dyncache --quick --windows 0,2,8 --json "$tmp/dyncache.json"
grep -q "window 8 / no window" "$tmp/out" || { cat "$tmp/out"; fail "no bench dyncache target"; }
if command -v python3 >/dev/null; then
    python3 - "$tmp/dyncache.json" <<'PY' || fail "bench dyncache JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["benchmark"] == "dyncache" and d["minibatches"] == 40, d
runs = d["results"]
assert [(r["policy"], r["window"]) for r in runs] == \
    [(p, w) for p in ("clock", "sieve", "random") for w in (0, 2, 8)], runs
for r in runs:
    assert r["lookups"] > 0 and 0 <= r["hit_rate"] <= 1 and 0 <= r["bypass_rate"] <= 1, r
    assert len(r["first_minibatch_hit_rates"]) == 20, r
    assert (r["window_rows_max"] > 0) == (r["window"] > 0), r
assert len(d["targets"]) == 3, d["targets"]
PY
fi
# bench ssd: usage errors, then a quick run (the ceiling on any machine, the disk tier's gathers
# with every policy where there is a GPU).
expect_rc 2 "$cli" bench ssd --policies clock,lru
expect_rc 2 "$cli" bench ssd --host 2
expect_rc 2 "$cli" bench ssd --windows 0,99
expect_rc 2 "$cli" bench ssd --feature-dim 0
expect_rc 0 "$cli" bench ssd --quick --dir "$tmp/ssd" --json "$tmp/ssd.json"
grep -q "^ceiling: " "$tmp/out" || { cat "$tmp/out"; fail "no bench ssd ceiling"; }
if command -v python3 >/dev/null; then
    python3 - "$tmp/ssd.json" <<'PY' || fail "bench ssd JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["benchmark"] == "ssd" and d["minibatches"] == 8 and d["ceiling_gbs"] > 0, d
runs = d["results"]
if runs:  # a GPU: every policy and window gathered every minibatch, then the epochs ran
    assert [(r["policy"], r["window"]) for r in runs] == \
        [(p, w) for p in ("clock", "sieve", "random") for w in (0, 4, 8)], runs
    for r in runs:
        assert r["rows"] == d["rows_per_minibatch"] * 8 and 0 <= r["hit_rate"] <= 1, r
        assert r["fetch_gbs"] > 0 and r["bytes_read_per_useful_byte"] >= 1, r
    assert [e["run"] for e in d["epochs"]][0] == "in pinned host memory", d["epochs"]
    assert len(d["epochs"]) == 5 and all(e["seconds_per_minibatch"] > 0 for e in d["epochs"])
    # a run whose plan put the table on disk reads the file (its I/O floor; the tiny preset's
    # table fits the staging, so there none does), the others never do
    for e in d["epochs"]:
        assert (e["disk_rows_read"] > 0) == ("features on disk" in e["plan"]), e
    assert all(e["disk_bytes_read"] >= e["disk_rows_read"] * d["row_bytes"] for e in d["epochs"])
    assert len(d["targets"]) == 10, d["targets"]
PY
fi
expect_rc 0 "$cli" bench ssd --quick --dir "$tmp/ssd" --epoch-batches 0 --policies clock --windows 0
# bench startup: usage errors, then a quick run (without a GPU it says so and times nothing).
expect_rc 2 "$cli" bench startup --register-gib -1
expect_rc 2 "$cli" bench startup --pin-threads 0
expect_rc 0 "$cli" bench startup --quick --json "$tmp/startup.json"
if command -v python3 >/dev/null; then
    python3 - "$tmp/startup.json" <<'PY' || fail "bench startup JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["benchmark"] == "startup", d
if d["results"]:  # a GPU: the registration rates, then the three trainers' builds
    assert len(d["registration"]) == 2 and all(r["gbs"] > 0 for r in d["registration"]), d
    assert [r["mode"] for r in d["results"]] == ["all-gpu", "zero-copy", "zero-copy"], d
    assert all(r["create_seconds"] > 0 and r["first_minibatch_seconds"] > 0 for r in d["results"])
    assert len(d["targets"]) == 2, d["targets"]
PY
fi
# bench startup --dir: the read ceilings and the three opens, with or without a GPU (with one,
# each trainer from a cold and a warm page cache).
expect_rc 2 "$cli" bench startup --read-threads 0
expect_rc 0 "$cli" generate --preset tiny --out "$tmp/startup-tiny"
expect_rc 0 "$cli" bench startup --quick --dir "$tmp/startup-tiny" --json "$tmp/startup-dir.json"
if command -v python3 >/dev/null; then
    python3 - "$tmp/startup-dir.json" <<'PY' || fail "bench startup --dir JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["file_read"] and all(r["gbs"] > 0 and r["bytes"] > 0 for r in d["file_read"]), d
assert set(d["open"]) == {"full_validation_seconds", "validated_record_seconds",
                          "sizes_only_seconds"}, d["open"]
if d["results"]:  # a GPU: each trainer cold, then warm
    assert [r["page_cache"] for r in d["results"]] == ["cold", "warm"] * 3, d["results"]
PY
fi
# bench step with the relational models (rsage, rgat; rgcn below) on mag-tiny: help, usage errors, the
# refusal without a GPU (the step is timed on the CUDA nn backend; with one, a short run), and
# the --cpu test runs with --dump: the typed dump's files, meta.json's schema, parameters and
# check loss, and a finite loss. Times are not checked.
small=(--preset mag-tiny --batch 128 --hidden 16 --steps 2 --warmup 1)

expect_rc 0 "$cli" bench step --help
grep -q "rsage" "$tmp/out" || fail "bench step --help names no rsage"
grep -q -- "--relation-fanouts" "$tmp/out" || fail "bench step --help names no --relation-fanouts"
expect_rc 2 "$cli" bench step --cpu
grep -q "relational models" "$tmp/err" || fail "--cpu with sage: no message"
expect_rc 2 "$cli" bench step --model rsage --breakdown
grep -q "breakdown" "$tmp/err" || fail "--breakdown with rsage: no message"

# Without a GPU the timed step is refused as for GraphSAGE, naming --cpu; with one, it runs.
"$cli" bench step --model rsage "${small[@]}" --json "$tmp/gpu.json" >"$tmp/out" 2>"$tmp/err"
case $? in
0) grep -q '"backend":[[:space:]]*"cuda"' "$tmp/gpu.json" || fail "no cuda run in the JSON" ;;
1) grep -q "needs a CUDA build and a GPU" "$tmp/err" || { cat "$tmp/err"; fail "no refusal"; }
   grep -q -- "--cpu" "$tmp/err" || fail "the refusal names no --cpu" ;;
*) cat "$tmp/out" "$tmp/err"; fail "bench step --model rsage exited oddly" ;;
esac

# The CPU test runs and their dumps.
for model in rsage rgat; do
    d="$tmp/dump-$model"
    expect_rc 0 "$cli" bench step --model "$model" --heads 2 --cpu "${small[@]}" \
        --relation-fanouts "cites=3;cites=2" --dump "$d" --json "$tmp/$model.json"
    grep -q "training step (CPU backend" "$tmp/out" || fail "$model: no step line"
    for f in meta.json params0.npy type0_features.npy step0000_labels.npy \
             step0001_layer1_rel6_indptr.npy step0001_layer0_rel0_indices.npy \
             step0001_type1_rows.npy; do
        [ -f "$d/$f" ] || fail "$model: no $f in the dump"
    done
    if command -v python3 >/dev/null; then
        python3 - "$d/meta.json" "$tmp/$model.json" "$model" <<'PY' || fail "$model: meta.json"
import json, math, sys
m, j, model = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
assert m["model"] == model and m["layers"] == 2 and len(m["step_blocks"]) == 2, m["model"]
assert len(m["node_types"]) == 4 and len(m["relations"]) == 7, m["relations"]
assert m["relations"][0] == {"src": 0, "name": "cites", "dst": 0}, m["relations"][0]
assert m["relation_fanouts"] == "cites=3;cites=2"
names = {w["name"] for w in m["weights"]}
assert names == ({"w_l", "b", "w_root"} if model == "rsage" else
                 {"w_src", "w_dst", "att_src", "att_dst", "bias"}), names
# The last layer has only the relations into the target type (paper: cites, writes, has_topic).
assert {w["relation"] for w in m["weights"] if w["layer"] == 1} == {0, 1, 5}
s0 = m["step_blocks"][0]
assert len(s0["num_nodes"]) == 3 * 4 and len(s0["blocks"]) == 2 * 7
assert s0["num_nodes"][2 * 4 + 0] == 128, s0["num_nodes"]
assert math.isfinite(m["check"]["eval_loss"]), m["check"]
r = j["results"]
assert r["backend"].startswith("cpu") and math.isfinite(r["first_loss"]), r
PY
    fi
done
# R-GCN: a CPU test run (its loss finite); its dump lists every type's root.
expect_rc 0 "$cli" bench step --model rgcn --cpu "${small[@]}" --json "$tmp/rgcn.json"
grep -q "training step (CPU backend" "$tmp/out" || fail "rgcn: no step line"
if command -v python3 >/dev/null; then
    python3 - "$tmp/rgcn.json" <<'PY' || fail "rgcn: the JSON"
import json, math, sys
r = json.load(open(sys.argv[1]))["results"]
assert r["backend"].startswith("cpu") and math.isfinite(r["first_loss"]), r
PY
fi
expect_rc 0 "$cli" bench step --model rgcn --cpu "${small[@]}" --dump "$tmp/dump-rgcn"
if command -v python3 >/dev/null; then
    python3 - "$tmp/dump-rgcn/meta.json" <<'PY' || fail "rgcn: the dump's per-type roots"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["model"] == "rgcn", m["model"]
tw = m["type_weights"]
# Layer 0 and the hidden layers: a root (w_root, b) per type; the last layer: the target's.
assert {(w["layer"], w["type"]) for w in tw} == \
    {(l, t) for l in range(m["layers"] - 1) for t in range(4)} | {(m["layers"] - 1, m["target_type"])}, tw
assert all(w["name"] in ("w_root", "b") for w in tw) and len(tw) % 2 == 0, tw
# Its relations have w_l alone: b and w_root of 0 rows.
assert all(w["rows"] == 0 for w in m["weights"] if w["name"] != "w_l"), m["weights"]
PY
fi
echo "bench smoke: ok"
