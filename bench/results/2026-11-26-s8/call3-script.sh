# Session 8 call 3 (H100): issue 17 GAT / R-GAT epochs per mode; reruns of the tests fixed after s7's last call; test_train_hetero under the sanitizers
set -u
B=build-device/graphdirect
t0=$(date +%s)
echo "== gat products at $(( $(date +%s) - t0 )) s"
timeout 150 $B bench epoch --preset products --model gat --heads 4 --hidden 64 --modes all-gpu,zero-copy,zero-copy:cache=0,zero-copy:cache=25% --commit $GD_COMMIT --json $OUT/epoch-gat-products.json 2>&1 | grep -v '^ *generate' | tail -22
echo "== rgat mag at $(( $(date +%s) - t0 )) s"
timeout 150 $B bench epoch --preset mag --model rgat --heads 4 --hidden 64 --modes all-gpu,zero-copy,zero-copy:cache=25% --commit $GD_COMMIT --json $OUT/epoch-rgat-mag.json 2>&1 | grep -v '^ *generate' | tail -20
echo "== ctest at $(( $(date +%s) - t0 )) s"
(cd build-device && timeout 300 ctest -j6 --timeout 280 --output-on-failure -R '^(test_fault_train|test_infer|test_infer_gat|test_train_hetero|test_train_modes|test_host_gather|test_rgat_exact)$' > $OUT/ctest.log 2>&1; grep -E "tests passed|\*\*\*|Passed|Failed" $OUT/ctest.log | tail -12)
echo "== sanitizers at $(( $(date +%s) - t0 )) s"
GD_GPU_TESTS='test_train_hetero' GD_SHARED_TESTS='test_train_hetero' GD_SANITIZE_TIMEOUT=${SAN_T:-240} timeout 560 bash tests/gpu_suite.sh build-device $OUT/gs sanitize concurrent > $OUT/gs.log 2>&1; echo "gpu_suite rc $?"
cat $OUT/gs/summary.txt 2>/dev/null; grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|hazard" $OUT/gs/*.log 2>/dev/null | sort | uniq -c | head
echo "== end at $(( $(date +%s) - t0 )) s"
