#!/usr/bin/env bash
# s11 call C (4-GPU machine): (1) in parallel, one GPU each: the whole suite; 8 concurrent copies
# of test_stripe, test_host_gather, test_train_modes, test_loader; memcheck of test_stripe,
# test_host_gather, test_train_modes, test_loader; racecheck of test_host_gather at two widths.
# (2) then alone: papers bf16 @16G all-gpu / split=0.95 / auto with the one-region host copy
# (default OpenMP wait policy, then passive); (3) bench ssd on a striped igb-small.
set -u
out=$OUT
b=$PWD/build-device
B=$b/graphdirect
export LD_LIBRARY_PATH="$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
ngpu=$(nvidia-smi -L | wc -l)
g() { echo $(( $1 % ngpu )); }
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
echo "== s11-c: commit ${GD_COMMIT:-?}, $(date -u +%FT%TZ), $ngpu GPUs, $(nproc) cores"
(CUDA_VISIBLE_DEVICES=0 timeout 290 bash tests/gpu_suite.sh "$b" "$out/suite" suite >/dev/null 2>&1;
 echo "suite job rc $? after $(el) s") &
(CUDA_VISIBLE_DEVICES=$(g 1) GD_CONCURRENT_TIMEOUT=250 \
 GD_GPU_TESTS="test_stripe test_host_gather test_train_modes test_loader" \
 timeout 290 bash tests/gpu_suite.sh "$b" "$out/conc" concurrent >/dev/null 2>&1;
 echo "concurrent job rc $? after $(el) s") &
i=0
for t in test_stripe test_host_gather test_train_modes test_loader; do
  (cd "$b/tests" && CUDA_VISIBLE_DEVICES=$(g $((2 + i % 2))) OMP_NUM_THREADS=4 GD_THREADS=4 \
     timeout 280 "$san" --tool memcheck --error-exitcode 99 --print-limit 20 "./$t" >"$out/mem-$t.log" 2>&1;
   echo "memcheck $t: rc $? after $(el) s $(grep -E 'ERROR SUMMARY' "$out/mem-$t.log" | tail -1)") &
  i=$((i + 1))
done
for w in 256 4100; do
  (cd "$b/tests" && CUDA_VISIBLE_DEVICES=$(g $((2 + i % 2))) GD_TEST_HOST_GATHER_WIDTHS=$w \
     OMP_NUM_THREADS=4 GD_THREADS=4 timeout 280 "$san" --tool racecheck --error-exitcode 99 \
     --print-limit 20 --kernel-name-exclude kns=gemm --kernel-name-exclude kns=nccl \
     ./test_host_gather >"$out/race-hg-$w.log" 2>&1;
   echo "racecheck test_host_gather width $w: rc $? after $(el) s $(grep -E 'RACECHECK SUMMARY' "$out/race-hg-$w.log" | tail -1)") &
  i=$((i + 1))
done
wait
cat "$out"/suite/summary.txt "$out"/conc/summary.txt 2>/dev/null
grep -E "\*\*\*Failed|Timeout|Not Run" "$out/suite/suite.log" | head -20
grep -E "Test +#" "$out/suite/suite.log" | sed -E 's/.*Test +#[0-9]+: ([a-z_0-9]+) .* ([0-9.]+) sec/\2 \1/' | sort -n | tail -5
grep -h "striped\|zero-copy in memory\|zero-copy from disk" "$b/Testing/Temporary/LastTest.log" 2>/dev/null | head -6
echo "== tests done at $(el) s"
export CUDA_VISIBLE_DEVICES=0
sel() { grep -v '^ *generate' "$1" | grep -E "^(all-gpu|zero-copy)|/ all-gpu|ceiling|copied|host_gather:|auto kept|PASS|MISS" | cut -c1-300; }
left=$(( 470 - $(el) ))
echo "== papers epoch, default OpenMP policy, at $(el) s ($left s left)"
[ $left -gt 100 ] && GD_LOG_LEVEL=info timeout $(( left > 150 ? 150 : left )) $B bench epoch --preset papers --dtype bfloat16 --warmup 200 \
  --modes all-gpu,zero-copy@16G:split=0.95,zero-copy@16G:host=auto \
  --commit $GD_COMMIT --json $out/epoch-papers.json > $out/epoch-papers.log 2>&1; echo "rc $?"
sel $out/epoch-papers.log
left=$(( 545 - $(el) ))
echo "== bench ssd, igb-small striped over 2 directories, at $(el) s ($left s left)"
if [ $left -gt 40 ]; then
  timeout 30 $B generate --preset igb-small --out /tmp/igb > $out/gen-igb.log 2>&1; echo "generate rc $?"
  mkdir -p /tmp/s0 /tmp/s1
  timeout 20 $B stripe /tmp/igb --to /tmp/s0,/tmp/s1 2>&1 | tail -1
  $B info /tmp/igb 2>&1 | grep -A3 "striped"
  left=$(( 560 - $(el) ))
  timeout $left $B bench ssd --dir /tmp/igb --batches 20 --policies sieve --windows 0 --epoch-batches 5 \
    --commit $GD_COMMIT --json $out/ssd-igb-striped.json > $out/ssd-igb-striped.log 2>&1; echo "ssd rc $?"
  grep -v "^ *generate" $out/ssd-igb-striped.log | tail -22 | cut -c1-250
fi
echo "== end at $(el) s"
