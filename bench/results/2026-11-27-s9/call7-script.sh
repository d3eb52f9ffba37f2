# Session 9, call 7 (H100): issue 16 papers bf16 @16G host=cpu with more of the graph in GPU memory and a deeper ring;
# issue 19 bench startup --dir on papers with bfloat16 features (128-dim: 28 GB, fits the disk).
set -u
B=build-device/graphdirect
t0=$(date +%s)
echo "== papers, graph caches, depth 3"
GD_LOG_LEVEL=info timeout 170 $B bench epoch --preset papers --dtype bfloat16 --modes all-gpu,zero-copy@16G:host=cpu,zero-copy@16G:host=cpu:graph=7G,zero-copy@16G:split=0.95:graph=7G --commit $GD_COMMIT --json $OUT/epoch-graph.json > $OUT/epoch-graph.log 2>&1; echo "rc $?"
grep -v '^ *generate' $OUT/epoch-graph.log | grep -E "^(all-gpu|zero-copy)|/ all-gpu|ceiling|copied|host_gather:|trainer: mode" | cut -c1-330
echo "== papers, depth 6 at $(( $(date +%s) - t0 )) s"
GD_LOG_LEVEL=info timeout 150 $B bench epoch --preset papers --dtype bfloat16 --depth 6 --modes all-gpu,zero-copy@16G:host=cpu,zero-copy@16G:host=cpu:graph=7G --commit $GD_COMMIT --json $OUT/epoch-depth6.json > $OUT/epoch-depth6.log 2>&1; echo "rc $?"
grep -v '^ *generate' $OUT/epoch-depth6.log | grep -E "^(all-gpu|zero-copy)|/ all-gpu|ceiling|copied|host_gather:" | cut -c1-330
echo "== startup --dir bf16 at $(( $(date +%s) - t0 )) s"
timeout 100 $B generate --preset papers --dtype bfloat16 --out .papers > $OUT/generate.log 2>&1; echo "generate rc $? at $(( $(date +%s) - t0 )) s"; du -sh .papers
left=$(( 515 - ($(date +%s) - t0) ))
timeout $left $B bench startup --dir .papers --gpu-mem-budget 16G --register-gib 0 --json $OUT/startup-dir-bf16.json > $OUT/startup-dir-bf16.log 2>&1; echo "startup rc $?"
grep -v "^ *generate" $OUT/startup-dir-bf16.log | tail -40 | cut -c1-400
rm -rf .papers
echo "== end at $(( $(date +%s) - t0 )) s"
