# Session 9, call 1 (H100): the whole suite at this commit, 8 concurrent copies of the
# relational GPU tests (R-GCN's first GPU runs among them), bench step rgcn vs rsage (+ PyG replay of rsage).
set -u
B=build-device/graphdirect
t0=$(date +%s)
(cd build-device && timeout 420 ctest -j8 --timeout 400 --output-on-failure > $OUT/ctest.log 2>&1)
grep -E "tests passed|Failed|\*\*\*|Total Test" $OUT/ctest.log | tail -12
grep -E "test_(rgcn|rsage|rgat|train_hetero|grouped)" $OUT/ctest.log | grep -E "Test +#" 
echo "== concurrent at $(( $(date +%s) - t0 )) s"
mkdir -p $OUT/conc
for t in "test_train_hetero" "test_rsage --rgcn" "test_rgat_exact"; do
  n=$(echo $t | tr ' ' '_')
  pids=()
  for i in 1 2 3 4 5 6 7 8; do (cd build-device/tests && GD_THREADS=2 OMP_NUM_THREADS=2 timeout 300 ./$t > $OUT/conc/$n-$i.log 2>&1; echo "$n copy $i rc $?") & pids+=($!); done
  wait "${pids[@]}"
done | sort | tee $OUT/conc/summary.txt | awk '{print $1, $NF}' | sort | uniq -c
echo "== step at $(( $(date +%s) - t0 )) s"
for m in rsage rgcn; do
  d=""; [ $m = rsage ] && d="--dump /tmp/d"
  timeout 150 $B bench step --model $m $d --json $OUT/step-$m.json 2>&1 | grep -v '^ *generate' | grep -E "bench step|training step|R-" | tail -4
done
timeout 150 python3 bench/pyg_step.py /tmp/d --json $OUT/pyg-step-rsage.json 2>&1 | tail -4; rm -rf /tmp/d
GD_TEST_TRAIN_HETERO_GPU=rgcn timeout 200 build-device/tests/test_train_hetero 2>&1 | grep -E "R-GCN" | head -30
find $OUT -name '*.log' -size +1M -delete
echo "== end at $(( $(date +%s) - t0 )) s"
