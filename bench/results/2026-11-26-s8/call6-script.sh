# Session 8 call 6 (4 x H200): issue 19's convert at papers100M's real size; start-up progress tests on GPU 0
set -u
t0=$(date +%s)
(cd build-device && timeout 150 ctest -j8 --timeout 140 --output-on-failure -R '^(test_train_modes|bench_smoke|py_gen_npz|py_convert_npz|test_edgelist)$' > $OUT/ctest.log 2>&1; grep -E "tests passed|\*\*\*|Passed|Failed" $OUT/ctest.log | tail -8)
grep -h "start-up:" $OUT/ctest.log | head -8
echo "== convert at $(( $(date +%s) - t0 )) s"
df -h . /tmp | tail -2; timeout 420 bash bench/convert-device.sh 2>&1 | tail -30
echo "== end at $(( $(date +%s) - t0 )) s"
