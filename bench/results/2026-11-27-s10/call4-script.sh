# Session 10, call E (H100, the last ~270 s of device time): what call B's suite did not finish:
# test_green alone first, then test_train_disk (timestamped) and test_train_half side by side,
# with test_outdeg_cache under memcheck beside them.
set -u
t0=$(date +%s)
cd build-device/tests
(GD_THREADS=4 OMP_NUM_THREADS=4 timeout 150 ./test_train_half > $OUT/half.log 2>&1; echo "test_train_half rc $? at $(( $(date +%s) - t0 )) s" > $OUT/half.rc) &
(GD_THREADS=2 OMP_NUM_THREADS=2 timeout 140 compute-sanitizer --tool memcheck --error-exitcode 99 ./test_outdeg_cache > $OUT/od-memcheck.log 2>&1; echo "memcheck test_outdeg_cache rc $? at $(( $(date +%s) - t0 )) s" > $OUT/od.rc) &
GD_THREADS=8 OMP_NUM_THREADS=8 timeout 150 ./test_train_disk 2>&1 | while IFS= read -r l; do echo "$(( $(date +%s) - t0 )) $l"; done > $OUT/disk.log
echo "test_train_disk rc ${PIPESTATUS[0]} at $(( $(date +%s) - t0 )) s"
wait
cat $OUT/half.rc $OUT/od.rc; tail -2 $OUT/half.log | cut -c1-200; grep -E "ERROR SUMMARY" $OUT/od-memcheck.log
grep -vE "^[0-9]+ +(cpu|epoch)" $OUT/disk.log | cut -c1-170 | tail -14
echo "== end at $(( $(date +%s) - t0 )) s"
