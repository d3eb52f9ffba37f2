# Next session, call A (H100, ~560 s): issue 19's cold start at the new pinning default, issue 16's
# papers epoch with the planner's new graph share (no graph= given), R-GCN's PyG step on the GPU.
# Usage: bash bench/run-device.sh COMMIT cmd:"GD_COMMIT=COMMIT bash .diag/s10-a.sh"
set -u
B=build-device/graphdirect
t0=$(date +%s)
(cd build-device && ctest --output-on-failure -R '^(test_host_gather|test_train_modes|test_plan|test_startup|test_startup_rank|test_context|bench_smoke|py_hetero_step_pyg|test_outdeg_cache)$' 2>&1 | grep -E "Test +#|tests passed|\.c:[0-9]+:")
echo "== papers epoch at $(( $(date +%s) - t0 )) s"
GD_LOG_LEVEL=info timeout 170 $B bench epoch --preset papers --dtype bfloat16 --modes all-gpu,zero-copy@16G:host=cpu,zero-copy@16G:split=0.95,zero-copy@16G:split=0.95:graph=7G --commit $GD_COMMIT --json $OUT/epoch-papers.json > $OUT/epoch-papers.log 2>&1; echo "rc $?"
grep -v '^ *generate' $OUT/epoch-papers.log | grep -E "^(all-gpu|zero-copy)|/ all-gpu|ceiling|copied|host_gather:|PASS|MISS|trainer: mode" | cut -c1-330
echo "== rgcn step at $(( $(date +%s) - t0 )) s"
timeout 100 $B bench step --model rgcn --dump /tmp/r --json $OUT/step-rgcn.json 2>&1 | grep -E "training step" ; timeout 100 python3 bench/pyg_step.py /tmp/r --json $OUT/pyg-step-rgcn.json 2>&1 | tail -3; rm -rf /tmp/r
echo "== startup --dir bf16 at $(( $(date +%s) - t0 )) s"
timeout 100 $B generate --preset papers --dtype bfloat16 --out .papers > $OUT/generate.log 2>&1; echo "generate rc $?"
left=$(( 520 - ($(date +%s) - t0) ))
timeout $left $B bench startup --dir .papers --gpu-mem-budget 16G --register-gib 0 --json $OUT/startup-dir-bf16.json > $OUT/startup-dir-bf16.log 2>&1; echo "startup rc $?"
grep -v "^ *generate" $OUT/startup-dir-bf16.log | tail -30 | cut -c1-400
rm -rf .papers
echo "== end at $(( $(date +%s) - t0 )) s"
