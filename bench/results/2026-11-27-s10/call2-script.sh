# Session 10, call B (H100): the whole suite at this commit, GPU tests included.
set -u
t0=$(date +%s)
cd build-device
ctest -N | grep -E "Test +#" | awk '{print $3}' | sort > /tmp/all-tests.txt
timeout 545 ctest --output-on-failure -j8 --timeout 535 > $OUT/suite.log 2>&1; echo "ctest rc $?"
grep -E "Test +#" $OUT/suite.log | grep -v " Passed " | cut -c1-200
echo "passed: $(grep -E 'Test +#' $OUT/suite.log | grep -c ' Passed ') of $(wc -l < /tmp/all-tests.txt)"
grep -E "Test +#" $OUT/suite.log | awk '{print $4}' | sort > /tmp/done-tests.txt
echo "not finished: $(comm -23 /tmp/all-tests.txt /tmp/done-tests.txt | tr '\n' ' ')"
grep -E "tests passed|\.c:[0-9]+: " $OUT/suite.log | head -20
echo "== end at $(( $(date +%s) - t0 )) s"
