#!/usr/bin/env bash
# s11 call A (4-GPU machine, one GPU per job): the suite on GPU 0; 8 concurrent copies of the
# late changes' tests on GPU 1; test_host_gather racecheck by width and memcheck of the late
# changes' tests on GPUs 2 and 3. Every job under its own timeout.
set -u
out=$OUT
b=$PWD/build-device
export LD_LIBRARY_PATH="$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
ngpu=$(nvidia-smi -L | wc -l)
echo "== s11-a: commit ${GD_COMMIT:-?}, $(date -u +%FT%TZ), $ngpu GPUs, $(nproc) cores"
g() { echo $(( $1 % ngpu )); }
t0=$(date +%s)
(CUDA_VISIBLE_DEVICES=0 timeout 500 bash tests/gpu_suite.sh "$b" "$out/suite" suite >/dev/null 2>&1;
 echo "suite job rc $? after $(( $(date +%s) - t0 )) s") &
(CUDA_VISIBLE_DEVICES=$(g 1) GD_CONCURRENT_TIMEOUT=420 \
 GD_GPU_TESTS="test_train_modes test_loader test_disk_tier test_ioeng test_host_gather test_train_disk" \
 timeout 500 bash tests/gpu_suite.sh "$b" "$out/conc" concurrent >/dev/null 2>&1;
 echo "concurrent job rc $? after $(( $(date +%s) - t0 )) s") &
i=0
for w in 4 12 256 400 2 1028 4100; do
  (cd "$b/tests" && CUDA_VISIBLE_DEVICES=$(g $((2 + i % 2))) GD_TEST_HOST_GATHER_WIDTHS=$w \
     OMP_NUM_THREADS=4 GD_THREADS=4 timeout 480 "$san" --tool racecheck --error-exitcode 99 \
     --print-limit 20 --kernel-name-exclude kns=gemm --kernel-name-exclude kns=nccl \
     ./test_host_gather >"$out/race-hg-$w.log" 2>&1;
   echo "racecheck test_host_gather width $w: rc $? after $(( $(date +%s) - t0 )) s $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$out/race-hg-$w.log" | tail -1)") &
  i=$((i + 1))
done
for t in test_train_modes test_loader test_disk_tier test_train_disk test_ioeng; do
  (cd "$b/tests" && CUDA_VISIBLE_DEVICES=$(g $((2 + i % 2))) OMP_NUM_THREADS=4 GD_THREADS=4 \
     GD_TEST_COMM_TIMEOUT=60 timeout 480 "$san" --tool memcheck --error-exitcode 99 --print-limit 20 \
     "./$t" >"$out/mem-$t.log" 2>&1;
   echo "memcheck $t: rc $? after $(( $(date +%s) - t0 )) s $(grep -E 'ERROR SUMMARY' "$out/mem-$t.log" | tail -1)") &
  i=$((i + 1))
done
wait
echo "== summaries"
cat "$out"/suite/summary.txt "$out"/conc/summary.txt 2>/dev/null
grep -E "Failed|\*\*\*|Timeout|Not Run" "$out/suite/suite.log" | head -30
grep -E "^ *[0-9]+/[0-9]+ Test" "$out/suite/suite.log" | sort -t'(' -k2 | awk '{print $NF, $0}' | sort -k1 -n | tail -0 >/dev/null
grep -E "Test +#" "$out/suite/suite.log" | sed -E 's/.*Test +#[0-9]+: ([a-z_0-9]+) .* ([0-9.]+) sec/\2 \1/' | sort -n | tail -8
echo "== s11-a done after $(( $(date +%s) - t0 )) s"
