# Session 8 call 4 (H100): merged host split + huge pages (issue 16) and PyG accuracy (issue 17)
set -u
B=build-device/graphdirect
t0=$(date +%s)
cat /sys/kernel/mm/transparent_hugepage/enabled
echo "== ctest at $(( $(date +%s) - t0 )) s"
(cd build-device && timeout 200 ctest -j8 --timeout 190 --output-on-failure -R '^(test_host_gather|test_train_modes|test_loader|test_hugepages|test_train_hetero|test_gather_cuda|bench_smoke|cli_smoke)$' > $OUT/ctest.log 2>&1; grep -E "tests passed|\*\*\*|Passed|Failed" $OUT/ctest.log | tail -12)
grep -h "probe" $OUT/ctest.log | head -6
echo "== pyg accuracy at $(( $(date +%s) - t0 )) s"
GRAPHDIRECT_LIB=$PWD/build-device/libgraphdirect.so.0 timeout 200 python3 bench/pyg_accuracy.py --cli $B --json $OUT/pyg_accuracy.json > $OUT/pyg_accuracy.log 2>&1; echo "pyg_accuracy rc $?"
grep -vi "warn" $OUT/pyg_accuracy.log | tail -16
echo "== papers bf16 at $(( $(date +%s) - t0 )) s"
timeout 280 $B bench epoch --preset papers --dtype bfloat16 --modes all-gpu,zero-copy@16G:host=zero-copy,zero-copy@16G:host=cpu,zero-copy@16G:host=split,zero-copy@16G:split=0.85,zero-copy@16G:host=auto --commit $GD_COMMIT --json $OUT/epoch-papers-bf16.json > $OUT/epoch-papers.log 2>&1; echo "papers rc $?"
grep -v '^ *generate' $OUT/epoch-papers.log | grep -E "^(all-gpu|zero-copy)|/ all-gpu|PASS|MISS|host rows|2 MiB|probe" | cut -c1-400 | head -40
echo "== end at $(( $(date +%s) - t0 )) s"
