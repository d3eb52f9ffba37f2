# Session 8 call 5 (H100): sanitizers of test_train_hetero (by part) and test_host_gather; 8 concurrent copies
set -u
t0=$(date +%s)
(bash tests/part-sanitize.sh build-device test_train_hetero GD_TEST_TRAIN_HETERO_GPU "memcheck racecheck synccheck" "rsage half rgat exact caches igbh" 400 > $OUT/part-san.txt 2>&1; echo "part-sanitize rc $?" >> $OUT/part-san.txt) &
GD_GPU_TESTS='test_host_gather test_hugepages' GD_SHARED_TESTS='test_host_gather test_hugepages' GD_SANITIZE_TIMEOUT=400 timeout 560 bash tests/gpu_suite.sh build-device $OUT/gs sanitize > $OUT/gs.log 2>&1; echo "gpu_suite sanitize rc $? at $(( $(date +%s) - t0 )) s"
cat $OUT/gs/summary.txt 2>/dev/null
wait
cat $OUT/part-san.txt
echo "== concurrent at $(( $(date +%s) - t0 )) s"
GD_GPU_TESTS='test_train_hetero test_host_gather test_hugepages' GD_SHARED_TESTS='test_train_hetero test_host_gather test_hugepages' timeout 200 bash tests/gpu_suite.sh build-device $OUT/gc concurrent > $OUT/gc.log 2>&1; echo "concurrent rc $?"
cat $OUT/gc/summary.txt 2>/dev/null; head -40 $OUT/gc/concurrent-failures.log 2>/dev/null
rm -rf $OUT/gc/c $OUT/gs/c $OUT/gc/*.tgz $OUT/gs/*.tgz
echo "== end at $(( $(date +%s) - t0 )) s"
