# Session 9, call 6 (H100): the urgent stream of host_gather against the caller's, papers bf16 @16G;
# test_host_gather / test_train_modes, then test_host_gather under 3 sanitizers and as 8 copies.
set -u
B=build-device/graphdirect
t0=$(date +%s)
(cd build-device && ctest --output-on-failure -R '^(test_host_gather|test_train_modes|test_gather)$' 2>&1 | grep -E "Test +#|tests passed|\.c:[0-9]+:")
for urgent in 0 1; do
  echo "== papers, GD_HOST_GATHER_URGENT=$urgent at $(( $(date +%s) - t0 )) s"
  GD_LOG_LEVEL=info GD_HOST_COPY_PIECES=1 GD_HOST_GATHER_URGENT=$urgent timeout 200 $B bench epoch --preset papers --dtype bfloat16 --modes all-gpu,zero-copy@16G:host=cpu,zero-copy@16G:split=0.95,zero-copy@16G:split=0.8 --commit $GD_COMMIT --json $OUT/epoch-papers-urgent$urgent.json > $OUT/epoch-papers-urgent$urgent.log 2>&1; echo "papers rc $?"
  grep -v '^ *generate' $OUT/epoch-papers-urgent$urgent.log | grep -E "^(all-gpu|zero-copy)|/ all-gpu|ceiling|copied|host_gather:|PASS|MISS" | cut -c1-300
done
echo "== sanitizers at $(( $(date +%s) - t0 )) s"
GD_THREADS=4 OMP_NUM_THREADS=4 bash tests/part-sanitize.sh build-device test_host_gather GD_UNUSED "memcheck racecheck synccheck" "all" 250 > $OUT/san-host-gather.txt 2>&1
cat $OUT/san-host-gather.txt
for f in $OUT/part-san/*.log; do echo "==== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Invalid|Race|failed" $f | head -10; tail -3 $f; done > $OUT/san-tails.txt 2>&1; rm -rf $OUT/part-san
for i in 1 2 3 4 5 6 7 8; do (cd build-device/tests && GD_THREADS=2 OMP_NUM_THREADS=2 timeout 200 ./test_host_gather > /tmp/hg-$i.log 2>&1; echo "copy $i rc $?"; ) & done; wait
echo "== end at $(( $(date +%s) - t0 )) s"
