#!/usr/bin/env bash
# s11 call B: issue 16's benchmarks, one after another (no overlap): auto's in-epoch trial
# against split=0.95 and all-gpu on papers bf16 @16G; bench ssd on papers bf16 with a host
# buffer below the table; products with host rows, zero-copy vs auto; OMP passive on papers.
set -u
B=$PWD/build-device/graphdirect
export LD_LIBRARY_PATH="$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDA_VISIBLE_DEVICES=0
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
echo "== s11-b: commit ${GD_COMMIT:-?}, $(date -u +%FT%TZ), $(nvidia-smi -L | head -1), $(nproc) cores"
sel() { grep -v '^ *generate' "$1" | grep -E "^(all-gpu|zero-copy)|/ all-gpu|ceiling|copied|host_gather:|auto kept|PASS|MISS|trainer: mode|plan" | cut -c1-400; }
echo "== papers epoch at $(el) s"
GD_LOG_LEVEL=info timeout 200 $B bench epoch --preset papers --dtype bfloat16 --warmup 200 \
  --modes all-gpu,zero-copy@16G:split=0.95,zero-copy@16G:host=auto \
  --commit $GD_COMMIT --json $OUT/epoch-papers-auto.json > $OUT/epoch-papers-auto.log 2>&1; echo "rc $?"
sel $OUT/epoch-papers-auto.log
echo "== bench ssd papers at $(el) s"
timeout 100 $B generate --preset papers --dtype bfloat16 --out .papers > $OUT/generate.log 2>&1; echo "generate rc $? at $(el) s"
df -h . | tail -1
timeout 260 $B bench ssd --dir .papers --batch 256 --fanouts 15,10,5 --batches 20 --cache 0.075 \
  --host 0.2 --policies sieve --windows 0,8 --epoch-batches 10 --epoch-host 0.4 \
  --commit $GD_COMMIT --json $OUT/ssd-papers.json > $OUT/ssd-papers.log 2>&1; echo "ssd rc $? at $(el) s"
grep -v "^ *generate" $OUT/ssd-papers.log | tail -60 | cut -c1-300
rm -rf .papers
echo "== products at $(el) s"
GD_LOG_LEVEL=info timeout 60 $B bench epoch --preset products --warmup 200 \
  --modes all-gpu,zero-copy@1G,zero-copy@1G:host=auto \
  --commit $GD_COMMIT --json $OUT/epoch-products-auto.json > $OUT/epoch-products-auto.log 2>&1; echo "rc $?"
sel $OUT/epoch-products-auto.log
left=$(( 540 - $(el) ))
echo "== papers, OMP_WAIT_POLICY=passive, at $(el) s ($left s left)"
[ $left -gt 60 ] && OMP_WAIT_POLICY=passive GD_LOG_LEVEL=info timeout $left $B bench epoch --preset papers \
  --dtype bfloat16 --warmup 200 --modes zero-copy@16G:split=0.95,zero-copy@16G:host=auto \
  --commit $GD_COMMIT --json $OUT/epoch-papers-passive.json > $OUT/epoch-papers-passive.log 2>&1; echo "rc $?"
sel $OUT/epoch-papers-passive.log
echo "== end at $(el) s"
