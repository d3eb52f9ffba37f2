# Session 9, call 5 (H100): test_host_gather both ways, 16 copies of test_train_hetero (new tolerances),
# papers bf16 @16G host=cpu / split with the copies in 4 MiB chunks and in each thread's pieces.
set -u
B=build-device/graphdirect
t0=$(date +%s)
(cd build-device && ctest --output-on-failure -R '^(test_host_gather|test_gather)$' 2>&1 | grep -E "Test +#|tests passed|\.c:[0-9]+:")
for r in 1 2; do
  for i in 1 2 3 4 5 6 7 8; do (cd build-device/tests && GD_THREADS=2 OMP_NUM_THREADS=2 timeout 300 ./test_train_hetero > /tmp/th-$r-$i.log 2>&1; rc=$?; echo "round $r copy $i rc $rc"; [ $rc = 0 ] || { echo "---- round $r copy $i"; grep -E "seed|\.c:[0-9]+:" /tmp/th-$r-$i.log; grep -B3 -E "\.c:[0-9]+:" /tmp/th-$r-$i.log | tail -8; } >> $OUT/th-failed.txt) & done; wait
done | sort | tee $OUT/th-concurrent.txt | awk '{print $NF}' | sort | uniq -c
cat $OUT/th-failed.txt 2>/dev/null | head -40
for pieces in 0 1; do
  echo "== papers, GD_HOST_COPY_PIECES=$pieces at $(( $(date +%s) - t0 )) s"
  GD_LOG_LEVEL=info GD_HOST_COPY_PIECES=$pieces timeout 200 $B bench epoch --preset papers --dtype bfloat16 --modes all-gpu,zero-copy@16G:host=cpu,zero-copy@16G:split=0.95 --commit $GD_COMMIT --json $OUT/epoch-papers-pieces$pieces.json > $OUT/epoch-papers-pieces$pieces.log 2>&1; echo "papers rc $?"
  grep -v '^ *generate' $OUT/epoch-papers-pieces$pieces.log | grep -E "^(all-gpu|zero-copy)|/ all-gpu|ceiling|copied|host_gather:" | cut -c1-300
done
echo "== end at $(( $(date +%s) - t0 )) s"
