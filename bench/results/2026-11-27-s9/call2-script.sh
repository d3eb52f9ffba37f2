# Session 9, call 2 (4 GPUs): the three sanitizers on test_train_hetero's seven GPU parts, R-GCN's
# CUDA checks (test_rsage --rgcn), test_rgat_exact (R-GCN's GPU exact inference) and
# test_grouped_cuda's grouped kernel: 30 processes, the GPUs in turn, 2 threads each.
set -u
t0=$(date +%s)
L=${LIMIT:-515}
export GD_THREADS=2 OMP_NUM_THREADS=2
P=tests/part-sanitize.sh
T="memcheck racecheck synccheck"
bash $P build-device test_train_hetero GD_TEST_TRAIN_HETERO_GPU "$T" "rsage half rgat rgcn exact caches igbh" $L > $OUT/san-hetero.txt 2>&1 &
GD_PART_FIRST_GPU=1 bash $P build-device "test_rsage --rgcn" GD_UNUSED "$T" "all" $L > $OUT/san-rgcn.txt 2>&1 &
GD_PART_FIRST_GPU=2 bash $P build-device test_rgat_exact GD_UNUSED "$T" "all" $L > $OUT/san-rgat-exact.txt 2>&1 &
GD_PART_FIRST_GPU=3 GD_NN_GROUPED=1 bash $P build-device test_grouped_cuda GD_UNUSED "$T" "all" $L > $OUT/san-grouped.txt 2>&1 &
wait
cat $OUT/san-*.txt
# The logs' tails in one file (the machine hands back a few files only).
for f in $OUT/part-san/*.log; do echo "==== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Invalid|Race|Barrier|failed|FAIL" $f | head -20; tail -5 $f; done > $OUT/san-tails.txt 2>&1
rm -rf $OUT/part-san
echo "== end at $(( $(date +%s) - t0 )) s"
