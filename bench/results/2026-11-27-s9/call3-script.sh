# Session 9, call 3 (H100): test_gat_cuda (fixed), 8 concurrent test_train_hetero (a failed copy's
# log kept), and issue 16's papers bf16 split sweep with the same-run CPU gather ceiling.
set -u
B=build-device/graphdirect
t0=$(date +%s)
(cd build-device && ctest --output-on-failure -R '^test_gat_cuda$' 2>&1 | grep -E "Test +#|tests passed")
for r in 1 2; do
  for i in 1 2 3 4 5 6 7 8; do (cd build-device/tests && GD_THREADS=2 OMP_NUM_THREADS=2 timeout 300 ./test_train_hetero > /tmp/th-$r-$i.log 2>&1; rc=$?; echo "round $r copy $i rc $rc"; [ $rc = 0 ] || { echo "---- round $r copy $i"; grep -E "seed|\.c:[0-9]+:" /tmp/th-$r-$i.log; grep -B3 -E "\.c:[0-9]+:" /tmp/th-$r-$i.log | tail -8; } >> $OUT/th-failed.txt) & done; wait
done | sort | tee $OUT/th-concurrent.txt | awk '{print $NF}' | sort | uniq -c
cat $OUT/th-failed.txt 2>/dev/null | head -40
echo "== papers at $(( $(date +%s) - t0 )) s"
timeout 330 $B bench epoch --preset papers --dtype bfloat16 --modes all-gpu,zero-copy@16G:host=cpu,zero-copy@16G:split=0.7,zero-copy@16G:split=0.85,zero-copy@16G:split=0.95,zero-copy@16G:host=auto --commit $GD_COMMIT --json $OUT/epoch-papers-bf16.json > $OUT/epoch-papers.log 2>&1; echo "papers rc $?"
grep -v '^ *generate' $OUT/epoch-papers.log | grep -E "^(all-gpu|zero-copy)|/ all-gpu|ceiling|copied|PASS|MISS|floor" | cut -c1-300
echo "== end at $(( $(date +%s) - t0 )) s"
