#!/usr/bin/env bash
# `graphdirect bench step` with the relational models (rsage, rgat) on mag-tiny: help, usage
# errors, the refusal without a GPU (the step is timed on the CUDA nn backend; with one, a short
# run and its JSON), and the --cpu test runs with --dump: the typed dump's files, meta.json's
# schema, parameters and check loss, and a finite loss. Times are not checked.
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
echo "ok"
