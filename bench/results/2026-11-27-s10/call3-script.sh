# Session 10, call C (H100): 8 concurrent copies of the changed GPU tests; bench dyncache on papers'
# graph (the static cache's row); bench startup --dir on papers bf16 with the storage floors.
set -u
t0=$(date +%s)
B=build-device/graphdirect
GD_GPU_TESTS='test_outdeg_cache test_host_gather test_train_modes test_context test_startup_rank' timeout 240 bash tests/gpu_suite.sh build-device $OUT/gc concurrent > /dev/null 2>&1
cat $OUT/gc/summary.txt; tail -30 $OUT/gc/concurrent-failures.log 2>/dev/null; rm -rf $OUT/gc/c $OUT/gc/concurrent-logs.tgz
echo "== dyncache at $(( $(date +%s) - t0 )) s"
timeout 170 $B bench dyncache --preset papers --batches 60 --cache 0.075 --windows 0,8 --policies clock,sieve --commit $GD_COMMIT --json $OUT/dyncache-papers.json > $OUT/dyncache-papers.log 2>&1; echo "rc $?"
grep -v "^ *generat" $OUT/dyncache-papers.log | tail -16 | cut -c1-200
echo "== startup --dir bf16 at $(( $(date +%s) - t0 )) s"
timeout 130 $B generate --preset papers --dtype bfloat16 --out .papers > /dev/null 2>&1; echo "generate rc $?"
left=$(( 575 - ($(date +%s) - t0) ))
timeout $left $B bench startup --dir .papers --gpu-mem-budget 16G --register-gib 0 --commit $GD_COMMIT --json $OUT/startup-dir-bf16.json > $OUT/startup.txt 2>&1; echo "startup rc $?"
grep -v "^ *generate" $OUT/startup.txt | grep -v "^ *build:" | tail -26 | cut -c1-300
rm -rf .papers
echo "== end at $(( $(date +%s) - t0 )) s"
