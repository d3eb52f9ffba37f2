#!/usr/bin/env bash
# Diagnose a hang: run a command in the background, dump every thread's stack after S seconds.
set -u
out=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=$out/build bash bench/run-device.sh dbg cmd:true >/dev/null 2>&1 || { echo build failed; exit 1; }
export LD_LIBRARY_PATH="$PWD/.deps/root/usr/lib/x86_64-linux-gnu"
S=$1; shift
stdbuf -oL -eL "$@" >"$out/hang.txt" 2>&1 &
pid=$!
for i in $(seq 1 "$S"); do sleep 1; kill -0 $pid 2>/dev/null || break; done
if kill -0 $pid 2>/dev/null; then
  echo "still running after $S s: stacks"
  timeout 60 cuda-gdb -p $pid -batch -ex "thread apply all bt 12" >"$out/stacks.txt" 2>&1
  grep -E "^Thread|^#" "$out/stacks.txt" | grep -vE "libpthread|clone|start_thread" | head -150
  kill -9 $pid
fi
grep -v generate: "$out/hang.txt" | tail -40
